"""Will SGLang start? Its KV-pool arithmetic at start-up, per modelled release (docs/sglang.md, "Start-up memory").

SGLang measures the free memory once the communicators are up (pre_model_load_memory, GiB), loads the weights,
measures again (available), and gives the KV pool ``available - pre x (1 - mem_fraction_static)`` GiB:

- v0.5.7-v0.5.10: ModelRunnerKVCacheMixin.profile_max_num_token, then init_memory_pool rounds to whole pages and
  raises "Not enough memory ..." when nothing is left (model_executor/model_runner_kv_cache_mixin.py);
- v0.5.11-v0.5.13: _profile_available_bytes and pool_configurator.DefaultPoolConfigurator.calculate_pool_sizes,
  MemoryPoolConfig.__post_init__ raising the same error;
- v0.5.14 and later: _profile_available_bytes itself refuses a budget at or below zero ("Loaded weights leave no GPU
  memory for the KV cache ...", from v0.5.16 in mem_cache/kv_cache_configurator.py); the pool error stays for a budget
  smaller than one page.

Then the scheduler's worker asserts that one request fits ("Memory pool size is too small", managers/tp_worker.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from advisor.models import ModelSpec, dtype_bytes
from advisor.rules.engine import Decision, Release, Scenario, parse_release
from advisor.rules.sglang.context import derived_context_length
from advisor.rules.sglang.model_config import is_mla
from advisor.rules.startup import (
    Startup,
    StartupError,
    kv_bytes_per_token,
    sequences_held,
    weights_bytes_per_gpu,
)
from advisor.rules.startup_overhead import ESTIMATE as OVERHEAD_ESTIMATE
from advisor.rules.startup_overhead import MIB, free_before_load_mib

GIB = 1024**3
CONTEXT_FLAG = "--context-length"
KV_DTYPE_FLAG = "--kv-cache-dtype"
MAX_TOTAL_TOKENS_FLAG = "--max-total-tokens"
FRACTION_FLAG = "--mem-fraction-static"
QUANTIZATION_FLAG = "--quantization"
MAMBA_FULL_MEMORY_RATIO = 0.9  # ServerArgs.mamba_full_memory_ratio: the hybrid models' state pool : KV pool
# v0.5.18+ kv_cache_configurator.mm_runtime_reservation_gb: a multimodal model's embedding cache (SGLANG_VLM_CACHE_SIZE_MB)
# and, with a GPU feature transport, its pool (SGLANG_MM_FEATURE_CACHE_MB), taken out of the KV budget.
MM_RESERVE_FROM = "0.5.18"
VLM_CACHE_MIB = 100
MM_FEATURE_CACHE_MIB = 1024
GPU_TRANSPORTS = ("cuda_ipc", "cuda_vmm")
KV_DTYPE_BYTES = {"fp8_e4m3": 1, "fp8_e5m2": 1, "fp8": 1, "bf16": 2, "bfloat16": 2, "fp16": 2, "float16": 2}
LARGEST_TP = 64  # the fixes look for a tp up to this many GPUs
TOO_SMALL = "Memory pool size is too small"
RUNNING_ZERO = "max_running_request is zero"
RUNNING_CAP_FROM = "0.5.10"  # max_running_requests defaults to at most half the pool

# Where each step lives, release by release.
KV_MIXIN = "python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py"
POOL_CONFIGURATOR = "python/sglang/srt/model_executor/pool_configurator.py"
KV_CONFIGURATOR = "python/sglang/srt/mem_cache/kv_cache_configurator.py"
TP_WORKER = "python/sglang/srt/managers/tp_worker.py"
POOL_CONFIGURATOR_FROM = "0.5.11"  # MemoryPoolConfig raises the pool error
BUDGET_ERROR_FROM = "0.5.14"  # _profile_available_bytes refuses a budget <= 0 itself
KV_CONFIGURATOR_FROM = "0.5.16"  # _profile_available_bytes moves to mem_cache/kv_cache_configurator.py
SHORT_INPUT_UNTIL = "0.5.13"  # up to here the worker also needs max_req_len - 5 > 0 (room for an input)


@dataclass(frozen=True, slots=True)
class PoolInputs:
    """What SGLang's pool arithmetic reads at start-up, on one GPU (the conformance goldens feed the same)."""

    release: str  # the modelled release, "0.5.14"
    pre_model_load_gib: float  # free memory before the weights load (measured by SGLang; estimated here)
    weights_bytes: float  # the weights the load takes on this GPU
    mem_fraction_static: float
    cell_size: int  # KV bytes per token over the layers that keep a KV cache
    page_size: int = 1
    max_total_tokens: int | None = None  # --max-total-tokens
    mamba_ratio: float | None = None  # hybrid linear-attention models: mamba_full_memory_ratio
    context_len: int = 1
    max_running_requests: int | None = None  # --max-running-requests
    mm_reserve_gib: float = 0.0  # multimodal models from v0.5.18: mm_runtime_reservation_gb, out of the KV budget


@dataclass(frozen=True, slots=True)
class PoolOutcome:
    tokens: int  # max_total_num_tokens (negative when the budget is)
    rest_gib: float  # the budget for the KV pool (after the state pool of hybrid models)
    available_gib: float  # free after the weights load
    error: str | None  # "budget" (v0.5.14+ ValueError), "pool" (Not enough memory), "too_small" (tp_worker), "overflow"


OVERFLOW_FIX = "pass --mem-fraction-static as a fraction of the GPU's memory, between 0 and 1 (e.g. 0.8)"


def pool_outcome(p: PoolInputs) -> PoolOutcome:
    """max_total_num_tokens as the release computes it from these inputs, and which start-up error it raises."""
    release = parse_release(p.release)
    available = p.pre_model_load_gib - p.weights_bytes / GIB
    rest = available - p.pre_model_load_gib * (1 - p.mem_fraction_static) - p.mm_reserve_gib
    if available <= 0:  # the weights alone exceed the free memory: no pool, whatever the fraction (on a GPU smaller than
        rest = min(rest, available)  # SGLang's own reserve the fraction is negative and the reserve term grows the pool)
    if p.mamba_ratio is not None and rest > 0:  # handle_max_mamba_cache: the state pool takes its share first
        rest -= rest * p.mamba_ratio / (1 + p.mamba_ratio)
    if rest <= 0 and release >= parse_release(BUDGET_ERROR_FROM):
        return PoolOutcome(0, rest, available, "budget")
    budget = rest * (1 << 30)
    if not math.isfinite(budget):  # a --mem-fraction-static of 1e300: the release's int() of it raises OverflowError
        return PoolOutcome(0, rest, available, "overflow")
    tokens = int(budget) // p.cell_size
    if p.max_total_tokens is not None:
        tokens = min(tokens, p.max_total_tokens)
    tokens = tokens // p.page_size * p.page_size
    if tokens <= 0:
        return PoolOutcome(tokens, rest, available, "pool")
    # _resolve_max_num_reqs (v0.5.10+): min(estimate, pool // 2) requests, which the tp worker asserts is not zero
    if release >= parse_release(RUNNING_CAP_FROM) and p.max_running_requests is None and tokens // 2 == 0:
        return PoolOutcome(tokens, rest, available, "running_zero")
    max_req_len = min(p.context_len - 1, tokens - 1)
    short_input = release <= parse_release(SHORT_INPUT_UNTIL)
    if max_req_len <= 0 or (short_input and max_req_len - 5 <= 0):
        return PoolOutcome(tokens, rest, available, "too_small")
    return PoolOutcome(tokens, rest, available, None)


def engine_message(p: PoolInputs, outcome: PoolOutcome) -> str:
    """The error as the release prints it, its numbers filled in."""
    release = parse_release(p.release)
    fraction = p.mem_fraction_static
    if outcome.error == "budget":
        minimum = 1 - outcome.available_gib / p.pre_model_load_gib
        return (f"ValueError: Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static={fraction}."
                f" Raise --mem-fraction-static above {math.ceil(minimum * 1000) / 1000:.3f} (minimum viable = 1 -"
                f" available/pre = {minimum:.4f}). If using speculative decoding, draft weights are now counted.")  # fmt: skip
    if outcome.error == "pool":
        text = "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."
        if release < (0, 5, 10):  # init_memory_pool's f-string with "=": the expression itself is printed
            return f"{text} Current value: self.server_args.mem_fraction_static={fraction}"
        if release < parse_release(POOL_CONFIGURATOR_FROM):  # MemoryPoolConfig built with the fraction
            return f"{text} Current value: mem_fraction_static={fraction}"
        return text  # from v0.5.11 calculate_pool_sizes builds MemoryPoolConfig without it
    if outcome.error == "running_zero":
        return f"AssertionError: {RUNNING_ZERO}"
    if outcome.error == "overflow":
        return "OverflowError: cannot convert float infinity to integer"
    return f"AssertionError: {TOO_SMALL}"


def error_source(release: str, error: str) -> str:
    current = parse_release(release)
    if error == "too_small":
        return f"sglang v{release}, {TP_WORKER} (TpModelWorker.__init__: max_req_len = min(context_len - 1, pool - 1))"
    if error == "running_zero":
        return (
            f"sglang v{release}, {TP_WORKER} (TpModelWorker.__init__: max_running_requests = min(estimate, pool // 2))"
        )
    if error == "budget":
        where = KV_CONFIGURATOR if current >= parse_release(KV_CONFIGURATOR_FROM) else KV_MIXIN
        return f"sglang v{release}, {where} (_profile_available_bytes)"
    if current >= parse_release(POOL_CONFIGURATOR_FROM):
        return f"sglang v{release}, {POOL_CONFIGURATOR} (MemoryPoolConfig.__post_init__)"
    return f"sglang v{release}, {KV_MIXIN} (profile_max_num_token, init_memory_pool)"


# -- the scenario's inputs -------------------------------------------------------------------------------------------


def context_length(s: Scenario, release: str) -> tuple[int | None, str]:
    """--context-length, else the context length the release derives from the config (advisor/rules/sglang/context.py)."""
    given = s.int_flag(CONTEXT_FLAG)
    if given is not None and given > 0:
        return given, CONTEXT_FLAG
    if s.model is None:
        return None, "no model"
    return derived_context_length(s.model, release)


# configs/model_config.py _get_and_verify_dtype (every modelled release): the config's dtype when it names one of these,
# else float32; under --dtype auto a float32 model is loaded in float16 (bfloat16 for Gemma's model types).
CONFIG_DTYPES = ("half", "float16", "float", "float32", "bfloat16")


def weights_dtype(s: Scenario) -> str | None:
    if s.intent.dtype not in (None, "auto"):
        return s.intent.dtype
    if s.model is None:
        return None
    dtype = s.model.dtype if s.model.dtype in CONFIG_DTYPES else "float32"
    if dtype_bytes(dtype) == 4:
        model_type = s.model.text_model_type or s.model.model_type or ""  # it reads the text config's
        return "bfloat16" if model_type.startswith("gemma") else "float16"
    return dtype


def kv_element_bytes(s: Scenario) -> int:
    """--kv-cache-dtype, else "auto": the model's dtype (2 bytes when unknown)."""
    raw = (s.flag(KV_DTYPE_FLAG) or "auto").lower()
    return KV_DTYPE_BYTES.get(raw) or dtype_bytes(weights_dtype(s)) or 2


def attention_tp(s: Scenario) -> int:
    """The attention's tensor-parallel size: tp / dp_size under DP attention (each DP rank keeps its own pool)."""
    if s.intent.dp_attention and s.intent.dp_size > 1 and s.tp % s.intent.dp_size == 0:
        return s.tp // s.intent.dp_size
    return s.tp


def multimodal_reserve_gib(s: Scenario, release: str) -> float:
    return mm_reserve_gib(release, s.model is not None and s.model.vision is not None, s.flag("--mm-feature-transport"))


def mm_reserve_gib(release: str, multimodal: bool, transport: str | None = None) -> float:
    """mm_runtime_reservation_gb: 100 MiB for a multimodal model (+ 1 GiB with a GPU --mm-feature-transport)."""
    if not multimodal or parse_release(release) < parse_release(MM_RESERVE_FROM):
        return 0.0
    return (VLM_CACHE_MIB + (MM_FEATURE_CACHE_MIB if transport in GPU_TRANSPORTS else 0)) / 1024


def page_size_of(decisions: Sequence[Decision]) -> int:
    for d in decisions:
        for setting in d.settings:
            if setting.name == "page_size" and isinstance(setting.value, int) and setting.value > 0:
                return setting.value
    return 1


def fraction_of(decisions: Sequence[Decision]) -> float | None:
    memory = next((d for d in decisions if d.id == "memory_defaults"), None)
    if memory is None or not isinstance(memory.value, dict):
        return None
    value = memory.value.get("mem_fraction_static")
    return float(value) if value is not None else None


@dataclass(frozen=True, slots=True)
class _Layout:
    """The figures of one layout that the pool arithmetic needs, or why they are unknown."""

    inputs: PoolInputs | None
    unknown: str | None = None
    weights: float | None = None
    total_mib: float | None = None


def quantized_model(s: Scenario, quantization: str | None = None) -> ModelSpec:
    """The model as SGLang loads it: ``quantization`` (a fix being tried), else --quantization for an unquantized
    checkpoint (online quantization, e.g. fp8), else the checkpoint's own."""
    model = s.model
    assert model is not None
    chosen = quantization or (s.flag(QUANTIZATION_FLAG) if not model.quantization else None)
    return replace(model, quantization=chosen) if chosen else model


def _layout(s: Scenario, release: str, fraction: float | None, page: int, quantization: str | None = None) -> _Layout:
    model = quantized_model(s, quantization)
    total = s.min_memory_mib
    attn_tp = attention_tp(s)
    weights = weights_bytes_per_gpu(model, weights_dtype(s), s.tp, attn_tp)
    if weights is None:
        if not model.num_params or model.bytes_per_param(weights_dtype(s)) is None:
            return _Layout(
                None, f"the size of {model.id}'s weights is unknown (parameter count or bytes per parameter)"
            )
        return _Layout(None, f"{model.id}'s attention shape is unknown (DP attention replicates it)")
    cell = kv_bytes_per_token(model, attn_tp, kv_element_bytes(s), is_mla(model, release))  # the release's MLA list
    if cell is None:
        return _Layout(None, f"{model.id}'s KV-cache shape is unknown", weights)
    if total is None:
        return _Layout(None, "the GPU memory is unknown (NVML did not report it)", weights)
    if fraction is None:
        return _Layout(None, "mem_fraction_static is unknown", weights, total)
    context, _ = context_length(s, release)
    hybrid = bool(model.full_attention_interval and model.full_attention_interval > 1)
    inputs = PoolInputs(mm_reserve_gib=multimodal_reserve_gib(s, release),
        release=release, pre_model_load_gib=free_before_load_mib(total, s.tp) * MIB / GIB, weights_bytes=weights,
        mem_fraction_static=fraction, cell_size=cell, page_size=page, max_total_tokens=s.int_flag(MAX_TOTAL_TOKENS_FLAG),
        mamba_ratio=MAMBA_FULL_MEMORY_RATIO if hybrid else None, context_len=context or 1,
        max_running_requests=s.int_flag("--max-running-requests"),
    )  # fmt: skip
    return _Layout(inputs, None, weights, total)


def _estimates(model: ModelSpec, hybrid: bool) -> tuple[str, ...]:
    notes = [
        OVERHEAD_ESTIMATE,
        "weights: parameters x bytes per parameter / tp (quantized formats include their scales), estimate, margin"
        " +/- 3%",
        "the reserve (1 - mem_fraction_static) covers activations, CUDA graphs and the FlashInfer workspace; SGLang's"
        " own estimate, not measured: CUDA-graph capture can still run out of memory when it is too small",
    ]
    if hybrid:
        notes.append(f"hybrid linear attention: the state pool takes {MAMBA_FULL_MEMORY_RATIO}/(1 +"
                     f" {MAMBA_FULL_MEMORY_RATIO}) of the budget first (mamba_full_memory_ratio)")  # fmt: skip
    if model.sliding_window:
        notes.append("sliding-window layers are sized like full ones (no separate SWA pool is modelled), so the KV"
                     " tokens are a lower bound")  # fmt: skip
    return tuple(notes)


def startup(s: Scenario, release: Release, decisions: Sequence[Decision]) -> Startup | None:
    """SGLang's start-up arithmetic for this plan on its tightest GPU, and the error it raises when it does not fit."""
    if s.model is None:
        return None
    context, source = context_length(s, release.rules)
    if s.no_gpu:
        return Startup(context, source, starts=None)
    version = release.rules
    fraction, page = fraction_of(decisions), page_size_of(decisions)
    lay = _layout(s, version, fraction, page)
    hybrid = bool(s.model.full_attention_interval and s.model.full_attention_interval > 1)
    pools = s.tp // attention_tp(s)
    if lay.inputs is None:
        return Startup(context, source, starts=None, total_bytes=lay.total_mib and lay.total_mib * MIB,
                       weights_bytes=lay.weights, fraction=fraction, kv_pools=pools, unknown=lay.unknown)  # fmt: skip
    p = lay.inputs
    outcome = pool_outcome(p)
    total = lay.total_mib * MIB
    common = dict(context_len=context, context_source=source, total_bytes=total, weights_bytes=lay.weights,
                  reserve_bytes=p.pre_model_load_gib * GIB * (1 - fraction), fraction=fraction, kv_pools=pools,
                  estimates=_estimates(s.model, hybrid))  # fmt: skip
    if outcome.error is None:
        tokens = outcome.tokens
        return Startup(starts=True, kv_tokens=tokens, sequences=sequences_held(tokens, pools, context), **common)
    error = StartupError(
        id="kv_cache_too_small" if outcome.error in ("too_small", "running_zero") else "startup_out_of_memory",
        engine_message=engine_message(p, outcome),
        explanation=explain(p, outcome, s.model),
        fixes=fixes(s, version, decisions, p) if outcome.error != "overflow" else (OVERFLOW_FIX,),
        source=error_source(version, outcome.error),
    )
    return Startup(starts=False, kv_tokens=max(outcome.tokens, 0), sequences=0, error=error, **common)


def _gib_figure(gib: float) -> str:
    """One decimal; a figure from an absurd fraction (1e300) in short scientific form, not 300 digits."""
    return f"{gib:.1f}" if abs(gib) < 1e15 else f"{gib:.3g}"


def explain(p: PoolInputs, outcome: PoolOutcome, model: ModelSpec) -> str:
    pre = p.pre_model_load_gib
    text = (f"free before load {pre:.1f} GiB - weights {p.weights_bytes / GIB:.1f} GiB - reserve {pre:.1f} x (1 -"
            f" mem_fraction_static {p.mem_fraction_static:g}) = {_gib_figure(outcome.rest_gib)} GiB for the KV pool")  # fmt: skip
    if outcome.available_gib <= 0:
        text = (f"free before load {pre:.1f} GiB - weights {p.weights_bytes / GIB:.1f} GiB ="
                f" {outcome.available_gib:.1f} GiB: the weights alone exceed the GPU's free memory")  # fmt: skip
    if p.mamba_ratio is not None:
        text += " after the linear-attention state pool"
    if outcome.error == "too_small" and p.context_len < outcome.tokens:
        text += f", {outcome.tokens} tokens; the context length {p.context_len} is too short for one request"
    elif outcome.error in ("too_small", "running_zero"):
        text += f", {outcome.tokens} tokens of {p.cell_size} bytes: too few for one request"
    elif outcome.error == "pool":
        text += f", {max(outcome.tokens, 0)} tokens of {p.cell_size} bytes (page size {p.page_size})"
    return text


# -- fixes -------------------------------------------------------------------------------------------------------------


def _try(s: Scenario, version: str, page: int, quantization: str | None = None) -> tuple[PoolOutcome, _Layout] | None:
    """The pool outcome of scenario ``s`` (its own memory_defaults, so its own reserve), None when unknown."""
    from advisor.rules.sglang.memory import memory_decision

    fraction = fraction_of([memory_decision(s, version)])
    lay = _layout(s, version, fraction, page, quantization)
    return (pool_outcome(lay.inputs), lay) if lay.inputs is not None else None


def _with(s: Scenario, **changes) -> Scenario:
    return Scenario(s.facts, s.model, replace(s.intent, **changes))


def _layout_text(tp: int, nnodes: int, dp_attention: bool, dp: int) -> str:
    text = f"--tp {tp}" + (f" --nnodes {nnodes}" if nnodes > 1 else "")
    return text + (f" --dp-attention --dp-size {dp}" if dp_attention else "")


def _fits(found: tuple[PoolOutcome, _Layout] | None) -> bool:
    return found is not None and found[0].error is None


def _figures(found: tuple[PoolOutcome, _Layout]) -> str:
    outcome, lay = found
    return f"weights {lay.weights / GIB:.1f} GiB per GPU, a KV pool of {outcome.tokens:,} tokens"


def fixes(s: Scenario, version: str, decisions: Sequence[Decision], p: PoolInputs) -> tuple[str, ...]:
    """Ranked: DP attention off, the smallest tp that fits (across nodes), an FP8 checkpoint, a --mem-fraction-static
    that leaves the KV pool room, more nodes."""
    out: list[str] = []
    page = p.page_size
    intent = s.intent
    shortest = 7 if parse_release(version) <= parse_release(SHORT_INPUT_UNTIL) else 2  # what the tp worker accepts
    if p.context_len < shortest:
        out.append(f"-- {CONTEXT_FLAG} {shortest} or more: a request needs room for at least {shortest} tokens")
    if intent.dp_attention and intent.dp_size > 1:
        found = _try(_with(s, dp_attention=False, dp_size=1), version, page)
        if _fits(found):
            out.append(f"drop --dp-attention: attention split over tp {s.tp} ({_figures(found)})")
    per_node = len(s.facts.engine_gpus) or s.gpus_per_node
    tp = s.tp * 2
    while tp <= LARGEST_TP:
        nnodes = max(1, math.ceil(tp / per_node)) if per_node else 1
        if tp % nnodes == 0:
            dp = tp if intent.dp_attention and intent.dp_size == s.tp else intent.dp_size
            found = _try(_with(s, tp=tp, nnodes=nnodes, dp_size=dp), version, page)
            if _fits(found):
                where = f" on {nnodes} nodes" if nnodes > 1 else ""
                out.append(f"{_layout_text(tp, nnodes, intent.dp_attention, dp)}: the smallest tp that fits{where}"
                           f" ({_figures(found)})")  # fmt: skip
                break
        tp *= 2
    else:
        if not out:
            out.append(f"more GPUs: no tp up to {LARGEST_TP} fits with this checkpoint")
    model = s.model
    if model is not None and (quantized_model(s).bytes_per_param(weights_dtype(s)) or 0) > 1:
        found = _try(s, version, page, quantization="fp8")
        if _fits(found):
            out.append(f"an FP8 checkpoint of {model.id} (or --quantization fp8): {_figures(found)} at tp {s.tp}")
    fraction = _fraction_that_fits(p)
    if fraction is not None:
        reserve = p.pre_model_load_gib * (1 - fraction)
        out.append(f"--mem-fraction-static {fraction:g}: the KV pool gets room for one {p.context_len}-token sequence,"
                   f" leaving {reserve:.1f} GiB for activations and CUDA graphs, less than SGLang reserves by default,"
                   " so CUDA-graph capture may run out of memory (lower --cuda-graph-max-bs and --chunked-prefill-size"
                   " with it)")  # fmt: skip
    return tuple(out)


def _fraction_that_fits(p: PoolInputs) -> float | None:
    """The smallest --mem-fraction-static (2 decimals, at most 0.97) whose pool holds one context_len sequence."""
    # From the given fraction up (0.01 at least: a fraction of -1e12, or the one a huge tp leaves, is no place to count
    # up from one hundredth at a time).
    for hundredths in range(min(max(1, math.ceil(p.mem_fraction_static * 100)), 98), 98):
        trial = replace(p, mem_fraction_static=hundredths / 100)
        outcome = pool_outcome(trial)
        if outcome.error is None and outcome.tokens >= min(p.context_len, 1 << 20):
            return hundredths / 100
    return None
