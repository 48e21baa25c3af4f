"""Will the bundled runtime start? It preallocates its KV cache: --max-batch-size slots of --max-model-len tokens.

Before loading anything each rank compares its slice of the weights plus that cache with the GPU's free memory and
refuses at once when they do not fit (launcher/runtime/worker.py ``_check_memory``, worded by
launcher/runtime/config.py ``MemoryEstimate.describe``); the defaults are the runtime's contract
(launcher/runtime/contract.py: MAX_BATCH_SIZE slots, MAX_MODEL_LEN tokens capped at the model's context).
"""

from __future__ import annotations

from collections.abc import Sequence

from advisor.models import dtype_bytes
from advisor.rules import bundled
from advisor.rules.engine import Decision, Release, Scenario
from advisor.rules.startup import Startup, StartupError, kv_bytes_per_token, weights_bytes_per_gpu
from advisor.rules.startup_overhead import ESTIMATE as OVERHEAD_ESTIMATE
from advisor.rules.startup_overhead import MIB, free_before_load_mib
from launcher.runtime.config import GIB, MemoryEstimate
from launcher.runtime.contract import MAX_BATCH_SIZE, MAX_MODEL_LEN

CONTEXT_FLAG = "--max-model-len"
BATCH_FLAG = "--max-batch-size"
SOURCE = "tp-advisor bundled runtime, launcher/runtime/worker.py (_check_memory)"
FIX = "lower --max-model-len or --max-batch-size, raise --tp-size, or use a smaller --dtype"  # the runtime's own


def context_length(s: Scenario) -> tuple[int, str]:
    """--max-model-len, else MAX_MODEL_LEN capped at the model's max_position_embeddings (worker.py)."""
    given = s.int_flag(CONTEXT_FLAG)
    if given is not None and given > 0:
        return given, CONTEXT_FLAG
    limit = s.model.max_position_embeddings if s.model is not None else None
    if limit and limit < MAX_MODEL_LEN:
        return limit, f"the model's max_position_embeddings (below the runtime's default {MAX_MODEL_LEN})"
    return MAX_MODEL_LEN, f"the runtime's default {CONTEXT_FLAG} {MAX_MODEL_LEN}"


def slots(s: Scenario) -> int:
    given = s.int_flag(BATCH_FLAG)
    return given if given is not None and given > 0 else MAX_BATCH_SIZE


def startup(s: Scenario, release: Release, decisions: Sequence[Decision]) -> Startup | None:
    """Weights + the preallocated KV cache against the tightest GPU's free memory."""
    model = s.model
    if model is None:
        return None
    max_len, source = context_length(s)
    batch = slots(s)
    dtype = bundled.dtype(s)
    weights = weights_bytes_per_gpu(model, dtype, s.tp, s.tp)
    per_token = kv_bytes_per_token(model, s.tp, dtype_bytes(dtype) or 2)
    tokens = batch * max_len
    base = dict(context_len=max_len, context_source=source, weights_bytes=weights, kv_tokens=tokens)
    if not s.facts.engine_gpus:  # a CPU run: the host memory is not probed
        return Startup(starts=None, **base)
    if weights is None:
        return Startup(starts=None, unknown=f"the size of {model.id}'s weights is unknown", **base)
    if per_token is None:
        return Startup(starts=None, unknown=f"{model.id}'s KV-cache shape is unknown", **base)
    total_mib = s.min_memory_mib
    if total_mib is None:
        return Startup(starts=None, unknown="the GPU memory is unknown (NVML did not report it)", **base)
    free = free_before_load_mib(total_mib, s.tp) * MIB
    need = MemoryEstimate(weights=int(weights), kv_cache=tokens * per_token)
    common = dict(base, total_bytes=total_mib * MIB, reserve_bytes=total_mib * MIB - free,
                  estimates=(OVERHEAD_ESTIMATE, "weights: parameters x bytes per parameter / tp, estimate, margin +/- 3%;"
                             " activations, CUDA graphs and the FlashInfer fusion workspace are not counted (the runtime's own check does not"
                             " count them either; they are allocated after it)"))  # fmt: skip
    if need.total <= free:
        return Startup(starts=True, sequences=batch, **common)
    message = f"the model needs {need.describe(batch, max_len)} but cuda:0 has {free / GIB:.1f} GiB free; {FIX}"
    error = StartupError(
        id="startup_out_of_memory",
        engine_message=message,
        explanation=(
            f"weights {weights / GIB:.1f} GiB + KV cache {batch} slots x {max_len} tokens x {per_token} bytes"
            f" = {need.total / GIB:.1f} GiB > {free / GIB:.1f} GiB free before load"
        ),  # fmt: skip
        fixes=fixes(s, weights, per_token, free, batch, max_len),
        source=SOURCE,
    )
    return Startup(starts=False, sequences=0, error=error, **common)


def fixes(s: Scenario, weights: float, per_token: int, free: float, batch: int, max_len: int) -> tuple[str, ...]:
    """Ranked: the smallest tp that fits on this node, the longest --max-model-len, the most slots."""
    out = []
    per_node = len(s.facts.engine_gpus)
    tp = s.tp * 2
    while s.model is not None and tp <= per_node:
        dtype = bundled.dtype(s)
        w = weights_bytes_per_gpu(s.model, dtype, tp, tp)
        cell = kv_bytes_per_token(s.model, tp, dtype_bytes(dtype) or 2)
        if (
            w is not None
            and cell is not None
            and w + batch * max_len * cell <= free_before_load_mib(s.min_memory_mib or 0, tp) * MIB
        ):
            out.append(f"--tp {tp}: the smallest tp that fits (weights {w / GIB:.1f} GiB per GPU)")
            break
        tp *= 2
    room = free - weights
    if room > 0:
        longest = int(room // (batch * per_token))
        if longest >= 2:
            out.append(f"-- {CONTEXT_FLAG} {min(longest, max_len - 1)}: the longest that fits {batch} slots")
        most = int(room // (max_len * per_token))
        if most >= 1:
            out.append(f"-- {BATCH_FLAG} {min(most, batch - 1)}: the most {max_len}-token slots that fit")
    if not out:
        out.append("use GPUs with more memory: the weights alone do not fit on this node")
    return tuple(out)
