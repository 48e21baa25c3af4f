"""Facts (and a plan's problems) as plain rows: the machine summary, the `nvidia-smi topo -m` matrix, the package table.

Pure functions returning strings and tuples, shared by the rich report (advisor/report/render.py) and the TUI; no rich here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from advisor.formats import gib_of_mib, yes_no

if TYPE_CHECKING:
    from advisor.facts import Facts, Gpu, Package
    from advisor.rules.engine import Problem

# What each `nvidia-smi topo -m` cell means (its legend, shortened).
TOPOLOGY_LEGEND = {
    "X": "self",
    "NV#": "bonded set of # NVLinks",
    "PIX": "at most one PCIe bridge",
    "PXB": "several PCIe bridges, no host bridge",
    "PHB": "a PCIe host bridge (usually the CPU)",
    "NODE": "PCIe and the interconnect between host bridges within a NUMA node",
    "SYS": "PCIe and the SMP interconnect between NUMA nodes (e.g. QPI/UPI)",
    "?": "unknown (the probe could not tell)",
}

# Package statuses in the package table.
OK = "ok"
MISMATCH = "mismatch"  # installed, and an error or warning is about it (Problem.packages)
MISSING = "missing"  # not installed, and an error or warning is about it (something needs it)
ABSENT = "not installed"  # not installed, and nothing needs it

def gib(mib: int | None) -> str:
    return gib_of_mib(mib)


def unknown_text(value: object, reason: str | None = None) -> str:
    if value is not None:
        return str(value)
    return f"unknown ({reason})" if reason else "unknown"


def machine_summary(facts: Facts) -> list[tuple[str, str]]:
    """(label, value) lines: source, host, driver, GPUs, visible GPUs, NVSwitch, fabric, probe errors."""
    host, driver, topo = facts.host, facts.driver, facts.topology
    source = facts.source + (" (simulated: not this machine)" if facts.is_simulated else "")
    lines = [("source", source)]
    host_bits = [b for b in (host.hostname, host.os, f"Python {host.python}" if host.python else None) if b]
    if host.cpu_count:
        host_bits.append(f"{host.cpu_count} CPUs")
    lines.append(("host", ", ".join(host_bits) or "unknown"))
    if driver.available:
        cuda = f", CUDA {driver.cuda_version}" if driver.cuda_version else ""
        lines.append(("driver", f"{unknown_text(driver.version, driver.unknown.get('version'))}{cuda}"))
    else:
        lines.append(("driver", driver.reason or "no NVIDIA driver"))
    lines.append(("GPUs", gpu_overview(facts)))
    if facts.gpus:
        visible = facts.visible_gpus
        cvd = facts.environment.get("CUDA_VISIBLE_DEVICES")
        if visible is not None and tuple(visible) != tuple(g.index for g in facts.gpus):
            note = f" (CUDA_VISIBLE_DEVICES={cvd})" if cvd is not None else ""
            lines.append(("engine sees", ", ".join(f"GPU{i}" for i in visible) + note))
        lines.append(("NVSwitch", yes_no(topo.nvswitch, unknown="unknown")))
        fabric = topo.fabric
        if fabric.state and fabric.state != "not supported":
            clique = f", clique {fabric.clique_id}" if fabric.clique_id is not None else ""
            lines.append(("NVLink fabric", f"{fabric.state}{clique}"))
    if facts.python_executable:
        lines.append(("packages of", facts.python_executable))
    for err in facts.errors:
        lines.append(("probe error", f"{err.probe}: {err.message}"))
    return lines


def gpu_overview(facts: Facts) -> str:
    """"8 x NVIDIA B300 SXM6 AC (cc 10.3, 268.6 GiB)" or a count per distinct model."""
    if not facts.gpus:
        return "none"
    groups: dict[tuple, int] = {}
    for gpu in facts.gpus:
        key = (gpu.name or "unknown GPU", gpu.capability_text, gib(gpu.memory_total_mib))
        groups[key] = groups.get(key, 0) + 1
    return "; ".join(f"{n} x {name} (cc {cc}, {mem})" for (name, cc, mem), n in groups.items())


def gpu_rows(facts: Facts) -> list[tuple[str, ...]]:
    """One row per GPU: index, name, capability, memory total, memory free, MIG, active NVLinks, PCI bus id."""
    return [_gpu_row(g) for g in facts.gpus]


GPU_COLUMNS = ("GPU", "name", "cc", "memory", "free", "MIG", "NVLinks", "PCI bus")


def _gpu_row(gpu: Gpu) -> tuple[str, ...]:
    return (
        f"GPU{gpu.index}",
        gpu.name or "?",
        gpu.capability_text,
        gib(gpu.memory_total_mib),
        gib(gpu.memory_free_mib),
        gpu.mig_mode or "?",
        "?" if gpu.nvlinks_active is None else str(gpu.nvlinks_active),
        gpu.pci_bus_id or "?",
    )


def topology_matrix(facts: Facts) -> tuple[list[str], list[list[str]]]:
    """The header and rows of `nvidia-smi topo -m`: header ["", "GPU0", ...], rows ["GPU0", "X", "NV18", ...]."""
    indices = [g.index for g in facts.gpus]
    names = [f"GPU{i}" for i in indices]
    cells = facts.topology.matrix(indices)
    return ["", *names], [[name, *row] for name, row in zip(names, cells, strict=True)]


def topology_legend(rows: Iterable[Iterable[str]]) -> list[tuple[str, str]]:
    """Legend entries for the codes that appear in the matrix rows, in `nvidia-smi` order."""
    seen = set()
    for row in rows:
        for cell in list(row)[1:]:
            seen.add("NV#" if re.fullmatch(r"NV\d+", cell) else cell)
    return [(code, meaning) for code, meaning in TOPOLOGY_LEGEND.items() if code in seen]


@dataclass(frozen=True)
class PackageRow:
    name: str
    version: str  # "0.6.11+cu128", or "-" when not installed
    detail: str  # the module __version__ when it differs, torch's CUDA, "overridden", ...
    status: str  # ok | mismatch | missing | not installed
    problems: tuple[str, ...]  # ids of the errors and warnings about this package


def package_rows(facts: Facts, problems: Iterable[Problem] = ()) -> list[PackageRow]:
    """The package table: every probed package, plus any package an error or warning is about that the probe did not
    list (live probes list installed packages only); the status comes from the problems' ``packages`` alone."""
    about = problems_by_package(problems)
    packages = {p.name: p for p in facts.packages}
    for name in about:
        packages.setdefault(name, facts.package(name))
    rows = []
    for pkg in sorted(packages.values(), key=lambda p: p.name):
        ids = tuple(about.get(pkg.name, ()))
        status = (MISMATCH if ids else OK) if pkg.installed else (MISSING if ids else ABSENT)
        rows.append(PackageRow(pkg.name, pkg.version or "-", _package_detail(pkg), status, ids))
    return rows


def problems_by_package(problems: Iterable[Problem]) -> dict[str, list[str]]:
    """package name -> ids of the errors and warnings about it (each problem says which packages in ``packages``)."""
    out: dict[str, list[str]] = {}
    for problem in problems:
        if problem.severity not in ("error", "warning"):
            continue
        for name in problem.packages:
            ids = out.setdefault(name, [])
            if problem.id not in ids:
                ids.append(problem.id)
    return out


def _package_detail(pkg: Package) -> str:
    bits = []
    if pkg.module_version and pkg.version and pkg.module_version != pkg.version:
        bits.append(f"__version__ {pkg.module_version}")
    if pkg.name == "torch" and pkg.installed:
        bits.append(f"CUDA {pkg.cuda}" if pkg.cuda else "CPU build" if pkg.local_label == "cpu" else "")
    if pkg.overridden:
        bits.append("overridden (--with-package)")
    for field_name, reason in pkg.unknown.items():
        bits.append(f"{field_name}: {reason}")
    return ", ".join(b for b in bits if b)
