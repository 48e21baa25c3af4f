"""Will vLLM start? What a modelled vLLM release computes about GPU memory at start-up (docs/vllm.md, "Start-up memory").

The order is the release's: each worker asks for gpu_memory_utilization x the GPU's total and refuses when less is free
(vllm/v1/worker/gpu_worker.py, init_device; from v0.14 vllm/v1/worker/utils.py); it loads the weights, runs a profile
forward pass of max_num_batched_tokens tokens and, from v0.20, measures the CUDA-graph memory
(Worker.determine_available_memory); what is left of the request is the KV cache. The engine core then checks that one
request of max_model_len fits (check_enough_kv_cache_memory, with estimate_max_model_len's binary search for the message)
and cuts the rest into blocks (get_kv_cache_config_from_groups; get_num_blocks). The KV arithmetic here is checked against
each release's own code by tests/test_vllm_memory_conformance.py (goldens from conformance/vllm/memory.py); what the
release measures on the GPU (the activation peak, non-torch memory, CUDA graphs) is estimated, with the margin stated.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from advisor.models import ModelSpec, dtype_bytes
from advisor.rules.engine import Decision, Release, Scenario, finite_float
from advisor.rules.releases import at
from advisor.rules.startup import (
    Startup,
    StartupError,
    kv_shape,
    sequences_held,
    weights_bytes_per_gpu,
)
from advisor.rules.vllm.architectures import uses_mla
from advisor.rules.vllm.common import GiB, MiB, rules_release
from advisor.rules.vllm.hf_config import vllm_model
from advisor.rules.vllm.memory import memory_value

# Where check_enough_kv_cache_memory lives: v0.33.0 moved it to kv_cache_planning.py (v0.31 and v0.32 not read).
KV_FILES: list[tuple[str, str]] = [("0.12.0", "vllm/v1/core/kv_cache_utils.py"),
                                   ("0.33.0", "vllm/v1/core/kv_cache_planning.py")]  # fmt: skip
WORKER_FILE = "vllm/v1/worker/gpu_worker.py"

# Change tables (first release read with the value; advisor.rules.releases.at), from the released wheels' code.
# The wording of the KV-cache errors: v0.12 "models's" and :.2f GiB; v0.14.1 adds the docs link and rounds GiB with
# format_gib; v0.25.1 spells "model's" and adds the CPU-backend remarks.
MESSAGES: list[tuple[str, str]] = [("0.12.0", "0.12"), ("0.14.1", "0.14"), ("0.25.1", "0.25")]
# v0.29.0: check_enough_kv_cache_memory first holds back one block of every layer (the null block BlockPool keeps).
NULL_BLOCK_HELD: list[tuple[str, bool]] = [("0.12.0", False), ("0.29.0", True)]
# VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS (vllm/envs.py): absent up to v0.17.1, off by default in v0.19.1, on from
# v0.20.2: determine_available_memory then takes the measured CUDA-graph memory out of the KV cache.
CUDAGRAPHS_FROM_KV: list[tuple[str, bool]] = [("0.12.0", False), ("0.20.2", True)]

# --max-model-len -1 / auto: from v0.14.1 vLLM fits max_model_len to the KV cache at start-up (_auto_fit_max_model_len in
# get_kv_cache_configs; the flag's parser human_readable_int_or_auto in vllm/engine/arg_utils.py).
AUTO_FIT: list[tuple[str, bool]] = [("0.12.0", False), ("0.14.1", True)]
AUTO_FIT_FAILS = ("Cannot auto-fit max_model_len: not enough GPU memory available to serve even a single token. Try"
                  " increasing `gpu_memory_utilization`.")  # fmt: skip
_DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}

# Estimates of what the release measures on the GPU at start-up (docs/vllm.md states where each comes from).
# memory_profiling's non_torch_increase: one GPU (logged 0.16 and 0.20 GiB in vLLM PRs #12126, #14447)
NON_TORCH_TP1 = 0.2 * GiB
NON_TORCH_TP = 0.6 * GiB  # with NCCL and custom-allreduce buffers (vLLM logs 0.3-1 GiB)
CUDA_GRAPHS = 0.5 * GiB  # the CUDA-graph pool at the default capture sizes (vLLM logs 0.2-1.5 GiB)
ESTIMATES = (
    "activation peak of the profile run (max_num_batched_tokens tokens, the sampler's max_num_seqs logits): estimate,"
    " within 50% or 0.5 GiB",
    "non-torch memory (NCCL, custom-allreduce buffers): estimate 0.2 GiB at tp 1, 0.6 GiB above, within 0.5 GiB",
    "CUDA-graph memory (v0.20+ takes it out of the KV cache): estimate 0.5 GiB, within 0.5 GiB",
)
TP_CANDIDATES = (1, 2, 4, 8, 16, 32, 64)


@dataclass(frozen=True, slots=True)
class KvSpec:
    """One rank's KV cache per layer, as the release's FullAttentionSpec / MLAAttentionSpec holds it."""

    layers: int
    num_kv_heads: int
    head_size: int
    dtype_bytes: int
    mla: bool  # MLA caches one latent (no separate K and V)
    block_size: int

    @property
    def page_size_bytes(self) -> int:
        """AttentionSpec.page_size_bytes: 2 (K and V) x block x heads x head size x dtype; MLA without the 2."""
        return (1 if self.mla else 2) * self.block_size * self.num_kv_heads * self.head_size * self.dtype_bytes

    @property
    def block_bytes(self) -> int:
        """One block over every layer: what the shared pool spends per block."""
        return self.page_size_bytes * self.layers

    def need_bytes(self, max_model_len: int) -> int:
        """max_memory_usage_bytes over the layers: whole blocks of one max_model_len request."""
        return -(-max_model_len // self.block_size) * self.block_bytes


@dataclass(frozen=True, slots=True)
class KvVerdict:
    """What the release's KV planning says for ``available`` bytes: its block count, and its error if it raises one."""

    num_blocks: int | None
    ok: bool
    message: str | None
    estimated_max_model_len: int | None


def num_blocks(spec: KvSpec, available: int) -> int:
    """get_num_blocks: available // page size // layers, at least 0 (the same as // one block of every layer)."""
    return max(int(available // spec.page_size_bytes // spec.layers), 0)


def estimate_max_model_len(spec: KvSpec, max_model_len: int, available: int) -> int:
    """estimate_max_model_len: the release's binary search over 1..max_model_len for the longest request that fits;
    0 when not even one token does."""

    def fits(length: int) -> bool:
        return spec.need_bytes(length) <= available

    left, right = 1, max_model_len
    if not fits(left):
        return 0
    result = 1
    while left <= right:
        mid = (left + right) // 2
        if fits(mid):
            result, left = mid, mid + 1
        else:
            right = mid - 1
    return result


def _gib(release: str, value: float) -> str:
    """GiB as the message prints it: f"{x:.2f}" in v0.12, format_gib (str(round(x, 2))) from v0.14.1."""
    return f"{value / GiB:.2f}" if at(MESSAGES, release) == "0.12" else f"{round(value / GiB, 2)}"


DOCS_LINK = "See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."


def no_memory_message(release: str) -> str:
    style = at(MESSAGES, release)
    text = (
        "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine"
    )
    if style == "0.12":
        return text + "."
    if style == "0.14":
        return f"{text}. {DOCS_LINK}"
    return f"{text} (this flag also controls CPU memory reservation on the CPU backend, despite its name). {DOCS_LINK}"


def too_short_message(release: str, max_model_len: int, needed: int, available: int, estimate: int) -> str:
    style = at(MESSAGES, release)
    owner = "models's" if style in ("0.12", "0.14") else "model's"
    head = (
        f"To serve at least one request with the {owner} max seq len ({max_model_len}), ({_gib(release, needed)} GiB KV"
        f" cache is needed, which is larger than the available KV cache memory ({_gib(release, available)} GiB)."
    )
    estimated = (
        f"Based on the available memory, the estimated maximum model length is {estimate}." if estimate > 0 else ""
    )
    if style == "0.12":
        return f"{head} {estimated} Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."
    estimated = f"{estimated} " if estimated else ""
    util = (
        "`gpu_memory_utilization`"
        if style == "0.14"
        else "`gpu_memory_utilization` (which also controls CPU memory on the CPU backend)"
    )
    return (f"{head} {estimated}Try increasing {util} or decreasing `max_model_len` when initializing the engine."
            f" {DOCS_LINK}")  # fmt: skip


def kv_verdict(release: str, spec: KvSpec, max_model_len: int, available: int) -> KvVerdict:
    """check_enough_kv_cache_memory, then the block count of get_kv_cache_configs, under ``release``."""
    blocks = num_blocks(spec, available) if available > 0 else None
    check = available - spec.block_bytes if at(NULL_BLOCK_HELD, release) else available
    if check <= 0:
        return KvVerdict(blocks, False, no_memory_message(release), None)
    needed = spec.need_bytes(max_model_len)
    if needed > check:
        estimate = estimate_max_model_len(spec, max_model_len, check)
        message = too_short_message(release, max_model_len, needed, check, estimate)
        return KvVerdict(blocks, False, message, estimate or None)  # 0: not even one token fits (no estimate printed)
    return KvVerdict(blocks, True, None, None)


# -- the whole start-up, from a scenario ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Inputs:
    """What one start-up's arithmetic reads; the fixes vary one of them and compute again."""

    release: str
    model: ModelSpec
    dtype: str | None
    tp: int
    total: float  # bytes of the tightest GPU
    free: float | None  # bytes free on it now, when known
    utilization: float
    max_model_len: int
    block_size: int
    kv_dtype_bytes: int
    batched_tokens: int
    max_num_seqs: int
    cuda_graphs: bool


@dataclass(frozen=True, slots=True)
class Budget:
    weights: float
    activation: float
    non_torch: float
    cuda_graphs: float  # taken out of the KV cache (0 before v0.20, or without CUDA graphs)
    requested: float
    spec: KvSpec

    @property
    def reserve(self) -> float:
        return self.activation + self.non_torch + self.cuda_graphs

    @property
    def margin(self) -> float:
        """How far the estimated part of the reserve may be off (the margins ESTIMATES states)."""
        return max(0.5 * self.activation, 0.5 * GiB) + 0.5 * GiB + (0.5 * GiB if self.cuda_graphs else 0.0)

    @property
    def available(self) -> int:
        """Worker.determine_available_memory: the request less the weights and what the profile run measured."""
        return int(self.requested - self.weights - self.reserve)


def activation_peak(model: ModelSpec, tp: int, tokens: int, seqs: int, act_bytes: int) -> float:
    """Estimated torch peak of the profile run: the widest per-token tensors of one layer for max_num_batched_tokens
    tokens (the residual stream and its norm copies, the MLP's gate and up projections or the routed experts' slice)
    plus the sampler's float32 logits for max_num_seqs requests. Against vLLM's logged "PyTorch activation peak
    memory": Llama-3-8B on an H100, 1.26 GiB logged (PR #10511), 1.4 GiB here."""
    hidden = model.hidden_size or 0
    if model.is_moe:
        ffn = (model.experts_per_token or 1) * (model.moe_intermediate_size or model.intermediate_size or 0)
    else:
        ffn = model.intermediate_size or 4 * hidden
    per_token = act_bytes * (4 * hidden + 3 * ffn // max(tp, 1))
    return tokens * per_token + seqs * (model.vocab_size or 0) * 4


def kv_spec(inputs: Inputs) -> KvSpec | None:
    shape = kv_shape(inputs.model, inputs.tp, uses_mla(inputs.model, inputs.release))  # the release's is_deepseek_mla
    if shape is None:
        return None
    return KvSpec(shape.layers, shape.heads, shape.head_size, inputs.kv_dtype_bytes, shape.mla, inputs.block_size)


def budget(inputs: Inputs) -> Budget | None:
    weights = weights_bytes_per_gpu(inputs.model, inputs.dtype, inputs.tp, inputs.tp)
    spec = kv_spec(inputs)
    if weights is None or spec is None:
        return None
    act = dtype_bytes(inputs.dtype) or 2
    graphs = CUDA_GRAPHS if inputs.cuda_graphs and at(CUDAGRAPHS_FROM_KV, inputs.release) else 0.0
    return Budget(weights=weights,
                  activation=activation_peak(inputs.model, inputs.tp, inputs.batched_tokens, inputs.max_num_seqs, act),
                  non_torch=NON_TORCH_TP1 if inputs.tp == 1 else NON_TORCH_TP, cuda_graphs=graphs,
                  requested=inputs.total * inputs.utilization, spec=spec)  # fmt: skip


def fits(inputs: Inputs) -> bool:
    b = budget(inputs)
    return b is not None and kv_verdict(inputs.release, b.spec, inputs.max_model_len, b.available).ok


def free_memory_message(release: str, free: float, total: float, utilization: float, requested: float) -> str:
    device = "" if at(MESSAGES, release) == "0.12" else "cuda:0 "
    return (f"Free memory on device {device}({round(free / GiB, 2)}/{round(total / GiB, 2)} GiB) on startup is less than"
            f" desired GPU memory utilization ({utilization}, {round(requested / GiB, 2)} GiB). Decrease GPU memory"
            " utilization or reduce GPU memory used by other processes.")  # fmt: skip


def parse_max_model_len(raw: str) -> int | None:
    """--max-model-len as vLLM's parser reads it (human_readable_int_or_auto): "32768", "32k" (32000), "32K" (32768),
    "-1" or "auto" (-1, fit to memory); None for what it refuses."""
    value = raw.strip()
    if value == "-1" or value.lower() == "auto":
        return -1
    if value[-1:] in _DECIMAL or value[-1:] in _BINARY:
        number, suffix = value[:-1], value[-1]
        try:
            return int(finite_float(number) * _DECIMAL[suffix]) if suffix in _DECIMAL else int(number) * _BINARY[suffix]
        except (ValueError, OverflowError):  # "1e999k": int(inf); "1e400k" is finite but "1e308" x 1000 is not
            return None
    try:
        return int(value)
    except ValueError:
        return None


def startup(s: Scenario, release: Release, decisions: Sequence[Decision]) -> Startup:
    """vLLM's start-up verdict for the plan (Engine.startup)."""
    version = rules_release(release.version)
    s = replace(s, model=vllm_model(s.model, release.version))  # as vLLM's config class holds it (decide does the same)
    memory = next((d.value for d in decisions if d.id == "memory_defaults"), None) or memory_value(s, version)
    given = s.flag("--max-model-len")
    source = "--max-model-len" if given else "the model's max_position_embeddings (vLLM's derived max_model_len)"
    length = memory["max_model_len"]
    model = s.model
    parsed = parse_max_model_len(given) if given else None
    auto_fit = parsed == -1 and at(AUTO_FIT, version)
    if auto_fit:
        length = model.max_position_embeddings if model else None
        source = "--max-model-len auto (vLLM fits it to the KV cache)"
    elif parsed and parsed > 0:
        length = parsed
    if model is None:
        return Startup(length, source, None, unknown="the model's shape (give --model)")
    total_mib = s.min_memory_mib
    if total_mib is None:
        return Startup(length, source, None, unknown="the GPUs' memory (give --facts from the GPU node or --profile)")
    if not length:
        return Startup(None, source, None, unknown="the model's max_position_embeddings (give --max-model-len)")
    dtype = s.intent.dtype if s.intent.dtype not in (None, "auto") else model.dtype
    kv_dtype = memory["kv_cache_dtype"]
    kv_bytes = 1 if str(kv_dtype).startswith("fp8") else (dtype_bytes(dtype) or 2)
    compilation = next((d.value for d in decisions if d.id == "compilation"), None) or {}
    free_mib = [g.memory_free_mib for g in s.gpus]
    inputs = Inputs(release=version, model=model, dtype=dtype, tp=s.tp, total=total_mib * MiB,
                    free=min(free_mib) * MiB if free_mib and None not in free_mib else None,
                    utilization=memory["gpu_memory_utilization"], max_model_len=length, block_size=memory["block_size"],
                    kv_dtype_bytes=kv_bytes, batched_tokens=memory["max_num_batched_tokens"] or 2048,
                    max_num_seqs=memory["max_num_seqs"] or 256,
                    cuda_graphs=compilation.get("cudagraph_mode", "NONE") not in ("NONE", None)
                    and not s.has("--enforce-eager"))  # fmt: skip
    b = budget(inputs)
    if b is None:
        return Startup(length, source, None, total_bytes=inputs.total, fraction=inputs.utilization,
                       unknown="the model's size or KV shape (num_params, layers, KV heads, head_dim)")  # fmt: skip
    if auto_fit:  # the longest length that fits, at most the model's; nothing fits: vLLM's own error
        check = b.available - b.spec.block_bytes if at(NULL_BLOCK_HELD, version) else b.available
        fitted = estimate_max_model_len(b.spec, length, check) if b.available > 0 else 0
        if fitted <= 0:
            error = StartupError("startup_out_of_memory", AUTO_FIT_FAILS,
                                 f"{b.available / GiB:.2f} GiB left for the KV cache, give or take {b.margin / GiB:.1f}"
                                 " GiB (the estimates' margin)", _fixes(s, replace(inputs, max_model_len=1)),
                                 f"vllm v{version}, {at(KV_FILES, version)} (_auto_fit_max_model_len)")  # fmt: skip
            return Startup(length, source, False, total_bytes=inputs.total, weights_bytes=b.weights,
                           reserve_bytes=b.reserve, fraction=inputs.utilization, kv_tokens=0, sequences=0, error=error,
                           estimates=ESTIMATES + _model_caveats(model))  # fmt: skip
        length = min(length, fitted)
        inputs = replace(inputs, max_model_len=length)
    verdict = kv_verdict(version, b.spec, length, b.available)
    tokens = verdict.num_blocks * b.spec.block_size if verdict.num_blocks is not None else 0
    error = _error(s, inputs, b, verdict)
    pools = max(1, s.intent.dp_size)  # each data-parallel replica is an engine with its own KV cache
    return Startup(
        context_len=length, context_source=source, starts=error is None, total_bytes=inputs.total,
        weights_bytes=b.weights, reserve_bytes=b.reserve, fraction=inputs.utilization, kv_tokens=tokens,
        kv_pools=pools, sequences=sequences_held(tokens, pools, length), error=error,
        estimates=ESTIMATES + _model_caveats(model),
    )  # fmt: skip


def _model_caveats(model: ModelSpec) -> tuple[str, ...]:
    if model.sliding_window or (model.full_attention_interval or 0) > 1:
        return ("sliding-window / linear-attention layers: vLLM groups them apart (hybrid KV cache); modelled as full"
                " attention of its KV layers, an upper bound of the KV need",)  # fmt: skip
    return ()


def _error(s: Scenario, inputs: Inputs, b: Budget, verdict: KvVerdict) -> StartupError | None:
    util, total = inputs.utilization, inputs.total
    numbers = (f"weights {b.weights / GiB:.1f} GiB + estimated activations, non-torch memory and CUDA graphs"
               f" {b.reserve / GiB:.1f} GiB of gpu_memory_utilization {util} x {total / GiB:.1f} GiB ="
               f" {b.requested / GiB:.1f} GiB leave {b.available / GiB:.2f} GiB for the KV cache, give or take"
               f" {b.margin / GiB:.1f} GiB (the estimates' margin)")  # fmt: skip
    if b.weights > b.requested:
        numbers = (f"the weights alone, {b.weights / GiB:.1f} GiB a GPU, exceed gpu_memory_utilization {util} x"
                   f" {total / GiB:.1f} GiB = {b.requested / GiB:.1f} GiB")  # fmt: skip
    if inputs.free is not None and inputs.free < b.requested:
        return StartupError(
            "startup_memory_in_use", free_memory_message(inputs.release, inputs.free, total, util, b.requested),
            f"{(total - inputs.free) / GiB:.1f} GiB of the GPU is already in use",
            _fixes(s, inputs, utilization_below=inputs.free / total),
            f"vllm v{inputs.release}, {WORKER_FILE if inputs.release == '0.12.0' else 'vllm/v1/worker/utils.py'}"
            " (Worker.init_device)")  # fmt: skip
    if verdict.ok:
        return None
    return StartupError(
        "startup_out_of_memory" if b.available <= 0 else "kv_cache_too_small", verdict.message or "", numbers, _fixes(s, inputs),
        f"vllm v{inputs.release}, {at(KV_FILES, inputs.release)} (check_enough_kv_cache_memory); {WORKER_FILE}"
        " (determine_available_memory)")  # fmt: skip


def _fixes(s: Scenario, inputs: Inputs, utilization_below: float | None = None) -> tuple[str, ...]:
    """Ranked fixes, each with the number that works: the longest max_model_len that fits (vLLM's own estimate), a
    gpu_memory_utilization, an fp8 KV cache, the smallest tp, an FP8 checkpoint, more nodes."""
    fixes: list[str] = []
    b = budget(inputs)
    if utilization_below is not None:
        fixes.append(f"--gpu-memory-utilization {int(utilization_below * 100) / 100:.2f} (what is free now), or free"
                     " the GPU of other processes")  # fmt: skip
        return tuple(fixes)
    if b is not None:
        verdict = kv_verdict(inputs.release, b.spec, inputs.max_model_len, b.available)
        if verdict.estimated_max_model_len:
            fixes.append(f"--max-model-len {verdict.estimated_max_model_len} (vLLM's own estimate of the longest that"
                         " fits)")  # fmt: skip
    for percent in range(int(inputs.utilization * 100) + 1, 96):
        if fits(_with(inputs, utilization=percent / 100)):
            fixes.append(f"--gpu-memory-utilization {percent / 100:.2f}")
            break
    if inputs.kv_dtype_bytes > 1 and fits(_with(inputs, kv_dtype_bytes=1)):
        fixes.append("--kv-cache-dtype fp8 (halves the KV cache per token)")
    gpus_here = max(len(s.facts.engine_gpus), 1)
    heads = inputs.model.num_heads or 0
    for tp in TP_CANDIDATES:
        if tp <= inputs.tp or (heads and heads % tp):
            continue
        if fits(_with(inputs, tp=tp)):
            if tp <= gpus_here:
                fixes.append(f"--tp {tp} (the smallest tp that fits)")
            else:
                per_node = max(gpus_here, 1)
                fixes.append(f"--tp {tp} --nnodes {-(-tp // per_node)} (more nodes: the smallest tp that fits needs"
                             f" {tp} GPUs)")  # fmt: skip
            break
    if not inputs.model.quantization and (dtype_bytes(inputs.dtype) or 2) > 1:
        fp8 = _with(inputs, model=_quantized(inputs.model))
        fb = budget(fp8)
        if fb is not None and fits(fp8):
            fixes.append(f"an FP8 checkpoint of the model (weights {fb.weights / GiB:.1f} GiB a GPU instead of"
                         f" {b.weights / GiB:.1f})" if b else "an FP8 checkpoint of the model")  # fmt: skip
    return tuple(fixes) or ("a GPU with more memory",)


def _with(inputs: Inputs, **changes) -> Inputs:
    return replace(inputs, **changes)


def _quantized(model: ModelSpec) -> ModelSpec:
    return replace(model, quantization="fp8")
