"""OpenAI-compatible HTTP serving for the bundled runtime (`--mode serve`).

Rank 0 runs FastAPI + uvicorn and a continuous-batching scheduler; the other ranks replay rank 0's schedule.
"""

from launcher.runtime.serve.server import add_serve_args, preflight_error, run_serve

__all__ = ["add_serve_args", "preflight_error", "run_serve"]
