"""Targets: sim (DynoSim replay), local (live Dynamo graph), k8s (cluster), vLLM (CPU engine); model folders and AIPerf."""
