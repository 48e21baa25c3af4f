"""Run under torchrun by tests/test_runtime_tp.py: each rank loads every tiny checkpoint at tp = WORLD_SIZE and saves
its logits and tokens to OUT/rank<R>.pt, so the test can compare them with transformers and across ranks.
The tiny weights are prepacked for oneDNN as large ones would be, and MoE logits are taken through both expert paths.

usage: python -m torch.distributed.run --nproc-per-node 2 tests/runtime_tp_worker.py OUT MODEL_DIR...
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))

from runtime_models import PROMPTS, open_runtime, runtime_logits  # noqa: E402

from launcher.runtime.dist import shutdown_parallel  # noqa: E402
from launcher.runtime.engine import SamplingParams  # noqa: E402
from launcher.runtime.layers import moe, onednn  # noqa: E402


def main() -> None:
    out, model_dirs = Path(sys.argv[1]), [Path(p) for p in sys.argv[2:]]
    onednn.PACK_MIN_ELEMENTS = 0
    results = {}
    for model_dir in model_dirs:
        engine = open_runtime(model_dir)
        results[model_dir.name] = {
            "logits": runtime_logits(engine, PROMPTS),
            "greedy": engine.generate(PROMPTS, SamplingParams(max_tokens=16, ignore_eos=True)),
            "sampled": engine.generate(PROMPTS, SamplingParams(max_tokens=8, temperature=1.0, top_p=0.9, seed=7)),
            "kv_heads": engine.model.layers[0].attn.num_kv_heads,
            "vocab_rows": engine.model.embed.weight.shape[0],
            "packed": engine.model.lm_head.weight.is_mkldnn,
        }
        dense = moe.use_dense
        moe.use_dense = lambda tokens, experts, top_k: False
        results[model_dir.name]["grouped_logits"] = runtime_logits(engine, PROMPTS)
        moe.use_dense = dense
    torch.save(results, out / f"rank{os.environ['RANK']}.pt")


if __name__ == "__main__":
    try:
        main()
    finally:
        # without it gloo's threads can outlive the interpreter: "terminate called without an active exception", SIGABRT
        shutdown_parallel()
