"""The machine panel: host and driver, GPU table, topology matrix, packages with status icons, problems with fixes.

Without an NVIDIA driver it says so plainly and offers the simulated machines instead of empty tables.
"""

from __future__ import annotations

from rich.console import Group
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, OptionList, Static
from textual.widgets.option_list import Option

from advisor.facts import Facts
from advisor.plan import Plan
from advisor.render_facts import ABSENT, MISMATCH, MISSING, OK, gpu_rows, package_rows
from advisor.sanitize import clean
from advisor.tui.render import problems_list, profile_line, source_label, topology_legend, topology_table

STATUS_ICONS = {OK: ("✓", "green"), MISMATCH: ("✗", "bold red"), MISSING: ("✗", "bold red"), ABSENT: ("·", "dim")}


class MachinePanel(VerticalScroll):
    class ProfileChosen(Message):
        def __init__(self, name: str) -> None:
            super().__init__()
            self.name = name

    def __init__(self, profiles: list[tuple[str, str]], **kwargs) -> None:
        super().__init__(**kwargs)
        self._profiles = profiles

    def compose(self) -> ComposeResult:
        yield Static("", id="machine-summary")
        yield Static("", id="no-driver", classes="callout")
        offers = [Option(profile_line(name, summary), id=name) for name, summary in self._profiles]
        yield OptionList(*offers, id="profile-offers")
        yield Static("GPUs", classes="section gpu-part")
        yield DataTable(id="gpus", cursor_type="row", show_cursor=False, classes="gpu-part")
        yield Static("Topology", classes="section gpu-part")
        yield Static("", id="topology", classes="gpu-part")
        yield Static("Packages", classes="section")
        yield DataTable(id="packages", cursor_type="row", show_cursor=False)
        yield Static("Problems", classes="section")
        yield Static("", id="problems")

    def on_mount(self) -> None:
        gpus = self.query_one("#gpus", DataTable)
        gpus.add_columns("GPU", "name", "cc", "memory", "MIG", "NVLinks")
        packages = self.query_one("#packages", DataTable)
        packages.add_columns("", "package", "version", "note")
        evaluation = getattr(self.screen, "evaluation", None)  # mounted lazily: catch up with the plan shown
        if evaluation is not None:
            self.show(evaluation.facts, evaluation.plan, evaluation.error)

    def show(self, facts: Facts | None, plan: Plan | None, error: str | None = None) -> None:
        if facts is None:  # the machine itself could not be loaded (unknown profile, unreadable facts file...)
            self.query_one("#machine-summary", Static).update(Text(f"✗ {clean(error or 'no facts')}", style="bold red"))
            return
        self.query_one("#machine-summary", Static).update(_summary(facts))
        has_driver = bool(facts.driver.available)
        no_driver = self.query_one("#no-driver", Static)
        offers = self.query_one("#profile-offers", OptionList)
        no_driver.display = not has_driver
        offers.display = not has_driver and bool(self._profiles)
        if not has_driver:
            reason = (facts.driver.reason or "").removeprefix("no NVIDIA driver").strip(" ()")
            no_driver.update(
                Text.assemble(
                    ("No NVIDIA driver on this machine", "bold"),
                    f" ({clean(reason)})" if reason else "",
                    ". The advisor can still explain what an engine would do on a simulated machine:"
                    " pick one below (or press p).",
                )
            )
        for part in self.query(".gpu-part"):
            part.display = bool(facts.gpus)
        self._fill_gpus(facts)
        topology = self.query_one("#topology", Static)
        if facts.gpus:
            topology.update(Group(topology_table(facts), Text(topology_legend(facts), style="dim")))
        self._fill_packages(facts, plan)
        problems = plan.problems if plan is not None else ()
        self.query_one("#problems", Static).update(problems_list(problems))

    def _fill_gpus(self, facts: Facts) -> None:
        table = self.query_one("#gpus", DataTable)
        table.clear()
        visible = {g.index for g in facts.engine_gpus}
        for gpu, row in zip(facts.gpus, gpu_rows(facts), strict=True):
            # GPU, name, cc, memory, MIG, NVLinks (free memory and the PCI bus id do not fit 80 columns)
            index = Text(row[0], style="" if gpu.index in visible else "dim strike")
            table.add_row(index, *(Text(clean(row[i], newlines=False)) for i in (1, 2, 3, 5, 6)))

    def _fill_packages(self, facts: Facts, plan: Plan | None) -> None:
        table = self.query_one("#packages", DataTable)
        table.clear()
        for row in package_rows(facts, plan.problems if plan is not None else ()):
            icon, style = STATUS_ICONS.get(row.status, ("·", ""))
            note = ", ".join(b for b in (row.detail, " ".join(row.problems)) if b)
            cells = (Text(clean(cell, newlines=False)) for cell in (row.name, row.version, note))
            table.add_row(Text(icon, style=style), *cells)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id:
            self.post_message(self.ProfileChosen(event.option.id))


def _summary(facts: Facts) -> Text:
    host, driver = facts.host, facts.driver
    text = Text()
    text.append(clean(host.hostname or "unknown host", newlines=False), style="bold")
    bits = [b for b in (host.os, f"Python {host.python}" if host.python else None) if b]
    if host.cpu_count:
        bits.append(f"{host.cpu_count} CPUs")
    if bits:
        text.append("  " + clean(" · ".join(bits), newlines=False))
    text.append("\n")
    if driver.available:
        text.append(clean(f"driver {driver.version or '?'} (CUDA {driver.cuda_version or '?'})", newlines=False))
        count = len(facts.gpus)
        text.append(f" · {count} GPU{'s' if count != 1 else ''}")
        if facts.visible_gpus is not None and len(facts.visible_gpus) != count:
            text.append(f" · {len(facts.visible_gpus)} visible to engines", style="yellow")
    else:
        text.append("no NVIDIA driver", style="yellow")
    text.append(f" · source: {source_label(facts)}", style="dim")
    for error in facts.errors[:3]:
        text.append("\n! " + clean(f"{error.probe}: {error.message}", newlines=False), style="yellow")
    return text
