"""Run under torchrun by the tp 2 tests: each rank runs one KIND of check over every tiny checkpoint at tp = WORLD_SIZE
and saves {model name: results} to OUT/rank<R>.pt, so the test can compare them across ranks and with references.

- ``model`` (tests/test_runtime_tp.py): logits and tokens, to compare with transformers. The tiny weights are prepacked
  for oneDNN as large ones would be, and MoE logits are taken through both expert paths.
- ``graph`` (tests/test_runtime_cuda_graph.py): the same request schedule through the ordinary decode step and through
  the static-buffer step of cuda_graph.py (eager on CPU).

usage: python -m torch.distributed.run --nproc-per-node 2 tests/runtime_tp_worker.py KIND OUT MODEL_DIR...
"""

from __future__ import annotations

import os
import sys
from dataclasses import astuple
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))

from runtime_models import PROMPTS, open_runtime, runtime_logits  # noqa: E402

from launcher.runtime.dist import shutdown_parallel  # noqa: E402
from launcher.runtime.engine import SamplingParams  # noqa: E402


def model_results(model_dir: Path) -> dict:
    from launcher.runtime.layers import moe, onednn

    onednn.PACK_MIN_ELEMENTS = 0
    engine = open_runtime(model_dir)
    results = {
        "logits": runtime_logits(engine, PROMPTS),
        "greedy": engine.generate(PROMPTS, SamplingParams(max_tokens=16, ignore_eos=True)),
        "sampled": engine.generate(PROMPTS, SamplingParams(max_tokens=8, temperature=1.0, top_p=0.9, seed=7)),
        "kv_heads": engine.model.layers[0].attn.num_kv_heads,
        "vocab_rows": engine.model.embed.weight.shape[0],
        "packed": engine.model.lm_head.weight.is_mkldnn,
    }
    dense = moe.use_dense
    moe.use_dense = lambda tokens, experts, top_k: False
    results["grouped_logits"] = runtime_logits(engine, PROMPTS)
    moe.use_dense = dense
    return results


def graph_results(model_dir: Path) -> dict:
    from test_runtime_cuda_graph import schedule

    from launcher.runtime import cuda_graph

    cuda_graph.MIN_LENGTH_BUCKET = 16
    eager = schedule(open_runtime(model_dir, max_batch_size=5, max_model_len=64))
    engine = open_runtime(model_dir, max_batch_size=5, max_model_len=64, cuda_graphs=True)
    static = schedule(engine)
    return {"eager": [astuple(e) for e in eager], "static": [astuple(e) for e in static], "replays": engine.graphs.replays}


KINDS = {"model": model_results, "graph": graph_results}


def main() -> None:
    collect, out, model_dirs = KINDS[sys.argv[1]], Path(sys.argv[2]), [Path(p) for p in sys.argv[3:]]
    torch.save({d.name: collect(d) for d in model_dirs}, out / f"rank{os.environ['RANK']}.pt")


if __name__ == "__main__":
    try:
        main()
    finally:
        # without it gloo's threads can outlive the interpreter: "terminate called without an active exception", SIGABRT
        shutdown_parallel()
