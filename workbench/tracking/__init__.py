"""MLflow: run naming, runs, the store, its lock, the team server."""
