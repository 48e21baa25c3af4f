"""The NVML probe, driven by a fake pynvml that replays the simulated machines and raises the real NVML error classes."""

from __future__ import annotations

import sys
import tempfile
import types
from pathlib import Path

import pynvml
import pytest
from fakes.fake_nvml import ERROR_CLASSES, FakeNvml
from fakes.fake_sys import make_tree

from advisor.facts import Facts
from advisor.probe.live import probe_live
from advisor.probe.nvml import normalize_bus_id, probe_nvml
from advisor.probe.profiles import list_profiles, load_profile


def probe(nvml) -> Facts:
    """probe_live against the fake NVML and a fake /sys, /proc and /dev/shm made from the same recorded machine."""
    with tempfile.TemporaryDirectory(prefix="fake-sys-") as root:
        return probe_live(environ={}, nvml=nvml, **make_tree(Path(root), nvml.facts))


@pytest.mark.parametrize("name", list_profiles())
def test_replaying_a_profile_reproduces_its_facts(name):
    recorded = load_profile(name)
    fake = FakeNvml(recorded)
    facts = probe(fake)
    assert facts.source == "live"
    assert facts.gpus == recorded.gpus
    assert facts.topology == recorded.topology
    assert facts.system == recorded.system
    assert facts.visible_gpus == tuple(range(len(recorded.gpus)))  # the environment here sets no CUDA_VISIBLE_DEVICES
    for attr in ("available", "version", "cuda_version", "reason", "unknown"):
        assert getattr(facts.driver, attr) == getattr(recorded.driver, attr), attr
    assert facts.errors == ()
    assert fake.initialised == 0, "nvmlShutdown must balance nvmlInit"


def test_nvswitch_pairs_count_every_active_link_like_nvidia_smi():
    facts = probe(FakeNvml(load_profile("h800-8")))
    assert facts.topology.nvswitch is True
    assert facts.topology.matrix([0, 1, 4]) == [["X", "NV8", "NV8"], ["NV8", "X", "NV8"], ["NV8", "NV8", "X"]]
    assert facts.topology.all_pairs_nvlink_p2p(list(range(8))) is True


def test_bridge_pair_is_nvlink_without_nvswitch_and_pcie_gpus_have_no_nvlink():
    bridge = probe(FakeNvml(load_profile("h100-pcie-2-bridge")))
    assert bridge.topology.nvswitch is False and bridge.topology.pair(0, 1).nvlinks == 12
    l40s = probe(FakeNvml(load_profile("l40s-4")))
    assert l40s.topology.nvswitch is False
    assert [g.nvlinks_active for g in l40s.gpus] == [0, 0, 0, 0]
    assert l40s.topology.matrix([0, 1, 2])[0] == ["X", "PXB", "SYS"]
    assert l40s.topology.pair(0, 1).nvlink_p2p == "not supported"
    assert l40s.topology.all_pairs_nvlink_p2p([0, 1, 2, 3]) is False


def test_fabric_of_a_gb200_tray():
    fabric = probe(FakeNvml(load_profile("gb200-nvl72-tray"))).topology.fabric
    assert (fabric.state, fabric.cluster_uuid, fabric.clique_id) == (
        "completed",
        "5e2a9b0c-7d41-4f3e-9c8a-1b6d0e4f7a23",
        32766,
    )


def test_no_driver_is_a_fact_and_the_rest_is_still_probed():
    facts = probe(FakeNvml(load_profile("cpu-only")))
    assert facts.driver.available is False
    assert facts.driver.reason == "no NVIDIA driver (NVML library not found)"
    assert facts.gpus == () and facts.visible_gpus == () and facts.errors == ()
    assert facts.host.python and facts.host.cpu_count
    assert facts.package("nvidia-ml-py").installed  # packages come from this interpreter


def test_real_nvml_on_this_driverless_machine():
    facts = probe_live(environ={"CUDA_VISIBLE_DEVICES": "0", "NCCL_DEBUG": "INFO"})
    if facts.driver.available:  # pragma: no cover - only on a GPU machine
        pytest.skip("this machine has an NVIDIA driver")
    assert facts.driver.reason.startswith("no NVIDIA driver (")
    assert facts.driver.nvml_library.startswith("nvidia-ml-py ")
    assert facts.gpus == ()
    assert facts.environment == {"CUDA_VISIBLE_DEVICES": "0", "NCCL_DEBUG": "INFO"}
    assert facts.visible_gpus == () and "past the last GPU" in facts.visible_gpus_note
    assert facts.package("torch").installed
    # /proc and /dev/shm are real here: the limits and the shm size are read, whatever they are
    assert facts.system.memlock_bytes is not None and "memlock_bytes" not in facts.system.unknown


def test_p2p_read_write_and_the_processes_on_each_gpu():
    facts = probe(FakeNvml(load_profile("workstation-mixed-2")))
    pair = facts.topology.pair(0, 1)
    assert (pair.p2p_read, pair.p2p_write, pair.nvlink_p2p) == ("not supported", "not supported", "not supported")
    assert facts.gpus[0].processes == ()
    assert [(p.pid, p.name, p.used_mib) for p in facts.gpus[1].processes] == [
        (2143, "/usr/lib/xorg/Xorg", 412), (48210, "python", 17_830)
    ]
    h200 = probe(FakeNvml(load_profile("h200-8")))
    assert {(link.p2p_read, link.p2p_write) for link in h200.topology.links} == {("OK", "OK")}


def test_a_process_name_nvml_cannot_give_is_left_out_not_unknown():
    # across PID namespaces (a container) NVML cannot name another namespace's process: the pid and memory remain
    fake = FakeNvml(load_profile("workstation-mixed-2")).fail("nvmlSystemGetProcessName", "NotFound")
    facts = probe(fake)
    assert [(p.pid, p.name) for p in facts.gpus[1].processes] == [(2143, None), (48210, None)]
    assert "processes" not in facts.gpus[1].unknown


def test_p2p_read_failing_alone_leaves_only_it_unknown():
    fake = FakeNvml(load_profile("rtx-4090-2"))
    original = fake.nvmlDeviceGetP2PStatus

    def read_fails(h1, h2, index):
        if index == 0:
            raise pynvml.NVMLError_NoPermission()
        return original(h1, h2, index)

    fake.nvmlDeviceGetP2PStatus = read_fails
    pair = probe(fake).topology.pair(0, 1)
    assert pair.p2p_read is None and pair.unknown["p2p_read"] == "NVML NoPermission"
    assert pair.p2p_write == "not supported" and pair.nvlink_p2p == "not supported"


# -- every NVML error class in every call --------------------------------------------------------------------------

# call -> (profile, device to fail or None for all, where the unknown reason must land)
CALLS = {
    "nvmlSystemGetDriverVersion": ("h100-pcie-2-bridge", None, lambda f: f.driver.unknown["version"]),
    "nvmlSystemGetCudaDriverVersion": ("h100-pcie-2-bridge", None, lambda f: f.driver.unknown["cuda_version"]),
    "nvmlDeviceGetCount": ("h100-pcie-2-bridge", None, lambda f: f.driver.unknown["gpus"]),
    "nvmlDeviceGetHandleByIndex": ("h100-pcie-2-bridge", 1, lambda f: f.gpus[1].unknown["memory_total_mib"]),
    "nvmlDeviceGetName": ("h100-pcie-2-bridge", 1, lambda f: f.gpus[1].unknown["name"]),
    "nvmlDeviceGetUUID": ("h100-pcie-2-bridge", 1, lambda f: f.gpus[1].unknown["uuid"]),
    "nvmlDeviceGetPciInfo": ("h100-pcie-2-bridge", 1, lambda f: f.gpus[1].unknown["pci_bus_id"]),
    "nvmlDeviceGetCudaComputeCapability": ("h100-pcie-2-bridge", 1, lambda f: f.gpus[1].unknown["capability"]),
    "nvmlDeviceGetMemoryInfo": ("h100-pcie-2-bridge", 1, lambda f: f.gpus[1].unknown["memory_free_mib"]),
    "nvmlDeviceGetMigMode": ("h100-pcie-2-bridge", 1, lambda f: f.gpus[1].unknown["mig_mode"]),
    "nvmlDeviceGetNvLinkState": ("h100-pcie-2-bridge", 1, lambda f: f.gpus[1].unknown["nvlinks_active"]),
    "nvmlDeviceGetNvLinkRemotePciInfo": ("h100-pcie-2-bridge", None, lambda f: f.topology.pair(0, 1).unknown["nvlinks"]),
    "nvmlDeviceGetNvLinkRemoteDeviceType": ("gb200-nvl72-tray", None, lambda f: f.topology.unknown["nvswitch"]),
    "nvmlDeviceGetP2PStatus": ("h100-pcie-2-bridge", None, lambda f: f.topology.pair(0, 1).unknown["nvlink_p2p"]),
    "nvmlDeviceGetTopologyCommonAncestor": ("h100-pcie-2-bridge", None, lambda f: f.topology.pair(0, 1).unknown["pcie"]),
    "nvmlDeviceGetGpuFabricInfoV": ("gb200-nvl72-tray", None, lambda f: f.topology.fabric.unknown["state"]),
    "nvmlDeviceGetComputeRunningProcesses": ("workstation-mixed-2", 1, lambda f: f.gpus[1].unknown["processes"]),
}

# NotSupported from these calls is how NVML says "this GPU has no such feature": a known value, not an unknown one.
NOT_SUPPORTED_MEANS = {
    "nvmlDeviceGetMigMode": lambda f: f.gpus[1].mig_mode == "not supported",
    "nvmlDeviceGetNvLinkState": lambda f: f.gpus[1].nvlinks_active == 0,
    "nvmlDeviceGetGpuFabricInfoV": lambda f: f.topology.fabric.state == "not supported",
}


@pytest.mark.parametrize("error", sorted(ERROR_CLASSES))
@pytest.mark.parametrize("call", sorted(CALLS))
def test_each_error_in_each_call_leaves_that_field_unknown(call, error):
    profile, device, where = CALLS[call]
    fake = FakeNvml(load_profile(profile)).fail(call, ERROR_CLASSES[error], device=device)
    facts = probe(fake)  # must not raise
    assert fake.initialised == 0
    if error == "NotSupported" and call in NOT_SUPPORTED_MEANS:
        assert NOT_SUPPORTED_MEANS[call](facts)
        return
    assert where(facts).endswith(f"NVML {error}") or f"NVML {error})" in where(facts)
    assert any(f"NVML {error}" in e.message for e in facts.errors)
    assert facts.driver.available is True


@pytest.mark.parametrize("error", sorted(ERROR_CLASSES))
def test_each_error_at_init(error):
    facts = probe(FakeNvml(load_profile("h200-8")).fail("nvmlInit", ERROR_CLASSES[error]))
    assert facts.driver.available is False and facts.gpus == ()
    if error in ("LibraryNotFound", "DriverNotLoaded"):
        assert facts.driver.reason.startswith("no NVIDIA driver (")
        assert facts.errors == ()
    else:
        assert facts.driver.reason.startswith(f"NVML could not start (NVML {error})")
        assert facts.errors[0].probe == "nvml.init"
    assert facts.package("nvidia-ml-py").installed and facts.host.hostname


@pytest.mark.parametrize("error", ["GpuIsLost", "Unknown"])
def test_errors_at_shutdown_are_swallowed(error):
    recorded = load_profile("h100-pcie-2-bridge")
    facts = probe(FakeNvml(recorded).fail("nvmlShutdown", ERROR_CLASSES[error]))
    assert facts.gpus == recorded.gpus


def test_a_gpu_that_fails_wholesale_stays_a_row_with_reasons():
    facts = probe(FakeNvml(load_profile("h200-8")).fail("nvmlDeviceGetHandleByIndex", "GpuIsLost", device=5))
    assert len(facts.gpus) == 8
    lost = facts.gpus[5]
    from_sys = {k: lost.unknown.pop(k) for k in ("numa_node", "iommu", "acs_redirect")}  # /sys needs its bus id
    assert lost.name is None and set(lost.unknown.values()) == {"NVML GpuIsLost"}
    assert set(from_sys.values()) == {"PCI bus id unknown (NVML GpuIsLost)"}
    assert facts.topology.pair(4, 5).unknown["pcie"].startswith("GPU 5 unavailable")
    assert facts.topology.pair(0, 1).label == "NV18"
    assert facts.topology.nvswitch is True


def test_one_failing_link_makes_only_the_nvlink_fields_unknown():
    facts = probe(FakeNvml(load_profile("h200-8")).fail("nvmlDeviceGetNvLinkState", "Unknown", device=2, link=7))
    assert facts.gpus[2].unknown == {"nvlinks_active": "NVML Unknown"}
    assert facts.gpus[2].memory_total_mib == 143771
    assert "nvlinks" in facts.topology.pair(2, 3).unknown and facts.topology.pair(2, 3).pcie == "PXB"
    assert facts.topology.pair(0, 1).nvlinks == 18


def test_an_older_binding_without_fabric_info():
    fake = FakeNvml(load_profile("gb200-nvl72-tray"))
    names = [n for n in dir(fake) if not n.startswith("_") and n not in ("nvmlDeviceGetGpuFabricInfoV", "c_nvmlGpuFabricInfoV_t")]
    old = types.SimpleNamespace(**{n: getattr(fake, n) for n in names})
    facts = probe(old)
    assert "upgrade nvidia-ml-py" in facts.topology.fabric.unknown["state"]
    assert facts.gpus[0].name == "NVIDIA GB200"


def test_unexpected_exceptions_are_unknown_fields_too():
    fake = FakeNvml(load_profile("rtx-4090-2"))
    fake.fail("nvmlDeviceGetName", pynvml.NVMLError_Unknown)

    def broken_memory(handle):
        raise OSError("ctypes went wrong")

    fake.nvmlDeviceGetMemoryInfo = broken_memory
    facts = probe(fake)
    assert facts.gpus[0].unknown["name"] == "NVML Unknown"
    assert facts.gpus[0].unknown["memory_total_mib"] == "OSError: ctypes went wrong"


def test_probe_nvml_passes_p2p_index_as_a_plain_int():
    # The fake rejects anything but int 2 (nvidia-ml-py's NVML_P2P_CAPS_INDEX_READ is the tuple (0,)).
    result = probe_nvml(FakeNvml(load_profile("h200-8")))
    assert {link.nvlink_p2p for link in result.topology.links} == {"OK"}


def test_bus_ids_normalise():
    assert normalize_bus_id("00000000:1A:00.0") == normalize_bus_id("0000:1a:00.0") == "0000:1a:00.0"
    assert normalize_bus_id(None) is None


def test_the_fake_mirrors_the_real_bindings_signatures():
    """Every pynvml function the probe calls exists in the installed nvidia-ml-py with the arity the fake uses."""
    import inspect

    fake = FakeNvml(load_profile("h200-8"))
    called = {name for name in dir(FakeNvml) if name.startswith("nvml")}
    assert len(called) >= 18
    for name in sorted(called):
        real = inspect.signature(getattr(pynvml, name))
        mine = inspect.signature(getattr(fake, name))
        required = [p for p in real.parameters.values() if p.default is inspect.Parameter.empty]
        assert len(required) == len(mine.parameters), name
    assert isinstance(pynvml.c_nvmlGpuFabricInfoV_t(), type(fake.c_nvmlGpuFabricInfoV_t()))
    assert pynvml.NVML_P2P_CAPS_INDEX_NVLINK == 2 and pynvml.NVML_NVLINK_DEVICE_TYPE_SWITCH == 2


def test_fabric_with_an_all_zero_cluster_uuid():
    from dataclasses import replace

    from advisor.facts import Fabric

    h100 = load_profile("h100-sxm-8")
    hopper = replace(h100, topology=replace(h100.topology, fabric=Fabric(state="completed", clique_id=0)))
    fabric = probe(FakeNvml(hopper)).topology.fabric
    assert fabric.state == "completed" and fabric.cluster_uuid is None
    assert fabric.unknown == {"cluster_uuid": "NVML reports an all-zero cluster UUID"}


def test_without_nvidia_ml_py(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml now raises ImportError
    facts = probe_live(environ={})
    assert facts.driver.available is False and "pip install nvidia-ml-py" in facts.driver.reason
    assert facts.errors[-1].probe == "nvml.import" and facts.host.hostname


# -- what older or stranger bindings return -------------------------------------------------------------------------

UNMAPPED_CODE = 9999  # no NVMLError_* class: pynvml raises a bare NVMLError whose str() would call into the library


@pytest.mark.parametrize("name", ["h200-8", "rtx-4090-2", "gb200-nvl72-tray"])
def test_bytes_names_from_an_older_binding_are_text(name):
    recorded = load_profile(name)
    fake = FakeNvml(recorded, bytes_strings=True)
    fake.nvmlInit()
    assert isinstance(fake.nvmlDeviceGetName(fake.nvmlDeviceGetHandleByIndex(0)), bytes)  # the fake does send bytes
    fake.nvmlShutdown()
    facts = probe(fake)
    assert facts.gpus == recorded.gpus  # names, UUIDs: str, equal to the recorded ones
    assert facts.driver.version == recorded.driver.version and isinstance(facts.driver.version, str)
    assert facts.errors == ()


def test_undecodable_bytes_name_is_replaced_not_raised():
    recorded = load_profile("rtx-4090-2")
    fake = FakeNvml(recorded, bytes_strings=True)
    fake.nvmlDeviceGetName = lambda handle: b"NVIDIA \xff\xfe GeForce"
    facts = probe(fake)
    assert facts.gpus[0].name == "NVIDIA \ufffd\ufffd GeForce" and facts.errors == ()


def test_a_bare_nvml_error_with_an_unmapped_code_is_an_unknown_field():
    error = pynvml.NVMLError(UNMAPPED_CODE)
    assert type(error) is pynvml.NVMLError  # the real module's behaviour the fake relies on
    fake = FakeNvml(load_profile("h200-8")).fail("nvmlDeviceGetMemoryInfo", UNMAPPED_CODE, device=3)
    facts = probe(fake)
    assert facts.gpus[3].unknown["memory_total_mib"] == f"NVML error {UNMAPPED_CODE}"
    assert facts.gpus[3].memory_total_mib is None and facts.gpus[2].memory_total_mib == 143771
    assert any(f"NVML error {UNMAPPED_CODE}" in e.message for e in facts.errors)
    assert fake.initialised == 0


def test_a_bare_nvml_error_at_init_says_nvml_could_not_start():
    facts = probe(FakeNvml(load_profile("h200-8")).fail("nvmlInit", UNMAPPED_CODE))
    assert facts.driver.available is False and facts.gpus == ()
    assert facts.driver.reason.startswith(f"NVML could not start (NVML error {UNMAPPED_CODE})")
    assert facts.errors[0].probe == "nvml.init"
