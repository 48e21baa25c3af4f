"""GPUs, driver and topology through NVML (the `pynvml` module of nvidia-ml-py), every call guarded.

One failing call leaves one field unknown with the reason ("NVML NotSupported"); it never raises. No driver at all
(LibraryNotFound or DriverNotLoaded at nvmlInit) is a fact: ``Driver(available=False, reason="no NVIDIA driver (...)")``.
The module object is passed in, so tests replay recorded machines through this same code with a fake NVML.

NVML semantics relied on (shared/reference/vllm-nvml-torchrun.md):
- nvmlDeviceGetNvLinkState raises NotSupported on GPUs without NVLink, and NotSupported/InvalidArgument for link indices
  a GPU does not have; nvmlDeviceGetMigMode raises NotSupported on GPUs without MIG; both are facts, not failures.
- P2P status index 2 is NVLINK, passed as a plain int (NVML_P2P_CAPS_INDEX_READ is a tuple in nvidia-ml-py 13.615.71).
- Via NVSwitch every GPU reaches every other over all its active links, so a pair's count is like nvidia-smi's NV18.
"""

from __future__ import annotations

import ctypes
import uuid
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

from advisor.facts import PCIE_LEVELS, Driver, Fabric, Gpu, GpuProcess, Link, ProbeError, Topology

P2P_READ, P2P_WRITE, P2P_NVLINK = 0, 1, 2  # nvmlGpuP2PCapsIndex_t
P2P_STATUS = {
    0: "OK",
    1: "chipset not supported",
    2: "GPU not supported",
    3: "topology not supported",
    4: "disabled by regkey",
    5: "not supported",
    6: "unknown",
}
NVLINK_DEVICE_GPU = 0
NVLINK_DEVICE_SWITCH = 2
FABRIC_STATES = {0: "not supported", 1: "not started", 2: "in progress", 3: "completed"}
MAX_LINKS_FALLBACK = 36  # NVML_NVLINK_MAX_LINKS in nvidia-ml-py 12/13

GPU_FIELDS = ("name", "uuid", "pci_bus_id", "capability", "memory_total_mib", "memory_free_mib", "mig_mode", "nvlinks_active",
              "processes")
LINK_FIELDS = ("nvlinks", "nvlink_p2p", "pcie", "p2p_read", "p2p_write")

# Errors at nvmlInit that mean "there is no driver here" rather than "the driver is broken".
NO_DRIVER = {
    "LibraryNotFound": "NVML library not found",
    "DriverNotLoaded": "driver not loaded",
}
INIT_FIXES = {
    "LibRmVersionMismatch": "the loaded kernel module and the user-space driver differ; reboot or reinstall the driver",
    "NoPermission": "this user may not open /dev/nvidia*; check its permissions or the container's device access",
    "FunctionNotFound": "nvidia-ml-py is newer than the driver; upgrade the driver or pin an older nvidia-ml-py",
}


def describe(exc: BaseException) -> str:
    """"NVML NotSupported" for pynvml's NVMLError_NotSupported; the class or code for anything else."""
    name = type(exc).__name__
    if name.startswith("NVMLError_"):
        return "NVML " + name[len("NVMLError_") :]
    if name == "NVMLError":
        return f"NVML error {getattr(exc, 'value', '?')}"
    return f"{name}: {exc}"


def _kind(exc: BaseException) -> str:
    name = type(exc).__name__
    return name[len("NVMLError_") :] if name.startswith("NVMLError_") else name


@dataclass
class NvmlResult:
    driver: Driver
    gpus: tuple[Gpu, ...] = ()
    topology: Topology = field(default_factory=Topology)
    errors: list[ProbeError] = field(default_factory=list)


@dataclass
class _LinkScan:
    """What one GPU's NVLinks reach."""

    active: int | None = None
    to_gpu: Counter = field(default_factory=Counter)  # normalised peer bus id -> links
    to_switch: int = 0
    unresolved: int = 0  # active links whose far end could not be identified
    reason: str | None = None  # why the scan failed (then active is None)
    unresolved_reason: str | None = None


class _MissingFunction(Exception):
    """The binding has no such function (an nvidia-ml-py older than the call)."""


class _Prober:
    def __init__(self, nvml: Any):
        self.nvml = nvml
        self.errors: list[ProbeError] = []

    def call(self, fn: str, *args: Any) -> tuple[bool, Any, BaseException | None]:
        """Call nvml.<fn>(*args); never raises. Returns (ok, value, exception)."""
        func = getattr(self.nvml, fn, None)
        if func is None:
            return False, None, _MissingFunction(fn)
        try:
            return True, func(*args), None
        except Exception as exc:  # noqa: BLE001 - NVMLError subclasses, ctypes errors: all become an unknown field
            return False, None, exc

    def reason(self, exc: BaseException | None, fn: str) -> str:
        if isinstance(exc, _MissingFunction):
            return f"nvidia-ml-py lacks {fn}; upgrade nvidia-ml-py"
        return describe(exc) if exc is not None else "unknown"

    def field(self, unknown: dict[str, str], name: str, probe: str, fn: str, *args: Any) -> tuple[bool, Any]:
        """Like call(), recording a failure as unknown[name] and a ProbeError."""
        ok, value, exc = self.call(fn, *args)
        if not ok:
            unknown[name] = self.reason(exc, fn)
            self.errors.append(ProbeError(probe, f"{fn}: {unknown[name]}"))
        return ok, value

    # -- driver ------------------------------------------------------------------------------------------------------
    def driver(self, library: str | None) -> Driver:
        unknown: dict[str, str] = {}
        ok, version = self.field(unknown, "version", "nvml.driver.version", "nvmlSystemGetDriverVersion")
        ok_cuda, cuda = self.field(unknown, "cuda_version", "nvml.driver.cuda_version", "nvmlSystemGetCudaDriverVersion")
        cuda_text = None
        if ok_cuda:
            try:
                cuda_text = f"{int(cuda) // 1000}.{(int(cuda) % 1000) // 10}"
            except (TypeError, ValueError):
                unknown["cuda_version"] = f"NVML returned {cuda!r}"
        return Driver(
            available=True,
            version=_text(version) if ok else None,
            cuda_version=cuda_text,
            nvml_library=library,
            unknown=unknown,
        )

    # -- GPUs --------------------------------------------------------------------------------------------------------
    def gpu(self, index: int, handle: Any) -> Gpu:
        unknown: dict[str, str] = {}
        p = f"nvml.gpu[{index}]"
        ok, name = self.field(unknown, "name", f"{p}.name", "nvmlDeviceGetName", handle)
        name = _text(name) if ok else None
        ok, gpu_uuid = self.field(unknown, "uuid", f"{p}.uuid", "nvmlDeviceGetUUID", handle)
        gpu_uuid = _text(gpu_uuid) if ok else None
        ok, pci = self.field(unknown, "pci_bus_id", f"{p}.pci_bus_id", "nvmlDeviceGetPciInfo", handle)
        bus_id = _text(getattr(pci, "busId", None)) if ok else None
        ok, cap = self.field(unknown, "capability", f"{p}.capability", "nvmlDeviceGetCudaComputeCapability", handle)
        capability = (int(cap[0]), int(cap[1])) if ok else None
        ok, mem = self.field(unknown, "memory_total_mib", f"{p}.memory", "nvmlDeviceGetMemoryInfo", handle)
        total = free = None
        if ok:
            total, free = int(mem.total) // 2**20, int(mem.free) // 2**20
        else:
            unknown["memory_free_mib"] = unknown["memory_total_mib"]
        return Gpu(
            index=index,
            name=name,
            uuid=gpu_uuid,
            pci_bus_id=bus_id,
            capability=capability,
            memory_total_mib=total,
            memory_free_mib=free,
            mig_mode=self.mig_mode(index, handle, unknown),
            processes=self.processes(index, handle, unknown),
            unknown=unknown,
        )

    def processes(self, index: int, handle: Any, unknown: dict[str, str]) -> tuple[GpuProcess, ...] | None:
        """Compute processes holding memory on the GPU; their names where NVML can tell (not across PID namespaces)."""
        ok, running = self.field(unknown, "processes", f"nvml.gpu[{index}].processes",
                                 "nvmlDeviceGetComputeRunningProcesses", handle)  # fmt: skip
        if not ok:
            return None
        out = []
        for proc in running or ():
            pid = int(getattr(proc, "pid", -1))
            used = getattr(proc, "usedGpuMemory", None)
            # NVML_VALUE_NOT_AVAILABLE (2**64 - 1) arrives as None from nvidia-ml-py, or as the raw value
            used_mib = int(used) // 2**20 if isinstance(used, int) and 0 <= used < 2**63 else None
            ok_name, name, _ = self.call("nvmlSystemGetProcessName", pid)
            out.append(GpuProcess(pid=pid, name=_text(name) if ok_name and name else None, used_mib=used_mib))
        return tuple(sorted(out, key=lambda p: p.pid))

    def mig_mode(self, index: int, handle: Any, unknown: dict[str, str]) -> str | None:
        ok, value, exc = self.call("nvmlDeviceGetMigMode", handle)
        if ok:
            return "enabled" if value[0] == 1 else "disabled"
        if _kind(exc) == "NotSupported":
            return "not supported"  # a GPU without MIG
        unknown["mig_mode"] = self.reason(exc, "nvmlDeviceGetMigMode")
        self.errors.append(ProbeError(f"nvml.gpu[{index}].mig", f"nvmlDeviceGetMigMode: {unknown['mig_mode']}"))
        return None

    def scan_links(self, index: int, handle: Any, gpu_buses: set[str]) -> _LinkScan:
        scan = _LinkScan(active=0)
        p = f"nvml.gpu[{index}].nvlink"
        max_links = getattr(self.nvml, "NVML_NVLINK_MAX_LINKS", MAX_LINKS_FALLBACK)
        for link in range(max_links):
            ok, state, exc = self.call("nvmlDeviceGetNvLinkState", handle, link)
            if not ok:
                if _kind(exc) in ("NotSupported", "InvalidArgument"):
                    continue  # this GPU has no such link (no NVLink at all when every link says so)
                reason = self.reason(exc, "nvmlDeviceGetNvLinkState")
                self.errors.append(ProbeError(p, f"nvmlDeviceGetNvLinkState(link {link}): {reason}"))
                return _LinkScan(reason=reason)
            if state != 1:
                continue
            scan.active += 1
            ok_type, kind, exc_type = self.call("nvmlDeviceGetNvLinkRemoteDeviceType", handle, link)
            ok_pci, remote, exc_pci = self.call("nvmlDeviceGetNvLinkRemotePciInfo", handle, link)
            bus = normalize_bus_id(_text(getattr(remote, "busId", None))) if ok_pci else None
            if ok_type and kind == NVLINK_DEVICE_SWITCH:
                scan.to_switch += 1
            elif bus is not None and bus in gpu_buses and (not ok_type or kind == NVLINK_DEVICE_GPU):
                scan.to_gpu[bus] += 1
            else:
                scan.unresolved += 1
                failed = [(fn, e) for fn, e in (("nvmlDeviceGetNvLinkRemoteDeviceType", exc_type),
                                                ("nvmlDeviceGetNvLinkRemotePciInfo", exc_pci)) if e is not None]
                why = "; ".join(f"{fn}: {self.reason(e, fn)}" for fn, e in failed) or f"far end type {kind}, bus {bus}"
                if scan.unresolved_reason is None:
                    scan.unresolved_reason = why
                    self.errors.append(ProbeError(p, f"link {link}: far end unknown ({why})"))
        return scan

    def fabric(self, handles: dict[int, Any]) -> Fabric:
        fabrics = []
        for index, handle in handles.items():
            fabrics.append((index, self.fabric_of(index, handle)))
        if not fabrics:
            return Fabric(unknown={"state": "no GPU answered"})
        known = [f for _, f in fabrics if not f.unknown]
        first = known[0] if known else fabrics[0][1]
        if any((f.state, f.cluster_uuid, f.clique_id) != (first.state, first.cluster_uuid, first.clique_id) for f in known):
            self.errors.append(ProbeError("nvml.fabric", "GPUs report different NVLink fabric states; showing the first"))
        return first

    def fabric_of(self, index: int, handle: Any) -> Fabric:
        p = f"nvml.gpu[{index}].fabric"
        struct_cls = getattr(self.nvml, "c_nvmlGpuFabricInfoV_t", None)
        if struct_cls is None or not hasattr(self.nvml, "nvmlDeviceGetGpuFabricInfoV"):
            reason = "nvidia-ml-py lacks nvmlDeviceGetGpuFabricInfoV; upgrade nvidia-ml-py"
            return Fabric(unknown={"state": reason, "cluster_uuid": reason, "clique_id": reason})
        try:
            info = struct_cls()
        except Exception as exc:  # noqa: BLE001
            reason = describe(exc)
            return Fabric(unknown={"state": reason, "cluster_uuid": reason, "clique_id": reason})
        ok, _, exc = self.call("nvmlDeviceGetGpuFabricInfoV", handle, ctypes.byref(info))
        if not ok:
            if _kind(exc) == "NotSupported":
                return Fabric(state="not supported")  # GPUs outside an NVLink fabric
            reason = self.reason(exc, "nvmlDeviceGetGpuFabricInfoV")
            self.errors.append(ProbeError(p, f"nvmlDeviceGetGpuFabricInfoV: {reason}"))
            return Fabric(unknown={"state": reason, "cluster_uuid": reason, "clique_id": reason})
        state = FABRIC_STATES.get(int(info.state), f"state {int(info.state)}")
        if state == "not supported":
            return Fabric(state=state)
        unknown = {}
        raw = bytes(bytearray(info.clusterUuid))
        cluster = str(uuid.UUID(bytes=raw)) if any(raw) and len(raw) == 16 else None
        if cluster is None:
            unknown["cluster_uuid"] = "NVML reports an all-zero cluster UUID"
        return Fabric(state=state, cluster_uuid=cluster, clique_id=int(info.cliqueId), unknown=unknown)

    # -- pairs -------------------------------------------------------------------------------------------------------
    def link(self, a: int, b: int, ha: Any, hb: Any, scans: dict[int, _LinkScan], buses: dict[int, str | None]) -> Link:
        unknown: dict[str, str] = {}
        nvlinks = self.pair_nvlinks(a, b, scans, buses, unknown)
        p2p = None
        ok, status = self.field(unknown, "nvlink_p2p", f"nvml.pair[{a},{b}].p2p", "nvmlDeviceGetP2PStatus", ha, hb,
                                P2P_NVLINK)
        if ok:
            p2p = P2P_STATUS.get(int(status), f"status {int(status)}")
        read = write = None
        ok, status = self.field(unknown, "p2p_read", f"nvml.pair[{a},{b}].p2p_read", "nvmlDeviceGetP2PStatus", ha, hb,
                                P2P_READ)  # fmt: skip
        if ok:
            read = P2P_STATUS.get(int(status), f"status {int(status)}")
        ok, status = self.field(unknown, "p2p_write", f"nvml.pair[{a},{b}].p2p_write", "nvmlDeviceGetP2PStatus", ha, hb,
                                P2P_WRITE)  # fmt: skip
        if ok:
            write = P2P_STATUS.get(int(status), f"status {int(status)}")
        pcie = None
        ok, level = self.field(unknown, "pcie", f"nvml.pair[{a},{b}].pcie", "nvmlDeviceGetTopologyCommonAncestor", ha, hb)
        if ok:
            pcie = PCIE_LEVELS.get(int(level))
            if pcie is None:
                unknown["pcie"] = f"NVML returned topology level {int(level)}"
        return Link(a=a, b=b, nvlinks=nvlinks, nvlink_p2p=p2p, pcie=pcie, unknown=unknown, p2p_read=read,
                    p2p_write=write)

    @staticmethod
    def pair_nvlinks(a: int, b: int, scans: dict[int, _LinkScan], buses: dict[int, str | None], unknown: dict) -> int | None:
        sa, sb = scans[a], scans[b]
        for side in (sa, sb):
            if side.active is None:
                unknown["nvlinks"] = f"NVLink scan failed ({side.reason})"
                return None
        direct = sa.to_gpu.get(buses[b] or "", 0) if buses[b] else 0
        switched = min(sa.to_switch, sb.to_switch)
        if sa.unresolved or sb.unresolved:
            unknown["nvlinks"] = f"far end of some NVLinks unknown ({sa.unresolved_reason or sb.unresolved_reason})"
            return None
        if not buses[b] and sa.active and not sa.to_switch:
            unknown["nvlinks"] = f"GPU {b} has no PCI bus id to match NVLink peers against"
            return None
        return direct + switched


def probe_nvml(nvml: Any, library: str | None = None) -> NvmlResult:
    """Probe the driver, the GPUs and their topology through ``nvml`` (pynvml or a fake with the same names)."""
    prober = _Prober(nvml)
    ok, _, exc = prober.call("nvmlInit")
    if not ok:
        kind = _kind(exc)
        if kind in NO_DRIVER:
            reason = f"no NVIDIA driver ({NO_DRIVER[kind]})"
            return NvmlResult(driver=Driver(available=False, nvml_library=library, reason=reason),
                              topology=Topology(unknown={"nvswitch": reason}))
        reason = prober.reason(exc, "nvmlInit")
        fix = INIT_FIXES.get(kind)
        text = f"NVML could not start ({reason})" + (f"; {fix}" if fix else "")
        return NvmlResult(driver=Driver(available=False, nvml_library=library, reason=text),
                          topology=Topology(unknown={"nvswitch": text}), errors=[ProbeError("nvml.init", text)])
    try:
        return _probe_initialised(prober, library)
    finally:
        prober.call("nvmlShutdown")


def _probe_initialised(prober: _Prober, library: str | None) -> NvmlResult:
    driver = prober.driver(library)
    ok, count, exc = prober.call("nvmlDeviceGetCount")
    if not ok:
        reason = prober.reason(exc, "nvmlDeviceGetCount")
        prober.errors.append(ProbeError("nvml.count", f"nvmlDeviceGetCount: {reason}"))
        unknown = {**driver.unknown, "gpus": reason}
        return NvmlResult(
            driver=replace(driver, unknown=unknown),
            topology=Topology(unknown={"links": reason, "nvswitch": reason}),
            errors=prober.errors,
        )
    handles: dict[int, Any] = {}
    gpus: list[Gpu] = []
    for index in range(int(count)):
        ok, handle, exc = prober.call("nvmlDeviceGetHandleByIndex", index)
        if not ok:
            reason = prober.reason(exc, "nvmlDeviceGetHandleByIndex")
            prober.errors.append(ProbeError(f"nvml.gpu[{index}]", f"nvmlDeviceGetHandleByIndex: {reason}"))
            gpus.append(Gpu(index=index, unknown={name: reason for name in GPU_FIELDS}))
            continue
        handles[index] = handle
        gpus.append(prober.gpu(index, handle))

    buses = {g.index: normalize_bus_id(g.pci_bus_id) for g in gpus}
    gpu_buses = {bus for bus in buses.values() if bus}
    scans: dict[int, _LinkScan] = {}
    for gpu in gpus:
        if gpu.index in handles:
            scans[gpu.index] = prober.scan_links(gpu.index, handles[gpu.index], gpu_buses)
        else:
            scans[gpu.index] = _LinkScan(reason=gpu.unknown.get("name", "no handle"))
    gpus = [_with_nvlinks(g, scans[g.index]) for g in gpus]

    links = []
    for i, a in enumerate(gpus):
        for b in gpus[i + 1 :]:
            if a.index not in handles or b.index not in handles:
                missing = a if a.index not in handles else b
                reason = f"GPU {missing.index} unavailable ({missing.unknown.get('name', 'no handle')})"
                links.append(Link(a=a.index, b=b.index, unknown={name: reason for name in LINK_FIELDS}))
                continue
            links.append(prober.link(a.index, b.index, handles[a.index], handles[b.index], scans, buses))

    topology_unknown: dict[str, str] = {}
    nvswitch: bool | None = any(s.to_switch for s in scans.values())
    if not nvswitch:
        doubtful = [s for s in scans.values() if s.active is None or s.unresolved]
        if doubtful:
            nvswitch = None
            topology_unknown["nvswitch"] = doubtful[0].reason or doubtful[0].unresolved_reason or "unknown"
    fabric = prober.fabric(handles) if gpus else Fabric(state="not supported")
    return NvmlResult(
        driver=driver,
        gpus=tuple(gpus),
        topology=Topology(links=tuple(links), nvswitch=nvswitch if gpus else None, fabric=fabric,
                          unknown=topology_unknown),
        errors=prober.errors,
    )


def _with_nvlinks(gpu: Gpu, scan: _LinkScan) -> Gpu:
    if scan.active is not None:
        return replace(gpu, nvlinks_active=scan.active)
    unknown = {**gpu.unknown, "nvlinks_active": gpu.unknown.get("nvlinks_active") or scan.reason or "unknown"}
    return replace(gpu, unknown=unknown)


def normalize_bus_id(bus_id: str | None) -> str | None:
    """"00000000:18:00.0" and "0000:18:00.0" -> "0000:18:00.0" (lowercase, four-digit domain)."""
    if not bus_id:
        return None
    text = bus_id.strip().lower()
    domain, sep, rest = text.partition(":")
    if not sep:
        return text
    try:
        return f"{int(domain, 16):04x}:{rest}"
    except ValueError:
        return text


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return str(value)
