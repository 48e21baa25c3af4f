"""The MoE runner backend SGLang picks with --moe-runner-backend auto (_handle_moe_kernel_config, the model steps)."""

from __future__ import annotations

from dataclasses import dataclass

from advisor.rules.engine import (
    AUTO_ENABLED,
    FORCED_ON,
    Condition,
    Decision,
    Scenario,
    Setting,
    Source,
    decided,
    evaluate,
    is_enabled,
    parse_release,
    state_of,
)
from advisor.rules.releases import within
from advisor.rules.sglang.architectures import loaded_architecture, placed_in
from advisor.rules.sglang.common import MOE_RUNNER_BACKEND, OVERRIDES, SERVER_ARGS, is_sm90, is_sm100, is_sm120
from advisor.rules.sglang.fusion import _c_a2a_none
from advisor.rules.sglang.model_overrides import DEEPSEEK_BRANCH, registered_by, registers_minimax_m3
from advisor.rules.sglang.releases import rules_release

_DEEPSEEK_FAMILY = frozenset({
    "DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM", "DeepseekV4ForCausalLM", "KimiK25ForConditionalGeneration",
    "MistralLarge3ForCausalLM", "GlmMoeDsaForCausalLM",
})  # fmt: skip
_QWEN_FAMILY = frozenset({
    "Qwen3MoeForCausalLM", "Qwen3VLMoeForConditionalGeneration", "Qwen3NextForCausalLM",
    "Qwen3_5MoeForConditionalGeneration", "Qwen3_5ForConditionalGeneration",
})  # fmt: skip


@dataclass(frozen=True, slots=True)
class MoeRunnerRow:
    """One family's FlashInfer MoE default under releases first..last (_handle_model_specific_adjustments)."""

    first: str
    last: str | None  # None: the row still holds in the newest modelled release
    families: frozenset[str]
    quantizations: frozenset[str | None]  # None stands for unquantized
    backend: str
    gpu: str = "sm100"  # "sm100": SM10x only; "sm120": SM12x only (is_sm100_supported / is_sm120_supported)
    a2a_blocks: bool = True  # an MoE all-to-all backend keeps the runner on auto


_GPT_OSS = frozenset({"GptOssForCausalLM"})
_GLM45 = frozenset({"Glm4MoeForCausalLM"})
_DEEPSEEK_V3 = frozenset({"DeepseekV3ForCausalLM"})
_QUANT_TRTLLM = frozenset({"fp8", "modelopt_fp8", "modelopt_fp4"})
_PIXTRAL = frozenset({"PixtralForConditionalGeneration"})
_LONGCAT = frozenset({"LongcatFlashForCausalLM"})
_DOTS3 = frozenset({"Dots3NoteForCausalLM"})
_GLM5_NEXT_HY_V4 = frozenset({"Glm5NextForConditionalGeneration", "HYV4ForCausalLM"})
_COHERE2_MOE = frozenset({"Cohere2VisionForConditionalGeneration", "Cohere2MoeForCausalLM"})
# Gemma 4's step (v0.5.13-v0.5.14 inline in server_args.py _handle_model_specific_adjustments, v0.5.15-v0.5.18
# arg_groups/overrides.py, v0.5.19+ arg_groups/model_overrides/gemma4.py _gemma4_overrides): on SM10x a modelopt_fp4
# checkpoint gets flashinfer_trtllm ("Use flashinfer_trtllm as MoE runner backend on SM100 for Gemma-4 (modelopt_fp4)"),
# MoE or not and whatever the a2a backend; from v0.5.15 for every name the step registers (architectures.json; the
# fuzz run found it with a quantization_config added to the named configs).
_GEMMA4 = frozenset({"Gemma4ForConditionalGeneration", "Gemma4ForCausalLM", "Gemma4UnifiedForConditionalGeneration"})
GEMMA4_STEP, GEMMA4_STEP_FROM = "arg_groups/model_overrides/gemma4.py:_gemma4_overrides", "0.5.15"
# fmt: off
MOE_RUNNER_TABLE: tuple[MoeRunnerRow, ...] = (
    # DeepSeek family: fp8/modelopt checkpoints; an unquantized DeepSeek V3 is defaulted to fp8 first ("Quantization not
    # specified, default to fp8 for DeepSeek on sm100") up to v0.5.10; v0.5.11 keeps it bf16 unless the safetensors hold
    # FP8 experts (server_args.py _handle_model_specific_adjustments, has_fp8_weights_in_checkpoint; a config without
    # quantization_config reads as bf16 here), so its runner stays auto. From v0.5.12 unquantized checkpoints of the
    # whole family too ("or self.quantization is None"), which brings GLM-5 and an unquantized Kimi K2.5 in.
    MoeRunnerRow("0.5.7", "0.5.10", _DEEPSEEK_V3, _QUANT_TRTLLM | {None}, "flashinfer_trtllm"),
    # Up to v0.5.14 the family is what the inline DeepSeek branch lists (model_overrides.DEEPSEEK_BRANCH: Mistral
    # Large 3's Pixtral wrapper from v0.5.7, Kimi K2.5 and GLM-5 from v0.5.9); DeepSeek V4 (v0.5.12+) has a branch of
    # its own there that sets no MoE runner.
    *(MoeRunnerRow(first, last, names, _QUANT_TRTLLM | ({None} if within(first, "0.5.12", None) else set()),
                   "flashinfer_trtllm") for first, last, names in DEEPSEEK_BRANCH),
    MoeRunnerRow("0.5.15", None, _DEEPSEEK_FAMILY, _QUANT_TRTLLM | {None}, "flashinfer_trtllm"),
    # The rest of arg_groups/overrides.py _DEEPSEEK_FAMILY_ARCHS, which _deepseek_moe_quant_resolution reads
    # (architectures.json; issue 31): Mistral Large 3's Pixtral wrapper from v0.5.15; LongCat-Flash in v0.5.16 only
    # (from v0.5.17 "not model_arch.startswith('LongcatFlash')": its top-k spans zero-expert logits; the named grid's
    # v0.5.18 golden says auto); dots3 from v0.5.19;
    # GLM-5-Next and HY-V4 from v0.5.20.
    MoeRunnerRow("0.5.15", None, _PIXTRAL, _QUANT_TRTLLM | {None}, "flashinfer_trtllm"),
    MoeRunnerRow("0.5.16", "0.5.16", _LONGCAT, _QUANT_TRTLLM | {None}, "flashinfer_trtllm"),
    MoeRunnerRow("0.5.19", None, _DOTS3, _QUANT_TRTLLM | {None}, "flashinfer_trtllm"),
    MoeRunnerRow("0.5.20", None, _GLM5_NEXT_HY_V4, _QUANT_TRTLLM | {None}, "flashinfer_trtllm"),
    # Command A+ (arg_groups/model_overrides/cohere2_moe.py, v0.5.19+): unquantized (or NVFP4-packed, not modelled)
    # checkpoints on SM10x, whatever the a2a backend
    MoeRunnerRow("0.5.19", None, _COHERE2_MOE, frozenset({None}), "flashinfer_trtllm", a2a_blocks=False),
    MoeRunnerRow("0.5.13", None, _GEMMA4, frozenset({"modelopt_fp4"}), "flashinfer_trtllm", a2a_blocks=False),
    MoeRunnerRow("0.5.7", "0.5.7", _QWEN_FAMILY, frozenset({"fp8", "modelopt_fp4"}), "flashinfer_trtllm"),
    # v0.5.8: unquantized checkpoints too ("self.quantization in (fp8, modelopt_fp4) or self.quantization is None")
    MoeRunnerRow("0.5.8", None, _QWEN_FAMILY, frozenset({"fp8", "modelopt_fp4", None}), "flashinfer_trtllm"),
    # GLM-4.5: modelopt_fp4 only (read in v0.5.8 to v0.5.11; it also needs flashinfer-python >= 0.6.2), unquantized
    # checkpoints too by v0.5.18 (the v0.5.14 golden still says auto, the v0.5.23 golden flashinfer_trtllm; v0.5.15, where
    # this step moved to arg_groups/overrides.py, is taken as the first)
    MoeRunnerRow("0.5.7", "0.5.14", _GLM45, frozenset({"modelopt_fp4"}), "flashinfer_trtllm"),
    MoeRunnerRow("0.5.15", None, _GLM45, frozenset({"modelopt_fp4", None}), "flashinfer_trtllm"),
    # GPT-OSS with MXFP4 weights: FlashInfer's MXFP4 kernel on SM10x; on SM12x it changed four times (the Blackwell check
    # up to v0.5.9, then "trtllm-gen only supports SM100": triton_kernel, Marlin from v0.5.14, FlashInfer again from v0.5.17)
    MoeRunnerRow("0.5.7", None, _GPT_OSS, frozenset({"mxfp4"}), "flashinfer_mxfp4", a2a_blocks=False),
    MoeRunnerRow("0.5.7", "0.5.9", _GPT_OSS, frozenset({"mxfp4"}), "flashinfer_mxfp4", gpu="sm120", a2a_blocks=False),
    MoeRunnerRow("0.5.10", "0.5.13", _GPT_OSS, frozenset({"mxfp4"}), "triton_kernel", gpu="sm120", a2a_blocks=False),
    MoeRunnerRow("0.5.14", "0.5.16", _GPT_OSS, frozenset({"mxfp4"}), "marlin", gpu="sm120", a2a_blocks=False),
    MoeRunnerRow("0.5.17", None, _GPT_OSS, frozenset({"mxfp4"}), "flashinfer_mxfp4", gpu="sm120", a2a_blocks=False),
)
# fmt: on
NEMOTRON_H = frozenset({"NemotronHForCausalLM", "NemotronHPuzzleForCausalLM"})
# The one decision both the family table and Nemotron-H's override step make.
MOE_RUNNER_TITLE = "MoE runner backend (--moe-runner-backend auto)"


# From v0.5.15 the Qwen family is whatever its step registers (arg_groups/overrides.py, v0.5.19+
# model_overrides/qwen3_moe.py _qwen3_moe_family_overrides; architectures.json): InternS2-Preview and Qwen4-Exp join the
# names above. InternS2-Preview was already on the inline list of v0.5.12-v0.5.14 (server_args.py
# _handle_model_specific_adjustments).
QWEN_FAMILY_STEP, QWEN_FAMILY_STEP_FROM = "arg_groups/model_overrides/qwen3_moe.py:_qwen3_moe_family_overrides", "0.5.15"
QWEN_INLINE_INTERN_S2 = ("InternS2PreviewForConditionalGeneration", "0.5.12", "0.5.14")


# From v0.5.15 the DeepSeek family's MoE step (_deepseek_moe_quant_resolution) is read from the release's own
# arg_groups/overrides.py _DEEPSEEK_FAMILY_ARCHS (architectures.json), drafts included (HY-V4's NextN). LongCat-Flash
# joins that list in v0.5.16 and takes flashinfer_trtllm there; from v0.5.17 the step skips the names starting with
# LongcatFlash ("LongCat top-k spans the zero-expert logits").
DEEPSEEK_FAMILY_LIST, DEEPSEEK_FAMILY_LIST_FROM = "arg_groups/overrides.py:_DEEPSEEK_FAMILY_ARCHS", "0.5.15"
LONGCAT_SKIPPED_FROM = "0.5.17"


def _in_family(row: MoeRunnerRow, architecture: str, release: str) -> bool:
    if architecture in row.families:
        return True
    if row.families is _DEEPSEEK_FAMILY and within(release, DEEPSEEK_FAMILY_LIST_FROM, None):
        skipped = architecture.startswith("LongcatFlash") and within(release, LONGCAT_SKIPPED_FROM, None)
        return placed_in(architecture, release, DEEPSEEK_FAMILY_LIST) and not skipped
    if row.families is _GEMMA4:
        return within(release, GEMMA4_STEP_FROM, None) and bool(registered_by(architecture, release, GEMMA4_STEP))
    if row.families is not _QWEN_FAMILY:
        return False
    name, first, last = QWEN_INLINE_INTERN_S2
    if architecture == name and within(release, first, last):
        return True
    return within(release, QWEN_FAMILY_STEP_FROM, None) and bool(registered_by(architecture, release, QWEN_FAMILY_STEP))


def moe_runner_row(
    architecture: str, version: str, gpu: str = "sm100", quantization: str | None = "?"
) -> MoeRunnerRow | None:
    """The row for this architecture, release and GPU kind; with ``quantization`` given, the first row allowing it."""
    release = rules_release(version)
    rows = [r for r in MOE_RUNNER_TABLE if _in_family(r, architecture, release) and r.gpu == gpu
            and within(release, r.first, r.last)]  # fmt: skip
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
    arch = loaded_architecture(model, release) if model is not None else None
    entry = moe_runner_row(arch, version, gpu_kind, model.quantization) if model is not None else None
    if model is not None and model.architecture in NEMOTRON_H:
        return _nemotron_h_decision(s, release)
    if model is not None and model.quantization is None and registers_minimax_m3(arch, release):
        return _minimax_m3_decision(s, release)
    if model is not None and minimax_m2_step(model, arch, release):
        return _minimax_m2_decision(s, release)
    fixed = next((backend for place, backend in FIXED_RUNNER_STEPS if registered_by(arch, release, place)), None)
    if model is not None and fixed is not None:
        return _fixed_step_decision(s, release, fixed)
    if (
        model is not None
        and within(release, DEEPSEEK_V4_STEP_FROM, None)
        and placed_in(arch, release, DEEPSEEK_V4_STEP)
    ):
        return _deepseek_v4_decision(s, release)

    def is_moe(s: Scenario):
        if model is not None and not model.is_moe and entry is not None:
            # the family steps set the field without asking (a dense Qwen3.5, Command A Vision): unused there
            return True, "dense (SGLang sets the runner for the family anyway; no MoE layer uses it)", "a MoE model"
        return (
            (None if model is None else model.is_moe),
            ("model unknown" if model is None else f"{model.num_experts or 0} experts"),
            "a MoE model",
        )

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
            return (
                True,
                f"moe_a2a_backend {s.intent.moe_a2a_backend or 'none'}",
                f"any (not checked for {entry.backend})",
            )
        return _c_a2a_none(s)

    def family(s: Scenario):
        if model is None:
            return None, "model unknown", "a family with a FlashInfer MoE path"
        return (
            entry is not None,
            model.architecture,
            "DeepSeek/Kimi/Mistral-Large-3/GLM-5, Qwen3 MoE family, GLM-4.5/4.6, GPT-OSS",
        )

    def quant(s: Scenario):
        if model is None or entry is None:
            return (
                (None if model is None else False),
                (model.quantization if model else None) or "unquantized",
                "a supported quantization",
            )
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
    results = evaluate(conditions, s)
    chosen = s.flag(MOE_RUNNER_BACKEND)
    state = state_of(results, forced_on=bool(chosen and chosen != "auto"))
    value = chosen if state == FORCED_ON else (entry.backend if state == AUTO_ENABLED else "auto")
    notes = []
    if not is_enabled(state):
        notes.append("auto: the MoE layer picks its kernel at load time (triton for most formats)")
    source = Source(f"sglang v{release}", SERVER_ARGS, "_handle_moe_kernel_config")
    ep, why = ep_size(s, release)
    notes.append(f"ep_size {ep}: {why}")
    return decided("moe_runner_backend", MOE_RUNNER_TITLE, state, results, source, value=value, notes=notes,
                   settings=(Setting("ep_size", ep),))  # fmt: skip


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
    results = evaluate(conditions, s)
    chosen = s.flag(MOE_RUNNER_BACKEND)
    state = state_of(results, forced_on=bool(chosen and chosen != "auto"))
    final = chosen if state == FORCED_ON else (value if state == AUTO_ENABLED else "auto")
    notes = [f"{why}: {value}"] if value else ["auto: the MoE layer picks its kernel at load time"]
    source = Source(f"sglang v{release}", _nemotron_h_file(release), "Nemotron-H defaults")
    ep, ep_why = ep_size(s, release)
    notes.append(f"ep_size {ep}: {ep_why}")
    return decided("moe_runner_backend", MOE_RUNNER_TITLE, state, results, source, value=final, notes=notes,
                   settings=(Setting("ep_size", ep),))  # fmt: skip


MINIMAX_M3_FILE = "python/sglang/srt/arg_groups/model_overrides/minimax_m3.py"


def _minimax_m3_decision(s: Scenario, release: str) -> Decision:
    """MiniMax M3's step (overrides.py / model_overrides/minimax_m3.py _minimax_m3_overrides, v0.5.16+): an unquantized
    checkpoint whose runner is auto or deep_gemm ("produces corrupted output on bf16 full weights") takes triton, on
    every GPU. Quantized checkpoints take the general path here (their SM10x/ROCm rows are not modelled)."""
    chosen = s.flag(MOE_RUNNER_BACKEND)

    def family(s: Scenario):
        return True, f"{s.model.architecture}, unquantized", "MiniMax M3 with bf16 weights"

    conditions = (
        Condition("model_family", "MiniMax M3 sets its own MoE runner", family,
                  "MiniMax M3's override step sets triton for bf16 weights whether or not a runner is auto",
                  f"pass {MOE_RUNNER_BACKEND} NAME (deep_gemm is turned back into triton)"),
    )  # fmt: skip
    results = evaluate(conditions, s)
    forced = bool(chosen and chosen not in ("auto", "deep_gemm"))
    state = state_of(results, forced_on=forced)
    final = chosen if state == FORCED_ON else "triton"
    where = OVERRIDES if parse_release(release) < (0, 5, 19) else MINIMAX_M3_FILE
    source = Source(f"sglang v{release}", where, "_minimax_m3_overrides")
    ep, ep_why = ep_size(s, release)
    notes = ["unquantized MiniMax M3: triton", f"ep_size {ep}: {ep_why}"]
    return decided("moe_runner_backend", MOE_RUNNER_TITLE, state, results, source, value=final, notes=notes,
                   settings=(Setting("ep_size", ep),))  # fmt: skip


# Model steps that set one MoE runner on every GPU when it is auto, for the names the release registers there:
# InternS2-Mobius (arg_groups/model_overrides/interns2_mobius.py, "the only MoE runner validated for the 2,560-expert
# baseline").
FIXED_RUNNER_STEPS = (
    ("arg_groups/model_overrides/interns2_mobius.py:_interns2_mobius_baseline_overrides", "triton_kernel"),
)


def _fixed_step_decision(s: Scenario, release: str, backend: str) -> Decision:
    chosen = s.flag(MOE_RUNNER_BACKEND)

    def family(s: Scenario):
        return True, s.model.architecture, f"a model whose own step sets {backend}"

    conditions = (
        Condition("model_family", "the model's step sets its MoE runner", family,
                  f"its override step sets {backend} whenever the runner is auto", f"pass {MOE_RUNNER_BACKEND} NAME"),
    )  # fmt: skip
    results = evaluate(conditions, s)
    state = state_of(results, forced_on=bool(chosen and chosen != "auto"))
    value = chosen if state == FORCED_ON else backend
    source = Source(f"sglang v{release}", "arg_groups/model_overrides", "the model's override step")
    ep, ep_why = ep_size(s, release)
    return decided("moe_runner_backend", MOE_RUNNER_TITLE, state, results, source, value=value,
                   notes=[f"ep_size {ep}: {ep_why}"], settings=(Setting("ep_size", ep),))  # fmt: skip


# MiniMax M2's step (v0.5.18 arg_groups/overrides.py, v0.5.19+ arg_groups/model_overrides/minimax_m2.py
# _minimax_m2_overrides, for the names the release registers there): on SM10x (get_platform().is_sm100), with the
# runner on auto and a checkpoint ModelConfig reads as modelopt_fp4, it sets flashinfer_trtllm_routed. v0.5.17's step
# set only TF32 matmul.
MINIMAX_M2_STEP, MINIMAX_M2_FP4_FROM = "arg_groups/model_overrides/minimax_m2.py:_minimax_m2_overrides", "0.5.18"
MINIMAX_M2_RUNNER = "flashinfer_trtllm_routed"


def minimax_m2_step(model, arch: str | None, release: str) -> bool:
    """MiniMax M2's step applies its NVFP4 runner: the release registers the name and the checkpoint is modelopt_fp4."""
    return (
        within(release, MINIMAX_M2_FP4_FROM, None)
        and model.quantization == "modelopt_fp4"
        and bool(registered_by(arch, release, MINIMAX_M2_STEP))
    )


def _minimax_m2_decision(s: Scenario, release: str) -> Decision:
    chosen = s.flag(MOE_RUNNER_BACKEND)

    def sm100(s: Scenario):
        ok, observed = is_sm100(s)
        return ok, observed, "SM10x (get_platform().is_sm100)"

    conditions = (
        Condition("sm100", "GPU is SM100 (SM10x)", sm100,
                  f"MiniMax M2's step sets {MINIMAX_M2_RUNNER} for modelopt_fp4 on SM10x only",
                  f"pass {MOE_RUNNER_BACKEND} NAME"),
    )  # fmt: skip
    results = evaluate(conditions, s)
    state = state_of(results, forced_on=bool(chosen and chosen != "auto"))
    value = chosen if state == FORCED_ON else (MINIMAX_M2_RUNNER if state == AUTO_ENABLED else "auto")
    where = OVERRIDES if parse_release(release) < (0, 5, 19) else f"python/sglang/srt/{MINIMAX_M2_STEP.split(':')[0]}"
    source = Source(f"sglang v{release}", where, "_minimax_m2_overrides")
    ep, ep_why = ep_size(s, release)
    notes = ["MiniMax M2 with a modelopt_fp4 checkpoint", f"ep_size {ep}: {ep_why}"]
    return decided("moe_runner_backend", MOE_RUNNER_TITLE, state, results, source, value=value, notes=notes,
                   settings=(Setting("ep_size", ep),))  # fmt: skip


# DeepSeek V4's own step (arg_groups/model_overrides/deepseek_v4.py _deepseek_v4_overrides, v0.5.19+), for the names it
# registers (V4; V4.1 once renamed to V4): with the runner on auto, no a2a backend and a Hopper, SM10x or SM12x GPU, it
# takes flashinfer_mxfp4 for routed experts read as MXFP4 (ModelConfig.is_fp4_experts: SGLANG_DSV4_FP4_EXPERTS, on by
# default, when the checkpoint's header cannot be read). Not modelled: NVFP4 checkpoints (flashinfer_trtllm_routed),
# a checkpoint whose routed_experts_quant_method says otherwise, and the FP4-dequant environment switch.
DEEPSEEK_V4_STEP, DEEPSEEK_V4_STEP_FROM = "arg_groups/model_overrides/deepseek_v4.py:_deepseek_v4_overrides", "0.5.19"


def _deepseek_v4_decision(s: Scenario, release: str) -> Decision:
    chosen = s.flag(MOE_RUNNER_BACKEND)

    def gpu(s: Scenario):
        checks = (is_sm90(s), is_sm100(s), is_sm120(s))
        if any(ok is None for ok, _ in checks):
            return None, checks[0][1], "Hopper, SM10x or SM12x"
        return any(ok for ok, _ in checks), checks[0][1], "Hopper, SM10x or SM12x"

    conditions = (
        Condition("gpu", "GPU with FlashInfer's MXFP4 MoE kernel", gpu,
                  "DeepSeek V4's step takes flashinfer_mxfp4 only on Hopper, SM10x and SM12x",
                  f"pass {MOE_RUNNER_BACKEND} NAME"),
        Condition("a2a_none", "no MoE all-to-all backend", _c_a2a_none,
                  "an a2a backend keeps the runner on auto", "use --moe-a2a-backend none"),
    )  # fmt: skip
    results = evaluate(conditions, s)
    state = state_of(results, forced_on=bool(chosen and chosen != "auto"))
    value = chosen if state == FORCED_ON else ("flashinfer_mxfp4" if state == AUTO_ENABLED else "auto")
    source = Source(f"sglang v{release}", DEEPSEEK_V4_STEP.split(":")[0], "_deepseek_v4_overrides")
    ep, ep_why = ep_size(s, release)
    notes = ["DeepSeek V4's routed experts read as MXFP4 (SGLANG_DSV4_FP4_EXPERTS)", f"ep_size {ep}: {ep_why}"]
    return decided("moe_runner_backend", MOE_RUNNER_TITLE, state, results, source, value=value, notes=notes,
                   settings=(Setting("ep_size", ep),))  # fmt: skip


# -- ep_size -----------------------------------------------------------------------------------------------------------
# --expert-parallel-size, with its aliases --ep-size and --ep (ServerArgs.add_cli_args in every modelled release; from
# v0.5.19 arg_groups/fields/parallel.py), default 1.
EP_SIZE_FLAGS = ("--expert-parallel-size", "--ep-size", "--ep")
# Every all-to-all backend sets ep_size = tp_size, whatever was passed: one `if moe_a2a_backend == X` per backend in
# server_args.py _handle_a2a_moe up to v0.5.14 ("The expert parallel size is adjusted to be the same as the tensor
# parallel size"), the set _A2A_EP_SPANNING_BACKENDS in arg_groups/overrides.py from v0.5.15; every choice of
# --moe-a2a-backend is in it but "none" and "ascend_tp" (v0.5.16+), which SGLang turns back into "none".
NO_EP_A2A = frozenset({"none", "ascend_tp"})


def ep_size(s: Scenario, release: str) -> tuple[int, str]:
    """(the ep_size SGLang resolves, why)."""
    a2a = s.intent.moe_a2a_backend or "none"
    file = OVERRIDES if parse_release(release) >= (0, 5, 15) else SERVER_ARGS
    if a2a not in NO_EP_A2A:
        return s.tp, f"--moe-a2a-backend {a2a} sets ep_size = tp_size (sglang v{release}, {file})"
    for flag in EP_SIZE_FLAGS:
        given = s.int_flag(flag)
        if given is not None:
            return given, f"{flag} {s.flag(flag)}"
    return 1, "the default (no expert parallelism without an a2a backend or --ep-size)"
