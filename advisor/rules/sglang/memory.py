"""GPU-memory defaults: chunked_prefill_size, cuda_graph_max_bs and mem_fraction_static (_handle_gpu_memory_settings)."""

from __future__ import annotations

from dataclasses import dataclass

from advisor.rules.engine import (
    NOT_ENABLED,
    Condition,
    Decision,
    GpuMemory,
    Scenario,
    Source,
    decided,
    evaluate,
    finite_float,
    parse_release,
    state_of,
)
from advisor.rules.releases import within
from advisor.rules.sglang.architectures import is_deepseek_v4, loaded_architecture, named, placed_in, uses_dsa
from advisor.rules.sglang.arguments import cuda_graph_max_bs_flags
from advisor.rules.sglang.attention import attention_kind
from advisor.rules.sglang.common import MEMORY_HOOK, SERVER_ARGS
from advisor.rules.sglang.model_config import is_multimodal, multimodal_vision
from advisor.rules.sglang.model_overrides import chunked_prefill_off, is_hrm_text
from advisor.rules.sglang.moe_runner import NEMOTRON_H as NEMOTRON_H_ARCHS
from advisor.rules.sglang.prefill_graph import (
    deepep_prefill_graph_sizes,
    full_prefill_graph,
    prefill_graph_settings,
    prefill_graph_sizes,
    step_prefill_max_bs,
)
from advisor.rules.sglang.releases import rules_release


@dataclass(frozen=True, slots=True)
class MemoryTier:
    """One GPU-memory tier of _handle_gpu_memory_settings: GPUs with less than ``below_gib`` get these defaults."""

    below_gib: float
    chunked_prefill_size: int
    cuda_graph_max_bs: int
    cuda_graph_max_bs_tp4: int  # with tp >= 4


MEMORY_TABLE: tuple[MemoryTier, ...] = (
    MemoryTier(20, 2048, 8, 8),
    MemoryTier(35, 2048, 24, 80),
    MemoryTier(60, 4096, 32, 160),
    MemoryTier(90, 8192, 256, 512),
    MemoryTier(160, 8192, 256, 512),
    MemoryTier(float("inf"), 16384, 512, 512),
)
# v0.5.20 (arg_groups/memory_hook.py): 20-35 GiB GPUs (RTX 4090/5090, A10) get chunked prefill 4096 and batch 48/160.
MEMORY_TABLE_V0520: tuple[MemoryTier, ...] = (MEMORY_TABLE[0], MemoryTier(35, 4096, 48, 160), *MEMORY_TABLE[2:])
MEMORY_TABLE_V0520_FROM = "0.5.20"
UNKNOWN_MEMORY = (4096, 160)  # (chunked_prefill_size, cuda_graph_max_bs) when the GPU memory is unknown


def memory_table(release: str | None) -> tuple[MemoryTier, ...]:
    """The GPU-memory tiers of ``release`` (None: the v0.5.7 table)."""
    if release is not None and parse_release(release) >= parse_release(MEMORY_TABLE_V0520_FROM):
        return MEMORY_TABLE_V0520
    return MEMORY_TABLE


def memory_tier(mem_mib: int, tp: int, release: str | None) -> tuple[int, int]:
    """(chunked_prefill_size, cuda_graph_max_bs) for this GPU memory and tp."""
    tier = next(t for t in memory_table(release) if mem_mib / 1024 < t.below_gib)
    return tier.chunked_prefill_size, (tier.cuda_graph_max_bs_tp4 if tp >= 4 else tier.cuda_graph_max_bs)


def memory_defaults(
    mem_mib: int | None,
    tp: int,
    dp_attention: bool,
    dp_size: int,
    vision: tuple[int | None, int | None] | None = None,
    prefill_graph: str | None = None,
    release: str | None = None,
    deepep: bool = False,
    speculative: str | None = None,
    max_running: int | None = None,
    breakable: bool = True,
    prefill_max_bs: int | None = None,
) -> dict[str, float | int | None]:
    """chunked_prefill_size, cuda_graph_max_bs and mem_fraction_static as SGLang's _handle_gpu_memory_settings picks them.

    The reserve is computed from the chunk size before DP attention divides it (the division comes later, in
    _handle_data_parallelism); multimodal models then scale the fraction down (adjust_mem_fraction_for_vlm).
    ``speculative``: the --speculative-algorithm passed (its draft reserve); ``max_running``: the user's
    --max-running-requests, which caps the default decode graph batch from v0.5.22.
    """
    chunk, max_bs = UNKNOWN_MEMORY if mem_mib is None else memory_tier(mem_mib, tp, release)
    max_bs = capped_graph_batch(max_bs, max_running, release)
    fraction = None
    if mem_mib is not None:
        reserved = reserved_mib(chunk, max_bs, tp, dp_attention, dp_size, mem_mib, prefill_graph, deepep,
                                speculative_reserve(speculative, release), breakable, prefill_max_bs)  # fmt: skip
        fraction = round((mem_mib - reserved) / mem_mib, 3)
        if vision is not None:
            fraction *= vlm_factor(vision)
    if dp_attention and dp_size > 1:
        chunk //= dp_size
    return {"chunked_prefill_size": chunk, "cuda_graph_max_bs": max_bs, "mem_fraction_static": fraction}


DEEPEP_A2A_RESERVE = 2 * 1024  # DeepEP buffers captured in the decode graph, MiB, above the floor
DEEPEP_A2A_RESERVE_FROM = "0.5.15"


def prefill_graph_reserve(chunk: int, kind: str | None, deepep: bool = False, max_bs: int | None = None) -> float:
    """MiB reserved for the prefill CUDA graphs: 8 per captured size (1.5 GiB flat for MLA models); from v0.5.18 with
    DeepEP 1 GiB more for the breakable graph's capture (``deepep``: DeepEP with the breakable graph). ``max_bs``: the
    largest size a model step sets (prefill_graph.step_prefill_max_bs), else the chunk."""
    if kind == "mla":
        graphs = 1.5 * 1024
    else:
        graphs = len(deepep_prefill_graph_sizes() if deepep else prefill_graph_sizes(max_bs or chunk)) * 8
    return graphs + (1024 if deepep else 0)


def reserved_mib(
    chunk: int,
    max_bs: int,
    tp: int,
    dp_attention: bool,
    dp_size: int,
    mem_mib: int,
    prefill_graph: str | None = None,
    deepep: bool = False,
    draft: int = 0,
    breakable: bool = True,
    prefill_max_bs: int | None = None,
) -> float:
    """Activations and CUDA-graph buffers SGLang keeps outside the static pool (MiB). ``prefill_graph``: None when the
    prefill CUDA graph is off, else the attention kind ("mla" or "standard") that sizes its reserve. ``draft``: the
    speculative-decoding reserve (speculative_reserve), added above the floor."""
    reserved = 512 + max(chunk, 2048) * 1.5 + max_bs * 2 + tp * 1 / 8 * 1024
    if dp_attention:
        reserved += max_bs * dp_size * 3
        if max_bs > 300:
            reserved += max_bs * dp_size * 1.5
    if prefill_graph is not None:
        reserved += prefill_graph_reserve(chunk, prefill_graph, deepep and breakable, prefill_max_bs)
    if mem_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    if deepep:
        reserved += DEEPEP_A2A_RESERVE  # on top of the floor (reserve_for_deepep_a2a_mb)
    return reserved + draft


def memory_arithmetic(
    mem_mib: int | None,
    tp: int,
    dp_attention: bool,
    dp_size: int,
    vision: tuple[int | None, int | None] | None,
    prefill_graph: str | None = None,
    release: str | None = None,
    deepep: bool = False,
    speculative: str | None = None,
    max_running: int | None = None,
) -> str:
    """The mem_fraction_static estimate written out with this scenario's numbers (for `advisor explain`)."""
    if mem_mib is None:
        fallback = 0.95 if release is not None and parse_release(release) >= (0, 5, 20) else 0.88
        return f"mem_fraction_static: GPU memory unknown, so no estimate (SGLang uses {fallback} without a GPU memory figure)"
    value = memory_defaults(mem_mib, tp, dp_attention, dp_size, vision, prefill_graph, release, deepep, speculative,
                            max_running)  # fmt: skip
    chunk, tier_bs = memory_tier(mem_mib, tp, release)
    max_bs = capped_graph_batch(tier_bs, max_running, release)
    draft = speculative_reserve(speculative, release)
    terms = [f"512 + 1.5 x {max(chunk, 2048)} (chunked prefill) + 2 x {max_bs} (CUDA-graph batch) + {tp}/8 x 1024 (tp)"]
    if dp_attention:
        terms.append(f" + 3 x {max_bs} x {dp_size} (DP attention)")
        if max_bs > 300:
            terms.append(f" + 1.5 x {max_bs} x {dp_size} (DP attention, batch > 300)")
    raw = 512 + max(chunk, 2048) * 1.5 + max_bs * 2 + tp / 8 * 1024
    if dp_attention:
        raw += max_bs * dp_size * 3 + (max_bs * dp_size * 1.5 if max_bs > 300 else 0)
    if prefill_graph is not None:
        raw += prefill_graph_reserve(chunk, prefill_graph, deepep)
        sizes = len(deepep_prefill_graph_sizes() if deepep else prefill_graph_sizes(chunk))
        terms.append(" + 1.5 x 1024 (prefill CUDA graphs, MLA)" if prefill_graph == "mla"
                     else f" + 8 x {sizes} (prefill CUDA graph sizes)")  # fmt: skip
        if deepep:
            terms.append(" + 1024 (prefill graph capture with DeepEP)")
    reserved = reserved_mib(chunk, max_bs, tp, dp_attention, dp_size, mem_mib, prefill_graph, deepep, draft)
    text = f"reserved = {''.join(terms)} = {raw:g} MiB"
    if max_bs != tier_bs:
        text = (f"CUDA-graph batch {tier_bs} capped at max_running_requests {max_running} (v{CAPPED_GRAPH_BATCH_FROM}+); "
                + text)  # fmt: skip
    floored = max(raw, 10 * 1024) if mem_mib > 60 * 1024 else raw
    if floored != raw:
        text += f", raised to the 10 GiB floor above 60 GiB: {floored:g} MiB"
    if deepep:
        text += f", + {DEEPEP_A2A_RESERVE} (DeepEP buffers, above the floor) = {reserved - draft:g} MiB"
    if draft:
        text += f", + {draft} ({speculative} draft model and its CUDA graphs, above the floor) = {reserved:g} MiB"
    elif speculative:
        text += f" (no speculative reserve: {speculative_reserve_reason(speculative, release)})"
    base = round((mem_mib - reserved) / mem_mib, 3)
    text += f"; mem_fraction_static = ({mem_mib} - {reserved:g}) / {mem_mib} = {base}"
    if vision is not None:
        text += f", x {vlm_factor(vision):.4f} for the vision tower = {value['mem_fraction_static']:.4f}"
    text += ". Lower it (--mem-fraction-static) if start-up runs out of memory; raise it for a larger KV cache"
    return text


def vlm_factor(vision: tuple[int | None, int | None]) -> float:
    """adjust_mem_fraction_for_vlm: 0.95 x a factor in [0.8, 1.05] from the vision tower's layers x hidden size squared,
    relative to 24 layers of 1024 (the defaults SGLang assumes when vision_config lacks the keys)."""
    layers, hidden = vision[0] or 24, vision[1] or 1024
    ratio = layers * hidden**2 / (24 * 1024**2)
    return 0.95 * max(0.8, min(1.05, 1.0 - 0.1 * (ratio - 1.0)))


PREFILL_GRAPH_FROM = "0.5.10"  # --disable-piecewise-cuda-graph (on by default) appears in v0.5.10
# v0.5.10-v0.5.14, the piecewise (torch.compile) prefill graph: off for the architectures on the release's
# piecewise_cuda_graph_disabled_model_archs (configs/model_config.py, ModelConfig.is_piecewise_cuda_graph_disabled_model,
# read by server_args.py _handle_piecewise_cuda_graph "1. Disable Model Arch"; read from architectures.json: Qwen3-Next,
# Bailing V2.5, LLaDA from v0.5.10, DeepSeek V4 and its NextN draft from v0.5.12, ...), multimodal models, DP attention
# and an a2a backend, and up to v0.5.12 for the DeepSeek sparse-attention models (is_deepseek_nsa).
PIECEWISE_DISABLED_LIST = "configs/model_config.py:piecewise_cuda_graph_disabled_model_archs"
NO_PREFILL_GRAPH_ARCHS = frozenset(
    {"Qwen3NextForCausalLM", "Qwen3_5MoeForConditionalGeneration", "Qwen3_5ForConditionalGeneration"}
)  # where a release was not read
DSA_NO_PREFILL_GRAPH_UNTIL = "0.5.12"
# From v0.5.15 the prefill graph is the "breakable" backend (cuda_graph_config), which keeps the hybrid models; what turns
# it off is _disable_breakable_cudagraph_if_incompatible in server_args.py, release by release:
FIRST_BREAKABLE_FROM = "0.5.15"  # off for MLA models, DeepSeek V4, DP attention, an a2a backend, multimodal models
BREAKABLE_MULTIMODAL_FROM = "0.5.16"  # multimodal models on SGLang's list keep it
PREFILL_GRAPH_WITH_DP_FROM = "0.5.17"  # DP attention and DeepEP keep it; only non-DSA MLA and Nemotron-H lose it
BREAKABLE_PREFILL_GRAPH_FROM = "0.5.18"  # MLA models and Nemotron-H keep it too
VALIDATED_A2A = frozenset({"none", "deepep", "megamoe", "flashinfer"})  # a2a backends the breakable graph accepts
# configs/model_config.py multimodal_breakable_cuda_graph_supported_model_archs: Qwen3.5 from v0.5.16, Kimi K2.5 (and
# others not in the grid) by v0.5.18.
BREAKABLE_MULTIMODAL_ARCHS = {
    "0.5.16": frozenset({"Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration"}),
    "0.5.18": frozenset({
        "InternS2MobiusForConditionalGeneration", "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration",
        "MuseGlimmerForConditionalGeneration", "KimiK3ForConditionalGeneration", "KimiK25ForConditionalGeneration",
    }),
}  # fmt: skip


# configs/model_config.py multimodal_piecewise_cuda_graph_supported_model_archs (read from architectures.json; this
# table where a release was not read): v0.5.10-v0.5.14 the piecewise graph's "multimodal model" rule spares them
# (v0.5.14 server_args.py _disable_piecewise_cuda_graph_if_incompatible); v0.5.16-v0.5.21 those not also on the
# breakable list get the tc_piecewise prefill graph instead of the breakable one ("Using tc_piecewise CUDA graph for
# validated multimodal decoder prefill", v0.5.18 server_args.py; gone in v0.5.22). Not modelled: v0.5.18+ keeps the
# breakable graph when the resolved attention backend is trtllm_mla.
PIECEWISE_MULTIMODAL_LIST = "configs/model_config.py:multimodal_piecewise_cuda_graph_supported_model_archs"
TC_PIECEWISE_REDIRECT_LAST = "0.5.21"
TC_PIECEWISE_MULTIMODAL_ARCHS = frozenset({
    "Cohere2VisionForConditionalGeneration", "KimiK25ForConditionalGeneration", "MiniMaxM3SparseForCausalLM",
    "MiniMaxM3SparseForConditionalGeneration",
})  # fmt: skip


# arg_groups/cuda_graph_hook.py disable_breakable_cudagraph_if_incompatible (v0.5.20+): no prefill graph for a config
# with Kimi delta attention layers (configs/model_config.py uses_kda_attention) except GLM-5.3 Flash.
KDA_NO_PREFILL_GRAPH_FROM, KDA_BREAKABLE_ARCHS = "0.5.20", frozenset({"Glm5NextForConditionalGeneration"})
BREAKABLE_MULTIMODAL_LIST = "configs/model_config.py:multimodal_breakable_cuda_graph_supported_model_archs"


def _breakable_multimodal(architecture: str, release: tuple[int, ...]) -> bool:
    """On the release's multimodal_breakable_cuda_graph_supported_model_archs (architectures.json; the table above
    where a release was not read)."""
    text = ".".join(map(str, release))
    names = named(text)
    if names is not None:
        return BREAKABLE_MULTIMODAL_LIST in names.get(architecture, ())
    lists = [archs for first, archs in BREAKABLE_MULTIMODAL_ARCHS.items() if parse_release(first) <= release]
    return bool(lists) and architecture in lists[-1]


def _piecewise_disabled_model(architecture: str, release: str) -> bool:
    """On the release's piecewise_cuda_graph_disabled_model_archs (architectures.json, else the table)."""
    names = named(release)
    if names is not None:
        return PIECEWISE_DISABLED_LIST in names.get(architecture, ())
    return architecture in NO_PREFILL_GRAPH_ARCHS


def _piecewise_multimodal(architecture: str, release: tuple[int, ...]) -> bool:
    """On the release's multimodal_piecewise_cuda_graph_supported_model_archs (architectures.json, else the table)."""
    names = named(".".join(map(str, release)))
    if names is not None:
        return PIECEWISE_MULTIMODAL_LIST in names.get(architecture, ())
    return architecture in TC_PIECEWISE_MULTIMODAL_ARCHS


def prefill_graph_kind(s: Scenario, version: str, capability_steps: bool = True) -> str | None:
    """The attention kind sizing the prefill CUDA-graph reserve ("mla" or "standard"), or None when SGLang leaves the
    prefill graph off for this release, model and layout."""
    release = parse_release(rules_release(version))
    if release < parse_release(PREFILL_GRAPH_FROM) or s.model is None:
        return None
    model, arch = s.model, loaded_architecture(s.model, rules_release(version))
    dsa = uses_dsa(model, rules_release(version))
    kind = attention_kind(model, version)
    multimodal = is_multimodal(model, rules_release(version))
    a2a = s.intent.moe_a2a_backend or "none"
    if release < parse_release(FIRST_BREAKABLE_FROM):  # the piecewise graph
        if s.flag(SPECULATIVE_FLAG) and rules_release(version) in SPEC_NO_PIECEWISE:
            return None
        if s.intent.dp_attention or a2a != "none" or _piecewise_disabled_model(arch, rules_release(version)):
            return None
        if multimodal and not _piecewise_multimodal(arch, release):
            return None
        if release <= parse_release(DSA_NO_PREFILL_GRAPH_UNTIL) and dsa:
            return None
        return kind
    if is_deepseek_v4(model, rules_release(version)):
        return None  # V4 and its drafts (architectures.py is_deepseek_v4)
    if full_prefill_graph(model, rules_release(version)):
        return kind  # its own full-graph prefill capture, set before the breakable graph's checks run
    if model.kda_attention and arch not in KDA_BREAKABLE_ARCHS and release >= parse_release(KDA_NO_PREFILL_GRAPH_FROM):
        return None  # "Breakable CUDA graph is incompatible with KDA hybrid linear attention"
    if capability_steps and is_hrm_text(model, rules_release(version)):
        return None  # HRM-Text runs without CUDA graphs (model_hook.py handle_model_capability_adjustments)
    if (multimodal and _piecewise_multimodal(arch, release) and not _breakable_multimodal(arch, release)
            and within(release, BREAKABLE_MULTIMODAL_FROM, TC_PIECEWISE_REDIRECT_LAST)):  # fmt: skip
        # v0.5.16-v0.5.21 switch these to the tc_piecewise graph, whose own rules stop it for DP attention and a2a only
        return None if s.intent.dp_attention or a2a != "none" else kind
    if multimodal and not _breakable_multimodal(arch, release):
        return None
    if release < parse_release(PREFILL_GRAPH_WITH_DP_FROM):
        return None if kind == "mla" or s.intent.dp_attention or a2a != "none" else kind
    if a2a not in VALIDATED_A2A:
        return None
    if release < parse_release(BREAKABLE_PREFILL_GRAPH_FROM) and (
        (kind == "mla" and not dsa) or _nemotron_h(arch, rules_release(version))
    ):
        return None
    return kind


# The breakable prefill graph's Nemotron-H check (configs/model_config.py is_nemotron_h): v0.5.17's list also names the
# MTP draft architecture (architectures.json), the other releases' the two served names only.
NEMOTRON_H_CHECK = "configs/model_config.py:is_nemotron_h"


def _nemotron_h(arch: str | None, release: str) -> bool:
    return arch in NEMOTRON_H_ARCHS or placed_in(arch, release, NEMOTRON_H_CHECK)


# -- speculative decoding (the user passes --speculative-algorithm) --------------------------------------------------
SPECULATIVE_FLAG = "--speculative-algorithm"
MAX_RUNNING_FLAG = "--max-running-requests"
# _handle_speculative_decoding (v0.5.7-v0.5.12 server_args.py, from v0.5.13 arg_groups/speculative_hook.py) runs NEXTN
# as EAGLE; it also sets max_running_requests to 48 unless the user passed one, but only after the memory step.
SPECULATIVE_ALIASES = {"NEXTN": "EAGLE"}


@dataclass(frozen=True, slots=True)
class DraftReserve:
    """The draft-model reserve _handle_gpu_memory_settings adds above the 10 GiB floor, MiB, from release ``first``."""

    first: str
    standalone: int  # STANDALONE: a whole second model and its CUDA graphs
    eagle: int  # every other algorithm but NGRAM (which has no draft model): EAGLE, EAGLE3, NEXTN


DRAFT_RESERVES = (
    DraftReserve("0.5.7", 6 * 1024, 2 * 1024),  # v0.5.7 server_args.py _handle_gpu_memory_settings
    DraftReserve("0.5.10", 6 * 1024, 4 * 1024),  # v0.5.10 server_args.py: the EAGLE reserve doubles
    DraftReserve("0.5.14", 0, 0),  # v0.5.14 server_args.py: the speculative reserve is gone from the estimate
)
NO_DRAFT_ALGORITHMS = frozenset({"NGRAM"})
# v0.5.22 arg_groups/memory_hook.py handle_gpu_memory_settings: a default decode graph batch larger than the
# --max-running-requests the user passed is capped at it, before the reserve is computed. The 48 that speculative
# decoding sets comes later (arg_groups/pipeline.py runs handle_speculative_decoding after the memory step), so it
# does not cap the batch (the v0.5.22 and v0.5.23 spec-* goldens keep 160-512).
CAPPED_GRAPH_BATCH_FROM = "0.5.22"
# v0.5.10 server_args.py _handle_piecewise_cuda_graph: "2. Speculative decoding" turns the piecewise graph off (v0.5.11
# drops that condition).
SPEC_NO_PIECEWISE = frozenset({"0.5.10"})


def speculative_algorithm(s: Scenario) -> str | None:
    """The algorithm SGLang runs for the user's --speculative-algorithm (NEXTN runs as EAGLE), or None."""
    name = s.flag(SPECULATIVE_FLAG)
    return SPECULATIVE_ALIASES.get(name.upper(), name.upper()) if name else None


def speculative_reserve(algorithm: str | None, release: str | None) -> int:
    """MiB the release reserves above the floor for this speculative algorithm's draft model (0 when none)."""
    if algorithm is None or algorithm in NO_DRAFT_ALGORITHMS:
        return 0
    current = parse_release(release) if release is not None else parse_release(DRAFT_RESERVES[0].first)
    row = [r for r in DRAFT_RESERVES if parse_release(r.first) <= current][-1]
    return row.standalone if algorithm == "STANDALONE" else row.eagle


def speculative_reserve_reason(algorithm: str, release: str | None) -> str:
    if algorithm in NO_DRAFT_ALGORITHMS:
        return f"{algorithm} has no draft model"
    return f"v{DRAFT_RESERVES[-1].first} and later do not reserve for the draft model"


def capped_graph_batch(max_bs: int, max_running: int | None, release: str | None) -> int:
    capped = release is not None and parse_release(release) >= parse_release(CAPPED_GRAPH_BATCH_FROM)
    return min(max_bs, max_running) if capped and max_running is not None else max_bs


def max_running_requests(s: Scenario) -> int | None:
    """max_running_requests as the memory step sees it: the user's --max-running-requests, else None."""
    return s.int_flag(MAX_RUNNING_FLAG)


# Post-capture KV sizing (v0.5.23): arg_groups/muse_spark_hook.py apply_muse_spark_env_defaults turns on
# SGLANG_ENABLE_POST_CAPTURE_KV_SIZING for MUSE_SPARK_ARCHITECTURES (unless the environment sets it), and where
# overrides.py post_capture_kv_sizing_planned holds, memory_hook.py _handle_gpu_memory_settings keeps only 1536 MiB +
# tp/8 GiB (no activation or graph reserve, no 10 GiB floor) and adjust_mem_fraction_for_vlm takes a flat 8 GiB off.
# Modelled conditions: CUDA, a non-MLA model, decode and prefill graphs on, chunked prefill on; not modelled: the
# environment, --max-prefill-tokens above the largest captured prefill batch, DCP, memory saver, Mooncake, PD.
POST_CAPTURE_PLACE = "arg_groups/muse_spark_hook.py:MUSE_SPARK_ARCHITECTURES"
POST_CAPTURE_FLOOR_MIB, POST_CAPTURE_VLM_MIB = 1536, 8 * 1024


def post_capture_sizing(s: Scenario, release: str, prefill_graph: str | None) -> bool:
    """Whether the release sizes the KV pool after graph capture for this model and layout."""
    if s.no_gpu or s.model is None or prefill_graph in (None, "mla"):
        return False
    if POST_CAPTURE_PLACE not in (named(release) or {}).get(loaded_architecture(s.model, release), ()):
        return False
    if s.has("--disable-cuda-graph") or s.has("--enable-memory-saver") or s.flag("--chunked-prefill-size") == "-1":
        return False
    return chunked_prefill_off(s.model, release) is None


def post_capture_fraction(mem_mib: int, tp: int, vision) -> tuple[float, str]:
    """(mem_fraction_static, the arithmetic) under post-capture sizing (pp 1)."""
    reserved = POST_CAPTURE_FLOOR_MIB + tp / 8 * 1024
    fraction = round((mem_mib - reserved) / mem_mib, 3)
    text = (f"post-capture KV sizing (Muse Spark's SGLANG_ENABLE_POST_CAPTURE_KV_SIZING): reserved = "
            f"{POST_CAPTURE_FLOOR_MIB} + {tp}/8 x 1024 = {reserved:g} MiB; mem_fraction_static = "
            f"({mem_mib} - {reserved:g}) / {mem_mib} = {fraction}")  # fmt: skip
    if vision is not None:
        fraction -= POST_CAPTURE_VLM_MIB / mem_mib
        text += f", - {POST_CAPTURE_VLM_MIB} / {mem_mib} for the vision encoder = {fraction:.4f}"
    return fraction, text


def memory_decision(s: Scenario, version: str) -> Decision:
    release = rules_release(version)
    mem = None if s.no_gpu else s.min_memory_mib

    def memory(s: Scenario):
        if s.no_gpu:
            return False, "no GPU", "GPU memory known"
        return (None if mem is None else True), (f"{mem} MiB (smallest GPU)" if mem else "unknown"), "GPU memory known"

    graph_flags = cuda_graph_max_bs_flags(release)
    conditions = (
        Condition("gpu_memory", "GPU memory of the smallest GPU", memory,
                  "SGLang sizes chunked prefill, CUDA-graph batch and the static memory fraction from it",
                  f"pass --chunked-prefill-size, {graph_flags[-1]}, --mem-fraction-static to choose"),
    )  # fmt: skip
    results = evaluate(conditions, s)
    vision = multimodal_vision(s.model, release)  # the model as the release sees it: multimodal or not
    # HRM-Text turns CUDA graphs off after the fraction is sized (model_hook.py), so its reserve still counts the graph
    prefill_graph = prefill_graph_kind(s, version, capability_steps=False)
    deepep = s.intent.moe_a2a_backend == "deepep" and parse_release(release) >= parse_release(DEEPEP_A2A_RESERVE_FROM)
    speculative, max_running = speculative_algorithm(s), max_running_requests(s)
    breakable = not full_prefill_graph(s.model, release)
    value = memory_defaults(mem, s.tp, s.intent.dp_attention, s.intent.dp_size, vision, prefill_graph, release, deepep,
                            speculative, max_running, breakable, step_prefill_max_bs(s, release))  # fmt: skip
    post_capture = mem is not None and post_capture_sizing(s, release, prefill_graph)
    if post_capture and value["chunked_prefill_size"] is not None:
        # post_capture_kv_sizing_planned (arg_groups/overrides.py) also needs the prefill graph to capture a whole chunk:
        # DeepEP's breakable buckets stop at 2048 tokens, below the chunked-prefill size, so that layout sizes as usual
        settings, _ = prefill_graph_settings(s, release, prefill_graph, memory_tier(mem, s.tp, release)[0])
        largest = next((x.value for x in settings if x.name == "piecewise_cuda_graph_max_tokens"), None)
        post_capture = largest is None or largest >= value["chunked_prefill_size"]
    if post_capture:
        value["mem_fraction_static"], post_capture_text = post_capture_fraction(mem, s.tp, vision)
    explicit = {
        "chunked_prefill_size": s.flag("--chunked-prefill-size"),
        "cuda_graph_max_bs": next(filter(None, (s.flag(f) for f in reversed(graph_flags))), None),
        "mem_fraction_static": s.flag("--mem-fraction-static"),
    }
    for key, raw in explicit.items():
        if raw:
            try:
                value[key] = finite_float(raw) if key == "mem_fraction_static" else int(raw)
            except ValueError:
                continue  # not a number: the estimate stands
    off = None if explicit["chunked_prefill_size"] else chunked_prefill_off(s.model, release)
    if off is not None and value.get("chunked_prefill_size") is not None:
        value["chunked_prefill_size"] = -1
    forced = any(explicit.values())
    state = state_of(results, forced_on=forced)
    if state == NOT_ENABLED:
        value = {k: None for k in value}
    notes = [memory_arithmetic(mem, s.tp, s.intent.dp_attention, s.intent.dp_size, vision, prefill_graph, release, deepep,
                               speculative, max_running)]  # fmt: skip
    if post_capture:
        notes = [post_capture_text]
    if explicit["mem_fraction_static"]:
        notes.append(f"--mem-fraction-static {explicit['mem_fraction_static']} replaces the estimate")
    if s.intent.dp_attention and s.intent.dp_size > 1:
        notes.append(f"with DP attention chunked_prefill_size is divided by dp size {s.intent.dp_size}")
    if off is not None:
        notes.append(f"chunked prefill off (-1): {off}")
    source = Source(
        f"sglang v{release}",
        SERVER_ARGS if parse_release(release) < (0, 5, 19) else MEMORY_HOOK,
        "_handle_gpu_memory_settings, PR #10975",
    )
    graph, graph_note = prefill_graph_settings(s, release, prefill_graph_kind(s, version),
                                               mem and memory_tier(mem, s.tp, release)[0])  # fmt: skip
    return decided("memory_defaults", "GPU-memory-driven defaults", state, results, source, value=value,
                   notes=[*notes, graph_note], settings=graph)  # fmt: skip


# SGLang's KV pool: free memory - weights - total x (1 - mem_fraction_static) must stay above 0.
def memory_need(fraction: float | None, total: float, weights: float) -> float:
    """The MiB a GPU must have free: the weights plus the reserve; only the weights under the automatic fraction."""
    return weights + (1 - fraction) * total if fraction is not None else weights


def memory_short(setting: str, need_gib: float) -> str:
    return (f"with {setting} the model's weights and SGLang's reserve need {need_gib:.1f} GiB per GPU, so SGLang runs"
            " out of memory loading the weights or sizing the KV cache ('Not enough memory. Please try to"
            " increase --mem-fraction-static', CUDA out of memory)")  # fmt: skip


GPU_MEMORY = GpuMemory(
    fraction="mem_fraction_static",
    default=None,  # the memory_defaults decision computes it
    need=memory_need,
    short=memory_short,
    automatic="SGLang's automatic mem_fraction_static",
    source="sglang python/sglang/srt/server_args.py (_handle_gpu_memory_settings), distributed/bootstrap.py"
           " ('The memory capacity is unbalanced. Some GPUs may be occupied by other processes')",
    balance=0.9,  # a rank with less than 0.9 x the free memory of another is "unbalanced"
    unbalanced=", and a rank with under 90% of another's free memory makes SGLang report unbalanced memory",
)  # fmt: skip
