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
}


def test_the_required_profiles_exist():
    assert set(HARDWARE) | {"cpu-only"} == set(list_profiles())


@pytest.mark.parametrize("name", sorted(HARDWARE))
def test_hardware_matches_the_reference(name):
    gpu_name, capability, memory, count, nvlinks, nvswitch = HARDWARE[name]
    facts = load_profile(name)
    assert facts.source == f"simulated:{name}" and facts.is_simulated
    assert facts.host.hostname == f"sim-{name}"
    assert len(facts.gpus) == count and facts.visible_gpus == tuple(range(count))
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


def test_shipped_json_is_what_the_generator_makes(tmp_path):
    make_profiles.main([str(tmp_path)])
    for name in list_profiles():
        assert (tmp_path / f"{name}.json").read_text() == (make_profiles.PROFILES_DIR / f"{name}.json").read_text(), (
            f"{name}.json is stale: run python -m advisor.probe.make_profiles"
        )
