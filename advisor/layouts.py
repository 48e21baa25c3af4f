"""`advisor layouts`: every way to split a model over this machine's GPUs, with the KV cache each one leaves.

For each candidate layout (tp over the powers of two up to the GPUs per node, times ``--nnodes``; SGLang DP attention on
and off for MoE models) the advisor builds the ordinary plan and reads its start-up verdict (``Plan.startup``, the
engine's own start-up model: advisor/rules/sglang/startup.py, advisor/rules/vllm/startup.py,
advisor/rules/bundled/startup.py). A layout fits exactly when the plan says the engine starts, so `layouts`, `check`,
`launch` and the app cannot disagree; this module does no memory arithmetic of its own.

The sequence length is the engine's own (its context flag's default, Startup.context_len) unless ``--context-len`` is
given, which is passed to the engine as its context flag (``Engine.context_flag``), so the plan, the command and the
verdict all use it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from advisor.context import plan_for, resolve, usage_error
from advisor.formats import gib, yes_no
from advisor.rules.registry import get as get_engine

if TYPE_CHECKING:
    from advisor.context import Options
    from advisor.facts import Facts
    from advisor.models import ModelSpec
    from advisor.plan import Intent, Plan

LAYOUTS_SCHEMA_VERSION = 1
GIB = 1024**3
MIB = 1024**2
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


# -- one layout: its plan's start-up verdict ------------------------------------------------------------------------


def _gib(n: float) -> str:
    return gib(n)


def size_layout(plan: Plan) -> Layout:
    """The memory columns of one layout, read from its plan's start-up verdict."""
    intent, engine, startup = plan.intent, get_engine(plan.intent.engine), plan.startup
    memory = engine.memory
    dp_attention = intent.dp_attention and engine.dp_attention
    fraction = startup.fraction if startup is not None else None
    errors = tuple(dict.fromkeys(p.id for p in plan.problems if p.severity == "error"))
    common = dict(
        tp=intent.tp, nnodes=intent.nnodes, dp_attention=dp_attention, dp_size=intent.dp_size if dp_attention else 1,
        mem_fraction_static=fraction if memory and memory.fraction == "mem_fraction_static" else None,
        gpu_memory_utilization=fraction if memory and memory.fraction == "gpu_memory_utilization" else None,
        kv_pools=startup.kv_pools if startup is not None else 1,
        enabled=tuple(d.id for d in plan.decisions if d.enabled and d.id not in SETTINGS),
        problems=tuple(dict.fromkeys(p.id for p in plan.problems if p.severity in ("error", "warning"))),
        errors=errors, plan=plan,
    )  # fmt: skip
    if startup is None:
        why = "the model is unknown" if plan.model is None else f"{engine.name} has no start-up model"
        return Layout(fits=None, why_not=why, weights_gib_per_gpu=None, kv_cache_tokens=None, max_concurrency=None,
                      **common)  # fmt: skip
    weights = round(startup.weights_bytes / GIB, 2) if startup.weights_bytes is not None else None
    if startup.error is not None:
        why = f"{startup.error.explanation} ({startup.error.id})"
    elif startup.starts is None:
        no_gpu = not plan.facts.engine_gpus and not plan.facts.driver.available and engine.cpu_run is None
        why = NO_GPU if no_gpu else startup.unknown or "CPU run: the host memory is not probed"
    else:
        why = None
    return Layout(fits=startup.starts, why_not=why, weights_gib_per_gpu=weights, kv_cache_tokens=startup.kv_tokens,
                  max_concurrency=startup.sequences, **common)  # fmt: skip


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
        if layouts and all(lay.why_not == NO_GPU for lay in layouts):
            return None, "this machine has no GPU: run on a GPU node, or pick a simulated one with --profile NAME"
        if any(lay.fits is None for lay in layouts):
            return None, "cannot tell which layout fits: " + next(lay.why_not for lay in layouts if lay.fits is None)
        if any(lay.fits for lay in layouts):
            return None, "every layout that fits has errors of its own (see problems); fix them first"
        return None, ("no layout fits on these GPUs: add nodes (--nnodes), use GPUs with more memory, or a quantized"
                      " checkpoint")  # fmt: skip
    if shared:
        reason += f"; errors every layout shares ({', '.join(sorted(shared))}) are about the machine: fix them first"
    return best, reason


def model_notes(model: ModelSpec | None, engine: str, layouts: tuple[Layout, ...] = ()) -> tuple[str, ...]:
    """Caveats of the KV arithmetic for this model: the estimates the start-up model states, else the shape's."""
    if model is None:
        return ()
    estimates = [e for lay in layouts if lay.plan is not None and lay.plan.startup for e in lay.plan.startup.estimates]
    if estimates:
        return (*dict.fromkeys(estimates), *get_engine(engine).kv_notes)

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
    """Plan and size every candidate layout of ``base`` (its tp, DP attention and dp size are what vary).

    ``context_len`` (``--context-len``) goes to the engine as its context flag, so the plans size and check that
    length; without it each plan uses the engine's own default."""
    engine_spec = get_engine(base.engine)
    if context_len is not None:
        # the bundled runtime's bound (worker.py); SGLang's and vLLM's come from their own rules, after planning
        limit = model.max_position_embeddings if model is not None and not engine_spec.context_too_long else None
        if context_len < 1 or (limit and context_len > limit):
            bound = f"1..{limit} (the model's max_position_embeddings)" if limit else "at least 1"
            raise usage_error(f"--context-len {context_len} is out of range; pass {bound}")
        if engine_spec.context_flag is None:
            raise usage_error(f"--context-len: {base.engine} takes no context-length flag; leave it out")
        base = replace(base, overrides=(*base.overrides, engine_spec.context_flag, str(context_len)))
    layouts = tuple(size_layout(plan_for(facts, model, intent)) for intent in candidate_intents(facts, model, base))
    if context_len is not None and engine_spec.context_too_long:
        # the engine refuses the length whatever the layout: one usage error with its own bound, not a table of refusals
        refusal = next((p for lay in layouts if lay.plan is not None for p in lay.plan.problems
                        if p.id == engine_spec.context_too_long), None)  # fmt: skip
        if refusal is not None:
            raise usage_error(
                f"--context-len {context_len} (the engine's {engine_spec.context_flag}): {refusal.message}; {refusal.fix}"
            )
    if context_len is None:
        context_len = next((lay.plan.startup.context_len for lay in layouts
                            if lay.plan is not None and lay.plan.startup and lay.plan.startup.context_len), 1)  # fmt: skip
    recommended, reason = recommend(layouts, context_len)
    engine = dict(layouts[0].plan.engine) if layouts else {"name": base.engine}
    return LayoutsReport(
        engine=engine,
        model=model.id if model is not None else "demo",
        context_len=context_len,
        layouts=layouts,
        recommended=recommended,
        reason=reason,
        notes=model_notes(model, base.engine, layouts),
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
