"""The machine panel: host and driver, GPU table, topology matrix, launch pitfalls (P2P, NUMA, IOMMU/ACS, memory in
use, /dev/shm, locked memory, fabric, NCCL variables) marked with the problems they raise, packages with status icons,
problems with fixes.

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

from advisor.facts import MEMLOCK_UNLIMITED, Facts
from advisor.formats import gib_of_mib
from advisor.plan import Plan
from advisor.render_facts import ABSENT, MISMATCH, MISSING, OK, gpu_rows, package_rows
from advisor.rules.engine import Problem
from advisor.sanitize import clean
from advisor.tui.render import (
    SEVERITY_ICON,
    problems_list,
    profile_line,
    source_label,
    topology_legend,
    topology_table,
)

STATUS_ICONS = {OK: ("✓", "green"), MISMATCH: ("✗", "bold red"), MISSING: ("✗", "bold red"), ABSENT: ("·", "dim")}


class MachinePanel(VerticalScroll):
    # Parsed when the panel is first mounted (after the first screen), not with the app's stylesheet.
    DEFAULT_CSS = """
    MachinePanel {
        padding: 0 1;
    }
    MachinePanel .section {
        text-style: bold underline;
        margin-top: 1;
    }
    MachinePanel DataTable {
        height: auto;
        max-height: 20;
    }
    MachinePanel .callout {
        border: round $warning;
        padding: 0 1;
        margin-top: 1;
    }
    MachinePanel #profile-offers {
        height: auto;
        max-height: 10;
    }
    """

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
        yield Static("Launch pitfalls", classes="section gpu-part")
        yield Static("", id="pitfalls", classes="gpu-part")
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
        if facts.gpus:
            self.query_one("#pitfalls", Static).update(pitfalls_text(facts, problems))
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


# -- launch pitfalls ------------------------------------------------------------------------------------------------


def pitfall_rows(facts: Facts, problems: tuple[Problem, ...]) -> list[tuple[str, str, tuple[Problem, ...]]]:
    """(fact, what the machine reports, the problems about it) for each launch-pitfall fact the checks read."""
    gpus = facts.gpus
    system = facts.system

    def about(*ids: str) -> tuple[Problem, ...]:
        return tuple(p for p in problems if p.id in ids)

    def unknown(reason: str | None) -> str:
        return f"unknown ({reason})" if reason else "not probed"

    rows = []
    pairs = [link for link in facts.topology.links if link.p2p_read is not None or link.p2p_write is not None]
    bad = [f"GPU {link.a}-{link.b}: {link.p2p_read or '?'}/{link.p2p_write or '?'}" for link in pairs
           if (link.p2p_read, link.p2p_write) != ("OK", "OK")]  # fmt: skip
    if len(gpus) > 1:
        p2p = "; ".join(bad) if bad else ("every pair OK" if pairs else "not probed")
        rows.append(("P2P read/write", p2p, about("p2p_unavailable")))
    iommu = sorted({g.iommu for g in gpus if g.iommu})
    bridges = sorted({b for g in gpus for b in (g.acs_redirect or ())})
    acs_known = any(g.acs_redirect is not None for g in gpus)
    acs = (f"ACS redirects P2P on {', '.join(bridges)}" if bridges
           else "no ACS redirect" if acs_known else "ACS " + unknown(next(
               (g.unknown.get("acs_redirect") for g in gpus if "acs_redirect" in g.unknown), None)))  # fmt: skip
    rows.append(("IOMMU / ACS", f"IOMMU {'/'.join(iommu) or 'not probed'}; {acs}", about("pcie_acs_or_iommu")))
    nodes: dict[str, list[str]] = {}
    for g in gpus:
        key = "?" if g.numa_node is None else ("none" if g.numa_node < 0 else str(g.numa_node))
        nodes.setdefault(key, []).append(str(g.index))
    numa = "; ".join(f"node {n}: GPU {','.join(i)}" for n, i in nodes.items())
    if facts.visible_gpus is not None and list(facts.visible_gpus) != sorted(facts.visible_gpus):
        numa += f"; CUDA order {','.join(str(i) for i in facts.visible_gpus)}"
    rows.append(("NUMA", numa, about("gpus_span_numa", "gpu_order")))
    busy = []
    for g in gpus:
        if g.memory_total_mib is None or g.memory_free_mib is None:
            continue
        used = g.memory_total_mib - g.memory_free_mib
        holders = ", ".join(f"{(p.name or 'pid').rsplit('/', 1)[-1]} {p.pid}" for p in g.processes or ())
        if g.processes or used > 1024:
            busy.append(f"GPU {g.index} {gib_of_mib(used)}" + (f" ({holders})" if holders else ""))
    rows.append(("memory in use", "; ".join(busy) or "none beyond the driver's", about("gpu_memory_in_use")))
    models = sorted({f"{g.name} {gib_of_mib(g.memory_total_mib)}" for g in gpus})
    rows.append(("GPU models", "mixed: " + ", ".join(models) if len(models) > 1 else "one model",
                 about("heterogeneous_gpus")))  # fmt: skip
    shm = f"{system.shm_mib} MiB" if system.shm_mib is not None else unknown(system.unknown.get("shm_mib"))
    rows.append(("/dev/shm", shm, about("shm_too_small")))
    if system.memlock_bytes is None:
        memlock = unknown(system.unknown.get("memlock_bytes"))
    else:
        memlock = "unlimited" if system.memlock_bytes == MEMLOCK_UNLIMITED else f"{system.memlock_bytes // 1024} KiB"
    rows.append(("locked memory", memlock, about("memlock_limit")))
    fabric = facts.topology.fabric.state or unknown(facts.topology.fabric.unknown.get("state"))
    rows.append(("NVLink fabric", fabric, about("fabric_not_ready")))
    env = about("nccl_env_override")
    rows.append(("NCCL / CUDA env", ", ".join(p.message.split(" ", 1)[0] for p in env) or "no overrides", env))
    return rows


def pitfalls_text(facts: Facts, problems: tuple[Problem, ...]) -> Text:
    text = Text()
    for label, value, found in pitfall_rows(facts, problems):
        text.append(f"{label:<16}", style="bold")
        text.append(clean(value, newlines=False))
        real = [p for p in found if not p.message.startswith("cannot check")]
        for problem_id in dict.fromkeys(p.id for p in real):
            worst = min((p for p in real if p.id == problem_id), key=lambda p: ("error", "warning", "info").index(
                p.severity) if p.severity in ("error", "warning", "info") else 3)  # fmt: skip
            icon, style = SEVERITY_ICON.get(worst.severity, ("·", ""))
            text.append(f"  {icon} {problem_id}", style=style)
        text.append("\n")
    text.rstrip()
    return text
