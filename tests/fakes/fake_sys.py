"""A fake /sys, /proc and /dev/shm in a temporary directory, laid out like the kernel's, made from a Facts profile.

What it writes, per GPU (PCI address from the facts):
- sys/devices/pci0000:00/<bridges...>/<gpu>/ with numa_node, config, and iommu_group -> sys/kernel/iommu_groups/<n>
  (whose type file holds the facts' IOMMU mode; no link for "off");
- sys/bus/pci/devices/<gpu> -> that directory (a symlink, as in the kernel), and one for each bridge;
- each bridge's config space: 4096 bytes with an ACS extended capability whose control register redirects P2P for the
  bridges the facts list in ``acs_redirect`` (and 0 for the others), behind a first extended capability so the probe
  must follow the chain;
- sys/devices/system/node/node<i> for the facts' NUMA node count;
- proc/self/mounts (the /dev/shm tmpfs line with size=) and proc/self/limits (Max locked memory).

    roots = make_tree(tmp_path, load_profile("a100-pcie-4-container"))
    facts = probe_live(environ={}, nvml=FakeNvml(profile), **roots)
"""

from __future__ import annotations

from pathlib import Path

from advisor.facts import MEMLOCK_UNLIMITED, Facts
from advisor.probe.nvml import normalize_bus_id

ACS_CAP_ID = 0x000D
AER_CAP_ID = 0x0001
ROOT_PORT = "0000:00:01.0"


def config_space(acs_control: int | None, size: int = 4096) -> bytes:
    """A PCIe config space: AER at 0x100 pointing to ACS at 0x148 (control register at +6), or AER alone."""
    data = bytearray(size)
    data[0:4] = (0x10DE | (0x1234 << 16)).to_bytes(4, "little")
    if size <= 0x100:
        return bytes(data)
    next_cap = 0x148 if acs_control is not None else 0
    data[0x100:0x104] = (AER_CAP_ID | (1 << 16) | (next_cap << 20)).to_bytes(4, "little")
    if acs_control is not None:
        data[0x148:0x14C] = (ACS_CAP_ID | (1 << 16)).to_bytes(4, "little")
        data[0x148 + 4 : 0x148 + 6] = (0x005F).to_bytes(2, "little")  # capabilities
        data[0x148 + 6 : 0x148 + 8] = acs_control.to_bytes(2, "little")
    return bytes(data)


def make_tree(root: Path, facts: Facts, *, config_size: int = 4096) -> dict[str, str]:
    """Write the tree; returns the probe_live / probe_system keyword arguments pointing at it."""
    sys_root, proc_root, shm = root / "sys", root / "proc", root / "dev-shm"
    devices = sys_root / "bus" / "pci" / "devices"
    devices.mkdir(parents=True)
    shm.mkdir()
    for group, gpu in enumerate(facts.gpus):
        bus = normalize_bus_id(gpu.pci_bus_id)
        if bus is None:
            continue
        # nearest bridge first in acs_redirect; a root port above everything
        bridges = [ROOT_PORT, *reversed(gpu.acs_redirect or ())]
        path = sys_root / "devices" / "pci0000:00"
        for bridge in bridges:
            path = path / bridge
            path.mkdir(parents=True, exist_ok=True)
            redirect = 0x001D if bridge in (gpu.acs_redirect or ()) else 0x0000  # SrcValid ReqRedir CmpltRedir UpstreamFwd
            (path / "config").write_bytes(config_space(redirect, config_size))
            link = devices / bridge
            if not link.exists():
                link.symlink_to(path)
        path = path / bus
        path.mkdir()
        (path / "config").write_bytes(config_space(None, 256))
        if gpu.numa_node is not None:
            (path / "numa_node").write_text(f"{gpu.numa_node}\n")
        if gpu.iommu not in (None, "off"):
            group_dir = sys_root / "kernel" / "iommu_groups" / str(group)
            group_dir.mkdir(parents=True)
            (group_dir / "type").write_text(f"{gpu.iommu}\n")
            (path / "iommu_group").symlink_to(group_dir)
        (devices / bus).symlink_to(path)
    for node in range(facts.system.numa_nodes or 0):
        (sys_root / "devices" / "system" / "node" / f"node{node}").mkdir(parents=True)
    (proc_root / "self").mkdir(parents=True)
    mounts = ["proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0"]
    if facts.system.shm_mib is not None:
        mounts.append(f"shm /dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,size={facts.system.shm_mib * 1024}k 0 0")
    (proc_root / "self" / "mounts").write_text("\n".join(mounts) + "\n")
    memlock = facts.system.memlock_bytes
    value = "unlimited" if memlock == MEMLOCK_UNLIMITED else str(memlock)
    (proc_root / "self" / "limits").write_text(
        "Limit                     Soft Limit           Hard Limit           Units     \n"
        "Max cpu time              unlimited            unlimited            seconds   \n"
        f"Max locked memory         {value:<20} {value:<20} bytes     \n"
        "Max open files            1048576              1048576              files     \n"
    )
    return {"sys_root": str(sys_root), "proc_root": str(proc_root), "shm_path": str(shm)}
