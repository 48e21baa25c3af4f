"""vLLM's FlashInfer allreduce + RMSNorm fusion default and its custom allreduce (reference/vllm-nvml-torchrun.md).

Models the newest releases: ``PassConfig.fuse_allreduce_rms`` (``-cc.pass_config.fuse_allreduce_rms=True|False``), on by
default at -O2/-O3 when tp > 1 on CUDA with flashinfer importable and a capability 9.0 or 10.x GPU, limited per
(capability, world size) to the message sizes of the table below.
"""

from __future__ import annotations

from advisor.models import dtype_bytes
from advisor.rules.engine import (
    AUTO_ENABLED,
    Condition,
    Decision,
    Problem,
    Scenario,
    Source,
    check_custom_ar_nvlink,
    check_custom_ar_world_size,
    check_tp_gt_1,
    is_enabled,
    parse_release,
    release_text,
    state_of,
)

ENGINE = "vllm"
# The modelled behaviour (PassConfig.fuse_allreduce_rms, on by default at -O2) holds from late 2025 on; older releases
# spelled it enable_fi_allreduce_fusion and kept it off by default. The table has no upper bound: it is the newest.
MODELLED_FROM = "0.12.0"
NEWEST = MODELLED_FROM  # used only when no version is known
PASS_FILE = "vllm/compilation/passes/fusion/allreduce_rms_fusion.py"
CONFIG_FILE = "vllm/config/compilation.py"
CUSTOM_AR_FILE = "vllm/distributed/device_communicators/custom_all_reduce.py"

FUSE_FLAG = "-cc.pass_config.fuse_allreduce_rms"
DISABLE_CUSTOM_AR = "--disable-custom-all-reduce"
ENFORCE_EAGER = "--enforce-eager"

# Largest message fused, in MiB, by capability (major*10 + minor) then world size (newest table).
MAX_SIZE_MB: dict[int, dict[int, float]] = {
    90: {2: 64, 4: 2, 8: 0.5},
    100: {2: 64, 4: 32, 8: 1, 16: 64},
    103: {2: 64, 4: 64, 8: 4, 16: 64},
    107: {2: 64, 4: 64, 8: 2},
}


class ReleaseError(ValueError):
    """A vLLM version the tables cannot model; one line naming the fix."""


def rules_release(version: str) -> str:
    """The release whose behaviour is modelled: the version itself from v0.12 on, else v0.12 (with a plan warning)."""
    release = parse_release(version)
    if release is None:
        raise ReleaseError(f"vllm version {version!r} is not a version; pass --engine-version X.Y.Z (e.g. {NEWEST})")
    return release_text(max(release, parse_release(MODELLED_FROM)))


def version_problems(version: str, installed: str | None = None) -> list[Problem]:
    """engine_version_older; it is about the vllm package when ``installed`` (its version) is the release judged."""
    if parse_release(version) >= parse_release(MODELLED_FROM):
        return []
    about = ("vllm",) if installed is not None and parse_release(installed) == parse_release(version) else ()
    return [Problem(
        "engine_version_older", "warning",
        f"vllm {version} predates the modelled behaviour (v{MODELLED_FROM}+): it spelled the fusion enable_fi_allreduce_fusion"
        " and kept it off by default, so the fusion decision below is likely too optimistic",
        f"upgrade vLLM to v{MODELLED_FROM} or newer, or read the decision as what a current vLLM would do",
        f"vllm v{MODELLED_FROM}, {CONFIG_FILE}", about,
    )]  # fmt: skip


def optimization_level(s: Scenario) -> int:
    """-O0..-O3 (also "-O 1", "-O=1", "--optimization-level 1"); 2 is the default."""
    level = 2
    for i, token in enumerate(s.overrides):
        raw = None
        if token.startswith("-O") and len(token) > 2:
            raw = token[2:].lstrip("=")
        elif token in ("-O", "--optimization-level") and i + 1 < len(s.overrides):
            raw = s.overrides[i + 1]
        elif token.startswith("--optimization-level="):
            raw = token.split("=", 1)[1]
        if raw is not None and raw.isdigit():
            level = int(raw)
    return level


def _user_setting(s: Scenario) -> bool | None:
    raw = s.flag(FUSE_FLAG)
    if raw is None:
        return None
    return raw.strip().lower() in ("", "true", "1")


def max_size_mb(capability: tuple[int, int] | None, world: int) -> float | None:
    if capability is None:
        return None
    return MAX_SIZE_MB.get(capability[0] * 10 + capability[1], {}).get(world)


def fusion_decision(s: Scenario, version: str) -> Decision:
    release = rules_release(version)
    prediction = s.flashinfer
    level = optimization_level(s)
    cap = None if s.no_gpu else s.capability

    def compiled(s: Scenario):
        eager = s.has(ENFORCE_EAGER)
        ok = level >= 2 and not eager
        observed = f"-O{level}" + (", --enforce-eager" if eager else "")
        return ok, observed, "-O2 (default) or -O3, no --enforce-eager"

    def cuda(s: Scenario):
        if s.no_gpu:
            return False, "no GPU", "CUDA platform"
        cuda_version, known = s.torch_cuda()
        if cuda_version:
            return True, f"torch CUDA {cuda_version[0]}.{cuda_version[1]}", "CUDA platform"
        return (False if known else None), ("torch CPU build" if known else "torch CUDA unknown"), "CUDA platform"

    def importable(s: Scenario):
        ok = prediction.importable and prediction.has_fusion_api if prediction.importable is not None else None
        return ok, prediction.reason, "flashinfer importable with flashinfer.comm.allreduce_fusion"

    def capability(s: Scenario):
        if s.no_gpu:
            return False, "no GPU", "capability 9.0 or 10.x"
        if cap is None:
            return None, "capability unknown", "capability 9.0 or 10.x"
        return cap == (9, 0) or cap[0] == 10, f"{cap[0]}.{cap[1]}", "capability 9.0 or 10.x"

    def size_entry(s: Scenario):
        if cap is None:
            return (False if s.no_gpu else None), "capability unknown", "an entry for (capability, world size)"
        size = max_size_mb(cap, s.tp)
        observed = f"{size} MB for SM{cap[0]}{cap[1]} x {s.tp}" if size else f"no entry for SM{cap[0]}{cap[1]} x {s.tp}"
        return size is not None, observed, "an entry for (capability, world size)"

    conditions = (
        Condition("compilation", "torch.compile passes run", compiled,
                  "the fusion is a compilation pass; -O0/-O1 and --enforce-eager skip it", "drop --enforce-eager; use -O2"),
        Condition("tp_gt_1", "tensor parallelism (tp > 1)", check_tp_gt_1, "with one rank there is no allreduce", "raise --tp"),
        Condition("cuda", "CUDA platform", cuda, "the kernels are CUDA-only", "run on NVIDIA GPUs with a CUDA torch"),
        Condition("flashinfer", "flashinfer importable with the fusion API", importable,
                  "the pass calls flashinfer.comm.allreduce_fusion and create_allreduce_fusion_workspace",
                  "install matching flashinfer-python (>= 0.6) packages"),
        Condition("capability", "GPU capability 9.0 or 10.x", capability,
                  "the pass is enabled by default only where it was tuned", f"set {FUSE_FLAG}=True to try elsewhere"),
        Condition("size_entry", "a max-size entry for (capability, world size)", size_entry,
                  "without an entry the pass disables itself", "use a world size with an entry (2, 4, 8)"),
    )  # fmt: skip
    results = tuple(c.evaluate(s) for c in conditions)
    user = _user_setting(s)
    state = state_of(results, forced_on=user is True, forced_off=user is False)
    enabled = is_enabled(state)
    value = None
    notes = []
    size = max_size_mb(cap, s.tp)
    hidden = s.model.hidden_size if s.model is not None else None
    elem = _dtype_bytes(s)
    if enabled and size and hidden and elem:
        value = int(size * 2**20 // (hidden * elem))
        notes.append(f"fuses batches up to {value} tokens ({size} MB / (hidden {hidden} x {elem} bytes)); larger ones"
                     " use the plain allreduce")  # fmt: skip
    if enabled:
        notes.append("on GPUs without NVSwitch the workspace fails with a multicast error, which vLLM logs and skips")
        notes.append("VLLM_FLASHINFER_ALLREDUCE_BACKEND: auto = mnnvl across nodes, trtllm on one node")
    if state == AUTO_ENABLED:
        notes.append("on by default at -O2/-O3; no flag needed")
    return Decision(
        id="flashinfer_allreduce_fusion",
        title="FlashInfer allreduce + RMSNorm fusion (compilation pass)",
        state=state,
        enabled=enabled,
        value=value,
        conditions=results,
        flags=(),
        source=Source(f"vllm v{release}", CONFIG_FILE, PASS_FILE),
        notes=tuple(notes),
    )


def _dtype_bytes(s: Scenario) -> int | None:
    return dtype_bytes(s.intent.dtype or (s.model.dtype if s.model is not None else None))


def custom_allreduce_decision(s: Scenario, version: str) -> Decision:
    release = rules_release(version)

    def node(s: Scenario):
        return s.nnodes == 1, f"nnodes {s.nnodes}", "all ranks on one node"

    conditions = (
        Condition("tp_gt_1", "more than one rank", check_tp_gt_1, "nothing to reduce with one rank", "raise --tp"),
        Condition("single_node", "all ranks on one node", node, "CUDA IPC buffers do not cross nodes", "use one node"),
        Condition("world_size", "world size 2, 4, 6 or 8", check_custom_ar_world_size, "kernels exist for these sizes", "use tp 2, 4, 6 or 8"),
        Condition("full_nvlink", "full NVLink when more than 2 GPUs", check_custom_ar_nvlink,
                  "'not supported on more than two PCIe-only GPUs'", "use NVLink-connected GPUs or tp 2"),
    )  # fmt: skip
    results = tuple(c.evaluate(s) for c in conditions)
    state = state_of(results, forced_off=s.has(DISABLE_CUSTOM_AR))
    notes = ["messages up to 8 MiB; P2P access trusted from the CUDA runtime unless VLLM_SKIP_P2P_CHECK=0"]
    return Decision(
        id="custom_allreduce",
        title="vLLM custom allreduce",
        state=state,
        enabled=is_enabled(state),
        value=None,
        conditions=results,
        flags=(),
        source=Source(f"vllm v{release}", CUSTOM_AR_FILE),
        notes=tuple(notes),
    )


def decide(s: Scenario, version: str) -> tuple[list[Decision], list[Problem]]:
    vllm = s.facts.package("vllm")
    problems = version_problems(version, vllm.version if vllm.installed else None)
    return [fusion_decision(s, version), custom_allreduce_decision(s, version)], problems
