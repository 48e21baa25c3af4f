"""vLLM's start-up KV-cache arithmetic, release by release, recorded as goldens.

    python -m conformance.vllm.memory 0.33.0 [0.30.0 ...] [--out DIR]

For each release, conformance/vllm/kv_memory.py runs in that release's cached environment (conformance.vllm.env, which
installs what the import of the release's KV-cache module misses) over the grid below and writes
DIR/vllm-memory-X.jsonl (default tests/conformance/golden): per input (the layers' KV spec, the block size, max_model_len,
the bytes left for the KV cache), the release's num_blocks, whether its max_model_len check passes, its estimated maximum
model length and its message. tests/test_vllm_memory_conformance.py checks advisor/rules/vllm/startup.py against them.
Exit codes: 0 written, 1 a release could not be run, 2 bad arguments.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

from conformance.vllm import env

GOLDEN_DIR = Path(__file__).resolve().parents[2] / "tests" / "conformance" / "golden"
SCRIPT = Path(__file__).with_name("kv_memory.py")
GiB = 2**30

# (layers with a KV cache, KV heads per rank, head size, MLA): Llama-3.1-8B at tp 1 and tp 8 (one head a rank),
# Llama-3.1-70B at tp 4, DeepSeek-V3's latent (512 + 64) over 61 layers, a small 2-layer model.
SHAPES = ((32, 8, 128, False), (32, 1, 128, False), (80, 2, 128, False), (61, 1, 576, True), (2, 2, 64, False))
BLOCKS = (16, 64)
DTYPES = ("bfloat16", "fp8")
LENGTHS = (1, 32768, 131072)


def grid(seed: int = 26) -> list[dict]:
    """Every shape x block x dtype x length, each with a few bytes-left values: none, a sliver, around one sequence's
    need (just under, exactly, one block more) and at random."""
    rng = random.Random(seed)
    items = []
    for (layers, heads, size, mla), block, dtype, length in itertools.product(SHAPES, BLOCKS, DTYPES, LENGTHS):
        per_token = layers * heads * size * (1 if dtype == "fp8" else 2) * (1 if mla else 2)
        need = -(-length // block) * block * per_token  # one sequence of max_model_len, whole blocks
        page = block * per_token  # one block over all layers
        # need + page - 1: short by one byte where a release holds one block back for its null block
        for available in sorted({-GiB, 0, page - 1, need - 1, need, need + page - 1, rng.randrange(1, max(2, 2 * need)),
                                 rng.randrange(1, 80 * GiB)}):  # fmt: skip
            items.append({"layers": layers, "num_kv_heads": heads, "head_size": size, "dtype": dtype, "mla": mla,
                          "block_size": block, "max_model_len": length, "batched_tokens": 8192,
                          "available": available})  # fmt: skip
    return items


def golden_path(version: str, out: Path = GOLDEN_DIR) -> Path:
    return out / f"vllm-memory-{version}.jsonl"


def release_results(version: str, items: list[dict], log=print) -> list[dict]:
    """kv_memory.py run in the release's environment over ``items`` (the grid's input form): one result per item."""
    env.ensure_importable(version, "vllm.v1.core.kv_cache_utils", log=log)
    with tempfile.TemporaryDirectory(prefix=f"vllm-memory-{version}-") as tmp:
        inputs, results = Path(tmp) / "inputs.json", Path(tmp) / "results.jsonl"
        inputs.write_text(json.dumps(items))
        environ = dict(os.environ, PYTHONPATH=env.pythonpath(version), PYTHONNOUSERSITE="1")
        done = subprocess.run([sys.executable, str(SCRIPT), str(inputs), str(results)], capture_output=True, text=True,
                              env=environ, timeout=3600)  # fmt: skip
        if done.returncode:
            tail = done.stderr.strip().splitlines()[-1:] or ["(no output)"]
            raise env.EnvError(f"vllm {version} kv_memory.py failed: {tail[0]}")
        lines = [json.loads(line) for line in results.read_text().splitlines()]
    errors = [line["error"] for line in lines if "error" in line]
    if errors:
        raise env.EnvError(f"vllm {version}: {len(errors)} inputs failed, first: {errors[0]}")
    return lines


def run_release(version: str, out: Path, log=print) -> Path:
    lines = release_results(version, grid(), log)
    path = golden_path(version, out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"vllm": version, **line}) + "\n" for line in lines))
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.vllm.memory", description=__doc__.splitlines()[0])
    parser.add_argument("versions", nargs="+", help="vLLM releases, e.g. 0.33.0")
    parser.add_argument("--out", type=Path, default=GOLDEN_DIR, help="directory of the goldens")
    args = parser.parse_args(argv)
    failed = False
    for version in args.versions:
        try:
            print(f"vllm {version}: wrote {run_release(version, args.out)}", flush=True)
        except env.EnvError as exc:
            print(f"error: {exc}", file=sys.stderr, flush=True)
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
