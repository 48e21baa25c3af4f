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
    ] + speculative_scenarios()  # after the plain grid: each GPU group runs its plain scenarios first
    return out if limit is None else out[:limit]


# -- speculative decoding (the user passes --speculative-algorithm) ---------------------------------------------------
# A smaller grid: four GPU memory tiers x the algorithms on models that can run them, tp 1 and 8, with SGLang's own step
# choice and with explicit steps / top-k / draft tokens. Draft models (EAGLE, EAGLE3, STANDALONE) are real config.json
# contents in tests/conformance/configs/ passed as --speculative-draft-model-path; NEXTN (MTP) drafts with the model's
# own next-token layers; NGRAM needs no draft model.
SPEC_GPUS = ("rtx-4090-2", "h100-sxm-8", "h200-8", "b200-8")
STEPS_TOPK1 = ("--speculative-num-steps", "3", "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4")
STEPS_TOPK4 = ("--speculative-num-steps", "5", "--speculative-eagle-topk", "4", "--speculative-num-draft-tokens", "8")
# (variant name, model, algorithm, draft config or None, extra args)
SPEC_CASES: tuple[tuple[str, str, str, str | None, tuple[str, ...]], ...] = (
    *((f"eagle-{v}", "llama-3.1-8b", "EAGLE", "eagle-llama-3.1-8b", a) for v, a in
      (("auto", ()), ("k1", STEPS_TOPK1), ("k4", STEPS_TOPK4))),
    *((f"eagle3-{v}", "llama-3.1-8b", "EAGLE3", "eagle3-llama-3.1-8b", a) for v, a in
      (("auto", ()), ("k1", STEPS_TOPK1), ("k4", STEPS_TOPK4))),
    *((f"standalone-{v}", "llama-3.1-8b", "STANDALONE", "llama-3.2-1b", a) for v, a in
      (("auto", ()), ("k1", STEPS_TOPK1), ("k4", STEPS_TOPK4))),
    ("ngram-auto", "llama-3.1-8b", "NGRAM", None, ()),
    ("ngram-d8", "llama-3.1-8b", "NGRAM", None, ("--speculative-num-draft-tokens", "8")),
    ("nextn-auto", "deepseek-v3", "NEXTN", None, ()),
    ("nextn-k1", "deepseek-v3", "NEXTN", None, STEPS_TOPK1),
    ("nextn-k4", "deepseek-v3", "NEXTN", None, STEPS_TOPK4),
    ("eagle-auto", "deepseek-v3", "EAGLE", None, ()),
    ("nextn-auto", "glm-4.5", "NEXTN", None, ()),
    ("nextn-k1", "glm-4.5", "NEXTN", None, STEPS_TOPK1),
    ("nextn-auto", "qwen3.5-397b-a17b", "NEXTN", None, ()),
    ("nextn-k1", "qwen3.5-397b-a17b", "NEXTN", None, STEPS_TOPK1),
)  # fmt: skip


def speculative_args(algorithm: str, extra: tuple[str, ...]) -> list[str]:
    """The --speculative-* engine arguments of a case (the draft model path is added where the config folder is known)."""
    return ["--speculative-algorithm", algorithm, *extra]


def speculative_scenarios() -> list[dict]:
    out = []
    for gpu in SPEC_GPUS:
        for variant, model, algorithm, draft, extra in SPEC_CASES:
            layouts_ = [dict(tp=tp, nnodes=1, dp_attention=False, dp_size=1, a2a="none") for tp in (1, 8)]
            if model == "deepseek-v3" and variant == "nextn-auto":
                layouts_.append(dict(tp=8, nnodes=1, dp_attention=True, dp_size=8, a2a="none"))
            for layout in layouts_:
                sc = {"id": f"{scenario_id(gpu, model, layout)}/spec-{variant}", "gpu": gpu, "model": model, **layout,
                      "speculative": speculative_args(algorithm, extra), "draft": draft}  # fmt: skip
                out.append(sc)
    return out
