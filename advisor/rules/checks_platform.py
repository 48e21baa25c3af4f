"""Checks of the platform: NVLink multicast for the fused allreduce, pynvml, no GPUs, MIG, and the engine installed."""

from __future__ import annotations

from advisor.rules import registry
from advisor.rules.checks_context import INFO, WARNING, _cannot, _Context
from advisor.rules.engine import Problem


def check_multicast(ctx: _Context) -> list[Problem]:
    """no_multicast_for_fusion: a fusion across nodes without NVSwitch multicast, so the engine falls back.

    On one node the engines use the trtllm backend, whose workspace is CUDA IPC memory every rank maps (flashinfer
    comm/trtllm_ar.py ``trtllm_create_ipc_workspace_for_all_reduce_fusion``: cudaIpcOpenMemHandle in 0.5.3, symmetric
    memory with ``enable_multicast=False`` in 0.7.4): it needs peer-to-peer between every pair, not multicast, and the
    fusion decisions say where it is missing. Across nodes only the mnnvl backend works, and it needs NVLink multicast
    (an NVSwitch fabric)."""
    if ctx.intent.nnodes < 2 or ctx.tp_per_node < 2 or not ctx.facts.driver.available or len(ctx.gpus_used) < 2:
        return []
    if ctx.fusion() is not True or ctx.prediction.importable is False:
        return []  # no fusion attempted, or flashinfer never imports (reported by flashinfer_version_mismatch)
    topo = ctx.facts.topology
    src = "flashinfer comm/allreduce.py (the mnnvl backend across nodes); SGLang/vLLM fall back on failure (docs/flashinfer.md)"
    if topo.nvswitch is None:
        return [_cannot("no_multicast_for_fusion", "whether NVSwitch multicast is available",
                        topo.unknown.get("nvswitch", "NVLink remote device types not probed"), src)]  # fmt: skip
    if topo.nvswitch:
        return []
    return [
        Problem(
            "no_multicast_for_fusion", WARNING,
            "these GPUs have no NVSwitch, so NVLink multicast is unavailable: across nodes FlashInfer's fusion needs its"
            " mnnvl backend, whose workspace is multicast memory; SGLang and vLLM log the error and fall back to plain"
            " allreduce + RMSNorm (no speed-up)",
            "nothing to fix for correctness; to avoid the failed attempt pass"
            " --enforce-disable-flashinfer-allreduce-fusion (SGLang) or -cc.pass_config.fuse_allreduce_rms=False (vLLM);"
            " fusion across nodes needs a multi-node NVLink fabric",
            src,
        )
    ]  # fmt: skip


def check_pynvml(ctx: _Context) -> list[Problem]:
    """unofficial_pynvml: the `pynvml` wrapper distribution beside (or instead of) NVIDIA's nvidia-ml-py."""
    wrapper = ctx.facts.package("pynvml")
    if not wrapper.installed:
        return []
    official = ctx.facts.package("nvidia-ml-py")
    beside = f"beside nvidia-ml-py {official.version}" if official.installed else "without nvidia-ml-py"
    # the wrapper is what is wrong; NVIDIA's nvidia-ml-py is only part of the problem when it is missing
    about = ("pynvml",) if official.installed else ("pynvml", "nvidia-ml-py")
    return [
        Problem(
            "unofficial_pynvml", WARNING,
            f"the unofficial `pynvml` distribution {wrapper.version} is installed {beside}: both provide the `pynvml`"
            " module, and the wrapper's old copies shadow NVIDIA's bindings (missing newer calls such as fabric info);"
            " recent wrappers only warn that they are deprecated",
            "`pip uninstall -y pynvml && pip install -U --force-reinstall nvidia-ml-py`",
            "vLLM / SGLang requirements: nvidia-ml-py (docs/nvml-and-torchrun.md)",
            about,
        )
    ]  # fmt: skip


def check_no_gpus(ctx: _Context) -> list[Problem]:
    """no_gpus: no NVIDIA driver (a fact, not an error for the bundled runtime)."""
    driver = ctx.facts.driver
    if driver.available:
        return []
    reason = driver.reason or "NVML unavailable"
    cpu_run = ctx.engine.cpu_run if ctx.engine is not None else None
    if cpu_run is not None:
        return [
            Problem(
                "no_gpus", INFO,
                f"{reason}, so no GPU: {cpu_run}",
                "nothing to fix to try it here; run on a GPU node for real speed", "advisor probe (NVML)",
            )
        ]  # fmt: skip
    return [
        Problem(
            "no_gpus", WARNING,
            f"{reason}, so no GPU: {ctx.intent.engine} needs CUDA GPUs; the plan only explains what it would do",
            "run on a GPU node, or use --engine bundled to try the runtime on CPU", "advisor probe (NVML)",
        )
    ]  # fmt: skip


def check_mig(ctx: _Context) -> list[Problem]:
    """mig_enabled: MIG partitions a GPU; NVLink P2P, custom allreduce and the fusion workspace do not work across them."""
    mig = [g for g in ctx.gpus_used if g.mig_mode == "enabled"]
    if not mig:
        return []
    return [
        Problem(
            "mig_enabled", WARNING,
            f"MIG is enabled on GPU {', '.join(str(g.index) for g in mig)}: CUDA sees MIG instances, not whole GPUs,"
            " and tensor parallelism across them gets no NVLink P2P, custom allreduce or FlashInfer fusion",
            "disable MIG (`sudo nvidia-smi -i <index> -mig 0`, then reset the GPU) for tensor-parallel serving",
            "nvmlDeviceGetMigMode (docs/nvml-and-torchrun.md)",
        )
    ]  # fmt: skip


def check_engine_installed(ctx: _Context) -> list[Problem]:
    """sglang_not_installed / vllm_not_installed / torch_not_installed: the chosen engine is missing here."""
    engine = ctx.intent.engine
    if engine not in registry.names():
        return []
    spec = registry.get(engine)  # the package it needs and how to install it
    name = spec.package
    pkg = ctx.facts.package(name)
    if pkg.installed:
        return []
    if pkg.unknown:
        return [_cannot(f"{name}_not_installed", f"whether {name} is installed", next(iter(pkg.unknown.values())),
                        "importlib.metadata", (name,))]  # fmt: skip
    live = ctx.facts.source == "live"
    if not spec.releases:  # it ships with the advisor: torch is what it lacks
        if not live:
            return []
        from launcher.engines import runtime_install_commands

        commands = runtime_install_commands(ctx.facts, torch_missing=True)
        fix = ", then ".join(f"`{command}`" for command in commands)
        if ctx.facts.gpus:
            fix += " (installs a CUDA torch on GPU nodes)"
        return [Problem("torch_not_installed", WARNING,
                        "torch is not installed in the probed Python: the bundled runtime cannot start",
                        fix, "importlib.metadata", (name,))]  # fmt: skip
    version = ctx.intent.engine_version
    rules = f"version {version}" if version else "the newest modelled release"
    return [
        Problem(
            f"{name}_not_installed", WARNING if live else INFO,
            f"{name} is not installed {'here' if live else 'in these facts'}: the plan follows {rules}"
            + ("; `advisor launch` cannot start it" if live else ""),
            f"`{spec.install_hint(version)}`, or pass --engine-version to model another"
            " release",
            "importlib.metadata",
            (name,),
        )
    ]  # fmt: skip
