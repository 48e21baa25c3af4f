"""`advisor layouts`: every way to split a model over this machine's GPUs, with the KV cache each one leaves.

For each candidate layout (tp over the powers of two up to the GPUs per node, times ``--nnodes``; SGLang DP attention on
and off for MoE models) the advisor builds the ordinary plan, then sizes memory the way the engine does:

- SGLang (``ModelRunnerKVCacheMixin._profile_available_bytes`` and ``DefaultPoolConfigurator``, sglang v0.5.14
  python/sglang/srt/model_executor/): the KV pool gets ``free_before_load * mem_fraction_static - weights`` bytes, and
  holds that divided by one rank's bytes per token: ``max(1, kv_heads // attention_tp) * (head_dim + v_head_dim) *
  layers * kv_bytes``, or for MLA models the compressed latent ``(kv_lora_rank + qk_rope_head_dim) * layers * kv_bytes``.
  With DP attention every attention-DP rank has its own pool. ``mem_fraction_static`` comes from the plan's
  ``memory_defaults`` decision, so it follows the per-release rules.
- vLLM (``Worker.determine_available_memory``, vllm/v1/worker/gpu_worker.py; ``FullAttentionSpec`` and
  ``MLAAttentionSpec.real_page_size_bytes``, vllm/v1/kv_cache_interface.py): ``total * gpu_memory_utilization -
  weights`` bytes, in blocks of 16 tokens of ``max(1, kv_heads // tp) * (head_size + head_size_v) * kv_bytes`` per
  layer (MLA: one latent of kv_lora_rank + qk_rope_head_dim).
  vLLM also subtracts the activation peak and non-torch memory it measures at start-up, which cannot be known before
  then, so the figure is an upper bound; it refuses to start when one ``--context-len`` sequence does not fit.
- The bundled runtime (launcher/runtime/engine.py) preallocates its KV cache: ``--max-batch-size`` slots of
  ``--max-model-len`` tokens (defaults in launcher/engines.py); a layout fits when the weights plus that cache fit the
  smallest GPU. Its concurrency is the slot count, for sequences no longer than ``--max-model-len``.

The free memory before loading (SGLang) is taken as the GPU's total memory; the CUDA context and communicator buffers
take a little of it in practice.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from advisor.context import plan_for, resolve, usage_error
from advisor.formats import gib, yes_no
from advisor.models import dtype_bytes
from advisor.rules.engine import Scenario, flag_value
from advisor.rules.registry import get as get_engine
from advisor.rules.startup import kv_bytes_per_token, weights_bytes_per_gpu
from launcher.engines import RUNTIME_MAX_BATCH_SIZE, RUNTIME_MAX_MODEL_LEN

if TYPE_CHECKING:
    from advisor.context import Options
    from advisor.facts import Facts
    from advisor.models import ModelSpec
    from advisor.plan import Intent, Plan

LAYOUTS_SCHEMA_VERSION = 1
GIB = 1024**3
MIB = 1024**2
CONTEXT_CAP = 32768  # default --context-len: the model's context, capped here
MIN_SEQUENCES = 8  # a recommended layout holds at least this many sequences of --context-len
# Decisions that pick a setting (a backend, memory sizes) rather than turn an optimization on: left out of `enabled`
# (`advisor check` shows their values).
NO_GPU = "no GPU"
SETTINGS = ("memory_defaults", "attention_backend", "moe_runner_backend", "device")


@dataclass(frozen=True)
class Layout:
    """One candidate layout and what memory it leaves."""

    tp: int
    nnodes: int
    dp_attention: bool
    dp_size: int
    fits: bool | None  # None: GPU memory (or the model's size) unknown
    why_not: str | None
    weights_gib_per_gpu: float | None
    mem_fraction_static: float | None  # SGLang
    gpu_memory_utilization: float | None  # vLLM
    kv_cache_tokens: int | None  # one KV pool's capacity, as the engine logs it (max_total_num_tokens)
    kv_pools: int  # pools of that size: the attention-DP ranks with DP attention, else 1
    max_concurrency: int | None  # sequences of context_len held at once, over all pools
    enabled: tuple[str, ...]
    problems: tuple[str, ...]
    errors: tuple[str, ...] = field(default=(), compare=False)  # the error ids among problems (for the recommendation)
    plan: Plan | None = field(default=None, compare=False, repr=False)

    @property
    def total_kv_tokens(self) -> int:
        return (self.kv_cache_tokens or 0) * self.kv_pools

    @property
    def label(self) -> str:
        text = f"tp {self.tp}"
        if self.nnodes > 1:
            text += f" x {self.nnodes} nodes"
        if self.dp_attention:
            text += f", DP attention (dp {self.dp_size})"
        return text


@dataclass(frozen=True)
class LayoutsReport:
    engine: dict[str, str]
    model: str
    context_len: int
    layouts: tuple[Layout, ...]
    recommended: int | None
    reason: str
    notes: tuple[str, ...] = ()


# -- the arithmetic -----------------------------------------------------------------------------------------------------


def default_context_len(model: ModelSpec | None, engine: str = "sglang") -> int:
    """The model's context capped at CONTEXT_CAP (the cap when the model does not say), or at the engine's own cap (the
    bundled runtime's --max-model-len default, the longest sequence it takes)."""
    length = model.max_position_embeddings if model is not None else None
    cap = get_engine(engine).context_cap or CONTEXT_CAP
    return min(length, cap) if length else cap


def memory_fraction(plan: Plan) -> float | None:
    """The engine's static memory fraction (SGLang's mem_fraction_static, vLLM's gpu_memory_utilization): from a
    decision that reports it, else (an engine with a default) an explicit flag, else its default for the release."""
    memory = get_engine(plan.intent.engine).memory
    if memory is None:
        return None
    for decision in plan.decisions:
        if isinstance(decision.value, dict) and decision.value.get(memory.fraction) is not None:
            return float(decision.value[memory.fraction])
    if memory.default is None:
        return None

    default = memory.default(plan.engine.get("rules"))
    raw = flag_value(plan.intent.overrides, memory.flag)
    try:
        return float(raw) if raw else default
    except ValueError:
        return default


def _kv_dtype_bytes(plan: Plan) -> int:
    """The KV cache's element size: the model's dtype ("auto"), or the engine's own choice for its device."""
    return dtype_bytes(_weights_dtype(plan)) or 2


def _weights_dtype(plan: Plan) -> str | None:
    device_dtype = get_engine(plan.intent.engine).device_dtype
    if device_dtype is not None:

        return device_dtype(Scenario(plan.facts, plan.model, plan.intent))
    dtype = plan.intent.dtype if plan.intent.dtype not in (None, "auto") else None
    return dtype or (plan.model.dtype if plan.model else None)


def _smallest_gpu_mib(plan: Plan) -> int | None:
    return Scenario(plan.facts, plan.model, plan.intent).min_memory_mib


def _gib(n: float) -> str:
    return gib(n)


def size_layout(plan: Plan, context_len: int) -> Layout:
    """The memory columns of one layout from its plan."""
    intent, model, engine = plan.intent, plan.model, get_engine(plan.intent.engine)
    memory = engine.memory
    dp_attention = intent.dp_attention and engine.dp_attention
    attention_tp = intent.tp // intent.dp_size if dp_attention and intent.tp % intent.dp_size == 0 else intent.tp
    pools = intent.tp // attention_tp
    fraction = memory_fraction(plan)
    errors = tuple(dict.fromkeys(p.id for p in plan.problems if p.severity == "error"))
    common = dict(
        tp=intent.tp, nnodes=intent.nnodes, dp_attention=dp_attention, dp_size=intent.dp_size if dp_attention else 1,
        mem_fraction_static=fraction if memory and memory.fraction == "mem_fraction_static" else None,
        gpu_memory_utilization=fraction if memory and memory.fraction == "gpu_memory_utilization" else None,
        kv_pools=pools,
        enabled=tuple(d.id for d in plan.decisions if d.enabled and d.id not in SETTINGS),
        problems=tuple(dict.fromkeys(p.id for p in plan.problems if p.severity in ("error", "warning"))),
        errors=errors, plan=plan,
    )  # fmt: skip

    def row(fits: bool | None, why_not: str | None, weights: float | None = None, tokens: int | None = None,
            concurrency: int | None = None) -> Layout:  # fmt: skip
        gib = round(weights / GIB, 2) if weights is not None else None
        return Layout(fits=fits, why_not=why_not, weights_gib_per_gpu=gib, kv_cache_tokens=tokens,
                      max_concurrency=concurrency, **common)  # fmt: skip

    if model is None:
        return row(None, "the model is unknown")
    weights = weights_bytes_per_gpu(model, _weights_dtype(plan), intent.tp, attention_tp)
    kv_elem = _kv_dtype_bytes(plan)
    per_token = kv_bytes_per_token(model, attention_tp, kv_elem)
    no_gpu = not plan.facts.engine_gpus and not plan.facts.driver.available
    if weights is None:
        return row(None, f"the size of {model.id}'s weights is unknown (parameter count or bytes per parameter)")
    if per_token is None:
        return row(None, f"{model.id}'s KV-cache shape is unknown", weights)

    if memory is None:  # a KV cache preallocated at a fixed size
        slots, max_len = RUNTIME_MAX_BATCH_SIZE, min(RUNTIME_MAX_MODEL_LEN, model.max_position_embeddings or 4096)
        tokens = slots * max_len
        concurrency = slots if context_len <= max_len else 0
        if no_gpu or not plan.facts.engine_gpus:
            return row(None, "CPU run: the host memory is not probed", weights, tokens, concurrency)
        smallest = _smallest_gpu_mib(plan)
        if smallest is None:
            return row(None, "GPU memory unknown", weights, tokens, concurrency)
        cache = tokens * per_token
        if weights + cache > smallest * MIB:
            return row(False, f"weights {_gib(weights)} + KV cache {_gib(cache)} ({slots} slots x {max_len} tokens)"
                       f" > {_gib(smallest * MIB)} GPU", weights, 0, 0)  # fmt: skip
        return row(True, None, weights, tokens, concurrency)

    if no_gpu:
        return row(False, NO_GPU, weights, 0, 0)
    smallest = _smallest_gpu_mib(plan)
    if smallest is None or fraction is None:
        return row(None, "GPU memory unknown", weights)
    total = smallest * MIB
    budget = total * fraction
    reserve = total - budget
    if weights >= budget:
        why = (f"weights {_gib(weights)} + reserve {_gib(reserve)} (1 - {memory.fraction} {fraction:g}) > {_gib(total)}"
               " of the smallest GPU")  # fmt: skip
        return row(False, why, weights, 0, 0)
    available = int(budget - weights)
    tokens = available // (memory.kv_block * per_token) * memory.kv_block  # whole blocks of kv_block tokens
    concurrency = pools * (tokens // context_len)
    if memory.refuses_short_context and tokens < context_len:
        why = (f"the KV cache ({tokens} tokens) cannot hold one {context_len}-token sequence;"
               f" {memory.refuses_short_context}")  # fmt: skip
        return row(False, why, weights, tokens, concurrency)
    return row(True, None, weights, tokens, concurrency)


# -- candidates and the recommendation -----------------------------------------------------------------------------------


def candidate_intents(facts: Facts, model: ModelSpec | None, base: Intent) -> list[Intent]:
    """tp = nnodes x 2^k up to the GPUs of every node; DP attention on and off (dp = tp) for SGLang MoE models."""
    engine = get_engine(base.engine)
    per_node = len(facts.engine_gpus) or engine.demo_tp or 1
    intents: list[Intent] = []
    ranks = 1
    while ranks <= per_node:
        tp = ranks * base.nnodes
        intents.append(replace(base, tp=tp, dp_attention=False, dp_size=1))
        if engine.dp_attention and model is not None and model.is_moe and tp > 1:
            intents.append(replace(base, tp=tp, dp_attention=True, dp_size=tp))
        ranks *= 2
    return intents


def recommend(layouts: tuple[Layout, ...], context_len: int) -> tuple[int | None, str]:
    """Fewest GPUs that fit and hold MIN_SEQUENCES sequences of context_len; ties to more KV tokens.

    Errors every candidate shares (a package mismatch, a missing engine) are about the machine, not the layout, and do
    not steer the choice; a layout with an error of its own is never recommended."""
    shared = set.intersection(*(set(lay.errors) for lay in layouts)) if layouts else set()
    usable = [i for i, lay in enumerate(layouts) if lay.fits and not set(lay.errors) - shared]
    enough = [i for i in usable if (layouts[i].max_concurrency or 0) >= MIN_SEQUENCES]
    if enough:
        best = min(enough, key=lambda i: (layouts[i].tp, -layouts[i].total_kv_tokens))
        lay = layouts[best]
        reason = (f"{lay.label}: the fewest GPUs ({lay.tp}) that fit and hold at least {MIN_SEQUENCES} sequences of"
                  f" {context_len} tokens ({lay.max_concurrency} at once, {lay.total_kv_tokens} KV-cache tokens)")  # fmt: skip
    elif usable:
        best = max(usable, key=lambda i: (layouts[i].max_concurrency or 0, layouts[i].total_kv_tokens, -layouts[i].tp))
        lay = layouts[best]
        reason = (f"{lay.label}: no layout holds {MIN_SEQUENCES} sequences of {context_len} tokens; this one holds the"
                  f" most ({lay.max_concurrency}, {lay.total_kv_tokens} KV-cache tokens); lower --context-len or add"
                  " GPUs for more")  # fmt: skip
    else:
        if any(lay.fits is None for lay in layouts):
            return None, "cannot tell which layout fits: " + next(lay.why_not for lay in layouts if lay.fits is None)
        if any(lay.fits for lay in layouts):
            return None, "every layout that fits has errors of its own (see problems); fix them first"
        if all(lay.why_not == NO_GPU for lay in layouts):
            return None, "this machine has no GPU: run on a GPU node, or pick a simulated one with --profile NAME"
        return None, ("no layout fits on these GPUs: add nodes (--nnodes), use GPUs with more memory, or a quantized"
                      " checkpoint")  # fmt: skip
    if shared:
        reason += f"; errors every layout shares ({', '.join(sorted(shared))}) are about the machine: fix them first"
    return best, reason


def model_notes(model: ModelSpec | None, engine: str) -> tuple[str, ...]:
    """Caveats of the KV arithmetic for this model."""
    if model is None:
        return ()

    spec = get_engine(engine)
    pooled = spec.memory is not None  # it sizes a KV pool from the memory left, and sizes these layers separately
    notes = []
    if model.full_attention_interval and model.full_attention_interval > 1 and pooled:
        notes.append(f"hybrid linear attention: only every {model.full_attention_interval}th layer keeps a KV cache;"
                     " the engine also reserves a state pool for the linear-attention layers, not subtracted here,"
                     " so the KV tokens are an upper bound")  # fmt: skip
    if model.sliding_window and pooled:
        notes.append(f"sliding-window layers ({model.sliding_window} tokens) are counted as full attention layers;"
                     " the engine sizes them separately, so the KV tokens are a lower bound")  # fmt: skip
    return (*notes, *spec.kv_notes)


# -- the command ---------------------------------------------------------------------------------------------------------


def build_layouts(facts: Facts, model: ModelSpec | None, base: Intent, context_len: int | None = None) -> LayoutsReport:
    """Plan and size every candidate layout of ``base`` (its tp, DP attention and dp size are what vary)."""
    if context_len is None:
        context_len = default_context_len(model, base.engine)
    limit = model.max_position_embeddings if model is not None else None
    if context_len < 1 or (limit and context_len > limit):
        bound = f"1..{limit} (the model's context)" if limit else "at least 1"
        raise usage_error(f"--context-len {context_len} is out of range; pass {bound}")
    layouts = tuple(size_layout(plan_for(facts, model, intent), context_len)
                    for intent in candidate_intents(facts, model, base))  # fmt: skip
    recommended, reason = recommend(layouts, context_len)
    engine = dict(layouts[0].plan.engine) if layouts else {"name": base.engine}
    return LayoutsReport(
        engine=engine,
        model=model.id if model is not None else "demo",
        context_len=context_len,
        layouts=layouts,
        recommended=recommended,
        reason=reason,
        notes=model_notes(model, base.engine),
    )


def layouts_for(options: Options, context_len: int | None = None) -> LayoutsReport:
    facts, model, intent = resolve(options)
    return build_layouts(facts, model, intent, context_len)


def layout_dict(lay: Layout) -> dict[str, Any]:
    return {
        "tp": lay.tp,
        "nnodes": lay.nnodes,
        "dp_attention": lay.dp_attention,
        "dp_size": lay.dp_size,
        "fits": lay.fits,
        "why_not": lay.why_not,
        "weights_gib_per_gpu": lay.weights_gib_per_gpu,
        "mem_fraction_static": lay.mem_fraction_static,
        "gpu_memory_utilization": lay.gpu_memory_utilization,
        "kv_cache_tokens": lay.kv_cache_tokens,
        "kv_pools": lay.kv_pools,
        "max_concurrency": lay.max_concurrency,
        "enabled": list(lay.enabled),
        "problems": list(lay.problems),
    }


def report_dict(report: LayoutsReport) -> dict[str, Any]:
    """The `advisor layouts --json` object (advisor/schema/layouts.schema.json)."""
    return {
        "schema_version": LAYOUTS_SCHEMA_VERSION,
        "engine": dict(report.engine),
        "model": report.model,
        "context_len": report.context_len,
        "layouts": [layout_dict(lay) for lay in report.layouts],
        "recommended": report.recommended,
        "reason": report.reason,
        "notes": list(report.notes),
    }


# -- people --------------------------------------------------------------------------------------------------------------

# Headers break only at spaces (a narrow table wraps them over two lines, never inside a word).
COLUMNS = ("", "tp", "nodes", "DP attn", "fits", "weights per GPU", "mem frac", "KV tokens", "seqs", "enabled",
           "problems")  # fmt: skip


def table_rows(report: LayoutsReport) -> list[tuple[str, ...]]:
    """The table's cells, one tuple per layout (the TUI's Layouts tab shows the same)."""
    rows = []
    for i, lay in enumerate(report.layouts):
        fraction = lay.mem_fraction_static if lay.mem_fraction_static is not None else lay.gpu_memory_utilization
        fits = yes_no(lay.fits)
        pools = f" x{lay.kv_pools}" if lay.kv_pools > 1 and lay.kv_cache_tokens else ""
        rows.append((
            "*" if i == report.recommended else "",
            str(lay.tp),
            str(lay.nnodes),
            f"on (dp {lay.dp_size})" if lay.dp_attention else "off",
            fits,
            gib(lay.weights_gib_per_gpu * GIB if lay.weights_gib_per_gpu is not None else None),
            f"{fraction:g}" if fraction is not None else "-",
            (f"{lay.kv_cache_tokens:,}" + pools) if lay.kv_cache_tokens is not None else "?",
            str(lay.max_concurrency) if lay.max_concurrency is not None else "?",
            ", ".join(lay.enabled) or "-",
            ", ".join(lay.problems) or "-",
        ))  # fmt: skip
    return rows


LIST_COLUMNS = ("enabled", "problems")  # lists of ids: one per line in the table, or below it when it is narrow


def print_layouts(report: LayoutsReport, console: Any) -> None:
    from rich.measure import Measurement
    from rich.table import Table

    from advisor.report.render import _box, emit  # rich: only when a table is drawn

    memory = get_engine(report.engine["name"]).memory
    fraction = memory.fraction if memory is not None else None
    version = report.engine.get("version")
    title = (f"{report.model} on {report.engine.get('name')}" + (f" {version}" if version else "")
             + f", sequences of {report.context_len} tokens" + (f" (mem frac: {fraction})" if fraction else ""))  # fmt: skip
    multi_node = any(lay.nnodes > 1 for lay in report.layouts)
    rows = table_rows(report)

    def build(with_lists: bool) -> Table:
        """The id lists one per line; the table is built only where it fits unbroken (see below)."""
        table = Table(title=title, box=_box(console), title_justify="left")
        shown = [i for i, name in enumerate(COLUMNS)
                 if (name != "nodes" or multi_node) and (with_lists or name not in LIST_COLUMNS)]  # fmt: skip
        for i in shown:
            table.add_column(COLUMNS[i], overflow="fold")
        for n, cells in enumerate(rows):
            table.add_row(*(cells[j].replace(", ", "\n") if COLUMNS[j] in LIST_COLUMNS else cells[j] for j in shown),
                          style="bold" if n == report.recommended else None)  # fmt: skip
        return table

    table = build(with_lists=True)
    # the width it takes with nothing broken, measured without the console's limit (which would cap the answer)
    natural = Measurement.get(console, console.options.update_width(10**6), table).maximum
    narrow = natural > console.width
    if narrow:  # the lists go below the table, one line per layout
        table = build(with_lists=False)
    emit(console, table)
    if narrow:
        for lay, cells in zip(report.layouts, rows, strict=True):
            lists = "; ".join(f"{name} {cells[COLUMNS.index(name)]}" for name in LIST_COLUMNS)
            console.print(f"{lay.label}: {lists}")
    for lay in report.layouts:
        if lay.why_not:
            console.print(f"{lay.label}: {lay.why_not}")
    mark = "recommended (*)" if report.recommended is not None else "no recommendation"
    console.print(f"{mark}: {report.reason}")
    for note in report.notes:
        console.print(f"note: {note}")
