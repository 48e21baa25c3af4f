"""Checks of memory: do the weights (per GPU, after tensor parallelism) fit, and is room left for the KV cache.

An engine with a start-up model (``Engine.startup``, advisor.rules.startup) gets its verdict from that model, which the
plan computes once: ``check_weights_fit`` only speaks for an engine without one, and ``startup_warnings`` reads the
verdict for what starts but serves little.
"""

from __future__ import annotations

from advisor.models import weight_bytes_per_param
from advisor.rules import flashinfer as fi
from advisor.rules.checks_context import ERROR, MIB, WARNING, _cannot, _Context, _gib
from advisor.rules.engine import Problem
from advisor.rules.startup import Startup
from launcher.runtime.contract import FUSION_MAX_TOKENS

KV_CACHE_MIN_SHARE = 0.10  # below this share of GPU memory left after weights, the KV cache is starved


def check_weights_fit(ctx: _Context) -> list[Problem]:
    """weights_exceed_memory: weights per GPU (+ the fusion workspace when fusion is on) vs the smallest GPU, for an engine
    without a start-up model (the start-up verdict replaces this estimate)."""
    model, intent = ctx.model, ctx.intent
    if ctx.engine is not None and ctx.engine.startup is not None:
        return []
    if model is None or not ctx.facts.driver.available or not ctx.gpus_used:
        return []
    src = "estimate: num_params x bytes per param / tp (+ FlashInfer fusion workspace, docs/flashinfer.md)"
    if not model.num_params:
        return [_cannot("weights_exceed_memory", f"whether {model.id} fits", "its parameter count is unknown", src)]
    per_param = weight_bytes_per_param(ctx.dtype, model.quantization)
    if per_param is None:
        what = f"quantization {model.quantization!r}" if model.quantization else f"dtype {ctx.dtype!r}"
        return [_cannot("weights_exceed_memory", f"whether {model.id} fits", f"unknown bytes per parameter for {what}",
                        src)]  # fmt: skip
    memories = [g.memory_total_mib for g in ctx.gpus_used]
    if any(m is None for m in memories):
        return [_cannot("weights_exceed_memory", "GPU memory", "NVML did not report the memory of every GPU", src)]
    smallest = min(memories) * MIB
    weights = model.num_params * per_param / max(intent.tp, 1)
    workspace = 0
    if ctx.fusion() and model.hidden_size:
        workspace = fi.fusion_workspace_bytes(ctx.tp_per_node, model.hidden_size, FUSION_MAX_TOKENS)
    needed = weights + workspace
    parts = f"{_gib(weights)} of weights ({model.num_params / 1e9:.1f}B params x {per_param:g} B / tp {intent.tp})"
    if workspace:
        parts += f" + {_gib(workspace)} FlashInfer fusion workspace = {_gib(needed)}"
    if needed > smallest:
        fit_tp = next((t for t in (2, 4, 8, 16, 32, 64) if model.num_params * per_param / t + workspace < smallest * 0.9),
                      None)  # fmt: skip
        return [
            Problem(
                "weights_exceed_memory", ERROR,
                f"{parts} per GPU exceeds the smallest GPU's {_gib(smallest)}: loading will run out of"
                " memory",
                (f"raise --tp to {fit_tp} (across nodes if needed)" if fit_tp else "use more GPUs")
                + ", or use a quantized checkpoint (fp8 halves bf16 weights)",
                src,
            )
        ]  # fmt: skip
    left = smallest - needed
    if left < KV_CACHE_MIN_SHARE * smallest:
        return [
            Problem(
                "weights_exceed_memory", WARNING,
                f"{parts} per GPU leaves {_gib(left)} of {_gib(smallest)} ({left / smallest:.0%}) for"
                " the KV cache, CUDA graphs and activations: the engine may refuse to start or serve tiny batches",
                "raise --tp, or use a quantized checkpoint", src,
            )
        ]  # fmt: skip
    return []


def startup_warnings(startup: Startup | None, engine: str, context_flag: str | None) -> list[Problem]:
    """kv_cache_short: the engine starts, but its KV pool holds no sequence of the context length it will accept."""
    if startup is None or not startup.starts or not startup.context_len or startup.kv_tokens is None:
        return []
    if startup.kv_tokens >= startup.context_len:
        return []
    flag = f"{context_flag} {startup.kv_tokens}" if context_flag else "a shorter context"
    return [
        Problem(
            "kv_cache_short", WARNING,
            f"{engine} starts, but its KV pool ({startup.kv_tokens:,} tokens per pool) holds no full sequence of its"
            f" context length {startup.context_len:,} ({startup.context_source}): longer requests are refused or cut",
            f"pass -- {flag} or less, raise --tp, or use a quantized checkpoint",
            "advisor/rules/startup.py (the engine's start-up model)",
        )
    ]  # fmt: skip
