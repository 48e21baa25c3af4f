"""The simulated machines: hardware as shared/reference/gpus.md lists it, a plausible software stack each."""

from __future__ import annotations

import pytest

from advisor.probe import make_profiles
from advisor.probe.profiles import ProfileError, list_profiles, load_profile, profile_summary

# profile -> (NVML name, capability, MiB per GPU, GPUs, NVLinks per GPU, NVSwitch)
HARDWARE = {
    "h100-sxm-8": ("NVIDIA H100 80GB HBM3", (9, 0), 81559, 8, 18, True),
    "h200-8": ("NVIDIA H200", (9, 0), 143771, 8, 18, True),
    "h20-8": ("NVIDIA H20", (9, 0), 97871, 8, 18, True),
    "h800-8": ("NVIDIA H800", (9, 0), 81559, 8, 8, True),
    "b200-8": ("NVIDIA B200", (10, 0), 183359, 8, 18, True),
    "b300-8": ("NVIDIA B300 SXM6 AC", (10, 3), 275040, 8, 18, True),
    "gb200-nvl72-tray": ("NVIDIA GB200", (10, 0), 189471, 4, 18, True),
    "a100-sxm-8": ("NVIDIA A100-SXM4-80GB", (8, 0), 81920, 8, 12, True),
    "l40s-4": ("NVIDIA L40S", (8, 9), 46068, 4, 0, False),
    "rtx-pro-6000-4": ("NVIDIA RTX PRO 6000 Blackwell Server Edition", (12, 0), 97887, 4, 0, False),
    "rtx-4090-2": ("NVIDIA GeForce RTX 4090", (8, 9), 24564, 2, 0, False),
    "h100-pcie-2-bridge": ("NVIDIA H100 PCIe", (9, 0), 81559, 2, 12, False),
    "h200-8-fabric-pending": ("NVIDIA H200", (9, 0), 143771, 8, 18, True),
    "a100-pcie-4-container": ("NVIDIA A100 80GB PCIe", (8, 0), 81920, 4, 0, False),
}
MIXED = {"workstation-mixed-2"}  # GPUs of two models: checked on their own below


def test_the_required_profiles_exist():
    assert set(HARDWARE) | MIXED | {"cpu-only"} == set(list_profiles())


def test_the_broken_machines_are_in_the_state_their_checks_need():
    """Each launch-pitfall check (advisor/rules/checks_machine.py) has a profile that shows its state."""
    rtx = load_profile("rtx-4090-2")
    assert {(link.p2p_read, link.p2p_write) for link in rtx.topology.links} == {("not supported", "not supported")}
    assert load_profile("h200-8-fabric-pending").topology.fabric.state == "in progress"
    container = load_profile("a100-pcie-4-container")
    assert container.system.shm_mib == 64 and container.system.memlock_bytes == 8 * 2**20
    assert container.visible_gpus == (0, 2, 1, 3) and container.environment["CUDA_VISIBLE_DEVICES"] == "0,2,1,3"
    assert {g.iommu for g in container.gpus} == {"DMA-FQ"} and all(g.acs_redirect for g in container.gpus)
    assert container.environment["NCCL_P2P_DISABLE"] == "1"
    mixed = load_profile("workstation-mixed-2")
    assert [g.name for g in mixed.gpus] == ["NVIDIA RTX 6000 Ada Generation", "NVIDIA GeForce RTX 4090"]
    assert mixed.gpus[0].processes == () and sum(p.used_mib for p in mixed.gpus[1].processes) > 18_000
    assert mixed.gpus[1].memory_total_mib - mixed.gpus[1].memory_free_mib > 18_000
    assert [g.numa_node for g in load_profile("l40s-4").gpus] == [0, 0, 1, 1]
    # healthy machines: P2P everywhere NVLink or PCIe allows it, roomy /dev/shm, no IOMMU, nobody on the GPUs
    for name in ("h200-8", "l40s-4", "rtx-pro-6000-4"):
        facts = load_profile(name)
        assert {link.p2p_read for link in facts.topology.links} == {"OK"}
        assert facts.system.shm_mib >= 1024 and all(g.iommu == "off" and g.acs_redirect == () for g in facts.gpus)
        assert all(g.processes == () for g in facts.gpus)


@pytest.mark.parametrize("name", sorted(HARDWARE))
def test_hardware_matches_the_reference(name):
    gpu_name, capability, memory, count, nvlinks, nvswitch = HARDWARE[name]
    facts = load_profile(name)
    assert facts.source == f"simulated:{name}" and facts.is_simulated
    assert facts.host.hostname == f"sim-{name}"
    assert len(facts.gpus) == count and sorted(facts.visible_gpus) == list(range(count))  # the container reorders
    assert {(g.name, g.capability, g.memory_total_mib, g.nvlinks_active) for g in facts.gpus} == {
        (gpu_name, capability, memory, nvlinks)
    }
    assert len({g.uuid for g in facts.gpus}) == count and len({g.pci_bus_id for g in facts.gpus}) == count
    assert facts.topology.nvswitch is nvswitch
    assert len(facts.topology.links) == count * (count - 1) // 2
    assert {link.nvlinks for link in facts.topology.links} == {nvlinks}
    assert facts.topology.all_pairs_nvlink_p2p(list(range(count))) is bool(nvlinks)
    assert all(link.pcie in ("PIX", "PXB", "PHB", "NODE", "SYS") for link in facts.topology.links)


@pytest.mark.parametrize("name", sorted(HARDWARE))
def test_software_stack_is_plausible(name):
    facts = load_profile(name)
    torch = facts.package("torch")
    assert torch.installed and torch.cuda is not None
    minor = int(torch.version.split(".")[1])
    assert 9 <= minor <= 14
    assert torch.local_label in ("cu128", "cu129", "cu130")
    assert facts.driver.available and facts.driver.version.split(".")[0] in ("570", "575", "580", "590")
    driver_cuda = tuple(int(x) for x in facts.driver.cuda_version.split("."))
    assert tuple(int(x) for x in torch.cuda.split(".")) <= driver_cuda, "torch's CUDA needs a new enough driver"
    flashinfer = facts.package("flashinfer-python")
    assert flashinfer.installed
    for partner in ("flashinfer-cubin", "flashinfer-jit-cache"):
        pkg = facts.package(partner)
        if pkg.installed:
            assert pkg.base_version == flashinfer.version and pkg.module_version == pkg.version
    jit = facts.package("flashinfer-jit-cache")
    if jit.installed:
        assert jit.local_label == torch.local_label
    assert facts.package("sglang").installed or facts.package("vllm").installed
    assert facts.package("nvidia-ml-py").installed and facts.package("triton").installed


def test_some_stacks_named_in_the_brief():
    assert load_profile("b300-8").package("sglang").version == "0.5.18"
    assert load_profile("h20-8").package("sglang").version == "0.5.12"
    b300 = load_profile("b300-8")
    assert b300.package("flashinfer-jit-cache-sm103a").version == "0.7.4+cu130"
    assert load_profile("h800-8").package("pynvml").version == "12.0.0"  # the unofficial wrapper beside nvidia-ml-py


def test_fabric_and_cpu_only():
    fabric = load_profile("gb200-nvl72-tray").topology.fabric
    assert fabric.state == "completed" and fabric.cluster_uuid and fabric.clique_id == 32766
    assert load_profile("h200-8").topology.fabric.state == "not supported"
    cpu = load_profile("cpu-only")
    assert cpu.gpus == () and cpu.driver.available is False and cpu.driver.reason.startswith("no NVIDIA driver")
    assert cpu.package("torch").local_label == "cpu" and cpu.package("torch").cuda is None


def test_pcie_levels_cross_sockets():
    facts = load_profile("h100-sxm-8")
    assert facts.topology.pair(0, 1).pcie == "PXB"
    assert facts.topology.pair(0, 2).pcie == "NODE"
    assert facts.topology.pair(3, 4).pcie == "SYS"
    assert facts.topology.matrix([0, 1])[0] == ["X", "NV18"]


def test_unknown_profile_lists_the_known_ones():
    with pytest.raises(ProfileError) as caught:
        load_profile("h300-16")
    message = str(caught.value)
    assert "\n" not in message and "'h300-16'" in message and "b300-8" in message and "cpu-only" in message


def test_summaries():
    assert profile_summary("h200-8") == "8 x NVIDIA H200 (9.0, 143771 MiB), NVSwitch NV18"
    assert profile_summary("h100-pcie-2-bridge").endswith("NVLink NV12, no NVSwitch")
    assert profile_summary("l40s-4").endswith("PCIe only (PXB/SYS)")
    assert "NVLink fabric clique 32766" in profile_summary("gb200-nvl72-tray")
    assert profile_summary("cpu-only").startswith("no GPUs")
    assert profile_summary("h200-8-fabric-pending").endswith("NVLink fabric in progress")
    assert profile_summary("workstation-mixed-2").startswith(
        "1 x NVIDIA RTX 6000 Ada Generation, 1 x NVIDIA GeForce RTX 4090"
    )


def test_shipped_json_is_what_the_generator_makes(tmp_path):
    make_profiles.main([str(tmp_path)])
    for name in list_profiles():
        assert (tmp_path / f"{name}.json").read_text() == (make_profiles.PROFILES_DIR / f"{name}.json").read_text(), (
            f"{name}.json is stale: run python -m advisor.probe.make_profiles"
        )
