"""The real vLLM engine on CPU: the target, its probe, its flag checker."""
