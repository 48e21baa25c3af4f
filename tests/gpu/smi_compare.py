"""Cross-check `advisor probe --json` against nvidia-smi on the same machine: any field that differs is a failure.

What nvidia-smi says, and where (formats as NVIDIA documents them, nvidia-smi(1) and the -q -x DTD):
- `nvidia-smi -q -x`: <driver_version>, <cuda_version>, <attached_gpus>, and per <gpu id="bus id"> (PCI bus order,
  which is NVML's index order): <product_name>, <uuid>, <pci><pci_bus_id>, <fb_memory_usage><total>N MiB,
  <mig_mode><current_mig> (Enabled / Disabled / N/A);
- `nvidia-smi topo -m`: the GPU x GPU matrix (X, NV#, PIX, PXB, PHB, NODE, SYS), tab separated, possibly with ANSI
  underline codes in the header, followed by NIC columns, affinities and a legend;
- `nvidia-smi nvlink -s`: per GPU "Link N: <speed> GB/s" for an active link, "Link N: <inactive>" otherwise;
- `nvidia-smi --query-gpu=index,compute_cap --format=csv,noheader`: "0, 9.0" per GPU.

usage: python tests/gpu/smi_compare.py PROBE_JSON SMI_XML TOPO_TXT [--nvlink NVLINK_TXT] [--compute-cap CSV] [--json OUT]
Exit 0 when every checked field agrees, 1 when one differs or an input cannot be read.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from advisor.probe.nvml import normalize_bus_id

ANSI = re.compile(r"\x1b\[[0-9;]*m")
GPU_LABEL = re.compile(r"^GPU(\d+)$")
MIG_MODES = {"enabled": "enabled", "disabled": "disabled", "n/a": "not supported"}


@dataclass
class SmiGpu:
    name: str | None = None
    uuid: str | None = None
    pci_bus_id: str | None = None
    memory_total_mib: int | None = None
    mig_mode: str | None = None


@dataclass
class SmiFacts:
    driver_version: str | None = None
    cuda_version: str | None = None
    attached_gpus: int | None = None
    gpus: list[SmiGpu] = field(default_factory=list)


@dataclass
class Check:
    field: str
    probe: Any
    nvidia_smi: Any
    ok: bool


def _text(node: ET.Element | None, path: str) -> str | None:
    found = node.find(path) if node is not None else None
    if found is None or found.text is None:
        return None
    return found.text.strip()


def parse_smi_xml(text: str) -> SmiFacts:
    root = ET.fromstring(text)
    attached = _text(root, "attached_gpus")
    facts = SmiFacts(
        driver_version=_text(root, "driver_version"),
        cuda_version=_text(root, "cuda_version"),
        attached_gpus=int(attached) if attached and attached.isdigit() else None,
    )
    for gpu in root.findall("gpu"):
        memory = _text(gpu, "fb_memory_usage/total")
        mig = _text(gpu, "mig_mode/current_mig")
        facts.gpus.append(
            SmiGpu(
                name=_text(gpu, "product_name"),
                uuid=_text(gpu, "uuid"),
                pci_bus_id=_text(gpu, "pci/pci_bus_id") or gpu.get("id"),
                memory_total_mib=int(memory.split()[0]) if memory and memory.split()[0].isdigit() else None,
                mig_mode=MIG_MODES.get(mig.lower(), mig) if mig else None,
            )
        )
    return facts


def parse_topo(text: str) -> dict[int, dict[int, str]]:
    """{row GPU: {column GPU: cell}} from `nvidia-smi topo -m` (GPU columns only)."""
    lines = [ANSI.sub("", line).rstrip() for line in text.splitlines()]
    header_index = next((i for i, line in enumerate(lines) if re.search(r"\tGPU\d+", line)), None)
    if header_index is None:
        return {}
    header = [cell.strip() for cell in lines[header_index].split("\t")]
    columns = {i: int(m.group(1)) for i, cell in enumerate(header) if (m := GPU_LABEL.match(cell))}
    matrix: dict[int, dict[int, str]] = {}
    for line in lines[header_index + 1 :]:
        cells = [cell.strip() for cell in line.split("\t")]
        row = GPU_LABEL.match(cells[0]) if cells else None
        if row is None:
            if line.startswith("Legend"):
                break
            continue
        matrix[int(row.group(1))] = {gpu: cells[i] for i, gpu in columns.items() if i < len(cells)}
    return matrix


def parse_nvlink_status(text: str) -> dict[int, int]:
    """{GPU index: active links} from `nvidia-smi nvlink -s`."""
    active: dict[int, int] = {}
    current = None
    for line in text.splitlines():
        gpu = re.match(r"^GPU (\d+):", line)
        if gpu:
            current = int(gpu.group(1))
            active[current] = 0
            continue
        link = re.match(r"^\s*Link \d+:\s*(.*)$", line)
        if link and current is not None and "inactive" not in link.group(1).lower():
            active[current] += 1
    return active


def parse_compute_cap(text: str) -> dict[int, tuple[int, int]]:
    """{GPU index: (major, minor)} from `--query-gpu=index,compute_cap --format=csv,noheader`."""
    caps = {}
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 2 and parts[0].isdigit() and re.fullmatch(r"\d+\.\d+", parts[1]):
            major, minor = parts[1].split(".")
            caps[int(parts[0])] = (int(major), int(minor))
    return caps


def probe_matrix(facts: dict) -> dict[int, dict[int, str]]:
    """The same matrix from the probe's facts (the cell `topo -m` prints: NV# when NVLinks join the pair, else the
    PCIe level; "?" when the probe does not know)."""
    indices = [g["index"] for g in facts.get("gpus", [])]
    links = {(link["a"], link["b"]): link for link in facts.get("topology", {}).get("links", [])}
    matrix: dict[int, dict[int, str]] = {}
    for a in indices:
        matrix[a] = {}
        for b in indices:
            if a == b:
                matrix[a][b] = "X"
                continue
            link = links.get((min(a, b), max(a, b)))
            if link is None:
                matrix[a][b] = "?"
            elif link.get("nvlinks"):
                matrix[a][b] = f"NV{link['nvlinks']}"
            else:
                matrix[a][b] = link.get("pcie") or "?"
    return matrix


def compare(
    facts: dict,
    smi_xml: str,
    topo: str,
    nvlink: str | None = None,
    compute_cap: str | None = None,
) -> tuple[list[Check], list[str]]:
    """(every check made, fields that could not be checked and why)."""
    smi = parse_smi_xml(smi_xml)
    checks: list[Check] = []
    unchecked: list[str] = []

    def check(name: str, probe: Any, expected: Any) -> None:
        checks.append(Check(name, probe, expected, probe == expected))

    driver = facts.get("driver", {})
    check("driver.version", driver.get("version"), smi.driver_version)
    check("driver.cuda_version", driver.get("cuda_version"), smi.cuda_version)
    gpus = sorted(facts.get("gpus", []), key=lambda g: g["index"])
    check("gpu_count", len(gpus), smi.attached_gpus if smi.attached_gpus is not None else len(smi.gpus))
    caps = parse_compute_cap(compute_cap) if compute_cap is not None else None
    active = parse_nvlink_status(nvlink) if nvlink is not None else None
    for position, smi_gpu in enumerate(smi.gpus):
        gpu = gpus[position] if position < len(gpus) else {}
        p = f"gpu[{position}]"
        check(f"{p}.name", gpu.get("name"), smi_gpu.name)
        check(f"{p}.uuid", gpu.get("uuid"), smi_gpu.uuid)
        check(f"{p}.pci_bus_id", normalize_bus_id(gpu.get("pci_bus_id")), normalize_bus_id(smi_gpu.pci_bus_id))
        check(f"{p}.memory_total_mib", gpu.get("memory_total_mib"), smi_gpu.memory_total_mib)
        check(f"{p}.mig_mode", gpu.get("mig_mode"), smi_gpu.mig_mode)
        capability = tuple(gpu["capability"]) if gpu.get("capability") else None
        if caps is None:
            unchecked.append(f"{p}.capability: no compute_cap query output")
        else:
            check(f"{p}.capability", capability, caps.get(position))
        if active is None:
            unchecked.append(f"{p}.nvlinks_active: no `nvidia-smi nvlink -s` output")
        else:
            check(f"{p}.nvlinks_active", gpu.get("nvlinks_active"), active.get(position, 0))
    topo_matrix = parse_topo(topo)
    if not topo_matrix and smi.gpus:
        checks.append(Check("topology", "matrix", "no GPU matrix found in `nvidia-smi topo -m`", False))
    else:
        check("topology", probe_matrix({"gpus": gpus, "topology": facts.get("topology", {})}), topo_matrix)
    return checks, unchecked


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("probe_json", type=Path)
    parser.add_argument("smi_xml", type=Path)
    parser.add_argument("topo", type=Path)
    parser.add_argument("--nvlink", type=Path)
    parser.add_argument("--compute-cap", type=Path)
    parser.add_argument("--json", type=Path, help="write every check here as JSON")
    args = parser.parse_args(argv)
    try:
        facts = json.loads(args.probe_json.read_text())
        optional = {name: path.read_text() if path else None for name, path in
                    (("nvlink", args.nvlink), ("compute_cap", args.compute_cap))}
        checks, unchecked = compare(facts, args.smi_xml.read_text(), args.topo.read_text(), **optional)
    except (OSError, ValueError, ET.ParseError) as err:
        print(f"error: cannot compare the probe with nvidia-smi: {err}", file=sys.stderr)
        return 1
    failed = [c for c in checks if not c.ok]
    for c in checks:
        print(f"{'ok  ' if c.ok else 'DIFF'} {c.field}: probe {c.probe!r}, nvidia-smi {c.nvidia_smi!r}")
    for line in unchecked:
        print(f"not checked: {line}")
    print(f"probe vs nvidia-smi: {len(checks) - len(failed)}/{len(checks)} fields agree")
    if args.json:
        result = {"ok": not failed, "checks": [asdict(c) for c in checks], "unchecked": unchecked}
        args.json.write_text(json.dumps(result, indent=1, default=str))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
