"""Shared foundations: errors and hashing, constants, input checks, progress lines."""
