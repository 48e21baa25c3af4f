"""The default attention backend (_handle_attention_backend_compatibility and the model-specific steps before it)."""

from __future__ import annotations

from advisor.rules.engine import NOT_ENABLED, Condition, Decision, Scenario, Source, evaluate, parse_release, state_of
from advisor.rules.sglang.common import ATTENTION_BACKEND, SERVER_ARGS, is_sm90, is_sm100
from advisor.rules.sglang.fusion import NEWEST, rules_release

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
    results = evaluate(conditions, s)
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
    if sm100 and _speculative_qwen_hybrid_trtllm(model.architecture, s, release):
        return "trtllm_mha"
    if sm100 and model.architecture in SM100_MODEL_ATTENTION:
        return SM100_MODEL_ATTENTION[model.architecture]
    if sm100 and newer_hybrids and model.architecture.startswith("Qwen3_5"):
        return "triton"
    topk_ok = s is None or _no_spec_or_topk_one(s)
    fa3_arch = model.architecture in FA3_DEFAULT_ARCHS or (newer_hybrids and model.architecture in HYBRID_ARCHS)
    if sm90 and topk_ok and fa3_arch:
        return "fa3"
    if sm100 and topk_ok and (s is None or not s.flag("--speculative-algorithm") or s.flag(EAGLE_TOPK) is not None):
        return "trtllm_mha"
    return "flashinfer"


EAGLE_TOPK = "--speculative-eagle-topk"
# v0.5.10 server_args.py _handle_model_specific_adjustments (from v0.5.19 arg_groups/model_overrides/qwen3_5.py): on SM10x
# Qwen3-Next and Qwen3.5 take trtllm_mha instead of triton where the general default is trtllm_mha and speculative
# decoding is on (page size 1 is needed only with the radix cache, no mamba extra buffer and no speculative decoding).
QWEN_HYBRID_SPEC_TRTLLM_FROM = "0.5.10"
QWEN_HYBRID_ARCHS = frozenset({"Qwen3NextForCausalLM", "Qwen3_5MoeForConditionalGeneration", "Qwen3_5ForConditionalGeneration"})


def _speculative_qwen_hybrid_trtllm(architecture: str, s: Scenario | None, release: tuple[int, ...]) -> bool:
    if s is None or architecture not in QWEN_HYBRID_ARCHS or release < parse_release(QWEN_HYBRID_SPEC_TRTLLM_FROM):
        return False
    return bool(s.flag("--speculative-algorithm")) and _no_spec_or_topk_one(s) and s.flag(EAGLE_TOPK) is not None


def _no_spec_or_topk_one(s: Scenario) -> bool:
    """is_no_spec_infer_or_topk_one (python/sglang/srt/utils/common.py, v0.5.7-v0.5.23): the top-k the user passed (SGLang
    chooses its own only later, in _handle_speculative_decoding) is absent, or 1 with page size 1. Speculative decoding
    with another top-k keeps standard models off FA3 on Hopper and off trtllm_mha on SM10x, which also needs an explicit
    top-k under speculative decoding (the goldens' spec-* scenarios)."""
    topk, page = s.flag(EAGLE_TOPK), s.flag("--page-size")
    return topk is None or (topk == "1" and page in (None, "1"))
