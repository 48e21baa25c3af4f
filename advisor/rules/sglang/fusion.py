"""FlashInfer allreduce fusion: the named conditions a row of SGLang's release table (advisor.rules.sglang.releases)
lists, the decision they reach and the release matrix."""

from __future__ import annotations

from dataclasses import dataclass

from advisor.rules import flashinfer as fi
from advisor.rules.engine import (
    AUTO_ENABLED,
    NOT_ENABLED,
    Condition,
    ConditionResult,
    Decision,
    Problem,
    ReleaseOutcome,
    Scenario,
    Source,
    check_tp_gt_1,
    decided,
    fusion_workspace_unmapped,
    is_enabled,
    parse_release,
    release_outcome,
    state_of,
)
from advisor.rules.sglang.architectures import loaded_architecture, uses_dsa
from advisor.rules.sglang.common import (
    ATTN_CP,
    BACKEND_FLAG,
    BOOL_FLAG,
    DETERMINISTIC,
    DISABLE_CUSTOM_AR,
    ENFORCE_DISABLE,
    FUSION_RUNTIME,
    OVERRIDES,
    _any,
    is_blackwell,
    is_h20,
    is_sm90,
    is_sm100,
)
from advisor.rules.sglang.releases import (
    MIMO_ARCHS,
    MIMO_TP_SIZES,
    RELEASES,
    FusionRow,
    architectures,
    row_for,
    rules_release,
)

FUSE_MAX_TOKENS = 2048  # FUSE_ALLREDUCE_MAX_BATCH_SIZE: workspaces are pre-allocated for this many tokens
LOG_LINE = "Auto-enabling FlashInfer AllReduce Fusion on SM90/SM10X for {arch}"
LOG_LINE_V0523 = "Auto-enabling FlashInfer AllReduce Fusion ({backend}) for {arch}"


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


# v0.5.7 server_args.py _handle_model_specific_adjustments turns DP attention on for a DeepSeek sparse-attention model
# ("DP attention is enabled for DeepSeek NSA": is_deepseek_nsa, architectures[0] one of these) before the fusion step
# reads enable_dp_attention; v0.5.8 dropped that. DeepSeek V3.2 is loaded as V3 there (architectures.py).
NSA_DP_ATTENTION_ARCHS = frozenset(
    {"DeepseekV3ForCausalLM", "MistralLarge3ForCausalLM", "PixtralForConditionalGeneration"}
)


def _c_not_nsa_dp_attention(s: Scenario):
    if s.model is None:
        return None, "model unknown", "not a DeepSeek sparse-attention model"
    nsa = uses_dsa(s.model, "0.5.7") and loaded_architecture(s.model, "0.5.7") in NSA_DP_ATTENTION_ARCHS
    observed = "DeepSeek sparse attention (index_topk): SGLang turns DP attention on" if nsa else "no sparse attention"
    return not nsa, observed, "not a DeepSeek sparse-attention model"


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
            "not_nsa_dp_attention", "not DeepSeek sparse attention (v0.5.7 turns DP attention on for it)",
            _c_not_nsa_dp_attention,
            "v0.5.7 enables DP attention for DeepSeek sparse-attention models before it checks DP attention here",
            "use v0.5.8 or newer, or pass the fusion flag explicitly",
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


def _arch_condition(archs: tuple[str, ...], release: str) -> Condition:
    def check(s: Scenario):
        if s.model is None:
            return None, "model unknown", f"architectures[0] on the v{release} list"
        seen = loaded_architecture(s.model, release)
        observed = s.model.architecture if seen == s.model.architecture else f"{s.model.architecture} (loaded as {seen})"
        return seen in archs, observed, f"one of {len(archs)}: {', '.join(archs)}"

    return Condition(
        "architecture", f"architectures[0] is on the v{release} list", check,
        "SGLang auto-enables the fusion only for architectures whose fused path was benchmarked; it checks"
        " architectures[0] of config.json only. Other model files may implement the fused path but use it only on request",
        f"use a release whose list has the model, or pass {BOOL_FLAG} (up to v0.5.13) /"
        f" {BACKEND_FLAG} auto (v0.5.14+) if the model file implements the fused path",
    )  # fmt: skip


# -- FlashInfer allreduce fusion ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Verdict:
    """What fusion_decision decides for one release before it words its notes: all the release matrix needs."""

    row: FusionRow
    release: str
    results: tuple[ConditionResult, ...]
    state: str
    requested: str | None  # what the user asked for explicitly (forced on), else None
    off: tuple[str, ...]  # the user flags that force it off in this release
    notes: tuple[str, ...]  # about the flags the user passed
    # SGLang sets the flag itself, but with one rank there is no allreduce to fuse: the state says not-enabled.
    no_effect: bool = False
    # SGLang sets the flag (or the user does), but the workspace cannot be mapped here (why): off at start-up.
    unmapped: str | None = None


def _verdict(s: Scenario, version: str, evaluated: dict[str, ConditionResult] | None = None) -> _Verdict:
    """``evaluated``: FUSION_CONDITIONS results already evaluated for this scenario, by id (the release matrix shares
    them across releases: each condition looks at the scenario alone), filled in as they are evaluated."""
    row, _ = row_for(version)
    release = rules_release(version)
    uses_backend = row.flag == BACKEND_FLAG
    if evaluated is None:
        evaluated = {}
    for c in row.conditions:
        if c not in evaluated:
            evaluated[c] = FUSION_CONDITIONS[c].evaluate(s)
    results = (_arch_condition(architectures(row), release).evaluate(s),) + tuple(evaluated[c] for c in row.conditions)
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
    no_effect = state == AUTO_ENABLED and s.tp <= 1  # releases before the tp > 1 condition set the flag at tp 1 too
    unmapped = fusion_workspace_unmapped(s) if is_enabled(state) and not no_effect else None
    if no_effect or unmapped:
        state = NOT_ENABLED
    return _Verdict(row, release, results, state, requested, tuple(off), tuple(notes), no_effect, unmapped)


def release_matrix(s: Scenario) -> tuple[ReleaseOutcome, ...]:
    """The release matrix (the what-if view): the fusion outcome of this scenario under every modelled release. Only
    the verdicts are needed, not the decisions' notes, and the conditions every release shares are evaluated once."""
    evaluated: dict[str, ConditionResult] = {}
    outcomes = []
    for version in RELEASES:
        verdict = _verdict(s, version, evaluated)
        outcomes.append(release_outcome(version, is_enabled(verdict.state), verdict.results))
    return tuple(outcomes)


def fusion_decision(s: Scenario, version: str) -> Decision:
    verdict = _verdict(s, version)
    row, release, results, state = verdict.row, verdict.release, verdict.results, verdict.state
    requested, off, notes = verdict.requested, verdict.off, list(verdict.notes)
    uses_backend = row.flag == BACKEND_FLAG
    enabled = is_enabled(state)
    # SGLang sets its flag (the goldens' fusion field); the user's own flag is already on the command line
    sets_flag = state == AUTO_ENABLED or verdict.no_effect or bool(verdict.unmapped and not requested)
    value: str | bool | None
    auto_backend = "cutedsl" if s.model is not None and s.model.architecture in MIMO_ARCHS else "auto"
    if uses_backend:
        value = (requested or auto_backend) if enabled or sets_flag else None
        flags = (BACKEND_FLAG, value) if sets_flag else ()
    else:
        value = enabled or sets_flag
        flags = (BOOL_FLAG,) if sets_flag else ()
    # Forced on: the user's own flag is already on the command line (intent.overrides); nothing to add.

    if off:
        notes.append(f"forced off by {' and '.join(off)} (applied after the auto-enable)")
    if verdict.unmapped:
        notes.append(f"off at start-up: {verdict.unmapped}, so FlashInfer's IPC workspace cannot be created; SGLang logs"
                     " 'Failed to initialize FlashInfer workspace ... Disabling flashinfer allreduce fusion permanently'"
                     " and uses the plain allreduce (v0.5.23 layers/flashinfer_comm_fusion.py)")  # fmt: skip
    if verdict.no_effect:
        notes.append(f"flag set, no effect: SGLang v{release} sets {' '.join(map(str, flags))} at tp 1 too, but with one"
                     " rank there is no allreduce to fuse (the fused kernel needs tp_size > 1)")  # fmt: skip
    if state == AUTO_ENABLED:
        seen = loaded_architecture(s.model, release)
        if parse_release(release) >= (0, 5, 23):
            notes.append("log line: " + LOG_LINE_V0523.format(backend=value, arch=seen))
        elif parse_release(release) >= (0, 5, 10):
            notes.append("log line: " + LOG_LINE.format(arch=seen))
        else:
            notes.append("auto-enabled silently (no log line before v0.5.10)")
        if s.model.architecture.startswith("Deepseek"):
            notes.append("DeepSeek with context-parallel prefill declares DP attention or an a2a backend itself,"
                         " which blocks the auto-enable")  # fmt: skip
    if enabled:
        if s.flashinfer.importable is False:
            notes.insert(0, _import_failure_note(s))
        notes.extend(_runtime_notes(s, row, value))
    elif state == NOT_ENABLED and any(r.id == "architecture" and r.ok is False for r in results):
        notes.append("other model files may implement the fused path; they use it only when the flag is passed")

    source = Source(f"sglang v{release}", row.file if parse_release(release) < (0, 5, 15) else OVERRIDES, row.ref)
    return decided("flashinfer_allreduce_fusion", "FlashInfer allreduce + residual + RMSNorm fusion", state, results,
                   source, value=value, flags=flags, notes=notes)  # fmt: skip


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
