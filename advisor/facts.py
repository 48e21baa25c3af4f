"""Facts about a machine: what the rules reason over.

Facts are frozen and JSON round-trippable. Every part keeps an ``unknown`` mapping from a field name to the reason the
field could not be learned (for example ``{"memory_total_mib": "NVML: NotSupported"}``), so a failing probe leaves one
field empty instead of failing the whole run.

Nothing here needs torch, flashinfer, textual or rich: facts are read and checked on machines without a GPU stack.
"""

from __future__ import annotations

import json
from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from functools import cache
from pathlib import Path
from typing import Any

from advisor.json_errors import why_unreadable
from launcher.files import read_text

SCHEMA_VERSION = 1

# PCIe common-ancestor levels, as `nvidia-smi topo -m` names them (NVML nvmlDeviceGetTopologyCommonAncestor values).
PCIE_LEVELS = {0: "X", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}


class FactsError(Exception):
    """A facts file could not be loaded; the message is one line naming the file, the problem and the fix."""


@dataclass(frozen=True, slots=True)
class Host:
    hostname: str | None = None
    os: str | None = None
    python: str | None = None
    cpu_count: int | None = None
    unknown: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Driver:
    """The NVIDIA driver. ``available`` is False when there is no driver at all (a fact, not an error)."""

    available: bool = False
    version: str | None = None  # "570.124.06"
    cuda_version: str | None = None  # "12.8", from nvmlSystemGetCudaDriverVersion
    nvml_library: str | None = None  # which Python binding answered: "nvidia-ml-py 13.615.71"
    reason: str | None = None  # why it is unavailable: "no NVIDIA driver (NVML library not found)"
    unknown: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class GpuProcess:
    """A process holding memory on a GPU (nvmlDeviceGetComputeRunningProcesses)."""

    pid: int
    name: str | None = None
    used_mib: int | None = None  # None when the driver does not say (NVML_VALUE_NOT_AVAILABLE)


@dataclass(frozen=True, slots=True)
class Gpu:
    index: int  # physical (PCI order), as NVML numbers them; ignores CUDA_VISIBLE_DEVICES
    name: str | None = None
    uuid: str | None = None
    pci_bus_id: str | None = None
    capability: tuple[int, int] | None = None
    memory_total_mib: int | None = None
    memory_free_mib: int | None = None
    mig_mode: str | None = None  # "enabled" | "disabled" | "not supported"
    nvlinks_active: int | None = None  # links in state up
    unknown: dict[str, str] = field(default_factory=dict)
    # Launch pitfalls. None: not probed (older facts files) or unknown (the reason is in ``unknown``).
    numa_node: int | None = None  # /sys/bus/pci/devices/<bus>/numa_node; -1 when the platform reports none
    iommu: str | None = None  # the GPU's IOMMU group type: "off" (no group), "identity" (passthrough), "DMA", "DMA-FQ"
    acs_redirect: tuple[str, ...] | None = None  # PCIe bridges above the GPU whose ACS redirects peer-to-peer traffic
    processes: tuple[GpuProcess, ...] | None = None  # compute processes holding memory on it (NVML)

    @property
    def capability_text(self) -> str:
        return f"{self.capability[0]}.{self.capability[1]}" if self.capability else "?"


@dataclass(frozen=True, slots=True)
class Link:
    """How two GPUs (physical indices a < b) reach each other."""

    a: int
    b: int
    nvlinks: int | None = None  # links from a whose remote end is b (0 on PCIe-only pairs; via NVSwitch: a's active links)
    nvlink_p2p: str | None = None  # nvmlDeviceGetP2PStatus(.., NVLINK): "OK" or the status name ("NS", "not supported")
    pcie: str | None = None  # "PIX" | "PXB" | "PHB" | "NODE" | "SYS"
    unknown: dict[str, str] = field(default_factory=dict)
    # nvmlDeviceGetP2PStatus(.., READ) and (.., WRITE): peer-to-peer over any path (NVLink or PCIe), same names
    p2p_read: str | None = None
    p2p_write: str | None = None

    @property
    def label(self) -> str:
        """The cell `nvidia-smi topo -m` would print for this pair."""
        if self.nvlinks:
            return f"NV{self.nvlinks}"
        return self.pcie or "?"


@dataclass(frozen=True, slots=True)
class Fabric:
    """Multi-node NVLink fabric (GB200/GB300 NVL72): nvmlDeviceGetGpuFabricInfoV."""

    state: str | None = None  # "completed" | "in progress" | "not started" | "not supported"
    cluster_uuid: str | None = None
    clique_id: int | None = None
    unknown: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Topology:
    links: tuple[Link, ...] = ()
    nvswitch: bool | None = None  # an NVLink whose remote device type is NVSwitch was seen
    fabric: Fabric = field(default_factory=Fabric)
    unknown: dict[str, str] = field(default_factory=dict)

    def pair(self, a: int, b: int) -> Link | None:
        lo, hi = min(a, b), max(a, b)
        for link in self.links:
            if link.a == lo and link.b == hi:
                return link
        return None

    def matrix(self, indices: list[int]) -> list[list[str]]:
        """Rows of `nvidia-smi topo -m` cells for the given GPU indices ("X" on the diagonal, "?" when unknown)."""
        rows = []
        for a in indices:
            row = []
            for b in indices:
                link = None if a == b else self.pair(a, b)
                row.append("X" if a == b else (link.label if link else "?"))
            rows.append(row)
        return rows

    def all_pairs_nvlink_p2p(self, indices: list[int]) -> bool | None:
        """True when every pair reports NVLink P2P OK, False when one does not, None when some pair is unknown."""
        unknown = False
        for i, a in enumerate(indices):
            for b in indices[i + 1 :]:
                link = self.pair(a, b)
                if link is None or link.nvlink_p2p is None:
                    unknown = True
                elif link.nvlink_p2p != "OK":
                    return False
        return None if unknown else True


@dataclass(frozen=True, slots=True)
class System:
    """Operating-system limits and settings a multi-GPU launch depends on (/proc, /sys, resource limits).

    None: not probed (facts files from before these fields) or unknown (the reason is in ``unknown``).
    """

    shm_mib: int | None = None  # size of /dev/shm
    memlock_bytes: int | None = None  # soft RLIMIT_MEMLOCK (`ulimit -l`); MEMLOCK_UNLIMITED for unlimited
    numa_nodes: int | None = None  # /sys/devices/system/node/node*
    unknown: dict[str, str] = field(default_factory=dict)


# `ulimit -l unlimited` (RLIM_INFINITY), stored as the largest number a facts file may hold.
MEMLOCK_UNLIMITED = 2**63 - 1


@dataclass(frozen=True, slots=True)
class Package:
    """One installed distribution, learned from its dist-info and package files read as text."""

    name: str  # distribution name, normalised ("flashinfer-python")
    installed: bool = False
    version: str | None = None  # full version from METADATA, "0.6.11+cu128"
    local_label: str | None = None  # PEP 440 local part, "cu128"
    location: str | None = None
    module_version: str | None = None  # the module's __version__ as the package files define it (what flashinfer compares)
    cuda: str | None = None  # for torch: its CUDA variant ("12.8"); None for a CPU build
    overridden: bool = False  # set by --with-package
    unknown: dict[str, str] = field(default_factory=dict)

    @property
    def base_version(self) -> str | None:
        return self.version.split("+", 1)[0] if self.version else None


@dataclass(frozen=True, slots=True)
class ProbeError:
    probe: str  # "nvml.gpu[3].memory", "packages", "python:/usr/bin/python3.12"
    message: str


@dataclass(frozen=True, slots=True)
class Facts:
    source: str = "live"  # "live" | "simulated:<profile>" | "file:<path>"
    host: Host = field(default_factory=Host)
    driver: Driver = field(default_factory=Driver)
    gpus: tuple[Gpu, ...] = ()
    # Physical indices an engine will see, in CUDA order, after CUDA_VISIBLE_DEVICES; None when not yet resolved.
    visible_gpus: tuple[int, ...] | None = None
    # Why CUDA_VISIBLE_DEVICES exposes fewer GPUs than it lists (an invalid entry ends the list), or None.
    visible_gpus_note: str | None = None
    topology: Topology = field(default_factory=Topology)
    system: System = field(default_factory=System)
    packages: tuple[Package, ...] = ()
    environment: dict[str, str] = field(default_factory=dict)
    python_executable: str | None = None  # the interpreter whose packages were probed
    # python_executable is an interpreter of this machine (probed live, or named by --python here); False for a profile
    # and for a loaded file (load() resets it, as it sets the source), whatever it was where they were made.
    python_here: bool = False
    errors: tuple[ProbeError, ...] = ()
    schema_version: int = SCHEMA_VERSION

    # -- queries the rules use -------------------------------------------------------------------------------------
    def package(self, name: str) -> Package:
        key = normalize_name(name)
        for pkg in self.packages:
            if pkg.name == key:
                return pkg
        return Package(name=key)

    @property
    def engine_gpus(self) -> tuple[Gpu, ...]:
        """The GPUs an engine on this machine would use, in the order CUDA numbers them."""
        if self.visible_gpus is None:
            return self.gpus
        by_index = {g.index: g for g in self.gpus}
        return tuple(by_index[i] for i in self.visible_gpus if i in by_index)

    @property
    def is_simulated(self) -> bool:
        return self.source.startswith("simulated:")

    def with_packages(self, versions: dict[str, str]) -> Facts:
        """A copy where each named package is installed at the given version (``--with-package NAME==VERSION``)."""
        packages = {p.name: p for p in self.packages}
        for raw_name, version in versions.items():
            name = normalize_name(raw_name)
            old = packages.get(name, Package(name=name))
            label = version.split("+", 1)[1] if "+" in version else None
            cuda = old.cuda
            if name == "torch":
                cuda = cuda_from_label(label) if label else None
            # _build_meta.py holds the full version (label included), so the module version equals it.
            packages[name] = replace(
                old,
                installed=True,
                version=version,
                local_label=label,
                module_version=version,
                cuda=cuda,
                overridden=True,
                unknown={},
            )
        return replace(self, packages=tuple(sorted(packages.values(), key=lambda p: p.name)))

    # -- JSON --------------------------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, sort_keys=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any], origin: str = "facts") -> Facts:
        if not isinstance(data, dict):
            raise FactsError(f"{origin}: expected a JSON object of facts, got {type(data).__name__}")
        version = data.get("schema_version")
        if not isinstance(version, int):
            raise FactsError(f"{origin}: no integer schema_version; re-create it with `advisor probe -o FILE`")
        if version > SCHEMA_VERSION:
            raise FactsError(
                f"{origin}: facts schema {version} is newer than this advisor understands ({SCHEMA_VERSION});"
                " upgrade tp-advisor or re-create the file with this version's `advisor probe -o FILE`"
            )
        try:
            facts = _build(cls, data)
        except (TypeError, ValueError, KeyError) as exc:
            raise FactsError(f"{origin}: malformed facts ({exc}); re-create it with `advisor probe -o FILE`") from None
        contradiction = _contradiction(facts)
        if contradiction:
            raise FactsError(f"{origin}: contradictory facts ({contradiction}); re-create it with `advisor probe -o FILE`")
        return facts

    @classmethod
    def from_json(cls, text: str, origin: str = "facts") -> Facts:
        try:
            data = json.loads(text, parse_constant=_refuse_constant)
        except (ValueError, RecursionError) as exc:  # malformed; NaN/Infinity, huge integers, deep nesting
            malformed, why = why_unreadable(exc)
            raise FactsError(
                f"{origin}: {'not valid' if malformed else 'not usable'} JSON ({why}); re-create it with `advisor probe -o FILE`"
            ) from None
        return cls.from_dict(data, origin)

    @classmethod
    def load(cls, path: str | Path) -> Facts:
        """Load a saved facts file; its source becomes ``file:<path>``."""
        path = Path(path)
        try:
            text = read_text(path, "facts file")
        except FileNotFoundError:
            raise FactsError(f"{path}: no such facts file; save one with `advisor probe -o {path}`") from None
        except OSError as exc:  # launcher.files.FileRefused: not a regular file, too large, unreadable, not UTF-8
            raise FactsError(str(exc)) from None
        facts = cls.from_json(text, origin=str(path))
        return replace(facts, source=f"file:{path}", python_here=False)

    def save(self, path: str | Path) -> None:
        """Write atomically, so an interrupted save never leaves half a file; a path that is not a regular file is
        refused (launcher.files.FileRefused, an OSError), a symlink written through to its target."""
        from launcher.files import write_text_atomic

        write_text_atomic(path, self.to_json() + "\n", "facts file")


def normalize_name(name: str) -> str:
    """PEP 503 normalisation: "Flashinfer_Python" -> "flashinfer-python"."""
    out = name.strip().lower()
    for ch in "_.":
        out = out.replace(ch, "-")
    while "--" in out:
        out = out.replace("--", "-")
    return out


def cuda_from_label(label: str | None) -> str | None:
    """"cu128" -> "12.8", "cu130" -> "13.0"; None for "cpu" or anything else."""
    if not label or not label.startswith("cu") or not label[2:].isdigit() or len(label) < 5:
        return None
    digits = label[2:]
    return f"{int(digits[:-1])}.{int(digits[-1])}"


# -- generic dict -> dataclass, strict about types that matter ---------------------------------------------------------

_NESTED = {
    "host": Host,
    "driver": Driver,
    "topology": Topology,
    "fabric": Fabric,
    "system": System,
}
_SEQUENCES = {"gpus": Gpu, "links": Link, "packages": Package, "errors": ProbeError, "processes": GpuProcess}
_NULLABLE = {"processes", "acs_redirect"}  # None means "not probed", which older files say by leaving them out


# The largest whole number a facts field may hold (counts, MiB, indices): anything larger is not a real machine.
MAX_FACT_INT = 2**63 - 1


# Fields where the kernel's -1 is a real reading: /sys/bus/pci/devices/<bus>/numa_node says -1 when the platform
# names no NUMA node for the device.
_MINUS_ONE_ALLOWED = frozenset({"numa_node"})


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number a facts file may hold")


@cache  # a facts file holds hundreds of fields of a few annotations
def _kinds(annotation: str) -> frozenset[str]:
    """"int | None" -> {"int", "None"}."""
    return frozenset(part.strip() for part in annotation.split("|"))


def _check_scalar(cls: type, name: str, annotation: str, value: Any) -> None:
    """Fields typed int, str or bool (optionally | None) must hold exactly that: a whole number 0..MAX_FACT_INT (no
    bool, no float: NaN, inf and 1.5 MiB are not facts), a string, a boolean."""
    kinds = _kinds(str(annotation))
    if value is None and "None" in kinds:
        return
    where = f"{cls.__name__}.{name}"
    if "int" in kinds:
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"{where} must be a whole number, got {value!r}")
        lowest = -1 if name in _MINUS_ONE_ALLOWED else 0
        if not lowest <= value <= MAX_FACT_INT:
            raise ValueError(f"{where} must be a whole number from 0 to 2**63-1, got {value}")
    elif "str" in kinds and not isinstance(value, str):
        raise TypeError(f"{where} must be a string, got {type(value).__name__}")
    elif "bool" in kinds and not isinstance(value, bool):
        raise TypeError(f"{where} must be true or false, got {value!r}")


def _contradiction(facts: Facts) -> str | None:
    """What a facts file says that cannot all be true at once, or None."""
    indices = [g.index for g in facts.gpus]
    known = set(indices)
    if len(known) != len(indices):
        return f"GPU indices {indices} repeat"
    if facts.visible_gpus is not None:
        visible = list(facts.visible_gpus)
        if len(set(visible)) != len(visible):
            return f"visible_gpus {visible} lists a GPU twice"
        strangers = [i for i in visible if i not in known]
        if strangers:
            return f"visible_gpus names GPU {strangers[0]}, which is not among the GPUs {indices}"
    for link in facts.topology.links:
        if link.a == link.b or link.a not in known or link.b not in known:
            return f"a topology link between GPU {link.a} and GPU {link.b}, but the GPUs are {indices or 'none'}"
    for gpu in facts.gpus:
        if gpu.capability is not None and len(gpu.capability) != 2:
            return f"GPU {gpu.index} capability {list(gpu.capability)} is not [major, minor]"
        if gpu.memory_total_mib == 0:
            return f"GPU {gpu.index} has memory_total_mib 0 (a GPU has memory; null when it is unknown)"
        if gpu.memory_total_mib is not None and (gpu.memory_free_mib or 0) > gpu.memory_total_mib:
            return f"GPU {gpu.index} has more memory free ({gpu.memory_free_mib} MiB) than in all ({gpu.memory_total_mib} MiB)"
    return None


def _build(cls: type, data: dict[str, Any]) -> Any:
    if not isinstance(data, dict):
        raise TypeError(f"{cls.__name__} must be an object, got {type(data).__name__}")
    kwargs: dict[str, Any] = {}
    for f in fields(cls):
        if f.name not in data:
            continue  # defaults fill fields older files lack
        value = data[f.name]
        if f.name in _NULLABLE and value is None:
            pass
        elif f.name == "acs_redirect":
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise TypeError("acs_redirect must be a list of PCI addresses")
            value = tuple(value)
        elif f.name in _NESTED:
            value = _build(_NESTED[f.name], value)
        elif f.name in _SEQUENCES:
            if not isinstance(value, list):
                raise TypeError(f"{f.name} must be a list")
            value = tuple(_build(_SEQUENCES[f.name], item) for item in value)
        elif f.name in ("capability", "visible_gpus") and value is not None:
            if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
                raise TypeError(f"{f.name} must be a list of integers")
            if not all(0 <= v <= MAX_FACT_INT for v in value):
                raise ValueError(f"{f.name} must hold whole numbers >= 0, got {value}")
            value = tuple(value)
        elif f.name in ("unknown", "environment"):
            if not isinstance(value, dict):
                raise TypeError(f"{f.name} must be an object")
            value = {str(k): str(v) for k, v in value.items()}
        else:
            _check_scalar(cls, f.name, f.type, value)
        kwargs[f.name] = value
    missing = [
        f.name
        for f in fields(cls)
        if f.default is MISSING and f.default_factory is MISSING and f.name not in kwargs
    ]
    if missing:
        raise KeyError(f"{cls.__name__} lacks {', '.join(missing)}")
    return cls(**kwargs)

