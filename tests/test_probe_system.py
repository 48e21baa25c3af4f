"""The /sys, /proc and /dev/shm probe (advisor/probe/system.py) against fake trees made in tmp_path."""

from __future__ import annotations

import os
from dataclasses import replace

import pytest
from fakes.fake_nvml import FakeNvml
from fakes.fake_sys import config_space, make_tree

from advisor.facts import MEMLOCK_UNLIMITED, Facts
from advisor.probe.live import probe_live
from advisor.probe.profiles import load_profile
from advisor.probe.system import acs_control, parse_size, probe_system


def _probe(profile: str, tmp_path, **tree):
    facts = load_profile(profile)
    roots = make_tree(tmp_path, facts, **tree)
    return facts, probe_system(facts.gpus, **roots), roots


def test_a_container_with_acs_iommu_small_shm_and_low_memlock(tmp_path):
    recorded, (gpus, system, errors), _ = _probe("a100-pcie-4-container", tmp_path)
    assert errors == []
    assert system.shm_mib == 64 and system.memlock_bytes == 8 * 2**20 and system.numa_nodes == 1
    assert [g.iommu for g in gpus] == ["DMA-FQ"] * 4
    assert [g.acs_redirect for g in gpus] == [g.acs_redirect for g in recorded.gpus]
    assert gpus[0].acs_redirect == ("0000:17:00.0",)  # the root port above it has ACS but redirects nothing


def test_a_healthy_two_socket_server(tmp_path):
    _, (gpus, system, errors), _ = _probe("l40s-4", tmp_path)
    assert errors == [] and system.memlock_bytes == MEMLOCK_UNLIMITED and system.numa_nodes == 2
    assert [g.numa_node for g in gpus] == [0, 0, 1, 1]
    assert {g.iommu for g in gpus} == {"off"} and {g.acs_redirect for g in gpus} == {()}


def test_acs_needs_root_to_read_the_extended_config_space(tmp_path):
    # Without root the kernel hands out 256 bytes of config space (64 in some kernels): ACS is then unknown
    _, (gpus, _, errors), _ = _probe("a100-pcie-4-container", tmp_path, config_size=256)
    assert all(g.acs_redirect is None for g in gpus)
    assert "readable by root only" in gpus[0].unknown["acs_redirect"]
    assert gpus[0].iommu == "DMA-FQ" and "iommu" not in gpus[0].unknown  # the rest is still known
    assert errors == []  # unknown per-GPU fields are not probe errors; the field says why


def test_missing_files_leave_each_fact_unknown_with_the_reason(tmp_path):
    facts = load_profile("l40s-4")
    roots = make_tree(tmp_path, facts)
    bus = "0000:18:00.0"
    os.remove(os.path.join(roots["sys_root"], "bus", "pci", "devices", bus, "numa_node"))
    os.remove(os.path.join(roots["proc_root"], "self", "limits"))
    gpus, system, errors = probe_system(facts.gpus, **roots)
    assert gpus[0].numa_node is None and gpus[0].unknown["numa_node"].startswith("FileNotFoundError")
    assert gpus[1].numa_node == 0
    assert system.memlock_bytes is None and "limits" in system.unknown["memlock_bytes"]
    assert [e.probe for e in errors] == ["system.memlock_bytes"]


def test_a_gpu_missing_from_sys_and_a_kernel_without_iommu_types(tmp_path):
    facts = load_profile("a100-pcie-4-container")
    roots = make_tree(tmp_path, facts)
    for group in (tmp_path / "sys" / "kernel" / "iommu_groups").iterdir():
        (group / "type").unlink()  # kernels before 5.11
    gone = replace(facts.gpus[0], pci_bus_id="00000000:99:00.0")
    gpus, _, _ = probe_system((gone, *facts.gpus[1:]), **roots)
    assert gpus[0].numa_node is None and "does not exist" in gpus[0].unknown["numa_node"]
    assert gpus[1].iommu is None and "5.11" in gpus[1].unknown["iommu"]


def test_shm_without_a_size_option_uses_statvfs_and_without_dev_shm_is_unknown(tmp_path):
    facts = load_profile("rtx-4090-2")
    roots = make_tree(tmp_path, facts)
    (tmp_path / "proc" / "self" / "mounts").write_text("proc /proc proc rw 0 0\n")
    _, system, _ = probe_system(facts.gpus, **roots)
    stat = os.statvfs(roots["shm_path"])
    assert system.shm_mib == stat.f_blocks * stat.f_frsize // 2**20
    _, system, errors = probe_system(facts.gpus, **{**roots, "shm_path": str(tmp_path / "nope")})
    assert system.shm_mib is None and "does not exist" in system.unknown["shm_mib"]
    assert [e.probe for e in errors] == ["system.shm_mib"]


def test_numa_unknown_without_the_node_directory(tmp_path):
    facts = replace(load_profile("rtx-4090-2"), system=replace(load_profile("rtx-4090-2").system, numa_nodes=0))
    roots = make_tree(tmp_path, facts)
    _, system, _ = probe_system(facts.gpus, **roots)
    assert system.numa_nodes is None and "does not exist" in system.unknown["numa_nodes"]


@pytest.mark.parametrize(("text", "expected"), [("65536k", 64 * 2**20), ("8g", 8 * 2**30), ("1048576", 2**20)])
def test_tmpfs_sizes(text, expected):
    assert parse_size(text) == expected


def test_a_percentage_size_is_unknown(tmp_path):
    facts = load_profile("rtx-4090-2")
    roots = make_tree(tmp_path, facts)
    (tmp_path / "proc" / "self" / "mounts").write_text("tmpfs /dev/shm tmpfs rw,size=50% 0 0\n")
    _, system, _ = probe_system(facts.gpus, **roots)
    assert system.shm_mib is None and "size=50%" in system.unknown["shm_mib"]


def test_acs_capability_parsing():
    assert acs_control(config_space(0x001D)) == 0x001D
    assert acs_control(config_space(None)) is None  # AER only, end of chain
    assert acs_control(bytes(4096)) is None  # no extended capabilities at all
    looped = bytearray(config_space(None))
    looped[0x100:0x104] = (0x0001 | (1 << 16) | (0x100 << 20)).to_bytes(4, "little")  # points at itself
    assert acs_control(bytes(looped)) is None


def test_probe_live_reads_the_injected_roots(tmp_path):
    recorded = load_profile("workstation-mixed-2")
    facts = probe_live(environ={}, nvml=FakeNvml(recorded), **make_tree(tmp_path, recorded))
    assert facts.system == recorded.system
    assert [(g.numa_node, g.iommu, g.acs_redirect) for g in facts.gpus] == [(0, "off", ()), (0, "off", ())]
    again = Facts.from_json(facts.to_json())  # and the facts file keeps them
    assert again.system == facts.system and again.gpus == facts.gpus
