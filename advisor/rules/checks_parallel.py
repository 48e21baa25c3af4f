"""Checks of tensor parallelism against the machine and the model: enough GPUs for tp, and tp dividing the model's
heads, KV heads, intermediate size, experts and fp8 blocks.
"""

from __future__ import annotations

from advisor.rules.checks_context import ERROR, INFO, WARNING, _cannot, _Context
from advisor.rules.engine import Problem

FP8_BLOCK = 128  # block-quantized fp8 checkpoints (DeepSeek/Qwen style) use 128x128 weight blocks


def check_tp_vs_gpus(ctx: _Context) -> list[Problem]:
    """tp_exceeds_gpus: tp (per node) vs the GPUs an engine can see after CUDA_VISIBLE_DEVICES."""
    intent, facts = ctx.intent, ctx.facts
    src = "torchrun/engine launch: one rank per visible GPU"
    if intent.tp < 1 or intent.nnodes < 1:
        return [Problem("tp_exceeds_gpus", ERROR, f"tp {intent.tp} over {intent.nnodes} node(s) is not a valid layout",
                        "use --tp >= 1 and --nnodes >= 1", src)]  # fmt: skip
    if intent.tp % intent.nnodes:
        return [
            Problem(
                "tp_exceeds_gpus", ERROR,
                f"tp {intent.tp} cannot be split evenly over {intent.nnodes} nodes (each node runs tp / nnodes ranks)",
                f"pick a tp that is a multiple of {intent.nnodes}", src,
            )
        ]  # fmt: skip
    if not facts.driver.available:
        return []  # no_gpus says what happens instead
    if not facts.gpus and facts.driver.unknown:
        return [_cannot("tp_exceeds_gpus", "how many GPUs there are", next(iter(facts.driver.unknown.values())), src)]
    visible = len(facts.engine_gpus)
    need = ctx.tp_per_node
    if need <= visible:
        return []
    cvd = facts.environment.get("CUDA_VISIBLE_DEVICES")
    hidden = facts.visible_gpus is not None and visible < len(facts.gpus)
    per_node = f" per node ({intent.tp} over {intent.nnodes} nodes)" if intent.nnodes > 1 else ""
    message = f"tp {intent.tp} needs {need} GPUs{per_node} but the engine sees {visible}"
    if hidden or cvd is not None:
        message += f" (CUDA_VISIBLE_DEVICES={cvd!r} hides {len(facts.gpus) - visible} of the {len(facts.gpus)} GPUs)"
        fix = f"widen CUDA_VISIBLE_DEVICES to {need} GPUs, or lower --tp to {max(visible, 1)}"
    else:
        fix = f"lower --tp to at most {visible * intent.nnodes}, or add nodes with --nnodes"
    return [Problem("tp_exceeds_gpus", ERROR, message, fix, src)]


def check_tp_divisibility(ctx: _Context) -> list[Problem]:
    """tp_not_divisible: tp must split heads, kv heads (or replicate them), intermediate sizes and (with EP) experts."""
    model, intent = ctx.model, ctx.intent
    if model is None or intent.tp < 2:
        return []
    tp = intent.tp
    attn_tp = tp // intent.dp_size if intent.dp_attention and intent.dp_size > 1 and tp % intent.dp_size == 0 else tp
    attn_label = f"attention tp {attn_tp} (tp {tp} / dp {intent.dp_size})" if attn_tp != tp else f"tp {tp}"
    src = "column/row-parallel sharding (SGLang/vLLM linear layers, sglang fused_moe under TP)"
    problems: list[Problem] = []

    def bad(message: str, fix: str) -> None:
        problems.append(Problem("tp_not_divisible", ERROR, message, fix, src))

    def divisors(n: int) -> str:
        return ", ".join(str(d) for d in range(2, n + 1) if n % d == 0 and d <= 16) or "1"

    heads, kv = model.num_heads, model.num_kv_heads
    if heads is None or heads <= 0:
        problems.append(_cannot("tp_not_divisible", f"{model.id}'s attention heads", "config has no num_attention_heads",
                                src))  # fmt: skip
    elif heads % attn_tp:
        bad(f"{attn_label} does not divide {model.id}'s {heads} attention heads (each rank holds heads / tp)",
            f"use a tp that divides {heads}: {divisors(heads)}")  # fmt: skip
    if kv is not None and kv > 0 and kv != heads:
        if attn_tp > kv:
            if attn_tp % kv:
                bad(f"{attn_label} is larger than {model.id}'s {kv} KV heads and not a multiple of it, so KV heads"
                    " cannot be replicated evenly", f"use a tp that divides or is a multiple of {kv}")  # fmt: skip
            else:
                problems.append(
                    Problem(
                        "tp_not_divisible", INFO,
                        f"{attn_label} exceeds {model.id}'s {kv} KV heads: each KV head is replicated on"
                        f" {attn_tp // kv} ranks, so every rank stores one whole KV head and the KV cache takes"
                        f" {attn_tp // kv}x the memory of an even split",
                        "nothing to fix; a smaller tp or DP attention stores less duplicate KV cache", src,
                    )
                )  # fmt: skip
        elif kv % attn_tp:
            bad(f"{attn_label} does not divide {model.id}'s {kv} KV heads",
                f"use a tp that divides {kv}: {divisors(kv)}")  # fmt: skip
    if model.intermediate_size and model.intermediate_size % tp:
        bad(f"tp {tp} does not divide {model.id}'s intermediate size {model.intermediate_size} (the MLP's gate/up"
            " projections are split column-wise)", f"use a tp that divides {model.intermediate_size}")  # fmt: skip
    moe_tp = tp
    ep = intent.moe_a2a_backend not in (None, "", "none")
    if model.num_experts and model.moe_intermediate_size and not ep:
        per_rank = model.moe_intermediate_size / moe_tp
        if model.moe_intermediate_size % moe_tp:
            bad(f"tp {tp} does not divide {model.id}'s MoE intermediate size {model.moe_intermediate_size}: under TP"
                " every expert's intermediate dimension is split across ranks (SGLang fused MoE, ep_size 1)",
                f"use a tp that divides {model.moe_intermediate_size}, or expert parallelism (--moe-a2a-backend)")  # fmt: skip
        elif (model.quantization or "").lower() == "fp8" and per_rank % FP8_BLOCK:
            problems.append(
                Problem(
                    "tp_not_divisible", WARNING,
                    f"tp {tp} leaves {int(per_rank)} of {model.id}'s MoE intermediate size {model.moe_intermediate_size}"
                    f" per rank, not a multiple of the fp8 weight block {FP8_BLOCK}: block-quantized fp8 checkpoints"
                    " then fail to load ('not divisible by weight quantization block_n')",
                    f"use a tp with (moe intermediate size / tp) a multiple of {FP8_BLOCK}, or expert parallelism",
                    src,
                )
            )  # fmt: skip
    if model.num_experts and ep and model.num_experts % tp:
        bad(f"with --moe-a2a-backend {intent.moe_a2a_backend} experts are distributed (ep_size = tp_size = {tp}), but"
            f" tp {tp} does not divide {model.id}'s {model.num_experts} experts",
            f"use a tp that divides {model.num_experts}")  # fmt: skip
    return problems
