"""A Plan (and the machine's facts) as rich renderables for people: the `check`, `explain` and `probe` reports.

The JSON object is advisor/report/data.py; advisor.report loads this module only when something is drawn, so a --json
run does without rich.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console, Group, RenderableType
from rich.rule import Rule
from rich.segment import Segment
from rich.table import Table
from rich.text import Text as RichText

from advisor.render_facts import (
    GPU_COLUMNS,
    gpu_overview,
    gpu_rows,
    machine_summary,
    package_rows,
    topology_legend,
    topology_matrix,
)
from advisor.report.data import SEVERITIES, jsonable, summary
from advisor.rules import registry
from advisor.sanitize import clean
from launcher.engines import missing_runtime_modules, runtime_install_commands

if TYPE_CHECKING:
    from advisor.facts import Facts
    from advisor.plan import Plan
    from advisor.rules.engine import Decision, Problem, ReleaseOutcome


# -- rich --------------------------------------------------------------------------------------------------------------

STATE_STYLES = {
    "auto-enabled": "bold green",
    "forced-on": "bold cyan",
    "not-enabled": "yellow",
    "forced-off": "magenta",
    "unavailable": "dim",
}
SEVERITY_STYLES = {"error": "bold red", "warning": "yellow", "info": "cyan"}
STATUS_STYLES = {"ok": "green", "mismatch": "bold red", "missing": "bold red", "not installed": "dim"}


# Columns for output that reaches no terminal and has no COLUMNS to follow (a log file, CI).
FALLBACK_WIDTH = 120
# Widths laid out at most / at least: tables narrower than MIN_WIDTH are unreadable (the terminal wraps lines instead),
# and a COLUMNS of 99999 would make every section rule 99999 characters long.
MIN_WIDTH, MAX_WIDTH = 40, 1000


def output_width(stream: Any) -> int:
    """The columns to lay out output for ``stream``: COLUMNS when set, else the width of the terminal it writes to,
    else of the terminal the user watches through stderr or stdin (`advisor check | less`), else FALLBACK_WIDTH;
    kept within MIN_WIDTH..MAX_WIDTH."""
    return max(MIN_WIDTH, min(MAX_WIDTH, _wanted_width(stream)))


def _wanted_width(stream: Any) -> int:
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    for candidate in (stream, sys.stderr, sys.stdin):
        try:
            if candidate is not None and candidate.isatty():
                columns = os.get_terminal_size(candidate.fileno()).columns
                if columns > 0:  # a pty nobody sized says 0
                    return columns
        except (AttributeError, OSError, ValueError):
            continue
    return FALLBACK_WIDTH


def make_console(file: Any = None, stderr: bool = False) -> Console:
    """A console that honours NO_COLOR and, off a terminal, writes plain text (no colours, ASCII marks) as wide as
    :func:`output_width` says."""
    stream = file or (sys.stderr if stderr else sys.stdout)
    width = output_width(stream)  # on a terminal too: rich would take a COLUMNS of any size as it is
    # markup and emoji off: values such as PCI bus ids ("00000000:AB:00.0") and "[ids]" must print as they are
    return CleanConsole(
        file=stream,
        width=width,
        no_color=bool(os.environ.get("NO_COLOR")) or None,
        highlight=False,
        markup=False,
        emoji=False,
    )


class Text(RichText):
    """rich's Text, except that the control characters rich drops on the way in (BEL, backspace, vertical tab, form
    feed, carriage return) are shown escaped, as :func:`advisor.sanitize.clean` shows every other one: a value that
    holds them is printed as it is, not silently shortened."""

    def __init__(self, text: str = "", *args: Any, **kwargs: Any) -> None:
        super().__init__(clean(text), *args, **kwargs)

    def append(self, text: Any, style: Any = None) -> Text:
        return super().append(clean(text) if isinstance(text, str) else text, style)


class CleanConsole(Console):
    """A rich Console whose every rendered text segment goes through advisor.sanitize.clean (ASCII-only off a
    terminal), so what a machine, a file or a package says never reaches the terminal as escape sequences."""

    def render_str(self, text: str, **kwargs: Any) -> RichText:
        return super().render_str(clean(text), **kwargs)  # a plain str cell: escaped before rich drops controls

    def render(self, renderable, options=None):
        ascii_only = not self.is_terminal
        for segment in super().render(renderable, options):
            if segment.control or not segment.text:
                yield segment
            else:
                yield Segment(clean(segment.text, ascii_only=ascii_only), segment.style, segment.control)


def marks(console: Console) -> dict[object, str]:
    """Checklist marks: unicode on a terminal that can show it, ASCII otherwise."""
    if _fancy(console):
        return {True: "✓", False: "✗", None: "?"}
    return {True: "[ok]", False: "[x]", None: "[?]"}


def _box(console: Console):
    return box.ROUNDED if _fancy(console) else box.ASCII


def machine_renderable(facts: Facts, console: Console) -> RenderableType:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    for label, value in machine_summary(facts):
        grid.add_row(label, value)
    if not facts.gpus:
        return _section("Machine", grid, console)
    columns, rows = list(GPU_COLUMNS), gpu_rows(facts)
    natural = sum(max(len(c) for c in column) for column in zip(columns, *rows, strict=True)) + 3 * (len(columns) - 1)
    if natural > console.width and len({row[1] for row in rows}) == 1:
        # Narrow: the name would wrap onto several lines per GPU, and the GPUs line above already names the model.
        columns, rows = columns[:1] + columns[2:], [row[:1] + row[2:] for row in rows]
    table = Table(box=_box(console), show_edge=False, pad_edge=False)
    for col in columns:
        table.add_column(col, no_wrap=col in ("GPU", "PCI bus"))  # a bus id cut to "00000000…" says nothing
    for row in rows:
        table.add_row(*row)

    return _section("Machine", Group(grid, table), console)


def topology_renderable(facts: Facts, console: Console) -> RenderableType | None:
    """The GPU x GPU matrix as `nvidia-smi topo -m` lays it out, with the legend of the codes it shows."""
    if not facts.gpus:
        return None


    header, rows = topology_matrix(facts)
    table = Table(box=None, pad_edge=False, padding=(0, 2), show_edge=False)
    for name in header:
        table.add_column(name, style="bold" if not name else None)
    for row in rows:
        cells = [row[0]] + [_topology_cell(cell) for cell in row[1:]]
        table.add_row(*cells)
    legend = Text()
    for code, meaning in topology_legend(rows):
        legend.append(f"  {code:<5}", style="bold")
        legend.append(f"{meaning}\n")
    return _section("Topology (like nvidia-smi topo -m)", Group(table, Text(""), legend), console)


def _topology_cell(cell: str) -> Any:
    style = "green" if cell.startswith("NV") else "dim" if cell == "X" else "yellow" if cell == "?" else None
    return Text(cell, style=style or "")


def packages_renderable(facts: Facts, problems: tuple[Problem, ...], console: Console) -> RenderableType:
    rows = package_rows(facts, problems)
    if not rows:
        return _section("Packages", Text("none of the watched packages is installed", style="yellow"), console)
    table = Table(box=_box(console), show_edge=False, pad_edge=False)
    for col in ("package", "version", "status", "detail"):
        table.add_column(col)
    for row in rows:
        status = row.status + (f" ({', '.join(row.problems)})" if row.problems else "")
        table.add_row(row.name, row.version, Text(status, style=STATUS_STYLES.get(row.status, "")), row.detail)
    return _section("Packages", table, console)


def scenario_renderable(plan: Plan, console: Console, machine: bool = False) -> RenderableType:
    """Engine, model and layout (and, with ``machine``, the one-line machine: for views without the Machine section)."""
    intent, model = plan.intent, plan.model
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    if machine:
        grid.add_row("machine", f"{plan.facts.source}: {gpu_overview(plan.facts)}")
    engine = plan.engine
    rules = engine.get("rules")
    version = engine.get("version") or "?"
    grid.add_row("engine", f"{engine.get('name', intent.engine)} {version}" + (f" (rules of {rules})" if rules else ""))
    if model is None:
        grid.add_row("model", "the bundled runtime's demo model (random weights)")
    else:
        shape = [
            f"{model.architecture}",
            f"hidden {model.hidden_size}" if model.hidden_size else None,
            f"{model.num_layers} layers" if model.num_layers else None,
            f"{model.num_heads}/{model.num_kv_heads} heads/kv" if model.num_heads else None,
            f"{model.num_experts} experts, top-{model.experts_per_token}" if model.num_experts else None,
            model.dtype,
            model.quantization,
        ]
        grid.add_row("model", f"{model.id} ({model.origin})")
        if model.origin == "hf-cache" and model.notes:
            grid.add_row("", model.notes)  # which snapshot, and why
        grid.add_row("", ", ".join(s for s in shape if s))
    layout = [f"tp {intent.tp}", f"nnodes {intent.nnodes}"]
    if intent.dp_attention:
        layout.append(f"dp attention, dp size {intent.dp_size}")
    elif intent.dp_size != 1:
        layout.append(f"dp size {intent.dp_size}")
    if intent.moe_a2a_backend != "none":
        layout.append(f"moe a2a {intent.moe_a2a_backend}")
    grid.add_row("layout", ", ".join(layout))
    return _section("Scenario", grid, console)


def decision_renderable(
    decision: Decision, console: Console, full: bool = False, matrix: tuple[ReleaseOutcome, ...] = ()
) -> RenderableType:
    """A decision as a checklist: each condition with observed vs expected; why and how to change it for failed or
    undecided conditions (for every condition when ``full``)."""

    mark = marks(console)
    head = Text()
    head.append(decision.title, style="bold")
    head.append(f"  [{decision.id}]  ", style="dim")
    head.append(decision.state, style=STATE_STYLES.get(decision.state, ""))
    if decision.value is not None:
        head.append(f"  value: {_value_text(decision.value)}")
    parts: list[Any] = [head]
    checklist = Table.grid(padding=(0, 1))
    checklist.add_column(no_wrap=True)
    checklist.add_column(overflow="fold")  # a long path or value folds; it is never cut
    for cond in decision.conditions:
        style = {True: "green", False: "bold red", None: "yellow"}[cond.ok]
        observed, expected = _value_text(cond.observed), _value_text(cond.expected)
        if not full:
            expected = _shorten(expected, f"`advisor explain {decision.id}` shows all")
        lines = [
            Text(cond.text, style="" if cond.ok else "bold"),
            Text(f"observed: {observed}; expected: {expected}", style="dim"),
        ]
        if full or cond.ok is not True:
            lines.append(Text(f"why: {cond.why}"))
            lines.append(Text(f"to change: {cond.fix}"))
        checklist.add_row(Text(f"  {mark[cond.ok]}", style=style), Group(*lines))
    if decision.conditions:
        parts.append(checklist)
    if decision.settings:  # a grid of its own, so the rows below keep their alignment; why: in the notes
        settings = Table.grid(padding=(0, 1))
        settings.add_column(no_wrap=True)
        settings.add_column(overflow="fold")
        for setting in decision.settings:
            settings.add_row(f"  {setting.name}:", Text(_value_text(setting.value)))
        parts.append(settings)
    extra = Table.grid(padding=(0, 1))
    extra.add_column(no_wrap=True)
    extra.add_column(overflow="fold")
    if decision.flags:
        extra.add_row("  flags:", Text(shlex.join(decision.flags)))
    for note in decision.notes:
        extra.add_row(Text("  note:", style="dim"), Text(note, style="dim"))
    if decision.source is not None:
        extra.add_row(Text("  source:", style="dim"), Text(str(decision.source), style="dim italic"))
    if extra.row_count:
        parts.append(extra)
    if matrix:
        table = Table(box=_box(console), show_edge=False, pad_edge=False, title="release matrix", title_justify="left")
        table.add_column("release")
        table.add_column("fusion")
        table.add_column("failed conditions")
        for row in matrix:
            enabled = Text(mark[True] + " auto-enabled", style="green") if row.enabled else Text(mark[False] + " no")
            table.add_row(row.release, enabled, ", ".join(row.failed_conditions))
        parts.append(Text(""))
        parts.append(table)
    return Group(*parts)


def decisions_renderable(plan: Plan, console: Console) -> RenderableType:
    parts: list[Any] = []
    for i, decision in enumerate(plan.decisions):
        if i:
            parts.append(Text(""))
        parts.append(decision_renderable(decision, console))
    if not parts:
        parts.append(Text("no decisions for this engine", style="dim"))
    return _section("Decisions", Group(*parts), console)


def problems_renderable(problems: tuple[Problem, ...], console: Console) -> RenderableType:
    if not problems:
        return _section("Problems", Text("none", style="green"), console)
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    for problem in sorted(problems, key=lambda p: SEVERITIES.index(p.severity) if p.severity in SEVERITIES else 9):
        message = Text(problem.message)
        message.append(f"  [{problem.id}]", style="dim")
        lines = [message, Text(f"fix: {problem.fix}")]
        if problem.source:
            lines.append(Text(f"source: {problem.source}", style="dim italic"))
        grid.add_row(Text(problem.severity, style=SEVERITY_STYLES.get(problem.severity, "")), Group(*lines))
    return _section("Problems", grid, console)


def startup_renderable(plan: Plan, console: Console) -> RenderableType:
    """The start-up verdict and the arithmetic behind it (advisor.report.startup_text)."""
    from advisor.report.startup_text import startup_lines

    memory = registry.get(plan.intent.engine).memory
    lines = startup_lines(plan.startup, plan.intent.engine, memory.fraction if memory else None)
    style = "red" if plan.startup is not None and plan.startup.error is not None else "green"
    body = [Text(lines[0], style=style), *(Text(line) for line in lines[1:])]
    return _section("Start-up", Group(*body), console)


def command_renderable(plan: Plan, console: Console) -> RenderableType:
    return _section("Command", Text(command_text(plan), style="bold"), console)


def command_text(plan: Plan) -> str:
    return shlex.join(plan.argv) if plan.argv else "(none: the plan cannot be launched as asked)"


def print_command(plan: Plan, console: Console) -> None:
    """The command as one unbroken line (soft wrap), so it can be copied into a shell."""

    emit(console, _section("Command", Text(""), console).renderables[0])
    console.print(Text(command_text(plan), style="bold"), soft_wrap=True)


def summary_text(plan: Plan, strict: bool = False) -> Any:
    counts = summary(plan)
    text = Text()
    style = "bold red" if counts["errors"] or (strict and counts["warnings"]) else "bold green"
    text.append(
        f"{counts['errors']} error(s), {counts['warnings']} warning(s), {counts['info']} note(s)"
        + (" (--strict: warnings count as errors)" if strict and counts["warnings"] else ""),
        style=style,
    )
    return text


def emit(console: Console, renderable: Any) -> None:
    """Print; off a terminal without the padding rich adds to table rows (logs and diffs stay clean)."""
    if console.is_terminal:
        console.print(renderable)
        return
    with console.capture() as capture:
        console.print(renderable)
    text = "\n".join(line.rstrip() for line in capture.get().splitlines())
    console.file.write(text + "\n")


def print_plan(plan: Plan, console: Console, strict: bool = False) -> None:
    """The full human report of `advisor check`."""
    for part in (
        machine_renderable(plan.facts, console),
        topology_renderable(plan.facts, console),
        packages_renderable(plan.facts, plan.problems, console),
        scenario_renderable(plan, console),
        decisions_renderable(plan, console),
        problems_renderable(plan.problems, console),
    ):
        if part is not None:
            emit(console, part)
            console.print()
    print_command(plan, console)
    console.print()
    emit(console, summary_text(plan, strict))
    steps = next_steps(plan)
    if steps:
        console.print()
        print_next_steps(steps, console)


# The example in the next steps: an MoE model on a modelled SGLang machine shows every decision at work.
EXAMPLE_PROFILE, EXAMPLE_MODEL, EXAMPLE_ENGINE = "h100-sxm-8", "Qwen/Qwen3-30B-A3B", "sglang"


def next_steps(plan: Plan) -> list[tuple[str, list[str]]]:
    """(what, commands) to try next when this machine has no GPU: the report alone shows only the bundled runtime on
    CPU. Empty on a GPU machine and for simulated or saved facts."""
    facts = plan.facts
    if facts.source != "live" or facts.gpus:
        return []

    # The what-if names the plan's engine where it models releases, else the example's.
    engine = plan.intent.engine if registry.get(plan.intent.engine).releases else EXAMPLE_ENGINE
    model = plan.intent.model or EXAMPLE_MODEL
    what_if = f"--engine {engine} --model {shlex.quote(model)}"
    launch = ["advisor launch --mode generate"]
    missing = missing_runtime_modules("generate")
    if missing:
        launch[:0] = runtime_install_commands(facts, torch_missing="torch" in missing)
    return [
        ("See what an engine would do on a GPU machine (the simulated ones, then one of them):",
         ["advisor profiles", f"advisor check --profile {EXAMPLE_PROFILE} {what_if}"]),
        ("Check the real GPU node: save its facts there, then read them here:",
         ["advisor probe -o gpu-node.json", f"advisor check --facts gpu-node.json {what_if}"]),
        ("Try the bundled runtime here, on CPU (the demo model, tp 2):", launch),
    ]  # fmt: skip


def print_next_steps(steps: list[tuple[str, list[str]]], console: Console) -> None:
    """Each step's sentence, then its commands one per line, unbroken (soft wrap) so they can be copied."""

    emit(console, _section("Next steps (no GPU here)", Text(""), console).renderables[0])
    for what, commands in steps:
        console.print(Text(what))
        for command in commands:
            console.print(Text(f"  {command}", style="bold"), soft_wrap=True)


def print_facts(facts: Facts, console: Console) -> None:
    """The human report of `advisor probe`: machine, topology and packages (statuses without a plan: ok / not installed)."""
    for part in (
        machine_renderable(facts, console),
        topology_renderable(facts, console),
        packages_renderable(facts, (), console),
    ):
        if part is not None:
            emit(console, part)
            console.print()


def _section(title: str, body: Any, console: Console) -> RenderableType:
    characters = "─" if _fancy(console) else "-"
    return Group(Rule(title, align="left", style="dim", characters=characters), body)


def _fancy(console: Console) -> bool:
    return console.is_terminal and console.encoding.lower().startswith("utf")


def _shorten(text: str, hint: str, limit: int = 140) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip(" ,") + f"... ({hint})"


def _value_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(jsonable(value), ensure_ascii=False)
