"""The Kubernetes target: manifests, the target, cluster access, deployment, benchmark Jobs, rehearsal."""
