"""The SGLang conformance grid: GPUs (from the advisor's own simulated profiles, so both sides see the same facts) x models
(real config.json contents in tests/conformance/configs/) x parallel layouts.

Mistral Large 3 is not in the grid: SGLang loads it from the Mistral-format params.json, which the configs do not hold.
"""

from __future__ import annotations

import json
from pathlib import Path

PROFILES = Path(__file__).resolve().parents[2] / "advisor" / "probe" / "profiles"
GPU_PROFILES = (
    "a100-sxm-8", "h100-sxm-8", "h20-8", "h200-8", "b200-8", "b300-8", "gb200-nvl72-tray", "rtx-pro-6000-4", "l40s-4",
    "rtx-4090-2",
)  # fmt: skip
GPUS_PER_NODE = 8  # the faked node always has 8 GPUs, so every tp of the grid fits on it

MODELS = (
    "llama-3.1-8b", "qwen3-32b", "qwen3-30b-a3b", "qwen3-30b-a3b-fp8", "qwen3-next-80b-a3b", "qwen3-vl-30b-a3b",
    "qwen3.5-397b-a17b", "deepseek-v3", "deepseek-v3.2", "kimi-k2.5", "glm-4.5", "glm-5", "gpt-oss-120b",
    "nemotron-h-56b",
)  # fmt: skip
DENSE = frozenset({"llama-3.1-8b", "qwen3-32b", "nemotron-h-56b"})


def _gpu(profile: str) -> dict:
    data = json.loads((PROFILES / f"{profile}.json").read_text())
    first = data["gpus"][0]
    torch = next(p for p in data["packages"] if p["name"] == "torch")
    fake = {"name": first["name"], "memory_mib": first["memory_total_mib"], "capability": first["capability"],
            "count": GPUS_PER_NODE}  # fmt: skip
    return {"fake": fake, "torch_cuda": torch["cuda"]}


GPUS = {p: _gpu(p) for p in GPU_PROFILES}


def layouts(model: str) -> list[dict]:
    """tp 1..8 on one node; tp 8 over two nodes; for MoE models DP attention (dp 2, 8) and the deepep a2a backend."""
    out = [dict(tp=tp, nnodes=1, dp_attention=False, dp_size=1, a2a="none") for tp in (1, 2, 4, 8)]
    out.append(dict(tp=8, nnodes=2, dp_attention=False, dp_size=1, a2a="none"))
    if model not in DENSE:
        out += [dict(tp=8, nnodes=1, dp_attention=True, dp_size=dp, a2a="none") for dp in (2, 8)]
        out.append(dict(tp=8, nnodes=1, dp_attention=False, dp_size=1, a2a="deepep"))
    return out


def scenario_id(gpu: str, model: str, layout: dict) -> str:
    dp = f"dpa{layout['dp_size']}" if layout["dp_attention"] else "dp1"
    return f"{gpu}/{model}/tp{layout['tp']}/nn{layout['nnodes']}/{dp}/{layout['a2a']}"


def scenarios(limit: int | None = None) -> list[dict]:
    out = [
        {"id": scenario_id(gpu, model, layout), "gpu": gpu, "model": model, **layout}
        for gpu in GPU_PROFILES
        for model in MODELS
        for layout in layouts(model)
    ]
    return out if limit is None else out[:limit]
