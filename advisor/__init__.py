"""tp-advisor: explains what a tensor-parallel LLM engine will auto-enable on this machine, and launches it."""

__version__ = "0.1.0"
