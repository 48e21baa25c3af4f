"""A fake `pynvml` that replays a recorded machine (a Facts profile) and can fail any call with any NVML error.

It carries the real module's constants, structures and exception classes (pynvml.NVMLError_NotSupported, ...), so the
probe's ``except`` clauses and struct handling are exercised as they are against the real library. What it replays:
- each GPU's name, UUID, PCI bus id, capability, memory, MIG mode;
- NVLinks: on NVSwitch machines every active link ends at an NVSwitch (remote type 2, a switch's bus id); otherwise the
  links recorded for each pair end at the peer GPU; GPUs without NVLink raise NotSupported for every link, and link
  indices past a GPU's links raise InvalidArgument;
- P2P for the READ, WRITE and NVLINK indices (each a plain int), PCIe common ancestor, fabric info (NotSupported before
  Hopper);
- the compute processes holding memory on each GPU, and their names (nvmlSystemGetProcessName).

    nvml = FakeNvml(load_profile("h200-8"))
    nvml.fail("nvmlDeviceGetMemoryInfo", "NoPermission", device=3)
    nvml.fail("nvmlDeviceGetName", 9999)  # a bare pynvml.NVMLError: a code the binding has no class for

``FakeNvml(facts, bytes_strings=True)`` returns the driver version, GPU names and UUIDs as ``bytes``, as nvidia-ml-py
releases before 11.515 did (and as a binding without its str conversion still can).
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pynvml

from advisor.facts import PCIE_LEVELS, Facts, Link

LEVEL_CODES = {name: code for code, name in PCIE_LEVELS.items()}
P2P_CODES = {
    "OK": 0,
    "chipset not supported": 1,
    "GPU not supported": 2,
    "topology not supported": 3,
    "disabled by regkey": 4,
    "not supported": 5,
    "unknown": 6,
}
FABRIC_CODES = {"not supported": 0, "not started": 1, "in progress": 2, "completed": 3}
LINKS_PER_NVLINK_GPU = 18

# The error classes the issue names, as the real module defines them.
ERROR_CLASSES = {
    name: getattr(pynvml, f"NVMLError_{name}")
    for name in (
        "NotSupported",
        "NoPermission",
        "DriverNotLoaded",
        "LibraryNotFound",
        "FunctionNotFound",
        "GpuIsLost",
        "LibRmVersionMismatch",
        "Unknown",
    )
}


@dataclass(frozen=True)
class FakeHandle:
    index: int


@dataclass
class _Failure:
    function: str
    error: Callable[[], BaseException]
    device: int | None
    link: int | None


class FakeNvml:
    """Module-like: ``nvml.nvmlInit()``, ``nvml.NVMLError_NotSupported``, ``nvml.NVML_NVLINK_MAX_LINKS``..."""

    def __init__(self, facts: Facts, bytes_strings: bool = False):
        self.facts = facts
        self.bytes_strings = bytes_strings
        self.failures: list[_Failure] = []
        self.calls: list[str] = []
        self.initialised = 0
        # Everything the real module offers that is not a function: constants, structures, exception classes.
        for name in dir(pynvml):
            if name.startswith(("NVML_", "NVMLError", "c_nvml", "nvmlPciInfo_t", "nvmlGpuFabricInfo")):
                setattr(self, name, getattr(pynvml, name))
        self._gpus = {g.index: g for g in facts.gpus}
        self._links = self._build_links()

    # -- failure injection -----------------------------------------------------------------------------------------
    def fail(self, function: str, error: str | type | int, device: int | None = None, link: int | None = None) -> FakeNvml:
        """Make ``function`` raise ``error`` (a pynvml class or its short name, "NotSupported"; or an NVML return code,
        raised as the real module raises it: ``pynvml.NVMLError(code)``, a bare NVMLError when no class maps the code),
        for one device or all."""
        if not hasattr(self, function):
            raise AttributeError(f"fake NVML has no {function}")
        if isinstance(error, int):
            self.failures.append(_Failure(function, functools.partial(pynvml.NVMLError, error), device, link))
            return self
        if isinstance(error, str):
            cls = ERROR_CLASSES.get(error) or getattr(pynvml, f"NVMLError_{error}", None)
        else:
            cls = error
        if cls is None:
            raise ValueError(f"no NVML error class {error!r}")
        self.failures.append(_Failure(function, cls, device, link))
        return self

    def _enter(self, function: str, *handles: Any, link: int | None = None) -> None:
        self.calls.append(function)
        devices = {h.index for h in handles if isinstance(h, FakeHandle)}
        for failure in self.failures:
            if failure.function != function:
                continue
            if failure.device is not None and failure.device not in devices:
                continue
            if failure.link is not None and failure.link != link:
                continue
            raise failure.error()
        if function not in ("nvmlInit", "nvmlShutdown") and self.initialised <= 0:
            raise pynvml.NVMLError_Uninitialized()

    # -- NVLink wiring replayed from the facts ---------------------------------------------------------------------
    def _build_links(self) -> dict[int, list[tuple[int, str]]]:
        """Per GPU: its up links as (remote device type, remote bus id)."""
        wiring: dict[int, list[tuple[int, str]]] = {i: [] for i in self._gpus}
        for gpu in self.facts.gpus:
            active = gpu.nvlinks_active or 0
            if self.facts.topology.nvswitch:
                for link in range(active):
                    wiring[gpu.index].append((pynvml.NVML_NVLINK_DEVICE_TYPE_SWITCH, f"00000000:{0xE0 + link % 4:02X}:00.0"))
        if not self.facts.topology.nvswitch:
            for link in self.facts.topology.links:
                for here, there in ((link.a, link.b), (link.b, link.a)):
                    peer = self._gpus[there].pci_bus_id or ""
                    wiring[here].extend([(pynvml.NVML_NVLINK_DEVICE_TYPE_GPU, peer)] * (link.nvlinks or 0))
        return wiring

    def _link(self, handle: FakeHandle, link: int) -> tuple[int, str] | None:
        gpu = self._gpus[handle.index]
        wired = self._links[handle.index]
        if not wired and not gpu.nvlinks_active:
            raise pynvml.NVMLError_NotSupported()  # a GPU without NVLink
        if link >= max(LINKS_PER_NVLINK_GPU, len(wired)):
            raise pynvml.NVMLError_InvalidArgument()
        return wired[link] if link < len(wired) else None  # None: a link that exists but is down

    def _pair(self, h1: FakeHandle, h2: FakeHandle) -> Link:
        lo, hi = sorted((h1.index, h2.index))
        pair = self.facts.topology.pair(lo, hi)
        if pair is None:
            raise pynvml.NVMLError_Unknown()
        return pair

    # -- the pynvml functions the probe calls ----------------------------------------------------------------------
    def nvmlInit(self) -> None:
        self._enter("nvmlInit")
        if not self.facts.driver.available:
            raise pynvml.NVMLError_LibraryNotFound()
        self.initialised += 1

    def nvmlShutdown(self) -> None:
        self._enter("nvmlShutdown")
        if self.initialised <= 0:
            raise pynvml.NVMLError_Uninitialized()
        self.initialised -= 1

    def _string(self, value: str | None) -> str | bytes | None:
        return value.encode() if self.bytes_strings and value is not None else value

    def nvmlSystemGetDriverVersion(self) -> str | bytes:
        self._enter("nvmlSystemGetDriverVersion")
        return self._string(self.facts.driver.version or "")

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        self._enter("nvmlSystemGetCudaDriverVersion")
        major, minor = (self.facts.driver.cuda_version or "0.0").split(".")
        return int(major) * 1000 + int(minor) * 10

    def nvmlDeviceGetCount(self) -> int:
        self._enter("nvmlDeviceGetCount")
        return len(self.facts.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> FakeHandle:
        self._enter("nvmlDeviceGetHandleByIndex", FakeHandle(index))
        if index not in self._gpus:
            raise pynvml.NVMLError_InvalidArgument()
        return FakeHandle(index)

    def nvmlDeviceGetName(self, handle: FakeHandle) -> str | bytes:
        self._enter("nvmlDeviceGetName", handle)
        return self._string(self._gpus[handle.index].name)

    def nvmlDeviceGetUUID(self, handle: FakeHandle) -> str | bytes:
        self._enter("nvmlDeviceGetUUID", handle)
        return self._string(self._gpus[handle.index].uuid)

    def nvmlDeviceGetPciInfo(self, handle: FakeHandle):
        self._enter("nvmlDeviceGetPciInfo", handle)
        info = pynvml.nvmlPciInfo_t()
        info.busId = self._gpus[handle.index].pci_bus_id
        return info

    def nvmlDeviceGetCudaComputeCapability(self, handle: FakeHandle) -> tuple[int, int]:
        self._enter("nvmlDeviceGetCudaComputeCapability", handle)
        return tuple(self._gpus[handle.index].capability)

    def nvmlDeviceGetMemoryInfo(self, handle: FakeHandle):
        self._enter("nvmlDeviceGetMemoryInfo", handle)
        gpu = self._gpus[handle.index]
        memory = pynvml.c_nvmlMemory_t()
        memory.total = gpu.memory_total_mib * 2**20
        memory.free = gpu.memory_free_mib * 2**20
        memory.used = memory.total - memory.free
        return memory

    def nvmlDeviceGetMigMode(self, handle: FakeHandle) -> list[int]:
        self._enter("nvmlDeviceGetMigMode", handle)
        mode = self._gpus[handle.index].mig_mode
        if mode == "not supported":
            raise pynvml.NVMLError_NotSupported()
        value = 1 if mode == "enabled" else 0
        return [value, value]

    def nvmlDeviceGetNvLinkState(self, handle: FakeHandle, link: int) -> int:
        self._enter("nvmlDeviceGetNvLinkState", handle, link=link)
        return 0 if self._link(handle, link) is None else 1

    def nvmlDeviceGetNvLinkRemoteDeviceType(self, handle: FakeHandle, link: int) -> int:
        self._enter("nvmlDeviceGetNvLinkRemoteDeviceType", handle, link=link)
        wired = self._link(handle, link)
        if wired is None:
            raise pynvml.NVMLError_InvalidArgument()
        return wired[0]

    def nvmlDeviceGetNvLinkRemotePciInfo(self, handle: FakeHandle, link: int):
        self._enter("nvmlDeviceGetNvLinkRemotePciInfo", handle, link=link)
        wired = self._link(handle, link)
        if wired is None:
            raise pynvml.NVMLError_InvalidArgument()
        info = pynvml.nvmlPciInfo_t()
        info.busId = wired[1]
        return info

    def nvmlDeviceGetTopologyCommonAncestor(self, h1: FakeHandle, h2: FakeHandle) -> int:
        self._enter("nvmlDeviceGetTopologyCommonAncestor", h1, h2)
        return LEVEL_CODES[self._pair(h1, h2).pcie]

    def nvmlDeviceGetP2PStatus(self, h1: FakeHandle, h2: FakeHandle, index: int) -> int:
        self._enter("nvmlDeviceGetP2PStatus", h1, h2)
        if type(index) is not int:  # ctypes rejects the tuple constant NVML_P2P_CAPS_INDEX_READ == (0,)
            raise TypeError(f"p2pIndex must be an int, got {index!r}")
        pair = self._pair(h1, h2)
        recorded = {0: pair.p2p_read, 1: pair.p2p_write, pynvml.NVML_P2P_CAPS_INDEX_NVLINK: pair.nvlink_p2p}
        if recorded.get(index) is None:
            raise pynvml.NVMLError_NotSupported()  # an index this fake does not replay, or one the facts lack
        return P2P_CODES[recorded[index]]

    def nvmlDeviceGetComputeRunningProcesses(self, handle: FakeHandle) -> list:
        self._enter("nvmlDeviceGetComputeRunningProcesses", handle)
        processes = self._gpus[handle.index].processes
        if processes is None:
            raise pynvml.NVMLError_NotSupported()
        # nvidia-ml-py hands back friendly objects; usedGpuMemory is None when the driver does not say
        return [SimpleNamespace(pid=p.pid, usedGpuMemory=None if p.used_mib is None else p.used_mib * 2**20,
                                gpuInstanceId=0xFFFFFFFF, computeInstanceId=0xFFFFFFFF) for p in processes]  # fmt: skip

    def nvmlSystemGetProcessName(self, pid: int) -> str:
        self._enter("nvmlSystemGetProcessName")
        for gpu in self.facts.gpus:
            for proc in gpu.processes or ():
                if proc.pid == pid and proc.name:
                    return proc.name
        raise pynvml.NVMLError_NotFound()

    def nvmlDeviceGetGpuFabricInfoV(self, handle: FakeHandle, info_ref: Any) -> int:
        self._enter("nvmlDeviceGetGpuFabricInfoV", handle)
        gpu = self._gpus[handle.index]
        if gpu.capability is None or gpu.capability[0] < 9:
            raise pynvml.NVMLError_NotSupported()  # fabric info exists from Hopper on
        info = info_ref._obj  # ctypes.byref(struct) keeps the struct here
        fabric = self.facts.topology.fabric
        info.state = FABRIC_CODES.get(fabric.state or "not supported", 0)
        if fabric.cluster_uuid:
            info.clusterUuid[:] = list(uuid.UUID(fabric.cluster_uuid).bytes)
        info.cliqueId = fabric.clique_id or 0
        info.status = 0
        return pynvml.NVML_SUCCESS
