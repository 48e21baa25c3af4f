"""What the operating system says about a multi-GPU launch: /dev/shm, the locked-memory limit, NUMA, IOMMU and ACS.

Everything is read as files under injectable roots (``sys_root``, ``proc_root``, ``shm_path``), so tests build a fake
/sys and /proc in a temporary directory and run this same code. Every read is guarded: a file that is missing or
unreadable leaves that one fact unknown with the reason; nothing here raises.

Sources (the kernel's sysfs and procfs ABI):
- /sys/bus/pci/devices/<bus>/numa_node: the NUMA node of a PCI device (-1: none reported);
- /sys/bus/pci/devices/<bus>/iommu_group/type: "identity" (passthrough), "DMA" / "DMA-FQ" (translated), ...;
  no iommu_group link at all means no IOMMU translates the device;
- /sys/bus/pci/devices/<bus>/config: PCI configuration space; the extended capabilities from 0x100 are readable by root
  only (others read 64 or 256 bytes). The ACS capability (id 0x000D) has its control register at offset 6, whose bits 2
  (P2P Request Redirect) and 3 (P2P Completion Redirect) send peer-to-peer traffic up to the root complex;
- /proc/self/mounts: the tmpfs options of /dev/shm (size=65536k in a default Docker container);
- /proc/self/limits: "Max locked memory" soft and hard limits (`ulimit -l`).
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path

from advisor.facts import MEMLOCK_UNLIMITED, Gpu, ProbeError, System
from advisor.probe.nvml import normalize_bus_id

ACS_CAP_ID = 0x000D
ACS_CTRL_OFFSET = 6
ACS_P2P_REQUEST_REDIRECT = 1 << 2
ACS_P2P_COMPLETION_REDIRECT = 1 << 3
EXTENDED_CONFIG_START = 0x100
_BDF = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
_SIZE_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


def probe_system(
    gpus: tuple[Gpu, ...],
    sys_root: str | Path = "/sys",
    proc_root: str | Path = "/proc",
    shm_path: str | Path = "/dev/shm",
) -> tuple[tuple[Gpu, ...], System, list[ProbeError]]:
    """The GPUs with their NUMA node, IOMMU mode and ACS bridges filled in, the System facts, and what failed."""
    sys_root, proc_root = Path(sys_root), Path(proc_root)
    errors: list[ProbeError] = []
    unknown: dict[str, str] = {}
    shm = _guard(unknown, "shm_mib", lambda: shm_mib(proc_root, Path(shm_path)))
    memlock = _guard(unknown, "memlock_bytes", lambda: memlock_bytes(proc_root))
    nodes = _guard(unknown, "numa_nodes", lambda: numa_nodes(sys_root))
    for name, reason in unknown.items():
        errors.append(ProbeError(f"system.{name}", reason))
    system = System(shm_mib=shm, memlock_bytes=memlock, numa_nodes=nodes, unknown=unknown)
    return tuple(_gpu_facts(gpu, sys_root) for gpu in gpus), system, errors


def _guard(unknown: dict[str, str], name: str, read):
    try:
        return read()
    except _Unknown as exc:
        unknown[name] = str(exc)
    except (OSError, ValueError) as exc:
        unknown[name] = f"{type(exc).__name__}: {exc}"
    return None


class _Unknown(Exception):
    """A fact the files do not tell; the message is the reason."""


# -- /dev/shm and limits ---------------------------------------------------------------------------------------------


def shm_mib(proc_root: Path, shm_path: Path) -> int:
    """The size of /dev/shm: its tmpfs size= option when mounted with one, else what statvfs reports."""
    mounts = proc_root / "self" / "mounts"
    try:
        lines = mounts.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    for line in lines:
        parts = line.split()
        if len(parts) >= 4 and parts[1] == "/dev/shm":
            for option in parts[3].split(","):
                if option.startswith("size="):
                    return parse_size(option[len("size="):]) // 2**20
    if not shm_path.exists():
        raise _Unknown(f"{shm_path} does not exist")
    stat = os.statvfs(shm_path)
    return stat.f_blocks * stat.f_frsize // 2**20


def parse_size(text: str) -> int:
    """tmpfs sizes: "65536k" -> 67108864, "8g", "1073741824". A percentage cannot be turned into bytes here."""
    match = re.fullmatch(r"(\d+)([kmgt]?)", text.strip().lower())
    if not match:
        raise _Unknown(f"/dev/shm is mounted with size={text}, which is not a byte count")
    return int(match[1]) * _SIZE_UNITS[match[2]]


def memlock_bytes(proc_root: Path) -> int:
    """The soft locked-memory limit from /proc/self/limits; MEMLOCK_UNLIMITED for "unlimited"."""
    limits = proc_root / "self" / "limits"
    for line in limits.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("Max locked memory"):
            soft = line[len("Max locked memory"):].split()[0]
            return MEMLOCK_UNLIMITED if soft == "unlimited" else int(soft)
    raise _Unknown(f"{limits} has no 'Max locked memory' line")


def numa_nodes(sys_root: Path) -> int:
    base = sys_root / "devices" / "system" / "node"
    if not base.is_dir():
        raise _Unknown(f"{base} does not exist (a kernel without NUMA support, or /sys not mounted)")
    return sum(1 for p in base.iterdir() if re.fullmatch(r"node\d+", p.name)) or 1


# -- per GPU ----------------------------------------------------------------------------------------------------------


def _gpu_facts(gpu: Gpu, sys_root: Path) -> Gpu:
    bus = normalize_bus_id(gpu.pci_bus_id)
    unknown = dict(gpu.unknown)
    if bus is None:
        reason = unknown.get("pci_bus_id", "no PCI bus id")
        for name in ("numa_node", "iommu", "acs_redirect"):
            unknown[name] = f"PCI bus id unknown ({reason})"
        return replace(gpu, numa_node=None, iommu=None, acs_redirect=None, unknown=unknown)
    device = sys_root / "bus" / "pci" / "devices" / bus
    if not device.exists():
        for name in ("numa_node", "iommu", "acs_redirect"):
            unknown[name] = f"{device} does not exist"
        return replace(gpu, numa_node=None, iommu=None, acs_redirect=None, unknown=unknown)
    numa = _guard(unknown, "numa_node", lambda: int((device / "numa_node").read_text().strip()))
    iommu = _guard(unknown, "iommu", lambda: iommu_mode(device))
    acs = _guard(unknown, "acs_redirect", lambda: acs_redirect_bridges(device))
    return replace(gpu, numa_node=numa, iommu=iommu, acs_redirect=acs, unknown=unknown)


def iommu_mode(device: Path) -> str:
    group = device / "iommu_group"
    if not group.exists():
        return "off"
    kind = group / "type"
    if not kind.exists():
        raise _Unknown(f"{kind} does not exist (kernels before 5.11 do not say the IOMMU domain type)")
    return kind.read_text().strip()


def acs_redirect_bridges(device: Path) -> tuple[str, ...]:
    """The PCI bridges above ``device`` (from its real sysfs path) whose ACS control redirects peer-to-peer traffic."""
    real = device.resolve()
    found: list[str] = []
    for parent in real.parents:
        if not _BDF.match(parent.name):
            break  # reached the host bridge (pci0000:00)
        config = parent / "config"
        data = config.read_bytes()
        if len(data) <= EXTENDED_CONFIG_START:
            raise _Unknown(f"{config}: the PCIe extended configuration space (where ACS lives) is readable by root only")
        control = acs_control(data)
        if control is not None and control & (ACS_P2P_REQUEST_REDIRECT | ACS_P2P_COMPLETION_REDIRECT):
            found.append(parent.name)
    return tuple(found)


def acs_control(config: bytes) -> int | None:
    """The ACS control register from a device's configuration space, or None when it has no ACS capability."""
    offset, seen = EXTENDED_CONFIG_START, set()
    while EXTENDED_CONFIG_START <= offset <= len(config) - 8 and offset not in seen:
        seen.add(offset)
        header = int.from_bytes(config[offset : offset + 4], "little")
        if header in (0, 0xFFFFFFFF):
            return None
        if header & 0xFFFF == ACS_CAP_ID:
            return int.from_bytes(config[offset + ACS_CTRL_OFFSET : offset + ACS_CTRL_OFFSET + 2], "little")
        offset = (header >> 20) & 0xFFC
    return None
