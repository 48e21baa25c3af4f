"""Rich renderables for the panels: decisions, conditions, the release matrix, the machine. No Textual here."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.padding import Padding
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from advisor.facts import Facts
from advisor.plan import Plan
from advisor.render_facts import topology_legend as facts_topology_legend
from advisor.render_facts import topology_matrix
from advisor.report.startup_text import startup_lines
from advisor.rules import registry
from advisor.rules.engine import (
    AUTO_ENABLED,
    FORCED_OFF,
    FORCED_ON,
    NOT_ENABLED,
    UNAVAILABLE,
    ConditionResult,
    Decision,
    Problem,
)
from advisor.sanitize import clean

STATE_ICON = {
    AUTO_ENABLED: ("●", "green"),
    FORCED_ON: ("●", "cyan"),
    NOT_ENABLED: ("○", "yellow"),
    FORCED_OFF: ("○", "magenta"),
    UNAVAILABLE: ("?", "red"),
}
SEVERITY_ICON = {"error": ("✗", "bold red"), "warning": ("!", "yellow"), "info": ("i", "blue")}


def ok_icon(ok: bool | None) -> Text:
    if ok is True:
        return Text("✓", style="green")
    if ok is False:
        return Text("✗", style="bold red")
    return Text("?", style="yellow")


def state_icon(state: str) -> Text:
    icon, style = STATE_ICON.get(state, ("·", ""))
    return Text(icon, style=style)


def state_text(state: str) -> Text:
    icon, style = STATE_ICON.get(state, ("·", ""))
    return Text(f"{icon} {state}", style=style)


def short_value(value: Any) -> str:
    """A decision's value in one table cell (a dict shows its values only; the detail pane names them)."""
    if value is None:
        return ""
    if isinstance(value, dict):
        return ", ".join(str(v) for v in value.values())
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def show(value: Any) -> str:
    """A value as text, made safe to show (advisor.sanitize.clean): observed values come from the machine."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, (list, tuple)):
        return ", ".join(show(v) for v in value) if value else "(none)"
    return clean(json.dumps(value, default=str))


def condition_block(cond: ConditionResult) -> RenderableType:
    """The condition's line, then observed / expected / why / to change, indented under it (wrapped lines too)."""
    head = Text()
    head.append_text(ok_icon(cond.ok))
    head.append(f" {clean(cond.text)}", style="bold" if cond.ok is False else "")
    body = Text()
    body.append("observed ", style="dim")
    body.append(show(cond.observed), style="red" if cond.ok is False else "")
    body.append("\nexpected ", style="dim")
    body.append(show(cond.expected))
    if cond.why:
        body.append("\nwhy: ", style="dim")
        body.append(clean(cond.why), style="italic")
    if cond.fix:
        body.append("\nto change: ", style="dim")
        body.append(clean(cond.fix))
    return Group(head, Padding(body, (0, 0, 1, 4)))


def decision_detail(decision: Decision, plan: Plan) -> RenderableType:
    parts: list[RenderableType] = []
    head = Text()
    head.append(decision.title, style="bold")
    head.append("\n")
    head.append_text(state_text(decision.state))
    if isinstance(decision.value, dict):
        head.append("\nvalue: " + clean(", ".join(f"{k}={v}" for k, v in decision.value.items())))
    elif decision.value is not None:
        head.append(f"\nvalue: {clean(short_value(decision.value))}")
    if decision.failed:
        head.append("\nblocked by: ", style="dim")
        head.append(clean("; ".join(c.text for c in decision.failed)), style="bold red")
    if decision.undecided:
        head.append("\nunknown: ", style="dim")
        head.append(clean("; ".join(c.text for c in decision.undecided)), style="yellow")
    if decision.flags:
        head.append("\nflags: ", style="dim")
        head.append(clean(" ".join(decision.flags)), style="cyan")
    parts.append(head)
    if decision.conditions:
        parts.append(Text("\nConditions", style="bold underline"))
        parts.extend(condition_block(c) for c in decision.conditions)
    if decision.notes:
        parts.append(Text("Notes", style="bold underline"))
        parts.extend(Text(f"• {clean(note)}") for note in decision.notes)
    if decision.source is not None:
        parts.append(Text.assemble(("\nSource: ", "bold"), str(decision.source)))
    if decision.id == "flashinfer_allreduce_fusion" and plan.release_matrix:
        parts.append(Text("\nRelease matrix (this scenario, every modelled release)", style="bold underline"))
        parts.append(release_matrix_table(plan))
    memory = registry.get(plan.intent.engine).memory
    if memory is not None and isinstance(decision.value, dict) and memory.fraction in decision.value:
        parts.append(startup_section(plan))
    return Group(*parts)


def startup_section(plan: Plan) -> RenderableType:
    """Will it start? The verdict `check`, `layouts` and `launch` share, with its arithmetic (the memory decision)."""
    memory = registry.get(plan.intent.engine).memory
    lines = startup_lines(plan.startup, plan.intent.engine, memory.fraction if memory else None)
    failed = plan.startup is not None and plan.startup.error is not None
    verdict = Text(("✗ " if failed else "✓ " if plan.startup and plan.startup.starts else "? ") + clean(lines[0]),
                   style="bold red" if failed else "green" if plan.startup and plan.startup.starts else "yellow")  # fmt: skip
    return Group(Text("\nStart-up", style="bold underline"), verdict, *(Text(clean(line)) for line in lines[1:]))


def release_matrix_table(plan: Plan) -> RenderableType:
    """Release, fusion on/off and the failed conditions, one row per modelled release (the current one marked ◀)."""
    rules = str((plan.engine or {}).get("rules") or "")
    rows = []
    for row in plan.release_matrix:
        mark = Text("● on", style="green") if row.enabled else Text("○ off", style="yellow")
        current = bool(rules) and row.release.lstrip("v") == rules.lstrip("v")
        release = Text(row.release + (" ◀" if current else ""), style="bold" if current else "")
        rows.append((release, mark, ", ".join(row.failed_conditions)))
    return ReleaseMatrix(rows)


class ReleaseMatrix:
    """Laid out as rich's Table(box=None, pad_edge=False, show_edge=False) lays it out, the last column folded under its
    header; drawn without Table's measuring, which was most of the time to draw the fusion decision's detail."""

    HEADERS = ("release", "fusion", "failed conditions")

    def __init__(self, rows: list[tuple[Text, Text, str]]) -> None:
        self.rows = rows

    def _widths(self) -> tuple[int, int]:
        first = max([len(self.HEADERS[0]), *(r[0].cell_len for r in self.rows)])
        second = max([len(self.HEADERS[1]), *(r[1].cell_len for r in self.rows)])
        return first, second

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        first, second = self._widths()
        last = max([len(self.HEADERS[2]), *(len(r[2]) for r in self.rows)])
        return Measurement(first + second + 4 + min(last, 1), first + second + 4 + last)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        first, second = self._widths()
        indent = first + second + 4
        room = max(options.max_width - indent, 1)
        last = min(max([len(self.HEADERS[2]), *(len(r[2]) for r in self.rows)]), room)  # cells are padded to it
        header = Text(no_wrap=True, style="bold")
        header.append(self.HEADERS[0].ljust(first + 2) + self.HEADERS[1].ljust(second + 2) + self.HEADERS[2])
        header.append(" " * (indent + last - header.cell_len))
        yield header
        for release, mark, failed in self.rows:
            lines = Text(failed).wrap(console, last, overflow="fold") if failed else [Text()]
            for i, part in enumerate(lines):
                line = Text(no_wrap=True)
                if i == 0:
                    line.append_text(release)
                    line.append(" " * (first + 2 - release.cell_len))
                    line.append_text(mark)
                    line.append(" " * (second + 2 - mark.cell_len))
                else:
                    line.append(" " * indent)
                part.rstrip()
                line.append_text(part)
                line.append(" " * (indent + last - line.cell_len))
                yield line


class DrawnOnce:
    """A rich renderable drawn once per width and options. Textual measures a rich renderable's height by drawing it
    (textual.visual.RichVisual.get_height) and then draws it again to paint it; the decision detail (a hundred lines
    or more, most below the fold) is the costliest thing on the first screen to draw."""

    def __init__(self, renderable: RenderableType) -> None:
        self.renderable = renderable
        self._drawn: dict[tuple, list[Segment]] = {}

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        # Always at its natural height: Textual measures it with no height, then paints it with the height it
        # measured (and crops what it paints to that height).
        key = (options.max_width, options.justify, options.overflow, options.no_wrap, options.highlight, options.markup)
        segments = self._drawn.get(key)
        if segments is None:
            segments = self._drawn[key] = list(console.render(self.renderable, options.update(height=None)))
        yield from segments

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.renderable)


def problem_detail(problem: Problem) -> RenderableType:
    icon, style = SEVERITY_ICON.get(problem.severity, ("·", ""))
    text = Text()
    text.append(f"{icon} {problem.severity}: ", style=style)
    text.append(f"{clean(problem.message)}\n", style="bold")
    text.append("fix: ", style="dim")
    text.append(f"{clean(problem.fix)}\n")
    if problem.source:
        text.append("predicts: ", style="dim")
        text.append(problem.source)
    text.append(f"\nid: {problem.id}", style="dim")
    return text


def problems_list(problems: tuple[Problem, ...]) -> RenderableType:
    if not problems:
        return Text("✓ no problems found", style="green")
    out = Text()
    for p in problems:
        icon, style = SEVERITY_ICON.get(p.severity, ("·", ""))
        out.append(f"{icon} ", style=style)
        out.append(f"{clean(p.message)}\n")
        out.append("  fix: ", style="dim")
        out.append(f"{clean(p.fix)}\n")
    out.rstrip()
    return out


def topology_table(facts: Facts) -> RenderableType:
    """The `nvidia-smi topo -m` matrix (render_facts gives the cells; colour them: NVLink green, PCIe yellow)."""
    header, rows = topology_matrix(facts)
    if not rows:
        return Text("no GPUs", style="dim")
    table = Table(box=None, pad_edge=False, show_edge=False, padding=(0, 1))
    for name in header:
        table.add_column(name, justify="center" if name else "left")
    for row in rows:
        cells = [Text(c, style="dim" if c == "X" else ("green" if c.startswith("NV") else "yellow")) for c in row[1:]]
        table.add_row(Text(row[0], style="bold"), *cells)
    return table


def topology_legend(facts: Facts) -> str:
    """NVSwitch and fabric state, then the meaning of each code the matrix shows."""
    bits = []
    topo = facts.topology
    if topo.nvswitch is not None:
        bits.append("NVSwitch: yes" if topo.nvswitch else "NVSwitch: no")
    fabric = topo.fabric
    if fabric.state and fabric.state != "not supported":
        bits.append(f"fabric {fabric.state}" + (f", clique {fabric.clique_id}" if fabric.clique_id is not None else ""))
    _, rows = topology_matrix(facts)
    bits.extend(f"{code}: {meaning}" for code, meaning in facts_topology_legend(rows) if code != "X")
    return clean(" · ".join(bits))


def source_label(facts: Facts | None) -> str:
    if facts is None:
        return "no facts"
    src = clean(facts.source, newlines=False)
    if src.startswith("simulated:"):
        return f"simulated {src.split(':', 1)[1]}"
    if src.startswith("file:"):
        return f"file {src.split(':', 1)[1]}"
    return "live"


def profile_line(name: str, summary: str) -> Text:
    """One line per simulated machine in a list: the name, then as much of the summary as fits."""
    summary = summary.replace(" x NVIDIA ", " x ")
    if len(summary) > 50:
        summary = summary[:49] + "…"
    return Text.assemble((f"{name:<19}", "bold"), summary)
