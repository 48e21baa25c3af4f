"""vLLM's start-up decisions, release by release: the FlashInfer allreduce + RMSNorm fusion pass, custom allreduce,
compilation and CUDA graphs (-O), the attention backend, memory and scheduling defaults.

Every table is proven against vLLM's own engine-config resolution (tests/conformance/golden/vllm-X.jsonl, written by
``python -m conformance.vllm X``). The fusion pass in the newest releases: ``PassConfig.fuse_allreduce_rms`` (``-cc.pass_config.fuse_allreduce_rms=True|False``), on by
default at -O2/-O3 when tp > 1 on CUDA with flashinfer importable and a capability 9.0 or 10.x GPU, limited per
(capability, world size) to the message sizes of the table below.
"""

from __future__ import annotations

from advisor.models import dtype_bytes

# The rules' shared vocabulary (advisor.rules.engine) as rules.X; the types in signatures by name.
from advisor.rules import engine as rules
from advisor.rules.engine import Decision, Problem, Release, ReleaseError, Scenario
from advisor.rules.releases import at

ENGINE = "vllm"
# v0.12.0 renamed the pass option to fuse_allreduce_rms (enable_fi_allreduce_fusion before, off by default).
MODELLED_FROM = "0.12.0"
# Releases whose engine-config resolution is recorded in tests/conformance/golden/vllm-X.jsonl (python -m conformance.vllm).
VERIFIED = ("0.12.0", "0.15.1", "0.20.2", "0.25.1", "0.30.0", "0.33.0")
NEWEST = VERIFIED[-1]  # the newest modelled release: used when no version is known, and for newer releases
PASS_FILE = "vllm/compilation/passes/fusion/allreduce_rms_fusion.py"
CONFIG_FILE = "vllm/config/compilation.py"
VLLM_CONFIG_FILE = "vllm/config/vllm.py"
ARG_UTILS_FILE = "vllm/engine/arg_utils.py"
CACHE_CONFIG_FILE = "vllm/config/cache.py"
PLATFORM_FILE = "vllm/platforms/cuda.py"
CUSTOM_AR_FILE = "vllm/distributed/device_communicators/custom_all_reduce.py"

FUSE_FLAG = "-cc.pass_config.fuse_allreduce_rms"
DISABLE_CUSTOM_AR = "--disable-custom-all-reduce"
ENFORCE_EAGER = "--enforce-eager"
MiB = 2**20
GiB = 2**30

# Each table below is a change list of (first release, value) (advisor.rules.releases.at), read from the released wheels'
# code: a version gets the value of the newest entry at or below it. The releases named are the first read with the change (the one before it, read
# too, lacks it).

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
# CacheConfig.gpu_memory_utilization's default.
GPU_MEMORY_UTILIZATION: list[tuple[str, float]] = [("0.12.0", 0.9), ("0.20.2", 0.92)]
# EngineArgs.get_batch_defaults for `vllm serve` (OPENAI_API_SERVER): (min GiB, A100 excluded, max_num_seqs,
# max_num_batched_tokens) tiers, first match wins; below every tier 256 / 2048.
BATCH_TIERS: list[tuple[str, tuple[tuple[int, bool, int, int], ...]]] = [
    ("0.12.0", ((70, True, 1024, 8192),)),
    ("0.28.0", ((160, False, 1024, 16384), (70, True, 1024, 8192))),
]
SMALL_GPU_BATCH = (256, 2048)


def default_gpu_memory_utilization(version: str | None) -> float:
    """vLLM's default --gpu-memory-utilization for ``version`` (None or not a release: the newest modelled release's)."""
    try:
        release = rules_release(version) if version else NEWEST
    except ReleaseError:
        release = NEWEST
    return at(GPU_MEMORY_UTILIZATION, release)


def rules_release(version: str) -> str:
    """The release whose behaviour is modelled: the version itself from v0.12 to the newest modelled release; v0.12
    for older ones and the newest for newer ones (each with a plan warning)."""
    release = rules.parse_release(version)
    if release is None:
        raise ReleaseError(f"vllm version {version!r} is not a version; pass --engine-version X.Y.Z (e.g. {NEWEST})")
    release = max(release, rules.parse_release(MODELLED_FROM))
    return rules.release_text(min(release, rules.parse_release(NEWEST)))


def version_problems(version: str, installed: str | None = None) -> list[Problem]:
    """engine_version_older / engine_version_newer; about the vllm package when ``installed`` is the release judged."""
    about = ("vllm",) if installed is not None and rules.parse_release(installed) == rules.parse_release(version) else ()
    if rules.parse_release(version) > rules.parse_release(NEWEST):
        return [Problem(
            "engine_version_newer", "warning",
            f"vllm {version} is newer than the newest modelled release; this plan uses the newest modelled rules v{NEWEST}",
            "check vLLM's release notes for changed defaults, or pass --engine-version to pick a modelled release",
            f"vllm v{NEWEST}", about,
        )]  # fmt: skip
    if rules.parse_release(version) >= rules.parse_release(MODELLED_FROM):
        return []
    return [Problem(
        "engine_version_older", "warning",
        f"vllm {version} predates the modelled behaviour (v{MODELLED_FROM}+): it spelled the fusion enable_fi_allreduce_fusion"
        " and kept it off by default, so the fusion decision below is likely too optimistic",
        f"upgrade vLLM to v{MODELLED_FROM} or newer, or read the decision as what a current vLLM would do",
        f"vllm v{MODELLED_FROM}, {CONFIG_FILE}", about,
    )]  # fmt: skip


OPTIMIZATION_LEVELS = range(4)  # OptimizationLevel O0..O3 (vllm/config/vllm.py, v0.12.0 to v0.33.0)


def _level_values(s: Scenario) -> list[str]:
    """The values given to -O / --optimization-level ("-O1", "-O 1", "-O=1", "--optimization-level 1"), in order."""
    return [v for v in rules.flag_values(s.overrides, "-O", "--optimization-level", next_flag=None) if v is not None]


def optimization_level(s: Scenario) -> int:
    """-O0..-O3 as given (the last one wins); 2 is the default."""
    level = 2
    for raw in _level_values(s):
        if raw.isdigit():
            level = int(raw)
    return level


def optimization_level_problems(s: Scenario) -> list[Problem]:
    """vllm_optimization_level: a numeric -O outside O0..O3 is not a level vLLM knows, so `vllm serve` stops at start-up."""
    bad = [raw for raw in _level_values(s) if raw.isdigit() and int(raw) not in OPTIMIZATION_LEVELS]
    if not bad:
        return []
    return [Problem(
        "vllm_optimization_level", "error",
        f"-O{bad[0]} is not an optimization level vLLM knows (O0 to O3): `vllm serve` refuses it at start-up",
        "pass -O0, -O1, -O2 (the default) or -O3",
        "vllm/config/vllm.py (OptimizationLevel), vllm/utils/argparse_utils.py (-O)",
    )]  # fmt: skip


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


def compiles(s: Scenario) -> bool:
    """Whether vLLM compiles the model (CompilationMode.VLLM_COMPILE): -O1 and above, without --enforce-eager."""
    return optimization_level(s) >= 1 and not s.has(ENFORCE_EAGER)


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
    if user is True and not compiles(s):
        # The flag is accepted but the pass never runs: nothing is compiled.
        state = rules.NOT_ENABLED
        notes.append(f"{FUSE_FLAG}=True is set but cannot take effect: -O0 / --enforce-eager compile nothing, so no"
                     " compilation pass runs")  # fmt: skip
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
        notes.append("on GPUs without NVSwitch the workspace fails with a multicast error, which vLLM logs and skips")
        notes.append("VLLM_FLASHINFER_ALLREDUCE_BACKEND: auto = mnnvl across nodes, trtllm on one node")
    if state == rules.AUTO_ENABLED:
        notes.append("on by default at -O2/-O3; no flag needed")
    source = rules.Source(f"vllm v{release}", VLLM_CONFIG_FILE, f"enable_allreduce_rms_fusion; sizes in {PASS_FILE}")
    return rules.decided("flashinfer_allreduce_fusion", "FlashInfer allreduce + RMSNorm fusion (compilation pass)", state,
                   results, source, value=value, notes=notes)  # fmt: skip


def _dtype_bytes(s: Scenario) -> int | None:
    return dtype_bytes(s.intent.dtype or (s.model.dtype if s.model is not None else None))

# vLLM's reasons for the custom-allreduce conditions its kernel shares with SGLang's (advisor.rules.engine).
CUSTOM_AR_CONDITIONS = rules.custom_ar_conditions({
    "tp_gt_1": "nothing to reduce with one rank",
    "single_node": "CUDA IPC buffers do not cross nodes",
    "world_size": "kernels exist for these sizes",
    "full_nvlink": "'not supported on more than two PCIe-only GPUs'",
}, one_node=("all ranks on one node", "all ranks on one node", "use one node"), nvlink_fix="use NVLink-connected GPUs or tp 2")


def custom_allreduce_decision(s: Scenario, version: str) -> Decision:
    release = rules_release(version)
    results = rules.evaluate(CUSTOM_AR_CONDITIONS, s)
    state = rules.state_of(results, forced_off=s.has(DISABLE_CUSTOM_AR))
    notes = ["messages up to 8 MiB; P2P access trusted from the CUDA runtime unless VLLM_SKIP_P2P_CHECK=0"]
    return rules.decided("custom_allreduce", "vLLM custom allreduce", state, results, rules.Source(f"vllm v{release}", CUSTOM_AR_FILE),
                   notes=notes)  # fmt: skip


# -- compilation and CUDA graphs ---------------------------------------------------------------------------------------

# CompilationMode values (vllm/config/compilation.py) and the CUDA-graph mode each -O level sets.
COMPILE_NONE, VLLM_COMPILE = 0, 3
CUDAGRAPH_BY_LEVEL = {0: "NONE", 1: "PIECEWISE", 2: "FULL_AND_PIECEWISE", 3: "FULL_AND_PIECEWISE"}


# --enforce-eager also lowers the optimization level to -O0 (VllmConfig.__post_init__) up to v0.16.0, not from v0.17.1.
EAGER_LOWERS_LEVEL: list[tuple[str, bool]] = [("0.12.0", True), ("0.17.1", False)]


def compilation_value(s: Scenario, version: str = NEWEST) -> dict[str, int | str]:
    """optimization_level, compilation_mode and cudagraph_mode as VllmConfig resolves them."""
    level = optimization_level(s)
    eager = s.has(ENFORCE_EAGER)
    if eager and at(EAGER_LOWERS_LEVEL, rules_release(version)):
        level = 0
    mode = VLLM_COMPILE if compiles(s) else COMPILE_NONE
    graphs = "NONE" if eager else CUDAGRAPH_BY_LEVEL.get(level, "FULL_AND_PIECEWISE")
    return {"optimization_level": level, "compilation_mode": mode, "cudagraph_mode": graphs}


def compilation_decision(s: Scenario, version: str) -> Decision:
    release = rules_release(version)
    value = compilation_value(s, release)

    def level(s: Scenario):
        lvl = value["optimization_level"]
        return lvl >= 1, f"-O{lvl}", "-O1 or above (-O2 is the default)"

    def eager(s: Scenario):
        on = s.has(ENFORCE_EAGER)
        return not on, "--enforce-eager" if on else "not set", "no --enforce-eager"

    conditions = (
        rules.Condition("optimization_level", "an optimization level that compiles", level,
                  "-O0 compiles nothing and captures no CUDA graphs; -O1 piecewise graphs; -O2/-O3 full and piecewise",
                  "drop -O0 (the default is -O2)"),
        rules.Condition("not_eager", "no --enforce-eager", eager,
                  "--enforce-eager turns off torch.compile and CUDA graphs whatever the level", "drop --enforce-eager"),
    )  # fmt: skip
    results = rules.evaluate(conditions, s)
    forced_off = s.has(ENFORCE_EAGER) or value["optimization_level"] == 0
    state = rules.state_of(results, forced_off=forced_off and bool(s.overrides))
    notes = [f"compilation mode {'VLLM_COMPILE' if value['compilation_mode'] == VLLM_COMPILE else 'NONE'}, CUDA graphs"
             f" {value['cudagraph_mode']}"]  # fmt: skip
    if value["compilation_mode"] == COMPILE_NONE:
        notes.append("no compilation pass (e.g. the allreduce + RMSNorm fusion) runs in this mode")
    source = rules.Source(f"vllm v{release}", VLLM_CONFIG_FILE, "OPTIMIZATION_LEVEL_TO_CONFIG, VllmConfig.__post_init__")
    return rules.decided("compilation", "torch.compile and CUDA graphs (-O level)", state, results, source, value=value,
                   notes=notes)  # fmt: skip


# -- attention backend ---------------------------------------------------------------------------------------------------

# The backend CudaPlatform.get_attn_backend_cls picks: the first of the priority list whose checks pass.
ATTENTION_FLAG = "--attention-backend"
# First MLA backend on SM100 (_get_backend_priorities): CUTLASS MLA up to v0.14.1, FlashInfer MLA from v0.15.1.
MLA_SM100_FIRST: list[tuple[str, str]] = [("0.12.0", "CUTLASS_MLA"), ("0.15.1", "FLASHINFER_MLA")]
# Attention sinks (gpt-oss) on SM100: Triton in v0.12.0 and v0.15.1, FlashAttention from v0.20.2 (goldens; the releases
# between v0.15.1 and v0.20.2 are unproven).
SINKS_SM100: list[tuple[str, str]] = [("0.12.0", "TRITON_ATTN"), ("0.20.2", "FLASH_ATTN")]


# How a person chooses the backend: v0.12.0 reads the VLLM_ATTENTION_BACKEND environment variable and its parser has no
# --attention-backend (vllm/envs.py, vllm/engine/arg_utils.py); v0.15.1 has the flag. The flag's first release between
# the two is unproven.
ATTENTION_FLAG_FROM: list[tuple[str, bool]] = [("0.12.0", False), ("0.15.1", True)]
ATTENTION_ENV = "VLLM_ATTENTION_BACKEND"


def attention_choice_hint(version: str) -> str:
    """How to choose the backend in this release."""
    if at(ATTENTION_FLAG_FROM, version):
        return f"pass {ATTENTION_FLAG} NAME to choose"
    return f"set {ATTENTION_ENV}=NAME in the environment to choose (v{version} has no {ATTENTION_FLAG})"


def attention_backend(s: Scenario, version: str) -> str | None:
    """The backend name vLLM selects for the model's attention layers on this GPU (None when the GPU is unknown)."""
    cap = s.capability
    model = s.model
    if cap is None or model is None:
        return None
    major = cap[0]
    if model.uses_mla:
        sm100 = at(MLA_SM100_FIRST, version)
        return {10: sm100, 9: "FLASH_ATTN_MLA"}.get(major, "TRITON_MLA")
    sinks = model.model_type == "gpt_oss"  # attention sinks: FlashInfer's prefill path rejects them
    if major == 10:
        return at(SINKS_SM100, version) if sinks else "FLASHINFER"
    if sinks and major != 9:
        return "TRITON_ATTN"
    return "FLASH_ATTN"


def attention_decision(s: Scenario, version: str) -> Decision:
    release = rules_release(version)
    chosen = s.flag(ATTENTION_FLAG)
    value = chosen or attention_backend(s, release)

    def gpu(s: Scenario):
        cap = s.capability
        if s.no_gpu:
            return False, "no GPU", "a CUDA GPU with a known capability"
        return (None, "capability unknown", "a known capability") if cap is None else (True, f"{cap[0]}.{cap[1]}", "a known capability")

    def model(s: Scenario):
        m = s.model
        if m is None:
            return None, "no model", "a model config"
        kind = "MLA" if m.uses_mla else ("attention sinks" if m.model_type == "gpt_oss" else "standard attention")
        return True, f"{m.architecture} ({kind})", "a model config"

    hint = attention_choice_hint(release)
    conditions = (
        rules.Condition("gpu", "GPU capability known", gpu,
                  "the priority list depends on the major capability (FlashInfer first on 10.x, FlashAttention elsewhere)",
                  hint),
        rules.Condition("model", "model attention kind", model,
                  "MLA models use the MLA backends; sinks (gpt-oss) need FlashAttention 3 (SM90) or another backend",
                  hint),
    )  # fmt: skip
    results = rules.evaluate(conditions, s)
    state = rules.state_of(results, forced_on=chosen is not None)
    source = rules.Source(f"vllm v{release}", PLATFORM_FILE, "_get_backend_priorities, get_attn_backend_cls")
    return rules.decided("attention_backend", "attention backend", state, results, source,
                   value=value if rules.is_enabled(state) else None, notes=_attention_notes(chosen, release))  # fmt: skip


def _attention_notes(chosen: str | None, release: str) -> tuple[str, ...]:
    if not chosen:
        return (f"vLLM's own choice; {attention_choice_hint(release)}",)
    if not at(ATTENTION_FLAG_FROM, release):
        return (f"the value given, but vLLM v{release} rejects {ATTENTION_FLAG} (no such flag): "
                f"set {ATTENTION_ENV}={chosen} in the environment instead",)  # fmt: skip
    return ("the value given",)


# -- memory and batch defaults ----------------------------------------------------------------------------------------------

MEMORY_FLAGS = {"gpu_memory_utilization": "--gpu-memory-utilization", "max_num_seqs": "--max-num-seqs",
                "max_num_batched_tokens": "--max-num-batched-tokens", "kv_cache_dtype": "--kv-cache-dtype",
                "block_size": "--block-size", "max_model_len": "--max-model-len"}  # fmt: skip


def batch_defaults(s: Scenario, version: str) -> tuple[int, int] | None:
    """(max_num_seqs, max_num_batched_tokens) of get_batch_defaults for `vllm serve`; None when the GPU is unknown."""
    gpu = s.gpu
    if gpu is None or gpu.memory_total_mib is None:
        return None
    gib = gpu.memory_total_mib * MiB / GiB
    name = (gpu.name or "").lower()
    for min_gib, no_a100, seqs, tokens in at(BATCH_TIERS, version):
        if gib >= min_gib and not (no_a100 and "a100" in name):
            return seqs, tokens
    return SMALL_GPU_BATCH


def memory_value(s: Scenario, version: str) -> dict[str, object]:
    release = rules_release(version)
    batch = batch_defaults(s, release)
    seqs, tokens = batch if batch else (None, None)
    given = {key: s.flag(flag) for key, flag in MEMORY_FLAGS.items()}
    if given["max_num_seqs"]:
        seqs = _number(given["max_num_seqs"], int, seqs)
    if given["max_num_batched_tokens"]:
        tokens = _number(given["max_num_batched_tokens"], int, tokens)
    elif seqs is not None and tokens is not None:
        tokens = max(tokens, 0)
    if seqs is not None and tokens is not None and not given["max_num_seqs"]:
        seqs = min(seqs, tokens)
    return {
        "gpu_memory_utilization": _number(given["gpu_memory_utilization"], float, at(GPU_MEMORY_UTILIZATION, release)),
        "max_num_seqs": seqs,
        "max_num_batched_tokens": tokens,
        "kv_cache_dtype": given["kv_cache_dtype"] or "auto",
        "block_size": mla_block_size(s, release, _number(given["block_size"], int, 16)),
        # ModelConfig's derived length: max_position_embeddings as config.json gives it (every golden agrees)
        "max_model_len": _number(given["max_model_len"], int, s.model.max_position_embeddings if s.model else None),
    }


# MLA models: up to v0.17.x CudaPlatform.check_and_update_config (vllm/platforms/cuda.py) forces the KV-cache block size
# of the MLA backend it expects. v0.12.0: CUTLASS MLA (128) on capability 10.0 only, FlashMLA (64) on SM90. v0.15.1:
# FlashInfer MLA (64, 32 kept) on SM100 when qk_nope_head_dim is 128, else CUTLASS MLA (128); FlashMLA (64) on SM90;
# v0.16.0 and v0.17.1 the same. v0.19.1 forces nothing (the block size stays 16); the v0.18 releases were not read.
MLA_BLOCK_RULE: list[tuple[str, str | None]] = [("0.12.0", "0.12"), ("0.15.1", "0.15"), ("0.19.1", None)]
MLA_NOPE_FOR_FLASHINFER = 128  # FlashInfer MLA's kernel constraint on qk_nope_head_dim (v0.15.1)


def mla_block_size(s: Scenario, version: str, block: int) -> int:
    """The block size after the MLA backend's forcing (``block`` unchanged for other models, GPUs and releases)."""
    rule = at(MLA_BLOCK_RULE, version)
    model, cap = s.model, s.capability
    if rule is None or model is None or not model.uses_mla or cap is None:
        return block
    chosen = s.flag(ATTENTION_FLAG) if rule != "0.12" else None  # v0.12.0 has no --attention-backend
    if chosen:  # the backend given forces its own block size (only these three)
        if chosen == "FLASHINFER_MLA":
            return block if block == 32 or block % 64 == 0 else 64
        if chosen == "CUTLASS_MLA":
            return block if block % 128 == 0 else 128
        return block if chosen != "FLASHMLA" or cap[0] != 9 or block % 64 == 0 else 64
    # v0.12 tests for capability 10.0 exactly (is_device_capability(100)), v0.15 for the family (10.x)
    if (rule == "0.12" and tuple(cap) == (10, 0)) or (rule == "0.15" and cap[0] == 10):
        nope = (model.head_dim or 0) - (model.qk_rope_head_dim or 0)
        if rule == "0.15" and nope == MLA_NOPE_FOR_FLASHINFER:
            return block if block == 32 or block % 64 == 0 else 64
        return block if block % 128 == 0 else 128
    if cap[0] == 9:  # FlashMLA (dense) runs on Hopper only
        return block if block % 64 == 0 else 64
    return block


def _number(raw: str | None, kind, default):
    try:
        return kind(raw) if raw else default
    except ValueError:
        return default


def memory_decision(s: Scenario, version: str) -> Decision:
    release = rules_release(version)
    value = memory_value(s, release)

    def gpu(s: Scenario):
        g = s.gpu
        if s.no_gpu:
            return False, "no GPU", "GPU name and memory known"
        if g is None or g.memory_total_mib is None:
            return None, "unknown", "GPU name and memory known"
        return True, f"{g.name}, {g.memory_total_mib * MiB / GiB:.1f} GiB", "GPU name and memory known"

    conditions = (
        rules.Condition("gpu_memory", "GPU name and memory", gpu,
                  "vLLM sizes max_num_seqs and max_num_batched_tokens by GPU memory (A100 excluded from the large tier)",
                  "pass --max-num-seqs / --max-num-batched-tokens / --gpu-memory-utilization to choose"),
    )  # fmt: skip
    results = rules.evaluate(conditions, s)
    forced = any(s.flag(flag) for flag in MEMORY_FLAGS.values())
    state = rules.state_of(results, forced_on=forced)
    tiers = ", ".join(f">= {g} GiB{' (not A100)' if no else ''}: {q} seqs / {t} tokens" for g, no, q, t in at(BATCH_TIERS, release))
    notes = [f"`vllm serve` tiers: {tiers}; else {SMALL_GPU_BATCH[0]} / {SMALL_GPU_BATCH[1]}",
             "max_num_batched_tokens is also capped at max_num_seqs x max_model_len"]  # fmt: skip
    source = rules.Source(f"vllm v{release}", ARG_UTILS_FILE, f"get_batch_defaults; gpu_memory_utilization in {CACHE_CONFIG_FILE}")
    return rules.decided("memory_defaults", "memory and batch defaults", state, results, source, value=value, notes=notes)


def memory_need(fraction: float | None, total: float, weights: float) -> float:
    """vLLM asks for gpu_memory_utilization x the total at start-up, as if the GPU were empty."""
    return fraction * total  # type: ignore[operator]  # vLLM always has a fraction (its default)


def memory_short(setting: str, need_gib: float) -> str:
    return (f"{setting} asks for {need_gib:.1f} GiB per GPU as if the GPU were empty, so vLLM refuses to start"
            " ('Free memory on device ... on startup is less than desired GPU memory utilization')")


GPU_MEMORY = rules.GpuMemory(
    fraction="gpu_memory_utilization",
    default=default_gpu_memory_utilization,
    need=memory_need,
    short=memory_short,
    automatic="vLLM's default gpu_memory_utilization",
    source="vllm vllm/v1/worker/gpu_worker.py ('Free memory on device ... on startup is less than desired GPU memory"
           " utilization'); vllm/config/cache.py gpu_memory_utilization = 0.9",
    kv_block=16,  # vLLM's default KV-cache block (tokens) on CUDA
    refuses_short_context="vLLM refuses to start",
)  # fmt: skip
# Caveat of the layouts' KV arithmetic.
KV_NOTES = ("vLLM also subtracts the activation peak and non-torch memory measured at start-up: the KV tokens are an"
            " upper bound",)  # fmt: skip


def peer_access_problem(observed: str, overrides) -> tuple[str, str, str]:
    """vLLM's own P2P check (the driver's report) turns its custom allreduce off."""
    return ("info",
            f"{observed}: vLLM's own P2P check (the driver's report) turns its custom allreduce off at start-up"
            " ('Custom allreduce is disabled because your platform lacks GPU P2P capability'), so every allreduce"
            " goes through NCCL although this plan counts on the custom kernel",
            f"pass {DISABLE_CUSTOM_AR} to say so explicitly (and silence the warning)")  # fmt: skip


PEER_ACCESS = rules.PeerAccess(
    "vllm vllm/distributed/device_communicators/custom_all_reduce.py (_can_p2p: the driver's P2P report unless"
    " VLLM_SKIP_P2P_CHECK=0)",
    peer_access_problem,
)  # fmt: skip


# -- scheduling switches -------------------------------------------------------------------------------------------------

# (decision id, title, --flag, why it is on by default)
SWITCHES = (
    ("chunked_prefill", "chunked prefill", "--enable-chunked-prefill",
     "on for every generative model that supports it (ModelConfig.is_chunked_prefill_supported)"),
    ("prefix_caching", "prefix caching", "--enable-prefix-caching",
     "on for every model that supports it (ModelConfig.is_prefix_caching_supported)"),
    ("async_scheduling", "async scheduling", "--async-scheduling",
     "on unless pipeline parallelism, speculative decoding, a pooling model or an executor without support rules it out"),
)  # fmt: skip


def switch_setting(s: Scenario, flag: str) -> bool | None:
    """True for --flag, False for --no-flag (the last one wins), None when neither is given."""
    setting = None
    negative = "--no-" + flag[2:]
    for token in s.overrides:
        name = token.split("=", 1)[0]
        if name == flag:
            setting = token.split("=", 1)[1].lower() not in ("false", "0") if "=" in token else True
        elif name == negative:
            setting = False
    return setting


# SchedulerConfig.async_scheduling: False up to v0.13.0, None (rules.decided by VllmConfig: on where supported) from v0.14.1.
ASYNC_SCHEDULING_DEFAULT_ON: list[tuple[str, bool]] = [("0.12.0", False), ("0.14.1", True)]


def switch_decision(s: Scenario, version: str, which: str) -> Decision:
    release = rules_release(version)
    decision_id, title, flag, why = next(sw for sw in SWITCHES if sw[0] == which)

    def single_node(s: Scenario):
        return True, "generative model, no pipeline parallelism", "a generative model"

    def by_default(s: Scenario):
        on = at(ASYNC_SCHEDULING_DEFAULT_ON, release)
        return on, f"vllm {version}", "v0.14.1 or newer (on by default)"

    conditions = (rules.Condition("default", f"{title} supported", single_node, why, f"pass --no-{flag[2:]} to turn it off"),)
    if which == "async_scheduling":
        conditions += (rules.Condition("release_default", "on by default in this release", by_default,
                                 "SchedulerConfig.async_scheduling defaulted to False before v0.14.1",
                                 f"pass {flag} or upgrade vLLM"),)  # fmt: skip
    results = rules.evaluate(conditions, s)
    setting = switch_setting(s, flag)
    state = rules.state_of(results, forced_on=setting is True, forced_off=setting is False)
    source = rules.Source(f"vllm v{release}", ARG_UTILS_FILE if which != "async_scheduling" else VLLM_CONFIG_FILE)
    return rules.decided(decision_id, title, state, results, source)


def decide(s: Scenario, release: Release) -> tuple[list[Decision], list[Problem]]:
    vllm = s.facts.package("vllm")
    problems = version_problems(release.version, vllm.version if vllm.installed else None) + optimization_level_problems(s)
    version = release.version  # the decisions resolve their rules from it, and name it in what they observe
    decisions = [
        fusion_decision(s, version),
        custom_allreduce_decision(s, version),
        compilation_decision(s, version),
        attention_decision(s, version),
        memory_decision(s, version),
        *(switch_decision(s, version, sw[0]) for sw in SWITCHES),
    ]
    return decisions, problems


# Every release where a modelled behaviour changes, plus those proven by goldens (oldest first): what `advisor diff`, the
# completion of --engine-version and the app offer. A new change table belongs in this tuple.
CHANGE_TABLES = (FUSION_DEFAULT_ON, FUSION_MAX_SIZE_MB, GPU_MEMORY_UTILIZATION, BATCH_TIERS, EAGER_LOWERS_LEVEL,
                 MLA_SM100_FIRST, SINKS_SM100, ASYNC_SCHEDULING_DEFAULT_ON)  # fmt: skip
RELEASES = tuple(sorted({*VERIFIED, *(first for table in CHANGE_TABLES for first, _ in table)}, key=rules.parse_release))
