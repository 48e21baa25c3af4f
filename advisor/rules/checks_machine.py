"""What will break at launch because of the machine itself: peer-to-peer, PCIe ACS and the IOMMU, NUMA, GPU order,
memory other processes hold, mixed GPUs, /dev/shm, NCCL environment overrides, the NVLink fabric and locked memory.

Each check reads the facts (advisor/facts.py: Gpu.numa_node / iommu / acs_redirect / processes, Link.p2p_read /
p2p_write, Facts.system, the environment) and the plan's context (advisor/rules/checks.py ``_Context``), returns
Problems with a stable id, and says "cannot check ... because ..." (severity info) when a fact it needs is unknown.
Facts files written before these fields existed load with them as None, which reads as unknown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from advisor.facts import MEMLOCK_UNLIMITED, Gpu, Link
from advisor.formats import gib_of_mib
from advisor.rules.engine import GpuMemory, Problem, Scenario, flag_value, tries_custom_allreduce
from advisor.rules.sglang.common import DISABLE_CUSTOM_AR  # the same flag in vLLM

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from advisor.rules.checks_context import _Context

ERROR, WARNING, INFO = "error", "warning", "info"
GIB_MIB = 1024

NCCL_TROUBLESHOOTING = "NCCL user guide, Troubleshooting (docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html)"
SHM_MIN_MIB = 1024  # NCCL's troubleshooting guide: run containers with --shm-size=1g --ulimit memlock=-1
IOMMU_TRANSLATED = ("DMA", "DMA-FQ")  # IOMMU group types that translate DMA (peer writes to BARs need a mapping)
# GPU memory already taken beyond this is worth saying (a driver context alone holds a few hundred MiB).
IN_USE_REPORT_MIB = 1024
PCIE_DISTANCE = {"PIX": 1, "PXB": 2, "PHB": 3, "NODE": 4, "SYS": 5}


# -- helpers ------------------------------------------------------------------------------------------------------


def _pairs(ctx: _Context) -> Iterator[tuple[Gpu, Gpu, Link | None]]:
    gpus = ctx.gpus_used
    for i, a in enumerate(gpus):
        for b in gpus[i + 1 :]:
            yield a, b, ctx.facts.topology.pair(a.index, b.index)


def _multi_gpu(ctx: _Context) -> bool:
    return ctx.facts.driver.available and ctx.tp_per_node >= 2 and len(ctx.gpus_used) >= 2


def _cannot(problem_id: str, what: str, reason: str, source: str) -> Problem:
    return Problem(problem_id, INFO, f"cannot check {what}: {reason}", "probe on the target machine (`advisor probe`)",
                   source)  # fmt: skip


def _why_unknown(unknown: dict[str, str], *names: str) -> str:
    for name in names:
        if name in unknown:
            return unknown[name]
    return "not in these facts (saved by an advisor before this fact was probed); re-run `advisor probe -o FILE`"


def _gpu_list(indices) -> str:
    return ", ".join(str(i) for i in indices)


# -- p2p_unavailable ----------------------------------------------------------------------------------------------

def custom_allreduce_tried(ctx: _Context) -> bool:
    """Whether the engine sets its custom allreduce up at start-up (the plan's decision; without a plan, the engine's
    own rule at its newest modelled release): only then does the GPUs' peer-to-peer decide what happens."""
    if ctx.custom_allreduce is not None:
        return ctx.custom_allreduce
    engine = ctx.engine
    scenario = Scenario(ctx.facts, ctx.model, ctx.intent)
    return tries_custom_allreduce(engine.custom_allreduce(scenario, ctx.intent.engine_version or engine.newest))


def check_p2p(ctx: _Context) -> list[Problem]:
    """p2p_unavailable: GPUs of the TP group without peer-to-peer where the engine sets its custom allreduce up."""
    engine = ctx.engine
    if engine is None or engine.peer_access is None or not _multi_gpu(ctx) or not custom_allreduce_tried(ctx):
        return []
    src = engine.peer_access.source
    bad: list[tuple[Gpu, Gpu, str, str]] = []
    for a, b, link in _pairs(ctx):
        if link is None or link.p2p_read is None or link.p2p_write is None:
            reason = _why_unknown(link.unknown if link else {}, "p2p_read", "p2p_write")
            return [_cannot("p2p_unavailable", f"peer-to-peer between GPUs {a.index} and {b.index}", reason, src)]
        if link.p2p_read != "OK" or link.p2p_write != "OK":
            bad.append((a, b, link.p2p_read, link.p2p_write))
    if not bad:
        return []
    pairs = "; ".join(f"GPUs {a.index}-{b.index}: read {r}, write {w}" for a, b, r, w in bad)
    observed = f"NVML reports no peer-to-peer between GPUs of the TP group ({pairs})"
    severity, message, fix = engine.peer_access.problem(observed, ctx.intent.overrides)
    return [Problem("p2p_unavailable", severity, message, fix, src)]


# -- pcie_acs_or_iommu --------------------------------------------------------------------------------------------

ACS_SOURCE = f"{NCCL_TROUBLESHOOTING}: PCI Access Control Services (ACS), IOMMU; vLLM issues #9920 and #51513"


def check_acs_iommu(ctx: _Context) -> list[Problem]:
    """pcie_acs_or_iommu: peer-to-peer over PCIe redirected by ACS, or through an IOMMU in translation mode."""
    if not _multi_gpu(ctx):
        return []
    # Only pairs that will do P2P over PCIe matter: no NVLink between them, and the driver offers P2P.
    pcie_p2p = [(a, b) for a, b, link in _pairs(ctx)
                if link is not None and not link.nvlinks and link.p2p_read == "OK"]  # fmt: skip
    if not pcie_p2p:
        return []
    gpus = sorted({g.index: g for pair in pcie_p2p for g in pair}.values(), key=lambda g: g.index)
    translated = [g for g in gpus if g.iommu in IOMMU_TRANSLATED]
    acs = [g for g in gpus if g.acs_redirect]
    if translated or acs:
        bits = []
        if acs:
            bridges = sorted({b for g in acs for b in g.acs_redirect})
            bits.append(f"ACS redirects peer-to-peer requests on PCIe bridge(s) {', '.join(bridges)} above GPU"
                        f" {_gpu_list(g.index for g in acs)}")  # fmt: skip
        if translated:
            bits.append(f"the IOMMU translates DMA for GPU {_gpu_list(g.index for g in translated)} (group type"
                        f" {translated[0].iommu})")  # fmt: skip
        return [
            Problem(
                "pcie_acs_or_iommu", WARNING,
                f"{'; '.join(bits)}: GPU peer-to-peer writes go up to the root complex, where they crawl or are"
                " dropped, and NCCL (and the custom allreduce) hang at the first collective or run far below PCIe"
                " speed, while the driver still reports P2P as supported",
                "disable ACS on the PCIe switches (BIOS, or `sudo setpci -s BRIDGE ECAP_ACS+0x6.w=0000` per bridge) and"
                " put the IOMMU in passthrough (`iommu=pt` on the kernel command line) or off; the slow workaround is"
                f" NCCL_P2P_DISABLE=1 with {DISABLE_CUSTOM_AR}",
                ACS_SOURCE,
            )
        ]  # fmt: skip
    unknown = [g for g in gpus if g.iommu is None or g.acs_redirect is None]
    if unknown:
        g = unknown[0]
        reason = _why_unknown(g.unknown, "acs_redirect" if g.acs_redirect is None else "iommu")
        return [_cannot("pcie_acs_or_iommu", f"ACS and the IOMMU mode for GPU {g.index}", reason, ACS_SOURCE)]
    return []


# -- gpus_span_numa / gpu_order -----------------------------------------------------------------------------------

NUMA_SOURCE = f"{NCCL_TROUBLESHOOTING}; `nvidia-smi topo -m` (SYS: traverses the SMP interconnect between CPU sockets)"


def check_numa(ctx: _Context) -> list[Problem]:
    """gpus_span_numa: a TP group spread over NUMA nodes (CPU sockets) whose cross pairs have no NVLink."""
    if not _multi_gpu(ctx):
        return []
    nodes = {g.index: g.numa_node for g in ctx.gpus_used}
    crossing = []
    for a, b, link in _pairs(ctx):
        if link is not None and link.nvlinks:
            continue
        na, nb = nodes[a.index], nodes[b.index]
        split_numa = na is not None and nb is not None and na >= 0 and nb >= 0 and na != nb
        if split_numa or (link is not None and link.pcie == "SYS"):
            crossing.append((a.index, b.index))
    if crossing:
        by_node: dict[int | None, list[int]] = {}
        for index, node in nodes.items():
            by_node.setdefault(node, []).append(index)
        layout = "; ".join(f"node {n}: GPU {_gpu_list(i)}" for n, i in sorted(by_node.items(), key=lambda kv: str(kv[0])))
        return [
            Problem(
                "gpus_span_numa", WARNING,
                f"the TP group spans CPU sockets / NUMA nodes ({layout}) and GPU pair(s)"
                f" {', '.join(f'{a}-{b}' for a, b in crossing)} have no NVLink: their traffic crosses the inter-socket"
                " link (SYS in `nvidia-smi topo -m`), where NCCL does not use peer-to-peer by default and copies through"
                " host memory, so every allreduce is several times slower than within one socket",
                "choose GPUs on one NUMA node with CUDA_VISIBLE_DEVICES (see `nvidia-smi topo -m`), or use a smaller"
                " tp that fits one socket (with data parallelism across sockets)",
                NUMA_SOURCE,
            )
        ]  # fmt: skip
    missing = [g for g in ctx.gpus_used if g.numa_node is None]
    if missing:
        reason = _why_unknown(missing[0].unknown, "numa_node")
        return [_cannot("gpus_span_numa", f"the NUMA node of GPU {missing[0].index}", reason, NUMA_SOURCE)]
    return []


ORDER_SOURCE = "NCCL rings follow rank order when they cannot be searched; TensorFlow issue #39207 (same GPUs, order only)"


def _distance(link: Link | None) -> int | None:
    if link is None:
        return None
    if link.nvlinks:
        return 0
    return PCIE_DISTANCE.get(link.pcie or "")


def _ring_cost(ctx: _Context, order: list[int]) -> int | None:
    total = 0
    for i, a in enumerate(order):
        b = order[(i + 1) % len(order)]
        d = _distance(ctx.facts.topology.pair(a, b))
        if d is None:
            return None
        total += d
    return total


def check_gpu_order(ctx: _Context) -> list[Problem]:
    """gpu_order: CUDA_VISIBLE_DEVICES lists the TP group's GPUs so that far ones are rank neighbours."""
    cvd = ctx.facts.environment.get("CUDA_VISIBLE_DEVICES")
    if cvd is None or not _multi_gpu(ctx) or len(ctx.gpus_used) < 3:
        return []
    order = [g.index for g in ctx.gpus_used]
    ascending = sorted(order)
    if order == ascending:
        return []
    given, best = _ring_cost(ctx, order), _ring_cost(ctx, ascending)
    if given is None or best is None or given <= best:
        return []
    far = []
    for i, a in enumerate(order):
        b = order[(i + 1) % len(order)]
        link = ctx.facts.topology.pair(a, b)
        if _distance(link) and link is not None:
            far.append(f"{a}-{b} ({link.label})")
    return [
        Problem(
            "gpu_order", INFO,
            f"CUDA_VISIBLE_DEVICES={cvd!r} makes ranks 0..{len(order) - 1} GPUs {_gpu_list(order)}, so rank neighbours"
            f" {', '.join(far)} sit further apart than in ascending order ({_gpu_list(ascending)}): whatever follows"
            " rank order (NCCL rings where it cannot search the topology, pipeline neighbours) crosses more PCIe hops",
            f"list the GPUs in ascending order: CUDA_VISIBLE_DEVICES={','.join(str(i) for i in ascending)}",
            ORDER_SOURCE,
        )
    ]  # fmt: skip


# -- gpu_memory_in_use --------------------------------------------------------------------------------------------

def _holders(gpu: Gpu) -> str:
    if not gpu.processes:
        return ""
    names = [f"{p.name or 'pid'} ({p.pid}{f', {p.used_mib} MiB' if p.used_mib is not None else ''})"
             for p in gpu.processes]  # fmt: skip
    return " held by " + ", ".join(names)


def _weights_per_gpu_mib(ctx: _Context) -> float:
    model = ctx.model
    if model is None or not model.num_params:
        return 0.0
    per_param = model.bytes_per_param(ctx.dtype)
    return model.num_params * per_param / max(ctx.intent.tp, 1) / 2**20 if per_param else 0.0


def _default_fraction(ctx: _Context, memory: GpuMemory) -> float | None:
    """The engine's own default fraction for the release the plan models (the one asked for, else the installed one);
    None where it computes the fraction at start-up."""
    if memory.default is None:
        return None
    version = ctx.intent.engine_version
    if not version:
        pkg = ctx.facts.package(ctx.engine.package)
        version = pkg.base_version if pkg.installed else None
    return memory.default(version)


def check_gpu_memory(ctx: _Context) -> list[Problem]:
    """gpu_memory_in_use: memory other processes hold on the GPUs, against the engine's memory fraction."""
    memory = ctx.engine.memory if ctx.engine is not None else None
    if memory is None or not ctx.facts.driver.available or not ctx.gpus_used:
        return []
    src, flag = memory.source, memory.flag
    raw = flag_value(ctx.intent.overrides, flag) or None
    try:
        fraction = float(raw) if raw is not None else _default_fraction(ctx, memory)
    except ValueError:
        fraction = None
    weights = _weights_per_gpu_mib(ctx)  # 0 when the model is unknown: then only the engine's own budget counts
    short, busy = [], []
    for gpu in ctx.gpus_used:
        total, free = gpu.memory_total_mib, gpu.memory_free_mib
        if total is None or free is None:
            reason = _why_unknown(gpu.unknown, "memory_free_mib", "memory_total_mib")
            return [_cannot("gpu_memory_in_use", f"the free memory of GPU {gpu.index}", reason, src)]
        used = total - free
        need = memory.need(fraction, total, weights)
        if need > total or weights > total:
            # The layout does not fit even on an idle GPU (weights_exceed_memory says so): what others hold is not to
            # blame, and freeing it would not help.
            continue
        if free < need:
            short.append((gpu, used, free, total, need))
        elif used > IN_USE_REPORT_MIB or (memory.balance is not None and free < memory.balance * total):
            busy.append((gpu, used, free, total))
    setting = f"{flag} {fraction:g}" if fraction is not None else memory.automatic
    if short:
        parts = "; ".join(f"GPU {g.index}: {gib_of_mib(free)} free of {gib_of_mib(total)},"
                          f" {gib_of_mib(used)} in use{_holders(g)}" for g, used, free, total, _ in short)  # fmt: skip
        crash = memory.short(setting, short[0][4] / GIB_MIB)
        return [
            Problem(
                "gpu_memory_in_use", ERROR, f"{parts}: {crash}",
                "stop the processes holding GPU memory (`nvidia-smi`), pick idle GPUs with CUDA_VISIBLE_DEVICES, or"
                " use more GPUs (a higher --tp) so each holds less",
                src,
            )
        ]  # fmt: skip
    if busy:
        parts = "; ".join(f"GPU {g.index}: {gib_of_mib(used)} of {gib_of_mib(total)} in use{_holders(g)}"
                          for g, used, free, total in busy)  # fmt: skip
        return [
            Problem(
                "gpu_memory_in_use", WARNING,
                f"{parts}: {setting} sizes weights + KV cache from the GPU's total memory, so what others hold comes"
                " out of the KV cache (fewer concurrent requests)" + memory.unbalanced,
                f"free the GPUs (`nvidia-smi`) or set {flag} explicitly below the free share",
                src,
            )
        ]  # fmt: skip
    return []


# -- heterogeneous_gpus -------------------------------------------------------------------------------------------

MIXED_SOURCE = ("vllm vllm/platforms/cuda.py ('Detected different devices in the system ... set"
                " CUDA_DEVICE_ORDER=PCI_BUS_ID'; vLLM issue #15255); CUDA programming guide, CUDA_DEVICE_ORDER")


def check_heterogeneous(ctx: _Context) -> list[Problem]:
    """heterogeneous_gpus: GPUs of different models or memory sizes in one TP group."""
    if not _multi_gpu(ctx):
        return []
    gpus = ctx.gpus_used
    names = {g.name for g in gpus}
    memories = {g.memory_total_mib for g in gpus}
    if None in names or None in memories:
        gpu = next(g for g in gpus if g.name is None or g.memory_total_mib is None)
        reason = _why_unknown(gpu.unknown, "name", "memory_total_mib")
        return [_cannot("heterogeneous_gpus", f"the model of GPU {gpu.index}", reason, MIXED_SOURCE)]
    if len(names) == 1 and max(memories) - min(memories) <= 0.01 * max(memories):  # type: ignore[operator]
        return []
    described = "; ".join(f"GPU {g.index}: {g.name}, {gib_of_mib(g.memory_total_mib)}, SM {g.capability_text}"
                          for g in gpus)  # type: ignore[operator]  # fmt: skip
    order = ctx.facts.environment.get("CUDA_DEVICE_ORDER")
    order_note = ""
    if order != "PCI_BUS_ID":
        order_note = (" CUDA_DEVICE_ORDER is not PCI_BUS_ID, so CUDA numbers the fastest GPU first and"
                      " CUDA_VISIBLE_DEVICES indices do not match nvidia-smi's.")  # fmt: skip
    return [
        Problem(
            "heterogeneous_gpus", WARNING,
            f"the TP group mixes GPUs ({described}): every rank holds an equal shard, so the smallest GPU decides the"
            " KV cache and the batch, the slowest one paces every step, and kernels chosen for one architecture"
            f" (attention backend, fused MoE, FlashInfer) may not run on the other.{order_note}",
            "use identical GPUs for one TP group (CUDA_VISIBLE_DEVICES), and export CUDA_DEVICE_ORDER=PCI_BUS_ID",
            MIXED_SOURCE,
        )
    ]  # fmt: skip


# -- shm_too_small ------------------------------------------------------------------------------------------------

SHM_SOURCE = (f"{NCCL_TROUBLESHOOTING}: Docker, --shm-size=1g --ulimit memlock=-1; vLLM and SGLang docker docs"
              " (--ipc=host or --shm-size)")


def check_shm(ctx: _Context) -> list[Problem]:
    """shm_too_small: /dev/shm below what NCCL and the engines' worker queues need (containers default to 64 MB)."""
    if ctx.tp_per_node < 2 or ctx.engine is None:
        return []
    system = ctx.facts.system
    if system.shm_mib is None:
        return [_cannot("shm_too_small", "the size of /dev/shm", _why_unknown(system.unknown, "shm_mib"), SHM_SOURCE)]
    if system.shm_mib >= SHM_MIN_MIB:
        return []
    return [
        Problem(
            "shm_too_small", WARNING,
            f"/dev/shm is {system.shm_mib} MiB (a container's default is 64 MB): NCCL's shared-memory transport and the"
            " engines' inter-process queues allocate there, so a tp>1 launch fails with NCCL 'unhandled system error'"
            " ('Error while creating shared memory segment' / 'failed to extend /dev/shm') or a 'Bus error'",
            "give the container more: `docker run --ipc=host` or `--shm-size=16g` (at least 1 GiB, NCCL's guide),"
            " or remount /dev/shm larger",
            SHM_SOURCE,
        )
    ]  # fmt: skip


# -- nccl_env_override --------------------------------------------------------------------------------------------

ENV_SOURCE = "NCCL user guide, Environment Variables (docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html)"
_OFF = ("0", "false", "no", "off")
_ON = ("1", "true", "yes", "on")


def _env_effects(ctx: _Context) -> list[tuple[str, str, str]]:
    """(variable=value, severity, what it changes) for each variable that switches off something the plan counts on."""
    env = ctx.facts.environment
    out = []
    indices = [g.index for g in ctx.gpus_used]
    nvlink = ctx.facts.topology.all_pairs_nvlink_p2p(indices) is True if len(indices) > 1 else False
    multi_node = ctx.intent.nnodes > 1

    def value(name: str) -> str | None:
        raw = env.get(name)
        return raw.strip().lower() if raw is not None else None

    if value("NCCL_P2P_DISABLE") in _ON:
        out.append(("NCCL_P2P_DISABLE", WARNING if nvlink else INFO,
                    "NCCL stops using peer-to-peer (NVLink and PCIe P2P) and stages every transfer through host shared"
                    " memory" + (": on these NVLink GPUs allreduce becomes many times slower" if nvlink else "")))
    if value("NCCL_P2P_LEVEL") in ("loc", "0"):
        out.append(("NCCL_P2P_LEVEL", WARNING if nvlink else INFO, "LOC: NCCL never uses peer-to-peer between GPUs"))
    if value("NCCL_SHM_DISABLE") in _ON:
        out.append(("NCCL_SHM_DISABLE", INFO, "NCCL cannot stage through host shared memory; GPUs without P2P then"
                    " talk over the network transport (sockets), even on one node"))
    if value("NCCL_NVLS_ENABLE") in _OFF and ctx.facts.topology.nvswitch:
        out.append(("NCCL_NVLS_ENABLE", INFO, "no NVLink SHARP: NCCL's allreduce does not use the NVSwitch multicast"
                    " engines (slower large allreduces; sometimes set on purpose to work around a broken fabric)"))
    if value("NCCL_IB_DISABLE") in _ON:
        out.append(("NCCL_IB_DISABLE", WARNING if multi_node else INFO, "NCCL ignores InfiniBand / RoCE and uses TCP"
                    " sockets between nodes" + (": the inter-node allreduce of this multi-node plan crawls"
                                                if multi_node else " (no effect on one node)")))
    if value("NCCL_MNNVL_ENABLE") in _OFF and ctx.facts.topology.fabric.state == "completed":
        out.append(("NCCL_MNNVL_ENABLE", WARNING if multi_node else INFO, "NCCL does not use the multi-node NVLink"
                    " fabric; ranks on other trays talk over the network instead"))
    if value("NCCL_CUMEM_ENABLE") in _OFF and ctx.facts.topology.fabric.state == "completed":
        out.append(("NCCL_CUMEM_ENABLE", INFO, "NCCL's cuMem allocations (needed for multi-node NVLink and NVLS buffer"
                    " registration) are off"))
    if env.get("CUDA_DEVICE_MAX_CONNECTIONS", "").strip() == "1":
        out.append(("CUDA_DEVICE_MAX_CONNECTIONS", INFO, "one hardware work queue per GPU: kernels from different"
                    " streams serialise, so communication the engine overlaps with compute (two-batch overlap,"
                    " async allreduce) runs one after the other (Megatron-LM sets it for training)"))
    for name in ("NCCL_ALGO", "NCCL_PROTO"):
        if env.get(name):
            out.append((name, INFO, "fixes NCCL's algorithm / protocol choice instead of its tuned selection"))
    return [(f"{name}={env.get(name)}", severity, text) for name, severity, text in out]


def check_nccl_env(ctx: _Context) -> list[Problem]:
    """nccl_env_override: NCCL or CUDA variables in the environment that switch off what the plan counts on."""
    if ctx.tp_per_node < 2 and ctx.intent.nnodes < 2:
        return []
    return [
        Problem(
            "nccl_env_override", severity,
            f"{assignment} is set in the environment the engine inherits: {text}",
            f"unset {assignment.split('=', 1)[0]} unless it works around a known problem on this machine",
            ENV_SOURCE,
        )
        for assignment, severity, text in _env_effects(ctx)
    ]  # fmt: skip


# -- fabric_not_ready ---------------------------------------------------------------------------------------------

FABRIC_SOURCE = ("nvmlDeviceGetGpuFabricInfoV (state not started / in progress / completed); NVIDIA Fabric Manager user"
                 " guide; NCCL issue #1788 ('Cuda failure 401 the operation cannot be performed in the present state'"
                 " in transport/nvls.cc)")  # fmt: skip


def check_fabric(ctx: _Context) -> list[Problem]:
    """fabric_not_ready: on NVSwitch / NVLink-fabric GPUs, a fabric registration that has not completed."""
    if not ctx.facts.driver.available or not ctx.gpus_used:
        return []
    topo = ctx.facts.topology
    state = topo.fabric.state
    if state in ("not started", "in progress"):
        return [
            Problem(
                "fabric_not_ready", ERROR,
                f"the GPUs' NVLink fabric registration is '{state}' (NVML fabric info): Fabric Manager (and NVLSM on"
                " Blackwell) has not configured the NVSwitches, so CUDA start-up fails with cudaErrorSystemNotReady or"
                " NCCL's NVLink SHARP setup fails with 'CUDA error 401 the operation cannot be performed in the present"
                " state'",
                "start (or restart, then reset the GPUs) nvidia-fabricmanager and wait for `nvidia-smi -q | grep -A2"
                " Fabric` to say Completed; NCCL_NVLS_ENABLE=0 only avoids the multicast part",
                FABRIC_SOURCE,
            )
        ]  # fmt: skip
    if state is None and topo.nvswitch and ctx.tp_per_node >= 2:
        reason = _why_unknown(topo.fabric.unknown, "state")
        return [_cannot("fabric_not_ready", "the NVLink fabric state", reason, FABRIC_SOURCE)]
    return []


# -- memlock_limit ------------------------------------------------------------------------------------------------

MEMLOCK_SOURCE = (f"{NCCL_TROUBLESHOOTING}: InfiniBand, 'ulimit -l unlimited' / --ulimit memlock=-1; GPUDirect RDMA"
                  " registers pinned memory")


def check_memlock(ctx: _Context) -> list[Problem]:
    """memlock_limit: a locked-memory limit too low for InfiniBand / GPUDirect RDMA on a multi-node launch."""
    if ctx.intent.nnodes < 2:
        return []
    limit = ctx.facts.system.memlock_bytes
    if limit is None:
        return [_cannot("memlock_limit", "the locked-memory limit", _why_unknown(ctx.facts.system.unknown,
                        "memlock_bytes"), MEMLOCK_SOURCE)]  # fmt: skip
    if limit == MEMLOCK_UNLIMITED:
        return []
    return [
        Problem(
            "memlock_limit", WARNING,
            f"the locked-memory limit (`ulimit -l`) is {limit // 1024} KiB: NCCL over InfiniBand / RoCE pins (registers)"
            " its buffers, and with a limit this low registration fails ('ibv_reg_mr failed', 'NET/IB : Unable to"
            " register memory') or NCCL falls back to sockets between the nodes",
            "raise it to unlimited on every node: `ulimit -l unlimited` (limits.conf memlock), `docker run --ulimit"
            " memlock=-1`, or LimitMEMLOCK=infinity for a systemd service",
            MEMLOCK_SOURCE,
        )
    ]  # fmt: skip


MACHINE_CHECKS: tuple[Callable[[_Context], list[Problem]], ...] = (
    check_fabric,
    check_p2p,
    check_acs_iommu,
    check_numa,
    check_gpu_order,
    check_gpu_memory,
    check_heterogeneous,
    check_shm,
    check_nccl_env,
    check_memlock,
)

PROBLEM_IDS = (
    "fabric_not_ready", "p2p_unavailable", "pcie_acs_or_iommu", "gpus_span_numa", "gpu_order", "gpu_memory_in_use",
    "heterogeneous_gpus", "shm_too_small", "nccl_env_override", "memlock_limit",
)  # fmt: skip
