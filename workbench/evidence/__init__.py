"""Measured evidence: measured runs, the ledger, diagnosis, the planner."""
