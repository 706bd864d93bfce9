"""Functional checks: the verdict, endpoint checks, accuracy checks."""
