"""SGLang's start-up decisions, release by release (reference/sglang.md; sources cited per rule).

FlashInfer allreduce fusion is one table row per release range: the architectures added in that range (the list is
cumulative), the named conditions that must all hold, the flag that release sets, and the flags that force it off.
Adding a release is one row; adding an architecture is one name in a row's ``added``.

Predicates follow SGLang: they look at the current device's compute-capability MAJOR and torch's CUDA runtime version
(never the driver's), so a CPU build of torch makes every GPU predicate false.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from advisor.rules import flashinfer as fi
from advisor.rules.engine import (
    AUTO_ENABLED,
    FORCED_ON,
    NOT_ENABLED,
    Condition,
    Decision,
    Problem,
    ReleaseOutcome,
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

ENGINE = "sglang"
SERVER_ARGS = "python/sglang/srt/server_args.py"
OVERRIDES = "python/sglang/srt/arg_groups/overrides.py"  # the post-process passes moved here in v0.5.15
FUSION_RUNTIME = "python/sglang/srt/layers/flashinfer_comm_fusion.py"
MEMORY_HOOK = "python/sglang/srt/arg_groups/memory_hook.py"  # handle_gpu_memory_settings from v0.5.19
CUSTOM_AR = "python/sglang/srt/distributed/device_communicators/custom_all_reduce.py"

# Flags (newest spelling first where two exist).
BOOL_FLAG = "--enable-flashinfer-allreduce-fusion"
BACKEND_FLAG = "--flashinfer-allreduce-fusion-backend"
ENFORCE_DISABLE = "--enforce-disable-flashinfer-allreduce-fusion"
DETERMINISTIC = "--enable-deterministic-inference"
ATTN_CP = "--attn-cp-size"
DISABLE_CUSTOM_AR = "--disable-custom-all-reduce"
ATTENTION_BACKEND = "--attention-backend"
MOE_RUNNER_BACKEND = "--moe-runner-backend"

FUSE_MAX_TOKENS = 2048  # FUSE_ALLREDUCE_MAX_BATCH_SIZE: workspaces are pre-allocated for this many tokens
LOG_LINE = "Auto-enabling FlashInfer AllReduce Fusion on SM90/SM10X for {arch}"
LOG_LINE_V0523 = "Auto-enabling FlashInfer AllReduce Fusion ({backend}) for {arch}"



# -- GPU predicates ----------------------------------------------------------------------------------------------------


def _gpu_facts(s: Scenario) -> tuple[int | None, tuple[int, int] | None, bool, str]:
    """(capability major, torch CUDA, everything known, observed text)."""
    if s.no_gpu:
        return None, None, True, "no GPU"
    cuda, cuda_known = s.torch_cuda()
    major = s.major
    cap = f"SM {s.gpu.capability_text}" if s.gpu is not None and s.capability else "SM ?"
    torch_text = f"torch CUDA {cuda[0]}.{cuda[1]}" if cuda else ("torch CPU build" if cuda_known else "torch CUDA ?")
    return major, cuda, major is not None and cuda_known, f"{cap}, {torch_text}"


def _gpu_predicate(s: Scenario, majors: tuple[int, ...], min_cuda: tuple[int, int]) -> tuple[bool | None, str]:
    major, cuda, known, observed = _gpu_facts(s)
    if s.no_gpu:
        return False, observed
    if major is not None and major not in majors:
        return False, observed  # decided by the GPU alone
    if cuda is None:
        return (False if known else None), observed
    if major is None:
        return None, observed
    return cuda >= min_cuda, observed


def is_sm90(s: Scenario) -> tuple[bool | None, str]:
    return _gpu_predicate(s, (9,), (12, 3))


def is_sm100(s: Scenario) -> tuple[bool | None, str]:
    return _gpu_predicate(s, (10,), (12, 8))


def is_sm120(s: Scenario) -> tuple[bool | None, str]:
    return _gpu_predicate(s, (12,), (12, 8))


def is_blackwell(s: Scenario) -> tuple[bool | None, str]:
    return _gpu_predicate(s, (10, 11, 12), (12, 8))


def _any(*results: bool | None) -> bool | None:
    if any(r is True for r in results):
        return True
    if all(r is False for r in results):
        return False
    return None


def is_h20(s: Scenario) -> bool | None:
    if s.no_gpu:
        return False
    name = s.gpu.name if s.gpu is not None else None
    if name is None:
        return None
    return "H20" in name and "H200" not in name


# -- fusion conditions -------------------------------------------------------------------------------------------------

def _c_sm90_or_blackwell(s: Scenario):
    (a, obs), (b, _) = is_sm90(s), is_blackwell(s)
    return _any(a, b), obs, "SM90 with torch CUDA >= 12.3, or SM10x/11x/12x with torch CUDA >= 12.8"


def _c_sm90_or_sm100(s: Scenario):
    (a, obs), (b, _) = is_sm90(s), is_sm100(s)
    return _any(a, b), obs, "SM90 with torch CUDA >= 12.3, or SM10x with torch CUDA >= 12.8"


def _c_no_dp_attention(s: Scenario):
    if not s.intent.dp_attention:
        return True, "no --enable-dp-attention", "DP attention off"
    observed = f"--enable-dp-attention with dp size {s.intent.dp_size}"
    if s.intent.dp_size == 1:
        observed += " (SGLang resets DP attention for dp size 1 only later, so it still blocks)"
    return False, observed, "DP attention off"


def _c_no_attn_dp(s: Scenario):
    if not s.intent.dp_attention or s.intent.dp_size <= 1:
        observed = "no --enable-dp-attention" if not s.intent.dp_attention else "--enable-dp-attention with dp size 1"
        return True, observed, "attention DP size 1"
    return False, f"--enable-dp-attention with dp size {s.intent.dp_size}", "attention DP size 1"


def _c_not_dsv41_tp4(s: Scenario):
    model = s.model
    dsv41 = model is not None and model.model_type == "deepseek_v41" and model.hidden_size == 5120
    blackwell, observed = is_blackwell(s)
    prefer = dsv41 and s.tp == 4 and s.nnodes == 1 and bool(blackwell) and not s.has(DISABLE_CUSTOM_AR)
    text = f"{model.model_type if model else 'model unknown'}, tp {s.tp}, {observed}"
    return not prefer, text, "not DeepSeek V4.1 (hidden 5120) at tp 4 on one Blackwell node with custom allreduce on"


def _c_mimo_sm100(s: Scenario):
    if s.model is None or s.model.architecture not in MIMO_ARCHS:
        return True, s.model.architecture if s.model else "model unknown", "MiMo V2 only: SM10x, tp 2/4/8/16"
    sm100, observed = is_sm100(s)
    ok = None if sm100 is None else (sm100 and s.tp in MIMO_TP_SIZES)
    return ok, f"{observed}, tp {s.tp}", "MiMo V2 only: SM10x, tp 2/4/8/16"


def _c_attn_cp(s: Scenario):
    raw = s.flag(ATTN_CP)
    try:
        size = int(raw) if raw else 1
    except ValueError:
        return None, f"{ATTN_CP} {raw!r}", "attn_cp_size <= 1"
    return size <= 1, f"attn_cp_size {size}", "attn_cp_size <= 1"


def _c_single_node(s: Scenario):
    return s.nnodes == 1, f"nnodes {s.nnodes}", "nnodes == 1"


def _c_single_node_or_sm100(s: Scenario):
    sm100, obs = is_sm100(s)
    ok = True if s.nnodes == 1 else sm100
    return ok, f"nnodes {s.nnodes}, {obs}", "nnodes == 1, or SM10x (multi-node NVLink via the mnnvl backend)"


def _c_not_h20(s: Scenario):
    h20 = is_h20(s)
    name = s.gpu.name if s.gpu is not None else ("no GPU" if s.no_gpu else None)
    return (None if h20 is None else not h20), name or "GPU name unknown", "not an H20 (name without 'H20', or 'H200')"


def _c_a2a_none(s: Scenario):
    backend = s.intent.moe_a2a_backend or "none"
    return backend == "none", f"moe_a2a_backend {backend}", "moe_a2a_backend none"


FUSION_CONDITIONS: dict[str, Condition] = {
    c.id: c
    for c in (
        Condition(
            "sm90_or_blackwell", "GPU is SM90 or Blackwell (SM10x/11x/12x)", _c_sm90_or_blackwell,
            "the fused kernels were built for Hopper and Blackwell; SGLang checks the current device's capability major"
            " and torch's CUDA runtime (not the driver)",
            "use H100/H200/B200-class GPUs with a CUDA build of torch (>= 12.3 for SM90, >= 12.8 for Blackwell)",
        ),
        Condition(
            "sm90_or_sm100", "GPU is SM90 or SM100 (SM10x)", _c_sm90_or_sm100,
            "the fused kernels are tuned for Hopper and datacenter Blackwell; from v0.5.8 SM120 is no longer included",
            "use SM90 or SM10x GPUs with a CUDA build of torch (>= 12.3 for SM90, >= 12.8 for SM10x)",
        ),
        Condition(
            "tp_gt_1", "tensor parallelism (tp > 1)", check_tp_gt_1,
            "with one rank there is no allreduce to fuse",
            "raise --tp above 1",
        ),
        Condition(
            "no_dp_attention", "no DP attention", _c_no_dp_attention,
            "with DP attention the attention allreduce is replaced by gathers; the fused path assumes plain TP."
            " --enable-dp-attention with --dp-size 1 still blocks: the reset to plain TP happens after this check",
            "drop --enable-dp-attention (or pass the fusion flag explicitly)",
        ),
        Condition(
            "no_attn_dp", "attention DP size 1", _c_no_attn_dp,
            "from v0.5.22 SGLang checks the resolved attention-DP size: --enable-dp-attention with --dp-size 1 no"
            " longer blocks",
            "drop --enable-dp-attention or use --dp-size 1",
        ),
        Condition(
            "not_dsv41_tp4", "not DeepSeek V4.1 at tp 4 on Blackwell", _c_not_dsv41_tp4,
            "there DeepSeek V4.1 uses SGLang's custom push allreduce for decode and the fused MoE finalize instead",
            f"pass {BACKEND_FLAG} auto to use the FlashInfer fusion anyway, or {DISABLE_CUSTOM_AR}",
        ),
        Condition(
            "mimo_sm100", "MiMo V2: SM10x and tp 2, 4, 8 or 16", _c_mimo_sm100,
            "MiMo V2 uses FlashInfer's CuTe DSL one-shot fusion, built for SM10x at these tp sizes",
            "use SM10x GPUs and tp 2, 4, 8 or 16",
        ),
        Condition(
            "attn_cp_size", "no attention context parallelism (attn_cp_size <= 1)", _c_attn_cp,
            "context-parallel attention changes the communication pattern (check removed in v0.5.11)",
            f"drop {ATTN_CP} or use v0.5.11 or newer",
        ),
        Condition(
            "single_node", "one node (nnodes == 1)", _c_single_node,
            "the IPC (trtllm) workspace cannot span nodes: 'invalid resource handle' (flashinfer issue #2006)",
            "run on one node (--nnodes 1), or use v0.5.14+ on SM10x with an NVLink fabric (mnnvl)",
        ),
        Condition(
            "single_node_or_sm100", "one node, or SM10x across nodes", _c_single_node_or_sm100,
            "across nodes only the mnnvl backend works, and it needs multi-node NVLink (SM10x, e.g. GB200 NVL72);"
            " on SM90 the trtllm IPC workspace fails across nodes (flashinfer issue #2006)",
            "run on one node (--nnodes 1), or use SM10x GPUs on an NVLink fabric",
        ),
        Condition(
            "not_h20", "GPU is not an H20", _c_not_h20,
            "H20's low compute-to-bandwidth ratio made the fusion a loss there (exclusion removed in v0.5.13)",
            "use v0.5.13 or newer, or pass the fusion flag explicitly",
        ),
        Condition(
            "a2a_none", "no MoE all-to-all backend", _c_a2a_none,
            "an a2a backend (deepep, mooncake, ...) replaces the MoE allreduce that the fusion targets",
            "use --moe-a2a-backend none",
        ),
    )
}  # fmt: skip


# v0.5.8 to v0.5.10 load a config.json whose model_type their transformers does not know ("deepseek_v32") as DeepSeek V3:
# hf_transformers_utils._load_deepseek_v32_model rewrites architectures to ["DeepseekV3ForCausalLM"], so every later
# step (the fusion list included) sees that name (the goldens' log: "... for DeepseekV3ForCausalLM").
ARCH_SEEN_AS = {"DeepseekV32ForCausalLM": ("DeepseekV3ForCausalLM", "0.5.8", "0.5.10")}


def seen_architecture(architecture: str, release: str) -> str:
    """architectures[0] as SGLang ``release`` sees it after loading the config."""
    alias = ARCH_SEEN_AS.get(architecture)
    if alias and parse_release(alias[1]) <= parse_release(release) <= parse_release(alias[2]):
        return alias[0]
    return architecture


def _arch_condition(archs: tuple[str, ...], release: str) -> Condition:
    def check(s: Scenario):
        if s.model is None:
            return None, "model unknown", f"architectures[0] on the v{release} list"
        seen = seen_architecture(s.model.architecture, release)
        observed = s.model.architecture if seen == s.model.architecture else f"{s.model.architecture} (loaded as {seen})"
        return seen in archs, observed, f"one of {len(archs)}: {', '.join(archs)}"

    return Condition(
        "architecture", f"architectures[0] is on the v{release} list", check,
        "SGLang auto-enables the fusion only for architectures whose fused path was benchmarked; it checks"
        " architectures[0] of config.json only. Other model files may implement the fused path but use it only on request",
        f"use a release whose list has the model, or pass {BOOL_FLAG} (up to v0.5.13) /"
        f" {BACKEND_FLAG} auto (v0.5.14+) if the model file implements the fused path",
    )  # fmt: skip


# -- the release table -------------------------------------------------------------------------------------------------

# MiMo V2 (v0.5.23): auto-enabled with the "cutedsl" backend, only on SM10x at the CuTe DSL kernel's tp sizes
# (python/sglang/srt/layers/flashinfer_mnnvl_cutedsl.py SUPPORTED_TP_SIZES).
MIMO_ARCHS_ORDERED = ("MiMoV2ForCausalLM", "MiMoV2FlashForCausalLM")
MIMO_ARCHS = frozenset(MIMO_ARCHS_ORDERED)
MIMO_TP_SIZES = (2, 4, 8, 16)

V057 = ("sm90_or_blackwell", "no_dp_attention", "single_node", "not_h20", "a2a_none")
V058 = ("sm90_or_sm100", "no_dp_attention", "single_node", "not_h20", "a2a_none")
V0510 = ("sm90_or_sm100", "tp_gt_1", "no_dp_attention", "attn_cp_size", "single_node", "not_h20", "a2a_none")
V0511 = ("sm90_or_sm100", "tp_gt_1", "no_dp_attention", "single_node", "not_h20", "a2a_none")
V0513 = ("sm90_or_sm100", "tp_gt_1", "no_dp_attention", "single_node", "a2a_none")
V0514 = ("sm90_or_sm100", "tp_gt_1", "no_dp_attention", "single_node_or_sm100", "a2a_none")
V0521 = (*V0514, "not_dsv41_tp4")
V0522 = ("sm90_or_sm100", "tp_gt_1", "no_attn_dp", "single_node_or_sm100", "a2a_none", "not_dsv41_tp4")
V0523 = (*V0522, "mimo_sm100")
OFF_V057 = ()  # --enforce-disable-flashinfer-allreduce-fusion does not exist yet
OFF_V0510 = (ENFORCE_DISABLE,)
OFF_V0512 = (ENFORCE_DISABLE, DETERMINISTIC)


@dataclass(frozen=True)
class FusionRow:
    """FlashInfer allreduce fusion under releases first..last."""

    first: str
    last: str
    added: tuple[str, ...]  # architectures added to the (cumulative) list in this range
    conditions: tuple[str, ...]  # FUSION_CONDITIONS ids, besides the architecture
    flag: str  # what SGLang sets when it auto-enables
    off_flags: tuple[str, ...]  # user flags that force it off in this range
    file: str
    ref: str


# fmt: off
FUSION_TABLE: tuple[FusionRow, ...] = (
    FusionRow("0.5.7", "0.5.7", ("DeepseekV3ForCausalLM", "GptOssForCausalLM", "Glm4MoeForCausalLM", "Qwen3MoeForCausalLM"), V057, BOOL_FLAG, OFF_V057, SERVER_ARGS, "first architecture list; silent"),
    FusionRow("0.5.8", "0.5.8", ("Glm4MoeLiteForCausalLM",), V058, BOOL_FLAG, OFF_V057, SERVER_ARGS, "SM120 dropped"),
    FusionRow("0.5.9", "0.5.9", ("KimiK25ForConditionalGeneration",), V058, BOOL_FLAG, OFF_V057, SERVER_ARGS, "Kimi K2.5 added"),
    FusionRow("0.5.10", "0.5.10", ("Qwen3_5MoeForConditionalGeneration", "Qwen3_5ForConditionalGeneration"), V0510, BOOL_FLAG, OFF_V0510, SERVER_ARGS, "tp > 1 and attn_cp checks; enforce-disable flag"),
    FusionRow("0.5.11", "0.5.11", ("DeepseekV32ForCausalLM", "GlmMoeDsaForCausalLM", "Qwen3NextForCausalLM"), V0511, BOOL_FLAG, OFF_V0510, SERVER_ARGS, "PR #22664 (Qwen3-Next, H100)"),
    FusionRow("0.5.12", "0.5.12", ("InternS2PreviewForConditionalGeneration",), V0511, BOOL_FLAG, OFF_V0512, SERVER_ARGS, "deterministic inference forces it off"),
    FusionRow("0.5.13", "0.5.13", ("MistralLarge3ForCausalLM",), V0513, BOOL_FLAG, OFF_V0512, SERVER_ARGS, "H20 exclusion removed"),
    FusionRow("0.5.14", "0.5.17", ("NemotronHForCausalLM", "NemotronHPuzzleForCausalLM", "Qwen3VLMoeForConditionalGeneration"), V0514, BACKEND_FLAG, OFF_V0512, SERVER_ARGS, "PR #28786 (Qwen3-VL-MoE, B300); backend flag"),
    FusionRow("0.5.18", "0.5.18", ("DeepseekV4ForCausalLM",), V0514, BACKEND_FLAG, OFF_V0512, OVERRIDES, "DeepSeek V4 added"),
    FusionRow("0.5.19", "0.5.19", (), V0514, BACKEND_FLAG, OFF_V0512, OVERRIDES, "list unchanged; SGLANG_FLASHINFER_MNNVL_CUTEDSL_AR_FUSION (off by default) hands Qwen3.5 MoE to the CuTe DSL path"),
    FusionRow("0.5.20", "0.5.20", ("NemotronH_Omni_Reasoning_V3", "Qwen4ExpForConditionalGeneration"), V0514, BACKEND_FLAG, OFF_V0512, OVERRIDES, "Nemotron-H Omni and Qwen4 added"),
    FusionRow("0.5.21", "0.5.21", (), V0521, BACKEND_FLAG, OFF_V0512, OVERRIDES, "DeepSeek V4.1 at tp 4 on Blackwell keeps the custom allreduce"),
    FusionRow("0.5.22", "0.5.22", (), V0522, BACKEND_FLAG, OFF_V0512, OVERRIDES, "the attention-DP size, not the flag, blocks it"),
    FusionRow("0.5.23", "0.5.23", MIMO_ARCHS_ORDERED, V0523, BACKEND_FLAG, OFF_V0512, OVERRIDES, "MiMo V2 added with the cutedsl backend on SM10x"),
)
# fmt: on


def _expand(row: FusionRow) -> tuple[str, ...]:
    """"0.5.14".."0.5.17" -> each patch release in between."""
    first, last = parse_release(row.first), parse_release(row.last)
    return tuple(release_text((*first[:2], n)) for n in range(first[2], last[2] + 1))


# Every modelled release, for the release matrix (oldest first); derived from the table, so a new row is all it takes.
RELEASES = tuple(r for row in FUSION_TABLE for r in _expand(row))
NEWEST = RELEASES[-1]
OLDEST = RELEASES[0]


class ReleaseError(ValueError):
    """An SGLang version the tables cannot model; the message is one line naming the fix."""


def row_for(version: str) -> tuple[FusionRow, bool]:
    """The table row for ``version`` and whether the version is newer than the newest modelled release."""
    release = parse_release(version)
    if release is None:
        raise ReleaseError(f"sglang version {version!r} is not a version; pass --engine-version X.Y.Z (e.g. {NEWEST})")
    if release < parse_release(OLDEST):
        raise ReleaseError(
            f"sglang {version} is older than the oldest modelled release v{OLDEST}; pass --engine-version {OLDEST} or newer"
        )
    for row in FUSION_TABLE:
        if parse_release(row.first) <= release <= parse_release(row.last):
            return row, False
    return FUSION_TABLE[-1], True


def architectures(row: FusionRow) -> tuple[str, ...]:
    """The cumulative architecture list of a row."""
    out: list[str] = []
    for r in FUSION_TABLE:
        out.extend(r.added)
        if r is row:
            break
    return tuple(out)


def rules_release(version: str) -> str:
    """The modelled release whose rules apply to ``version`` ("0.5.15" -> "0.5.15", "0.6.0" -> the newest)."""
    row, newer = row_for(version)
    if newer:
        return NEWEST
    return release_text(parse_release(version))


# -- FlashInfer allreduce fusion ---------------------------------------------------------------------------------------


def fusion_decision(s: Scenario, version: str) -> Decision:
    row, _ = row_for(version)
    release = rules_release(version)
    uses_backend = row.flag == BACKEND_FLAG
    results = (_arch_condition(architectures(row), release).evaluate(s),) + tuple(
        FUSION_CONDITIONS[c].evaluate(s) for c in row.conditions
    )
    notes: list[str] = []

    off = [f for f in row.off_flags if s.has(f)]
    for flag in (ENFORCE_DISABLE, DETERMINISTIC):
        if s.has(flag) and flag not in row.off_flags:
            if flag == ENFORCE_DISABLE:
                notes.append(f"{flag} does not exist in v{release}: SGLang will reject it (added in v0.5.10)")
            else:
                notes.append(f"{flag} does not turn the fusion off in v{release} (it does from v0.5.12)")

    # What the user asked for explicitly (forced on).
    requested: str | None = None
    if uses_backend and s.flag(BACKEND_FLAG):
        requested = s.flag(BACKEND_FLAG)
    elif s.has(BOOL_FLAG):
        requested = "auto" if uses_backend else "on"
        if uses_backend:
            notes.append(f"{BOOL_FLAG} is deprecated from v0.5.14 and mapped to {BACKEND_FLAG} auto")
    elif s.flag(BACKEND_FLAG):
        notes.append(f"{BACKEND_FLAG} does not exist in v{release}: SGLang will reject it (use {BOOL_FLAG})")

    state = state_of(results, forced_on=requested is not None, forced_off=bool(off))
    enabled = is_enabled(state)
    value: str | bool | None
    auto_backend = "cutedsl" if s.model is not None and s.model.architecture in MIMO_ARCHS else "auto"
    if uses_backend:
        value = (requested or auto_backend) if enabled else None
        flags = (BACKEND_FLAG, value) if state == AUTO_ENABLED else ()
    else:
        value = enabled
        flags = (BOOL_FLAG,) if state == AUTO_ENABLED else ()
    # Forced on: the user's own flag is already on the command line (intent.overrides); nothing to add.

    if off:
        notes.append(f"forced off by {' and '.join(off)} (applied after the auto-enable)")
    if state == AUTO_ENABLED:
        seen = seen_architecture(s.model.architecture, release)
        if parse_release(release) >= (0, 5, 23):
            notes.append("log line: " + LOG_LINE_V0523.format(backend=value, arch=seen))
        elif parse_release(release) >= (0, 5, 10):
            notes.append("log line: " + LOG_LINE.format(arch=seen))
        else:
            notes.append("auto-enabled silently (no log line before v0.5.10)")
        if s.tp <= 1:
            notes.append("with tp 1 the flag is set but no layer uses the fused kernel (it needs tp_size > 1)")
        if s.model.architecture.startswith("Deepseek"):
            notes.append("DeepSeek with context-parallel prefill declares DP attention or an a2a backend itself,"
                         " which blocks the auto-enable")  # fmt: skip
    if enabled:
        if s.flashinfer.importable is False:
            notes.insert(0, _import_failure_note(s))
        notes.extend(_runtime_notes(s, row, value))
    elif state == NOT_ENABLED and any(r.id == "architecture" and r.ok is False for r in results):
        notes.append("other model files may implement the fused path; they use it only when the flag is passed")

    return Decision(
        id="flashinfer_allreduce_fusion",
        title="FlashInfer allreduce + residual + RMSNorm fusion",
        state=state,
        enabled=enabled,
        value=value,
        conditions=results,
        flags=flags,
        source=Source(f"sglang v{release}", row.file if parse_release(release) < (0, 5, 15) else OVERRIDES, row.ref),
        notes=tuple(notes),
    )


def resolve_backend(s: Scenario, value: str) -> tuple[str | None, str | None]:
    """(backend at run time, error) for the v0.5.14+ backend setting, as flashinfer_comm_fusion.py resolves it."""
    sm90, _ = is_sm90(s)
    sm100, _ = is_sm100(s)
    multi = s.nnodes > 1
    if value == "auto":
        if sm100:
            return "mnnvl", None
        if sm90:
            return (None, "auto on multi-node SM90 has no backend (mnnvl needs SM10x across nodes)") if multi else ("trtllm", None)
        return None, None
    if value == "cutedsl":  # v0.5.23, MiMo V2: FlashInfer's CuTe DSL one-shot kernel over the NVLink fabric
        return ("cutedsl", None) if sm100 else (None, "the cutedsl backend needs SM10x")
    if value == "trtllm":
        return (None, "the trtllm backend is single-node only") if multi else ("trtllm", None)
    if value == "mnnvl":
        if sm100 or (sm90 and not multi):
            return "mnnvl", None
        if sm90 is None and sm100 is None:
            return None, None
        return None, "the mnnvl backend needs SM10x, or SM90 on one node"
    return None, f"unknown backend {value!r}; choose auto, trtllm or mnnvl (cutedsl from v0.5.23)"


def _runtime_notes(s: Scenario, row: FusionRow, value) -> list[str]:
    notes = []
    if row.flag == BACKEND_FLAG and isinstance(value, str):
        backend, error = resolve_backend(s, value)
        if error:
            notes.append(f"at run time: {error}")
        elif backend:
            notes.append(f"at run time {value} resolves to the {backend} backend ({FUSION_RUNTIME}, PR #29063)")
    elif s.nnodes > 1:
        notes.append("at run time the IPC workspace fails across nodes: 'invalid resource handle' (flashinfer issue #2006)")
    hidden = s.model.hidden_size if s.model is not None else None
    if hidden:
        workspace = fi.fusion_workspace_bytes(s.tp, hidden, FUSE_MAX_TOKENS)
        notes.append(
            f"workspace per GPU about {workspace / 2**20:.0f} MiB ({FUSE_MAX_TOKENS} tokens x hidden {hidden});"
            f" the fused kernel runs for batches of 1..{FUSE_MAX_TOKENS} tokens, except the last layer"
        )
    if s.flashinfer.importable is not False:  # otherwise the first note says the fused path cannot run
        notes.append("needs flashinfer importable with flashinfer.comm.allreduce_fusion; a workspace failure on any rank"
                     " disables it on all")  # fmt: skip
    if parse_release(row.first) >= (0, 5, 18):
        notes.append("v0.5.18: ordinary allreduces also take FlashInfer's plain-allreduce path while the backend is set")
    return notes


def _import_failure_note(s: Scenario) -> str:
    """SGLang decides the fusion without trying ``import flashinfer``; say plainly when that import will fail."""
    prediction = s.flashinfer
    ids = ", ".join(dict.fromkeys(p.id for p in prediction.problems if p.severity in ("error", "warning")))
    see = f"; see problem {ids}" if ids else ""
    return (f"the fused path cannot run here: `import flashinfer` will fail ({prediction.reason}{see}); SGLang"
            " enables the fusion without trying the import, then fails where it imports flashinfer")  # fmt: skip


def fusion_problems(s: Scenario, decision: Decision, version: str) -> list[Problem]:
    """Run-time errors the chosen fusion setting will raise."""
    row, _ = row_for(version)
    if not decision.enabled:
        return []
    if row.flag == BACKEND_FLAG and isinstance(decision.value, str):
        _, error = resolve_backend(s, decision.value)
        if error:
            return [Problem(
                "fusion_backend_error", "error",
                f"SGLang v{rules_release(version)}: {BACKEND_FLAG} {decision.value}: {error}",
                f"drop {BACKEND_FLAG}, run on one node, or use SM10x GPUs on an NVLink fabric",
                f"sglang v{rules_release(version)}, {FUSION_RUNTIME}",
            )]  # fmt: skip
    elif s.nnodes > 1:
        return [Problem(
            "fusion_backend_error", "error",
            f"SGLang v{rules_release(version)}: the fusion's IPC workspace cannot span {s.nnodes} nodes",
            f"drop {BOOL_FLAG} for multi-node runs, or use v0.5.14+ on SM10x with an NVLink fabric",
            "flashinfer issue #2006",
        )]  # fmt: skip
    return []


def release_matrix(s: Scenario) -> tuple[ReleaseOutcome, ...]:
    """The fusion outcome of this scenario under every modelled release."""
    out = []
    for release in RELEASES:
        d = fusion_decision(s, release)
        out.append(ReleaseOutcome(release, d.enabled, tuple(c.id for c in d.failed)))
    return tuple(out)


# -- custom allreduce --------------------------------------------------------------------------------------------------


def custom_allreduce_decision(s: Scenario, version: str) -> Decision:
    release = rules_release(version)

    def one_node(s: Scenario):
        return s.nnodes == 1, f"nnodes {s.nnodes}", "the TP group on one node"

    conditions = (
        Condition("tp_gt_1", "more than one rank", check_tp_gt_1, "with one rank there is nothing to reduce", "raise --tp"),
        Condition("single_node", "TP group on one node", one_node,
                  "the kernel uses CUDA IPC buffers, which do not cross nodes", "run the TP group on one node"),
        Condition("world_size", "world size 2, 4, 6 or 8", check_custom_ar_world_size,
                  "the one-shot/two-shot kernels are built for these sizes", "use tp 2, 4, 6 or 8"),
        Condition("full_nvlink", "full NVLink when more than 2 GPUs", check_custom_ar_nvlink,
                  "'custom allreduce is not supported on more than two PCIe-only GPUs'",
                  "use NVLink/NVSwitch-connected GPUs or tp 2"),
    )  # fmt: skip
    results = tuple(c.evaluate(s) for c in conditions)
    off_by = [f for f in (DISABLE_CUSTOM_AR,) if s.has(f)]
    if s.has(DETERMINISTIC) and s.tp > 1:
        off_by.append(DETERMINISTIC)
    state = state_of(results, forced_off=bool(off_by))
    enabled = is_enabled(state)
    notes = []
    value = None
    if enabled:
        v2 = parse_release(release) >= (0, 5, 12)
        sm = _any(is_sm90(s)[0], is_sm100(s)[0])
        if v2 and sm and s.all_pairs_nvlink:
            value = "v2"
            notes.append("v2 kernel (default from v0.5.12): tuned for SM90/SM100 at 2-8 GPUs with full NVLink")
        else:
            value = "v1"
            if v2:
                notes.append("v2 kernel needs SM90/SM100 and full NVLink; falls back to v1")
        notes.append("used for messages <= 8 MiB, a multiple of 16 bytes, contiguous; larger ones go to NCCL")
        notes.append("P2P access check skipped by default (--enable-p2p-check turns it on)")
    if off_by:
        notes.append(f"forced off by {' and '.join(off_by)}")
    return Decision(
        id="custom_allreduce",
        title="SGLang custom allreduce (NVLink IPC kernel)",
        state=state,
        enabled=enabled,
        value=value,
        conditions=results,
        flags=(),
        source=Source(f"sglang v{release}", CUSTOM_AR),
        notes=tuple(notes),
    )


# -- default attention backend -----------------------------------------------------------------------------------------

MLA_ARCHS = frozenset({
    "DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM", "DeepseekV4ForCausalLM",
    "KimiK25ForConditionalGeneration", "GlmMoeDsaForCausalLM", "MistralLarge3ForCausalLM", "Glm4MoeLiteForCausalLM",
})  # fmt: skip
SINK_ARCHS = frozenset({"GptOssForCausalLM"})


def attention_kind(model) -> str | None:
    if model is None:
        return None
    if model.uses_mla or model.architecture in MLA_ARCHS:
        return "mla"
    if model.architecture in SINK_ARCHS:
        return "sinks"
    return "standard"


def attention_decision(s: Scenario, version: str) -> Decision:
    release = rules_release(version)
    kind = attention_kind(s.model)
    major = None if s.no_gpu else s.major

    def gpu(s: Scenario):
        if s.no_gpu:
            return False, "no GPU", "a CUDA GPU"
        return (None if major is None else True), f"SM {s.gpu.capability_text}" if s.gpu else "SM ?", "a CUDA GPU"

    def attention(s: Scenario):
        text = {"mla": "MLA (DeepSeek family)", "sinks": "standard with attention sinks", "standard": "standard MHA/GQA"}
        return (kind is not None) or None, text.get(kind, "model unknown"), "known attention type"

    conditions = (
        Condition("gpu_family", "GPU family", gpu, "the default differs between Hopper, SM10x and other GPUs",
                  f"pass {ATTENTION_BACKEND} NAME to choose"),
        Condition("attention_type", "attention type", attention, "MLA models use dedicated kernels",
                  f"pass {ATTENTION_BACKEND} NAME to choose"),
    )  # fmt: skip
    results = tuple(c.evaluate(s) for c in conditions)
    chosen = s.flag(ATTENTION_BACKEND)
    value = chosen or _default_attention(kind, major, s.model, s, version)
    state = state_of(results, forced_on=bool(chosen))
    if state == NOT_ENABLED:
        value = None
    notes = [f"log line: Attention backend not specified. Use {value} backend by default."] if value and not chosen else []
    return Decision(
        id="attention_backend",
        title="Default attention backend",
        state=state,
        enabled=value is not None,
        value=value,
        conditions=results,
        flags=(),
        source=Source(f"sglang v{release}", SERVER_ARGS, "_handle_attention_backend_compatibility"),
        notes=tuple(notes),
    )


# Architectures with DeepSeek sparse attention (DSA): SGLang picks its native sparse backend on every GPU.
NSA_ARCHS = frozenset({"DeepseekV32ForCausalLM", "GlmMoeDsaForCausalLM"})
# is_fa3_default_architecture (python/sglang/srt/utils/common.py): standard-attention models that default to FA3 on
# Hopper; any other standard model (hybrid linear-attention ones included) gets FlashInfer there.
FA3_DEFAULT_ARCHS = frozenset({
    "Llama4ForConditionalGeneration", "LlamaForCausalLM", "Olmo2ForCausalLM", "Gemma2ForCausalLM",
    "Gemma3ForConditionalGeneration", "Qwen2ForCausalLM", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM",
    "Qwen3VLForConditionalGeneration", "Qwen3VLMoeForConditionalGeneration", "Glm4MoeForCausalLM",
    "Glm4vForConditionalGeneration", "Glm4vMoeForConditionalGeneration", "Step3VLForConditionalGeneration",
})  # fmt: skip
# Model-specific defaults on SM100 (_handle_model_specific_adjustments): the hybrid linear-attention models.
SM100_MODEL_ATTENTION = {"Qwen3NextForCausalLM": "triton", "NemotronHForCausalLM": "flashinfer"}
# From v0.5.19 Nemotron-H's own override step (arg_groups/model_overrides/nemotron_h.py) picks trtllm_mha on SM10x.
NEMOTRON_TRTLLM_MHA_FROM = "0.5.19"


DSA_NAME_FROM = "0.5.13"  # the sparse-attention backend "nsa" is called "dsa" from v0.5.13
# From v0.5.8 (the v0.5.8 golden) the hybrid linear-attention models get FA3 on Hopper too, and Qwen3.5 (seen from v0.5.14)
# gets Qwen3-Next's triton default on SM100.
HYBRID_FA3_FROM = "0.5.8"
HYBRID_ARCHS = frozenset({"Qwen3NextForCausalLM", "NemotronHForCausalLM", "Qwen3_5MoeForConditionalGeneration",
                          "Qwen3_5ForConditionalGeneration"})  # fmt: skip
TRTLLM_MLA_ARCHS = frozenset({"DeepseekV3ForCausalLM", "KimiK25ForConditionalGeneration"})


def _default_attention(
    kind: str | None, major: int | None, model, s: Scenario | None = None, version: str | None = None
) -> str | None:
    """SGLang's default (v0.5.7 _handle_attention_backend_compatibility and the model-specific steps before it)."""
    if kind is None or major is None:
        return None
    release = parse_release(rules_release(version)) if version else parse_release(NEWEST)
    newer_hybrids = release >= parse_release(HYBRID_FA3_FROM)
    if model.architecture in NSA_ARCHS:
        return "dsa" if release >= parse_release(DSA_NAME_FROM) else "nsa"
    sm90 = is_sm90(s)[0] if s is not None else major == 9
    sm100 = is_sm100(s)[0] if s is not None else major == 10
    if kind == "mla":
        if sm90:
            return "fa3"
        if sm100:
            return "trtllm_mla" if model.architecture in TRTLLM_MLA_ARCHS else "flashinfer"
        return "triton"
    if kind == "sinks":
        return "trtllm_mha" if sm100 else "fa3" if sm90 else "triton"
    if sm100 and model.architecture == "NemotronHForCausalLM" and release >= parse_release(NEMOTRON_TRTLLM_MHA_FROM):
        return "trtllm_mha"
    if sm100 and model.architecture in SM100_MODEL_ATTENTION:
        return SM100_MODEL_ATTENTION[model.architecture]
    if sm100 and newer_hybrids and model.architecture.startswith("Qwen3_5"):
        return "triton"
    if sm90 and (model.architecture in FA3_DEFAULT_ARCHS or (newer_hybrids and model.architecture in HYBRID_ARCHS)):
        return "fa3"
    if sm100:
        return "trtllm_mha"
    return "flashinfer"


# -- MoE runner backend on SM100 ---------------------------------------------------------------------------------------

_DEEPSEEK_FAMILY = frozenset({
    "DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM", "DeepseekV4ForCausalLM", "KimiK25ForConditionalGeneration",
    "MistralLarge3ForCausalLM", "GlmMoeDsaForCausalLM",
})  # fmt: skip
_QWEN_FAMILY = frozenset({
    "Qwen3MoeForCausalLM", "Qwen3VLMoeForConditionalGeneration", "Qwen3NextForCausalLM",
    "Qwen3_5MoeForConditionalGeneration", "Qwen3_5ForConditionalGeneration",
})  # fmt: skip


@dataclass(frozen=True)
class MoeRunnerRow:
    """One family's FlashInfer MoE default under releases first..last (_handle_model_specific_adjustments)."""

    first: str
    last: str
    families: frozenset[str]
    quantizations: frozenset[str | None]  # None stands for unquantized
    backend: str
    gpu: str = "sm100"  # "sm100": SM10x only; "sm120": SM12x only (is_sm100_supported / is_sm120_supported)
    a2a_blocks: bool = True  # an MoE all-to-all backend keeps the runner on auto


_GPT_OSS = frozenset({"GptOssForCausalLM"})
_GLM45 = frozenset({"Glm4MoeForCausalLM"})
_DEEPSEEK_V3 = frozenset({"DeepseekV3ForCausalLM"})
_QUANT_TRTLLM = frozenset({"fp8", "modelopt_fp8", "modelopt_fp4"})
# fmt: off
MOE_RUNNER_TABLE: tuple[MoeRunnerRow, ...] = (
    # DeepSeek family: fp8/modelopt checkpoints; an unquantized DeepSeek V3 is defaulted to fp8 first ("Quantization not
    # specified, default to fp8 for DeepSeek on sm100"). From v0.5.12 unquantized checkpoints of the whole family too
    # ("or self.quantization is None"), which brings GLM-5 and an unquantized Kimi K2.5 in.
    MoeRunnerRow("0.5.7", "0.5.11", _DEEPSEEK_V3, _QUANT_TRTLLM | {None}, "flashinfer_trtllm"),
    MoeRunnerRow("0.5.7", "0.5.11", _DEEPSEEK_FAMILY, _QUANT_TRTLLM, "flashinfer_trtllm"),
    MoeRunnerRow("0.5.12", "9.9.9", _DEEPSEEK_FAMILY, _QUANT_TRTLLM | {None}, "flashinfer_trtllm"),
    MoeRunnerRow("0.5.7", "0.5.7", _QWEN_FAMILY, frozenset({"fp8", "modelopt_fp4"}), "flashinfer_trtllm"),
    # v0.5.8: unquantized checkpoints too ("self.quantization in (fp8, modelopt_fp4) or self.quantization is None")
    MoeRunnerRow("0.5.8", "9.9.9", _QWEN_FAMILY, frozenset({"fp8", "modelopt_fp4", None}), "flashinfer_trtllm"),
    # GLM-4.5: modelopt_fp4 only (read in v0.5.8 to v0.5.11; it also needs flashinfer-python >= 0.6.2), unquantized
    # checkpoints too by v0.5.18 (the v0.5.14 golden still says auto, the v0.5.23 golden flashinfer_trtllm; v0.5.15, where
    # this step moved to arg_groups/overrides.py, is taken as the first)
    MoeRunnerRow("0.5.7", "0.5.14", _GLM45, frozenset({"modelopt_fp4"}), "flashinfer_trtllm"),
    MoeRunnerRow("0.5.15", "9.9.9", _GLM45, frozenset({"modelopt_fp4", None}), "flashinfer_trtllm"),
    # GPT-OSS with MXFP4 weights: FlashInfer's MXFP4 kernel on SM10x; on SM12x it changed four times (the Blackwell check
    # up to v0.5.9, then "trtllm-gen only supports SM100": triton_kernel, Marlin from v0.5.14, FlashInfer again from v0.5.17)
    MoeRunnerRow("0.5.7", "9.9.9", _GPT_OSS, frozenset({"mxfp4"}), "flashinfer_mxfp4", a2a_blocks=False),
    MoeRunnerRow("0.5.7", "0.5.9", _GPT_OSS, frozenset({"mxfp4"}), "flashinfer_mxfp4", gpu="sm120", a2a_blocks=False),
    MoeRunnerRow("0.5.10", "0.5.13", _GPT_OSS, frozenset({"mxfp4"}), "triton_kernel", gpu="sm120", a2a_blocks=False),
    MoeRunnerRow("0.5.14", "0.5.16", _GPT_OSS, frozenset({"mxfp4"}), "marlin", gpu="sm120", a2a_blocks=False),
    MoeRunnerRow("0.5.17", "9.9.9", _GPT_OSS, frozenset({"mxfp4"}), "flashinfer_mxfp4", gpu="sm120", a2a_blocks=False),
)
# fmt: on
NEMOTRON_H = frozenset({"NemotronHForCausalLM", "NemotronHPuzzleForCausalLM"})


def moe_runner_row(architecture: str, version: str, gpu: str = "sm100", quantization: str | None = "?") -> MoeRunnerRow | None:
    """The row for this architecture, release and GPU kind; with ``quantization`` given, the first row allowing it."""
    release = parse_release(rules_release(version))
    rows = [r for r in MOE_RUNNER_TABLE if architecture in r.families and r.gpu == gpu
            and parse_release(r.first) <= release <= parse_release(r.last)]  # fmt: skip
    return next((r for r in rows if quantization in r.quantizations), rows[0] if rows else None)


def nemotron_h_runner(s: Scenario, release: str) -> tuple[str | None, str]:
    """The runner Nemotron-H's own step sets (dense or not; nemotron_h_hook.py, later model_overrides/nemotron_h.py):
    (backend or None for auto, why). modelopt checkpoints from v0.5.7, unquantized ones too from v0.5.13."""
    r = parse_release(release)
    quant = s.model.quantization if s.model is not None else None
    modelopt = quant in ("modelopt", "modelopt_fp8", "modelopt_fp4", "modelopt_mixed")
    if not modelopt and not (quant is None and r >= (0, 5, 13)):
        return None, "modelopt checkpoints only" + (" (unquantized too from v0.5.13)" if r < (0, 5, 13) else "")
    if r < (0, 5, 11):
        return "flashinfer_cutlass", "modelopt checkpoint"
    sm100, _ = is_sm100(s)
    if sm100 and s.intent.moe_a2a_backend in (None, "", "none"):
        return "flashinfer_trtllm", "SM10x, no a2a backend"
    major = None if s.no_gpu else s.major
    if r >= (0, 5, 13) and quant in ("modelopt_fp4", "modelopt_mixed") and major in (8, 9):
        return "marlin", "modelopt_fp4 on SM80-SM90"
    return "flashinfer_cutlass", "otherwise"


def moe_runner_decision(s: Scenario, version: str) -> Decision:
    release = rules_release(version)
    model = s.model
    sm120 = is_sm120(s)[0]
    gpu_kind = "sm120" if sm120 else "sm100"
    arch = seen_architecture(model.architecture, release) if model is not None else None
    entry = moe_runner_row(arch, version, gpu_kind, model.quantization) if model is not None else None
    if model is not None and model.architecture in NEMOTRON_H:
        return _nemotron_h_decision(s, release)

    def is_moe(s: Scenario):
        return (None if model is None else model.is_moe), (
            "model unknown" if model is None else f"{model.num_experts or 0} experts"), "a MoE model"

    def sm100(s: Scenario):
        if entry is not None and entry.gpu == "sm120":
            ok, observed = is_sm120(s)
            return ok, observed, f"SM12x with torch CUDA >= 12.8 ({entry.backend} there in v{release})"
        ok, observed = is_sm100(s)
        if entry is not None and any(r.gpu == "sm120" and arch in r.families for r in MOE_RUNNER_TABLE):
            return ok, observed, "SM10x (or SM12x) with torch CUDA >= 12.8"
        return ok, observed, "SM10x with torch CUDA >= 12.8"

    def a2a(s: Scenario):
        if entry is not None and not entry.a2a_blocks:
            return True, f"moe_a2a_backend {s.intent.moe_a2a_backend or 'none'}", f"any (not checked for {entry.backend})"
        return _c_a2a_none(s)

    def family(s: Scenario):
        if model is None:
            return None, "model unknown", "a family with a FlashInfer MoE path"
        return entry is not None, model.architecture, "DeepSeek/Kimi/Mistral-Large-3/GLM-5, Qwen3 MoE family, GLM-4.5/4.6, GPT-OSS"

    def quant(s: Scenario):
        if model is None or entry is None:
            return (None if model is None else False), (model.quantization if model else None) or "unquantized", "a supported quantization"
        allowed = sorted(q or "unquantized" for q in entry.quantizations)
        return model.quantization in entry.quantizations, model.quantization or "unquantized", ", ".join(allowed)

    conditions = (
        Condition("moe_model", "MoE model", is_moe, "only MoE layers have a runner backend", "n/a for dense models"),
        Condition("sm100", "GPU is SM100 (SM10x)" + (" or SM12x" if entry is not None and entry.gpu == "sm120" else ""), sm100, "the FlashInfer TRT-LLM MoE kernels target datacenter Blackwell",
                  f"on other GPUs pass {MOE_RUNNER_BACKEND} NAME explicitly"),
        Condition("model_family", "model family with a FlashInfer MoE default", family,
                  "SGLang picks the FlashInfer runner per model family", f"pass {MOE_RUNNER_BACKEND} NAME"),
        Condition("quantization", "quantization supported by that runner", quant,
                  "each runner supports a set of weight formats", "use a supported checkpoint format"),
        Condition("a2a_none", "no MoE all-to-all backend", a2a,
                  "an a2a backend (deepep, mooncake, ...) brings its own dispatch and sets ep_size = tp_size",
                  "use --moe-a2a-backend none"),
    )  # fmt: skip
    results = tuple(c.evaluate(s) for c in conditions)
    chosen = s.flag(MOE_RUNNER_BACKEND)
    state = state_of(results, forced_on=bool(chosen and chosen != "auto"))
    value = chosen if state == FORCED_ON else (entry.backend if state == AUTO_ENABLED else "auto")
    notes = []
    if s.intent.moe_a2a_backend not in (None, "", "none"):
        notes.append(f"--moe-a2a-backend {s.intent.moe_a2a_backend} forces ep_size = tp_size ({s.tp})")
    if not is_enabled(state):
        notes.append("auto: the MoE layer picks its kernel at load time (triton for most formats)")
    return Decision(
        id="moe_runner_backend",
        title="MoE runner backend (--moe-runner-backend auto)",
        state=state,
        enabled=is_enabled(state),
        value=value,
        conditions=results,
        flags=(),
        source=Source(f"sglang v{release}", SERVER_ARGS, "_handle_moe_kernel_config"),
        notes=tuple(notes),
    )


def _nemotron_h_file(release: str) -> str:
    r = parse_release(release)
    if r < (0, 5, 12):
        return SERVER_ARGS
    if r < (0, 5, 15):
        return "python/sglang/srt/arg_groups/nemotron_h_hook.py"
    if r < (0, 5, 19):
        return OVERRIDES
    return "python/sglang/srt/arg_groups/model_overrides/nemotron_h.py"


def _nemotron_h_decision(s: Scenario, release: str) -> Decision:
    value, why = nemotron_h_runner(s, release)

    def family(s: Scenario):
        return value is not None, f"{s.model.architecture}, {s.model.quantization or 'unquantized'}", why

    conditions = (
        Condition("model_family", "Nemotron-H sets its own MoE runner", family,
                  "Nemotron-H's override step sets the runner whether or not the checkpoint has MoE layers",
                  f"pass {MOE_RUNNER_BACKEND} NAME"),
    )  # fmt: skip
    results = tuple(c.evaluate(s) for c in conditions)
    chosen = s.flag(MOE_RUNNER_BACKEND)
    state = state_of(results, forced_on=bool(chosen and chosen != "auto"))
    final = chosen if state == FORCED_ON else (value if state == AUTO_ENABLED else "auto")
    notes = [f"{why}: {value}"] if value else ["auto: the MoE layer picks its kernel at load time"]
    return Decision(
        id="moe_runner_backend",
        title="MoE runner backend (--moe-runner-backend auto)",
        state=state,
        enabled=is_enabled(state),
        value=final,
        conditions=results,
        flags=(),
        source=Source(f"sglang v{release}", _nemotron_h_file(release), "Nemotron-H defaults"),
        notes=tuple(notes),
    )


# -- GPU-memory defaults -----------------------------------------------------------------------------------------------

# (upper bound in GiB (exclusive), chunked_prefill_size, cuda_graph_max_bs, cuda_graph_max_bs with tp >= 4)
MEMORY_TABLE: tuple[tuple[float, int, int, int], ...] = (
    (20, 2048, 8, 8),
    (35, 2048, 24, 80),
    (60, 4096, 32, 160),
    (90, 8192, 256, 512),
    (160, 8192, 256, 512),
    (float("inf"), 16384, 512, 512),
)
# v0.5.20 (arg_groups/memory_hook.py): 20-35 GiB GPUs (RTX 4090/5090, A10) get chunked prefill 4096 and batch 48/160.
MEMORY_TABLE_V0520: tuple[tuple[float, int, int, int], ...] = (MEMORY_TABLE[0], (35, 4096, 48, 160), *MEMORY_TABLE[2:])
MEMORY_TABLE_V0520_FROM = "0.5.20"
UNKNOWN_MEMORY = (4096, 160)


def memory_table(release: str | None) -> tuple[tuple[float, int, int, int], ...]:
    """The GPU-memory tiers of ``release`` (None: the v0.5.7 table)."""
    if release is not None and parse_release(release) >= parse_release(MEMORY_TABLE_V0520_FROM):
        return MEMORY_TABLE_V0520
    return MEMORY_TABLE


def memory_tier(mem_mib: int, tp: int, release: str | None) -> tuple[int, int]:
    """(chunked_prefill_size, cuda_graph_max_bs) for this GPU memory and tp."""
    _, chunk, small, large = next(row for row in memory_table(release) if mem_mib / 1024 < row[0])
    return chunk, (large if tp >= 4 else small)


def memory_defaults(
    mem_mib: int | None, tp: int, dp_attention: bool, dp_size: int, vision: tuple[int | None, int | None] | None = None,
    prefill_graph: str | None = None, release: str | None = None, deepep: bool = False,
) -> dict[str, float | int | None]:
    """chunked_prefill_size, cuda_graph_max_bs and mem_fraction_static as SGLang's _handle_gpu_memory_settings picks them.

    The reserve is computed from the chunk size before DP attention divides it (the division comes later, in
    _handle_data_parallelism); multimodal models then scale the fraction down (adjust_mem_fraction_for_vlm).
    """
    chunk, max_bs = UNKNOWN_MEMORY if mem_mib is None else memory_tier(mem_mib, tp, release)
    fraction = None
    if mem_mib is not None:
        reserved = reserved_mib(chunk, max_bs, tp, dp_attention, dp_size, mem_mib, prefill_graph, deepep)
        fraction = round((mem_mib - reserved) / mem_mib, 3)
        if vision is not None:
            fraction *= vlm_factor(vision)
    if dp_attention and dp_size > 1:
        chunk //= dp_size
    return {"chunked_prefill_size": chunk, "cuda_graph_max_bs": max_bs, "mem_fraction_static": fraction}


def prefill_graph_sizes(max_tokens: int) -> list[int]:
    """The prefill (piecewise) CUDA-graph capture sizes up to max_tokens (v0.5.14 _generate_prefill_cuda_graph_batch_sizes)."""
    sizes = [*range(4, 33, 4), *range(48, 257, 16), *range(288, 513, 32), *range(576, 1025, 64), *range(1280, 4097, 256),
             *range(4608, max_tokens + 1, 512)]  # fmt: skip
    return [n for n in sizes if n <= max_tokens]


DEEPEP_A2A_RESERVE = 2 * 1024  # v0.5.18: DeepEP buffers captured in the decode graph, MiB
DEEPEP_PREFILL_MAX_BS = 2048  # v0.5.18 _apply_deepep_adjustments: the breakable prefill graph's sizes with DeepEP


def deepep_prefill_graph_sizes() -> list[int]:
    """With DeepEP the breakable prefill graph captures sizes up to 2048, rounded up to multiples of 8 (v0.5.18)."""
    return sorted({(n + 7) // 8 * 8 for n in prefill_graph_sizes(DEEPEP_PREFILL_MAX_BS)})


def prefill_graph_reserve(chunk: int, kind: str | None, deepep: bool = False) -> float:
    """MiB reserved for the prefill CUDA graphs: 8 per captured size (1.5 GiB flat for MLA models); from v0.5.18 with
    DeepEP 1 GiB more for the breakable graph's capture."""
    if kind == "mla":
        graphs = 1.5 * 1024
    else:
        graphs = len(deepep_prefill_graph_sizes() if deepep else prefill_graph_sizes(chunk)) * 8
    return graphs + (1024 if deepep else 0)


def reserved_mib(
    chunk: int, max_bs: int, tp: int, dp_attention: bool, dp_size: int, mem_mib: int, prefill_graph: str | None = None,
    deepep: bool = False,
) -> float:
    """Activations and CUDA-graph buffers SGLang keeps outside the static pool (MiB). ``prefill_graph``: None when the
    prefill CUDA graph is off, else the attention kind ("mla" or "standard") that sizes its reserve."""
    reserved = 512 + max(chunk, 2048) * 1.5 + max_bs * 2 + tp * 1 / 8 * 1024
    if dp_attention:
        reserved += max_bs * dp_size * 3
        if max_bs > 300:
            reserved += max_bs * dp_size * 1.5
    if prefill_graph is not None:
        reserved += prefill_graph_reserve(chunk, prefill_graph, deepep)
    if mem_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    if deepep:
        reserved += DEEPEP_A2A_RESERVE  # on top of the floor (reserve_for_deepep_a2a_mb)
    return reserved


def memory_arithmetic(
    mem_mib: int | None, tp: int, dp_attention: bool, dp_size: int, vision: tuple[int | None, int | None] | None,
    prefill_graph: str | None = None, release: str | None = None, deepep: bool = False,
) -> str:
    """The mem_fraction_static estimate written out with this scenario's numbers (for `advisor explain`)."""
    if mem_mib is None:
        fallback = 0.95 if release is not None and parse_release(release) >= (0, 5, 20) else 0.88
        return f"mem_fraction_static: GPU memory unknown, so no estimate (SGLang uses {fallback} without a GPU memory figure)"
    value = memory_defaults(mem_mib, tp, dp_attention, dp_size, vision, prefill_graph, release, deepep)
    chunk, max_bs = memory_tier(mem_mib, tp, release)
    terms = [f"512 + 1.5 x {max(chunk, 2048)} (chunked prefill) + 2 x {max_bs} (CUDA-graph batch) + {tp}/8 x 1024 (tp)"]
    if dp_attention:
        terms.append(f" + 3 x {max_bs} x {dp_size} (DP attention)")
        if max_bs > 300:
            terms.append(f" + 1.5 x {max_bs} x {dp_size} (DP attention, batch > 300)")
    raw = 512 + max(chunk, 2048) * 1.5 + max_bs * 2 + tp / 8 * 1024
    if dp_attention:
        raw += max_bs * dp_size * 3 + (max_bs * dp_size * 1.5 if max_bs > 300 else 0)
    if prefill_graph is not None:
        raw += prefill_graph_reserve(chunk, prefill_graph, deepep)
        sizes = len(deepep_prefill_graph_sizes() if deepep else prefill_graph_sizes(chunk))
        terms.append(" + 1.5 x 1024 (prefill CUDA graphs, MLA)" if prefill_graph == "mla"
                     else f" + 8 x {sizes} (prefill CUDA graph sizes)")  # fmt: skip
        if deepep:
            terms.append(" + 1024 (prefill graph capture with DeepEP)")
    reserved = reserved_mib(chunk, max_bs, tp, dp_attention, dp_size, mem_mib, prefill_graph, deepep)
    text = f"reserved = {''.join(terms)} = {raw:g} MiB"
    floored = max(raw, 10 * 1024) if mem_mib > 60 * 1024 else raw
    if floored != raw:
        text += f", raised to the 10 GiB floor above 60 GiB: {floored:g} MiB"
    if deepep:
        text += f", + {DEEPEP_A2A_RESERVE} (DeepEP buffers, above the floor) = {reserved:g} MiB"
    base = round((mem_mib - reserved) / mem_mib, 3)
    text += f"; mem_fraction_static = ({mem_mib} - {reserved:g}) / {mem_mib} = {base}"
    if vision is not None:
        text += f", x {vlm_factor(vision):.4f} for the vision tower = {value['mem_fraction_static']:.4f}"
    text += ". Lower it (--mem-fraction-static) if start-up runs out of memory; raise it for a larger KV cache"
    return text


def vlm_factor(vision: tuple[int | None, int | None]) -> float:
    """adjust_mem_fraction_for_vlm: 0.95 x a factor in [0.8, 1.05] from the vision tower's layers x hidden size squared,
    relative to 24 layers of 1024 (the defaults SGLang assumes when vision_config lacks the keys)."""
    layers, hidden = vision[0] or 24, vision[1] or 1024
    ratio = layers * hidden**2 / (24 * 1024**2)
    return 0.95 * max(0.8, min(1.05, 1.0 - 0.1 * (ratio - 1.0)))


# Up to v0.5.12 the DeepSeek sparse-attention models (DSA) are on SGLang's piecewise-CUDA-graph exclusion list
# (configs/model_config.py: piecewise_cuda_graph_disabled_model_archs, is_deepseek_nsa); v0.5.13 takes them off it.
DSA_NO_PREFILL_GRAPH_UNTIL = "0.5.12"
# v0.5.18: the prefill graph is the "breakable" backend by default (cuda_graph_config); it stays on for the hybrid
# linear-attention models and DP attention, and among multimodal models for those on SGLang's list
# (configs/model_config.py multimodal_breakable_cuda_graph_supported_model_archs); DeepSeek V4 turns it off.
BREAKABLE_PREFILL_GRAPH_FROM = "0.5.18"
BREAKABLE_MULTIMODAL_ARCHS = frozenset({
    "InternS2MobiusForConditionalGeneration", "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration",
    "MuseGlimmerForConditionalGeneration", "KimiK3ForConditionalGeneration", "KimiK25ForConditionalGeneration",
})  # fmt: skip
PREFILL_GRAPH_WITH_DP_FROM = "0.5.18"  # DP attention and a2a no longer turn it off (v0.5.18 golden; v0.5.15-17 unchecked)
PREFILL_GRAPH_FROM = "0.5.10"  # --disable-piecewise-cuda-graph (on by default) appears in v0.5.10; the v0.5.10, v0.5.13, v0.5.14 goldens
# Hybrid linear-attention models whose prefill CUDA graph SGLang leaves off (seen in the v0.5.14 golden).
NO_PREFILL_GRAPH_ARCHS = frozenset({"Qwen3NextForCausalLM", "Qwen3_5MoeForConditionalGeneration", "Qwen3_5ForConditionalGeneration"})


def prefill_graph_kind(s: Scenario, version: str) -> str | None:
    """The attention kind sizing the prefill CUDA-graph reserve, or None when that graph is off: before PREFILL_GRAPH_FROM, with DP
    attention, with an MoE all-to-all backend, for multimodal and hybrid linear-attention models."""
    if parse_release(rules_release(version)) < parse_release(PREFILL_GRAPH_FROM) or s.model is None:
        return None
    release = parse_release(rules_release(version))
    if release < parse_release(PREFILL_GRAPH_WITH_DP_FROM) and (
        s.intent.dp_attention or s.intent.moe_a2a_backend not in (None, "", "none")
    ):
        return None
    if release >= parse_release(BREAKABLE_PREFILL_GRAPH_FROM):
        if s.model.vision is not None and s.model.architecture not in BREAKABLE_MULTIMODAL_ARCHS:
            return None
        if s.model.architecture == "DeepseekV4ForCausalLM":
            return None
        return attention_kind(s.model)
    if s.model.vision is not None or s.model.architecture in NO_PREFILL_GRAPH_ARCHS:
        return None
    if release <= parse_release(DSA_NO_PREFILL_GRAPH_UNTIL) and s.model.architecture in NSA_ARCHS:
        return None
    return attention_kind(s.model)


def memory_decision(s: Scenario, version: str) -> Decision:
    release = rules_release(version)
    mem = None if s.no_gpu else s.min_memory_mib

    def memory(s: Scenario):
        if s.no_gpu:
            return False, "no GPU", "GPU memory known"
        return (None if mem is None else True), (f"{mem} MiB (smallest GPU)" if mem else "unknown"), "GPU memory known"

    conditions = (
        Condition("gpu_memory", "GPU memory of the smallest GPU", memory,
                  "SGLang sizes chunked prefill, CUDA-graph batch and the static memory fraction from it",
                  "pass --chunked-prefill-size, --cuda-graph-max-bs, --mem-fraction-static to choose"),
    )  # fmt: skip
    results = tuple(c.evaluate(s) for c in conditions)
    vision = s.model.vision if s.model is not None else None
    prefill_graph = prefill_graph_kind(s, version)
    deepep = s.intent.moe_a2a_backend == "deepep" and parse_release(release) >= parse_release(BREAKABLE_PREFILL_GRAPH_FROM)
    value = memory_defaults(mem, s.tp, s.intent.dp_attention, s.intent.dp_size, vision, prefill_graph, release, deepep)
    explicit = {
        "chunked_prefill_size": s.flag("--chunked-prefill-size"),
        "cuda_graph_max_bs": s.flag("--cuda-graph-max-bs"),
        "mem_fraction_static": s.flag("--mem-fraction-static"),
    }
    for key, raw in explicit.items():
        if raw:
            with contextlib.suppress(ValueError):
                value[key] = float(raw) if key == "mem_fraction_static" else int(raw)
    forced = any(explicit.values())
    state = state_of(results, forced_on=forced)
    if state == NOT_ENABLED:
        value = {k: None for k in value}
    notes = [memory_arithmetic(mem, s.tp, s.intent.dp_attention, s.intent.dp_size, vision, prefill_graph, release, deepep)]
    if explicit["mem_fraction_static"]:
        notes.append(f"--mem-fraction-static {explicit['mem_fraction_static']} replaces the estimate")
    if s.intent.dp_attention and s.intent.dp_size > 1:
        notes.append(f"with DP attention chunked_prefill_size is divided by dp size {s.intent.dp_size}")
    return Decision(
        id="memory_defaults",
        title="GPU-memory-driven defaults",
        state=state,
        enabled=is_enabled(state),
        value=value,
        conditions=results,
        flags=(),
        source=Source(f"sglang v{release}", SERVER_ARGS if parse_release(release) < (0, 5, 19) else MEMORY_HOOK,
                      "_handle_gpu_memory_settings, PR #10975"),
        notes=tuple(notes),
    )


# -- all SGLang decisions ----------------------------------------------------------------------------------------------


def decide(s: Scenario, version: str) -> tuple[list[Decision], list[Problem]]:
    fusion = fusion_decision(s, version)
    decisions = [
        fusion,
        custom_allreduce_decision(s, version),
        attention_decision(s, version),
        moe_runner_decision(s, version),
        memory_decision(s, version),
    ]
    return decisions, fusion_problems(s, fusion, version)

