"""Search: the space, its run."""
