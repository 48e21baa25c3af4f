"""The FlashInfer allreduce + RMSNorm fusion pass (PassConfig.fuse_allreduce_rms): on by default at -O2/-O3 when
tp > 1 on CUDA with flashinfer importable and a capability 9.0 or 10.x GPU, limited per (capability, world size) to the
message sizes of FUSION_MAX_SIZE_MB."""

from __future__ import annotations

from advisor.models import dtype_bytes
from advisor.rules import engine as rules
from advisor.rules.engine import Decision, Scenario
from advisor.rules.releases import at
from advisor.rules.vllm.architectures import breakable_entry, vllm_architecture
from advisor.rules.vllm.common import ENFORCE_EAGER, FUSE_FLAG, NEWEST, PASS_FILE, VLLM_CONFIG_FILE, MiB, rules_release
from advisor.rules.vllm.compilation import compiles, optimization_level

# Each change table here is a list of (first release, value) read with advisor.rules.releases.at, from the
# released wheels' code: a version gets the value of the newest entry at or below it. The releases named are the
# first read with the change (the one before it, read too, lacks it).

# -O2/-O3 turn the pass on by default (enable_allreduce_rms_fusion in OPTIMIZATION_LEVEL_02/03); off at every level
# before (v0.16.0 has it False everywhere, v0.17.1 has the predicate).
FUSION_DEFAULT_ON: list[tuple[str, bool]] = [("0.12.0", False), ("0.17.1", True)]
# Largest message fused, in MiB, by capability (major*10 + minor) then world size.
_SM90 = {2: 64, 4: 2, 8: 0.5}
_SM100 = {2: 64, 4: 32, 8: 1}
_SM103 = {2: 64, 4: 64, 8: 2}
FUSION_MAX_SIZE_MB: list[tuple[str, dict[int, dict[int, float]]]] = [
    ("0.12.0", {90: _SM90, 100: _SM100}),
    ("0.19.1", {90: _SM90, 100: _SM100, 103: _SM103}),
    ("0.25.1", {90: _SM90, 100: {**_SM100, 16: 64}, 103: {**_SM103, 16: 64}}),  # 16: multi-node MNNVL
    ("0.27.1", {90: _SM90, 100: {**_SM100, 16: 64}, 103: {**_SM103, 16: 64}, 107: {2: 64, 4: 64, 8: 2}}),
    ("0.29.0", {90: _SM90, 100: {**_SM100, 16: 64}, 103: {**_SM103, 8: 4, 16: 64}, 107: {2: 64, 4: 64, 8: 2}}),
]


def _user_setting(s: Scenario) -> bool | None:
    raw = s.flag(FUSE_FLAG)
    if raw is None:
        return None
    return raw.strip().lower() in ("", "true", "1")


def max_size_mb(capability: tuple[int, int] | None, world: int, version: str = NEWEST) -> float | None:
    """PassConfig.flashinfer_max_size's default for this GPU and world size, in MiB; None: no entry (pass off)."""
    if capability is None:
        return None
    return at(FUSION_MAX_SIZE_MB, version).get(capability[0] * 10 + capability[1], {}).get(world)


def fusion_decision(s: Scenario, version: str) -> Decision:
    release = rules_release(version)
    prediction = s.flashinfer
    level = optimization_level(s)
    cap = None if s.no_gpu else s.capability
    default_on = at(FUSION_DEFAULT_ON, release)

    def by_default(s: Scenario):
        return default_on, f"vllm {version}", "v0.17.1 or newer (on by default at -O2/-O3)"

    def compiled(s: Scenario):
        eager = s.has(ENFORCE_EAGER)
        ok = level >= 2 and compiles(s, release)
        observed = f"-O{level}" + (", --enforce-eager" if eager else "")
        if not eager and level >= 2 and not ok:
            listed = breakable_entry(s.model, release)
            observed += f", {listed} on the breakable-CUDA-graph list (nothing compiled)" if listed else (
                f", {vllm_architecture(s.model, release)}'s config fix-up compiles nothing")  # fmt: skip
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
        size = max_size_mb(cap, s.tp, release)
        observed = f"{size} MB for SM{cap[0]}{cap[1]} x {s.tp}" if size else f"no entry for SM{cap[0]}{cap[1]} x {s.tp}"
        return size is not None, observed, "an entry for (capability, world size)"

    conditions = (
        rules.Condition("release_default", "on by default in this release", by_default,
                  "before v0.17.1 every -O level set fuse_allreduce_rms=False", f"upgrade vLLM or set {FUSE_FLAG}=True"),
        rules.Condition("compilation", "torch.compile passes run", compiled,
                  "the fusion is a compilation pass, on by default at -O2/-O3; -O0 and --enforce-eager compile nothing",
                  "drop --enforce-eager; use -O2"),
        rules.Condition("tp_gt_1", "tensor parallelism (tp > 1)", rules.check_tp_gt_1, "with one rank there is no allreduce", "raise --tp"),
        rules.Condition("cuda", "CUDA platform", cuda, "the kernels are CUDA-only", "run on NVIDIA GPUs with a CUDA torch"),
        rules.Condition("flashinfer", "flashinfer importable with the fusion API", importable,
                  "the pass calls flashinfer.comm.allreduce_fusion and create_allreduce_fusion_workspace",
                  "install matching flashinfer-python (>= 0.6) packages"),
        rules.Condition("capability", "GPU capability 9.0 or 10.x", capability,
                  "the pass is enabled by default only where it was tuned", f"set {FUSE_FLAG}=True to try elsewhere"),
        rules.Condition("size_entry", "a max-size entry for (capability, world size)", size_entry,
                  "without an entry the pass disables itself", "use a world size with an entry (2, 4, 8)"),
    )  # fmt: skip
    results = rules.evaluate(conditions, s)
    user = _user_setting(s)
    state = rules.state_of(results, forced_on=user is True, forced_off=user is False)
    notes = []
    if user is True and not compiles(s, release):
        # The flag is accepted but the pass never runs: nothing is compiled.
        state = rules.NOT_ENABLED
        notes.append(f"{FUSE_FLAG}=True is set but cannot take effect: -O0 / --enforce-eager compile nothing, so no"
                     " compilation pass runs")  # fmt: skip
    unmapped = rules.fusion_workspace_unmapped(s) if rules.is_enabled(state) else None
    if unmapped:  # the pass is configured, but its workspace fails at start-up and the pass disables itself
        state = rules.NOT_ENABLED
        notes.append(f"off at start-up: {unmapped}, so FlashInfer's IPC workspace cannot be created; vLLM logs 'Failed"
                     " to initialize Flashinfer allreduce workspace. Flashinfer allreduce-norm fusion will be disabled.'"
                     f" ({PASS_FILE} AllReduceFusionPass)")  # fmt: skip
    enabled = rules.is_enabled(state)
    value = None
    size = max_size_mb(cap, s.tp, release)
    hidden = s.model.hidden_size if s.model is not None else None
    elem = _dtype_bytes(s)
    if enabled and size and hidden and elem:
        value = int(size * MiB // (hidden * elem))
        notes.append(f"fuses batches up to {value} tokens ({size} MB / (hidden {hidden} x {elem} bytes)); larger ones"
                     " use the plain allreduce")  # fmt: skip
    if enabled:
        notes.append("a workspace that cannot be created (GPUs without P2P; across nodes, no NVLink fabric) is logged"
                     " and the pass disables itself")  # fmt: skip
        notes.append("VLLM_FLASHINFER_ALLREDUCE_BACKEND: auto = mnnvl across nodes, trtllm on one node")
    if state == rules.AUTO_ENABLED:
        notes.append("on by default at -O2/-O3; no flag needed")
    source = rules.Source(f"vllm v{release}", VLLM_CONFIG_FILE, f"enable_allreduce_rms_fusion; sizes in {PASS_FILE}")
    return rules.decided("flashinfer_allreduce_fusion", "FlashInfer allreduce + RMSNorm fusion (compilation pass)", state,
                   results, source, value=value, notes=notes)  # fmt: skip


def _dtype_bytes(s: Scenario) -> int | None:
    return dtype_bytes(s.intent.dtype or (s.model.dtype if s.model is not None else None))
