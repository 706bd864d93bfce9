# Targets: sim (DynoSim replay), local (live Dynamo graph), k8s (cluster).
