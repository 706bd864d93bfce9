"""The simulator: workload, timing, step physics, engine (DynoSim), calibration, recipe mapping, trust model, validation."""
