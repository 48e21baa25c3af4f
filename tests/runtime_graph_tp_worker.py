"""Run under torchrun by tests/test_runtime_cuda_graph.py: each rank runs the same request schedule through the ordinary
decode step and through the static-buffer step of cuda_graph.py (eager on CPU) and saves both event lists to
OUT/rank<R>.pt.

usage: python -m torch.distributed.run --nproc-per-node 2 tests/runtime_graph_tp_worker.py OUT MODEL_DIR...
"""

from __future__ import annotations

import os
import sys
from dataclasses import astuple
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))

from runtime_models import open_runtime  # noqa: E402
from test_runtime_cuda_graph import schedule  # noqa: E402

from launcher.runtime import cuda_graph  # noqa: E402
from launcher.runtime.dist import shutdown_parallel  # noqa: E402


def main() -> None:
    out, model_dirs = Path(sys.argv[1]), [Path(p) for p in sys.argv[2:]]
    cuda_graph.MIN_LENGTH_BUCKET = 16
    results = {}
    for model_dir in model_dirs:
        eager = schedule(open_runtime(model_dir, max_batch_size=5, max_model_len=64))
        engine = open_runtime(model_dir, max_batch_size=5, max_model_len=64, cuda_graphs=True)
        static = schedule(engine)
        results[model_dir.name] = {
            "eager": [astuple(e) for e in eager],
            "static": [astuple(e) for e in static],
            "replays": engine.graphs.replays,
        }
    torch.save(results, out / f"rank{os.environ['RANK']}.pt")


if __name__ == "__main__":
    try:
        main()
    finally:
        shutdown_parallel()
