"""Generate the simulated machines in advisor/probe/profiles/*.json.

Run ``python -m advisor.probe.make_profiles`` after editing a machine below; the JSON files are what ships, and a test
checks they equal what this script produces. Hardware facts follow NVIDIA's datasheets (names exactly as NVML
reports them); the software stacks are plausible late-2026 installs, varied on purpose so the rules see different cases.
"""

from __future__ import annotations

import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from advisor.facts import (
    MEMLOCK_UNLIMITED,
    Driver,
    Fabric,
    Facts,
    Gpu,
    GpuProcess,
    Host,
    Link,
    Package,
    System,
    Topology,
    cuda_from_label,
    normalize_name,
)

PROFILES_DIR = Path(__file__).parent / "profiles"
_UUID_NS = uuid.UUID("6c1f2b56-4a3e-4d61-9a0e-3c1b7f0d2a11")

# PCI bus ids as NVML prints them (domain:bus:device.function), HGX boards' usual order.
HGX_BUS_IDS = [f"00000000:{bus}:00.0" for bus in ("18", "2A", "3A", "5D", "9A", "AB", "BA", "DB")]
GRACE_BUS_IDS = [f"0000000{d}:01:00.0" for d in ("8", "9")] + [f"000000{d}:01:00.0" for d in ("18", "19")]


def hgx_pcie(a: int, b: int) -> str:
    """Two sockets of four GPUs; each pair of neighbours shares a PCIe switch."""
    if a // 4 != b // 4:
        return "SYS"
    return "PXB" if a // 2 == b // 2 else "NODE"


@dataclass
class Machine:
    name: str
    gpu_name: str | None
    capability: tuple[int, int] | None
    memory_mib: int
    count: int
    nvlinks: int  # active NVLinks per GPU
    nvswitch: bool
    pcie: object  # (a, b) -> level
    bus_ids: list[str]
    driver: str | None
    cpu_count: int
    os: str
    python: str
    location: str
    packages: dict[str, str]  # distribution -> version
    environment: dict[str, str] = field(default_factory=dict)
    fabric: Fabric | None = None
    mig: str = "disabled"
    # Launch-pitfall state: what a default, healthy install of this machine reports unless a machine says
    # otherwise.
    p2p: str = "OK"  # NVML P2P read/write status between PCIe-only GPUs (NVLink pairs are always OK)
    numa: object = lambda i: 0  # GPU index -> NUMA node
    iommu: str = "off"  # the GPUs' IOMMU group type
    acs: object = lambda i: ()  # GPU index -> PCIe bridges above it whose ACS redirects P2P
    processes: dict[int, tuple[GpuProcess, ...]] = field(default_factory=dict)  # other processes holding GPU memory
    other_gpus: dict[int, tuple[str, tuple[int, int], int]] = field(default_factory=dict)  # index -> name, cc, MiB
    shm_mib: int = 515_000  # tmpfs default: half the RAM
    memlock: int = MEMLOCK_UNLIMITED
    numa_nodes: int = 1
    visible: tuple[int, ...] | None = None  # CUDA_VISIBLE_DEVICES order (the environment must say the same)


def cuda_driver_of(driver: str) -> str:
    """The CUDA version a driver branch supports (what nvmlSystemGetCudaDriverVersion reports)."""
    branch = int(driver.split(".")[0])
    return {570: "12.8", 575: "12.9", 580: "13.0", 590: "13.1"}[branch]


def stack(torch: str, flashinfer: str | None, *, jit_cache: bool = True, cubin: bool = True, providers=(), **extra) -> dict:
    """A consistent software stack: torch with its triton and NCCL, and a matching flashinfer trio."""
    label = torch.split("+", 1)[1] if "+" in torch else "cpu"
    minor = int(torch.split(".")[1])
    out = {
        "torch": torch,
        "triton": {9: "3.5.1", 10: "3.6.0", 11: "3.7.0", 12: "3.7.1", 13: "3.8.0", 14: "3.9.0"}[minor],
    }
    if label.startswith("cu13"):
        out["nvidia-nccl-cu13"] = "2.28.9"
    elif label.startswith("cu12"):
        out["nvidia-nccl-cu12"] = "2.27.5" if minor < 11 else "2.28.3"
    if flashinfer:
        out["flashinfer-python"] = flashinfer
        if cubin:
            out["flashinfer-cubin"] = flashinfer
        if jit_cache and label != "cpu":
            out["flashinfer-jit-cache"] = f"{flashinfer}+{label}"
            for arch in providers:
                out[f"flashinfer-jit-cache-{arch}"] = f"{flashinfer}+{label}"
    out.update({normalize_name(k): v for k, v in extra.items()})
    return out


def make_package(name: str, version: str, location: str) -> Package:
    label = version.split("+", 1)[1] if "+" in version else None
    module_version = None
    if name in ("torch", "flashinfer-python", "flashinfer-cubin", "flashinfer-jit-cache"):
        module_version = version  # version.py / _build_meta.py carry the full version, local label included
    return Package(
        name=name,
        installed=True,
        version=version,
        local_label=label,
        location=location,
        module_version=module_version,
        cuda=cuda_from_label(label) if name == "torch" else None,
    )


DRIVER_CONTEXT_MIB = 561  # what NVML reports used on an idle GPU (driver reservations)


def build_gpu(m: Machine, i: int) -> Gpu:
    name, capability, memory = m.other_gpus.get(i, (m.gpu_name, m.capability, m.memory_mib))
    processes = m.processes.get(i, ())
    used = DRIVER_CONTEXT_MIB + sum(p.used_mib or 0 for p in processes)
    return Gpu(
        index=i,
        name=name,
        uuid="GPU-" + str(uuid.uuid5(_UUID_NS, f"{m.name}/{i}")),
        pci_bus_id=m.bus_ids[i],
        capability=capability,
        memory_total_mib=memory,
        memory_free_mib=memory - used,
        mig_mode=m.mig,
        nvlinks_active=m.nvlinks,
        numa_node=m.numa(i),
        iommu=m.iommu,
        acs_redirect=tuple(m.acs(i)),
        processes=processes,
    )


def build(m: Machine) -> Facts:
    gpus = tuple(build_gpu(m, i) for i in range(m.count))
    links = tuple(
        Link(
            a=a,
            b=b,
            nvlinks=m.nvlinks,
            nvlink_p2p="OK" if m.nvlinks else "not supported",
            pcie=m.pcie(a, b),
            p2p_read="OK" if m.nvlinks else m.p2p,
            p2p_write="OK" if m.nvlinks else m.p2p,
        )
        for a in range(m.count)
        for b in range(a + 1, m.count)
    )
    if m.count:
        fabric = m.fabric or Fabric(state="not supported")
        driver = Driver(available=True, version=m.driver, cuda_version=cuda_driver_of(m.driver), nvml_library=f"nvidia-ml-py {m.packages['nvidia-ml-py']}")
        topology = Topology(links=links, nvswitch=m.nvswitch, fabric=fabric)
    else:
        reason = "no NVIDIA driver (NVML library not found)"
        driver = Driver(available=False, nvml_library=f"nvidia-ml-py {m.packages['nvidia-ml-py']}", reason=reason)
        topology = Topology(nvswitch=None, unknown={"nvswitch": reason})
    packages = tuple(sorted((make_package(n, v, m.location) for n, v in m.packages.items()), key=lambda p: p.name))
    return Facts(
        source=f"simulated:{m.name}",
        host=Host(hostname=f"sim-{m.name}", os=m.os, python=m.python, cpu_count=m.cpu_count),
        driver=driver,
        gpus=gpus,
        visible_gpus=m.visible if m.visible is not None else tuple(range(m.count)),
        topology=topology,
        system=System(shm_mib=m.shm_mib, memlock_bytes=m.memlock, numa_nodes=m.numa_nodes),
        packages=packages,
        environment=dict(m.environment),
        python_executable=str(Path(m.location).parents[2] / "bin" / "python3")
        if "site-packages" in m.location
        else "/usr/bin/python3",
    )


UBUNTU = "Linux-6.8.0-87-generic-x86_64"
ROCKY = "Linux-5.14.0-570.42.2.el9_6.x86_64-x86_64"
ARM = "Linux-6.8.0-1031-nvidia-64k-aarch64"
VENV = "/opt/venv/lib/python3.12/site-packages"
DOCKER = "/usr/local/lib/python3.12/dist-packages"
HGX = dict(count=8, nvlinks=18, nvswitch=True, pcie=hgx_pcie, bus_ids=HGX_BUS_IDS, cpu_count=224, os=UBUNTU,
           numa=lambda i: i // 4, numa_nodes=2)
WORKSTATION = dict(shm_mib=64_000, memlock=8 * 2**20)  # 128 GB of RAM; Ubuntu's default `ulimit -l` of 8 MiB

MACHINES = [
    Machine(
        name="h100-sxm-8", gpu_name="NVIDIA H100 80GB HBM3", capability=(9, 0), memory_mib=81559,
        driver="570.172.08", python="3.12.3", location=DOCKER,
        packages=stack("2.9.1+cu128", "0.6.6", sglang="0.5.9", **{"sgl-kernel": "0.3.21"}, transformers="4.57.1",
                       **{"nvidia-ml-py": "13.580.65"}),
        environment={"NCCL_DEBUG": "WARN"},
        **HGX,
    ),
    Machine(
        name="h200-8", gpu_name="NVIDIA H200", capability=(9, 0), memory_mib=143771,
        driver="580.95.05", python="3.12.3", location=VENV,
        packages=stack("2.11.0+cu129", "0.6.16", sglang="0.5.14", **{"sglang-kernel": "0.4.0"}, transformers="5.1.0",
                       **{"nvidia-ml-py": "13.580.82"}),
        **HGX,
    ),
    Machine(
        name="h20-8", gpu_name="NVIDIA H20", capability=(9, 0), memory_mib=97871,
        driver="575.64.05", python="3.12.3", location=DOCKER,
        packages=stack("2.10.0+cu129", "0.6.12", sglang="0.5.12", **{"sglang-kernel": "0.3.22"}, transformers="4.57.6",
                       **{"nvidia-ml-py": "13.575.51"}),
        **HGX,
    ),
    Machine(
        name="h800-8", gpu_name="NVIDIA H800", capability=(9, 0), memory_mib=81559,
        driver="570.195.03", python="3.12.3", location=VENV,
        packages=stack("2.10.0+cu128", "0.6.10", vllm="0.14.1", transformers="4.57.6",
                       **{"nvidia-ml-py": "13.570.86", "pynvml": "12.0.0"}),
        **{**HGX, "nvlinks": 8},
    ),
    Machine(
        name="b200-8", gpu_name="NVIDIA B200", capability=(10, 0), memory_mib=183359,
        driver="580.105.08", python="3.12.3", location=DOCKER,
        packages=stack("2.11.0+cu130", "0.7.1", providers=("sm100a",), sglang="0.5.16", **{"sglang-kernel": "0.4.1"},
                       transformers="5.2.0", **{"nvidia-ml-py": "13.580.82"}),
        **HGX,
    ),
    Machine(
        name="b300-8", gpu_name="NVIDIA B300 SXM6 AC", capability=(10, 3), memory_mib=275040,
        driver="590.44.01", python="3.12.3", location=VENV,
        packages=stack("2.12.0+cu130", "0.7.4", providers=("sm100a", "sm103a"), sglang="0.5.18",
                       **{"sglang-kernel": "0.4.3"}, transformers="5.3.0", **{"nvidia-ml-py": "13.590.44"}),
        environment={"NCCL_IB_DISABLE": "0", "SGLANG_ENABLE_JIT_DEEPGEMM": "1"},
        **HGX,
    ),
    Machine(
        name="gb200-nvl72-tray", gpu_name="NVIDIA GB200", capability=(10, 0), memory_mib=189471, count=4, nvlinks=18,
        nvswitch=True, pcie=lambda a, b: "NODE" if a // 2 == b // 2 else "SYS", bus_ids=GRACE_BUS_IDS,
        numa=lambda i: i // 2, numa_nodes=2,  # two Grace CPUs per tray
        driver="590.48.01", cpu_count=144, os=ARM, python="3.12.3", location=VENV,
        packages=stack("2.12.0+cu130", "0.7.2", providers=("sm100a",), sglang="0.5.17", **{"sglang-kernel": "0.4.2"},
                       transformers="5.2.0", **{"nvidia-ml-py": "13.590.44"}),
        fabric=Fabric(state="completed", cluster_uuid="5e2a9b0c-7d41-4f3e-9c8a-1b6d0e4f7a23", clique_id=32766),
        environment={"NCCL_MNNVL_ENABLE": "1", "NCCL_CUMEM_ENABLE": "1"},
    ),
    Machine(
        name="a100-sxm-8", gpu_name="NVIDIA A100-SXM4-80GB", capability=(8, 0), memory_mib=81920,
        driver="570.172.08", python="3.10.12", location="/usr/local/lib/python3.10/dist-packages",
        packages=stack("2.9.1+cu128", "0.6.8.post1", jit_cache=False, vllm="0.13.0", transformers="4.57.3",
                       **{"nvidia-ml-py": "13.570.86"}),
        **{**HGX, "nvlinks": 12, "cpu_count": 256, "os": ROCKY},
    ),
    Machine(
        name="l40s-4", gpu_name="NVIDIA L40S", capability=(8, 9), memory_mib=46068, count=4, nvlinks=0,
        nvswitch=False, pcie=lambda a, b: "PXB" if a // 2 == b // 2 else "SYS", bus_ids=HGX_BUS_IDS[::2],
        driver="575.64.05", cpu_count=128, os=ROCKY, python="3.12.9", location=VENV, mig="not supported",
        numa=lambda i: i // 2, numa_nodes=2,
        packages=stack("2.10.0+cu128", "0.6.13", vllm="0.16.0", transformers="4.57.6", **{"nvidia-ml-py": "13.575.51"}),
    ),
    Machine(
        name="rtx-pro-6000-4", gpu_name="NVIDIA RTX PRO 6000 Blackwell Server Edition", capability=(12, 0),
        memory_mib=97887, count=4, nvlinks=0, nvswitch=False, pcie=lambda a, b: "PIX" if a // 2 == b // 2 else "NODE",
        bus_ids=HGX_BUS_IDS[:4], driver="580.95.05", cpu_count=96, os=UBUNTU, python="3.12.3", location=VENV,
        packages=stack("2.11.0+cu130", "0.7.2", providers=("sm120a",), sglang="0.5.17", **{"sglang-kernel": "0.4.2"},
                       transformers="5.2.0", **{"nvidia-ml-py": "13.580.82"}),
    ),
    Machine(
        name="rtx-4090-2", gpu_name="NVIDIA GeForce RTX 4090", capability=(8, 9), memory_mib=24564, count=2,
        nvlinks=0, nvswitch=False, pcie=lambda a, b: "PHB", bus_ids=["00000000:01:00.0", "00000000:41:00.0"],
        driver="580.76.05", cpu_count=32, os=UBUNTU, python="3.12.3",
        location="/home/user/.venv/lib/python3.12/site-packages", mig="not supported",
        p2p="not supported", **WORKSTATION,  # GeForce boards: the driver offers no peer-to-peer
        packages=stack("2.13.0+cu130", "0.7.4", jit_cache=False, vllm="0.18.0", transformers="5.3.0",
                       **{"nvidia-ml-py": "13.580.82"}),
        environment={"CUDA_DEVICE_ORDER": "PCI_BUS_ID"},
    ),
    Machine(
        name="h100-pcie-2-bridge", gpu_name="NVIDIA H100 PCIe", capability=(9, 0), memory_mib=81559, count=2,
        nvlinks=12, nvswitch=False, pcie=lambda a, b: "NODE", bus_ids=["00000000:4F:00.0", "00000000:52:00.0"],
        driver="575.64.05", cpu_count=64, os=UBUNTU, python="3.12.3", location=VENV,
        packages=stack("2.11.0+cu129", "0.6.18.post1", sglang="0.5.15", **{"sglang-kernel": "0.4.0"},
                       transformers="5.1.0", **{"nvidia-ml-py": "13.575.51"}),
    ),
    Machine(
        name="cpu-only", gpu_name=None, capability=None, memory_mib=0, count=0, nvlinks=0, nvswitch=False,
        pcie=lambda a, b: "SYS", bus_ids=[], driver=None, cpu_count=16, os=UBUNTU, python="3.11.14",
        location="/home/user/.venv/lib/python3.11/site-packages",
        packages=stack("2.13.0+cpu", "0.7.4", transformers="5.3.0", **{"nvidia-ml-py": "13.615.71"}),
        shm_mib=16_000, memlock=8 * 2**20,
    ),
    # Machines in a broken state, one launch pitfall or more each.
    Machine(
        name="h200-8-fabric-pending", gpu_name="NVIDIA H200", capability=(9, 0), memory_mib=143771,
        driver="580.95.05", python="3.12.3", location=VENV,
        packages=stack("2.11.0+cu129", "0.6.16", sglang="0.5.14", **{"sglang-kernel": "0.4.0"}, transformers="5.1.0",
                       **{"nvidia-ml-py": "13.580.82"}),
        fabric=Fabric(state="in progress", unknown={"cluster_uuid": "NVML reports an all-zero cluster UUID"},
                      clique_id=0),  # Fabric Manager not (yet) running after a reboot
        **HGX,
    ),
    Machine(
        name="a100-pcie-4-container", gpu_name="NVIDIA A100 80GB PCIe", capability=(8, 0), memory_mib=81920, count=4,
        nvlinks=0, nvswitch=False, pcie=lambda a, b: "PIX" if a // 2 == b // 2 else "NODE", bus_ids=HGX_BUS_IDS[:4],
        driver="570.172.08", cpu_count=64, os=UBUNTU, python="3.12.3", location=DOCKER,
        packages=stack("2.10.0+cu128", "0.6.13", vllm="0.16.0", transformers="4.57.6", **{"nvidia-ml-py": "13.570.86"}),
        # a default `docker run`: 64 MB /dev/shm, 8 MiB locked memory; ACS left on in the PCIe switches, the IOMMU
        # translating; someone's NCCL workarounds in the image; GPUs listed pairwise crossed
        shm_mib=64, memlock=8 * 2**20, iommu="DMA-FQ", acs=lambda i: (f"0000:{0x17 + 2 * (i // 2):02x}:0{i % 2}.0",),  # switch downstream ports
        environment={"CUDA_VISIBLE_DEVICES": "0,2,1,3", "NCCL_P2P_DISABLE": "1", "CUDA_DEVICE_MAX_CONNECTIONS": "1"},
        visible=(0, 2, 1, 3),
    ),
    Machine(
        name="workstation-mixed-2", gpu_name="NVIDIA RTX 6000 Ada Generation", capability=(8, 9), memory_mib=49140,
        count=2, nvlinks=0, nvswitch=False, pcie=lambda a, b: "PHB", bus_ids=["00000000:01:00.0", "00000000:21:00.0"],
        driver="580.76.05", cpu_count=24, os=UBUNTU, python="3.12.3",
        location="/home/user/.venv/lib/python3.12/site-packages", mig="not supported",
        packages=stack("2.11.0+cu130", "0.7.2", jit_cache=False, sglang="0.5.17", **{"sglang-kernel": "0.4.2"},
                       transformers="5.2.0", **{"nvidia-ml-py": "13.580.82"}),
        other_gpus={1: ("NVIDIA GeForce RTX 4090", (8, 9), 24564)},
        p2p="not supported",  # a GeForce board in the pair: no peer-to-peer
        processes={1: (GpuProcess(pid=2143, name="/usr/lib/xorg/Xorg", used_mib=412),
                       GpuProcess(pid=48210, name="python", used_mib=17_830))},  # a notebook left running
        **WORKSTATION,
    ),
]


def main(argv: list[str] | None = None) -> int:
    target = Path(argv[0]) if argv else PROFILES_DIR
    target.mkdir(parents=True, exist_ok=True)
    for machine in MACHINES:
        build(machine).save(target / f"{machine.name}.json")
    print(f"wrote {len(MACHINES)} profiles to {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
