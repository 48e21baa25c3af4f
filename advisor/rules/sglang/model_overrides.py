"""The attention backend SGLang's per-architecture override steps set when no backend is given
(python/sglang/srt/arg_groups/model_overrides/*.py from v0.5.19, registered with ``_register_for``; issue 31).

Each row is one step: the architectures it may register, where it lives (file:function), the first release its table
holds for, the backend it sets per GPU kind (a kind it does not name keeps the default path), and the config key it
also needs. A step applies to an architecture in a release only where that release's architectures.json places the
name in the step's function, so a release that registers a name later (EXAONE-MoE's second spelling in v0.5.23) or
drops it is followed from its own wheel. The tables are v0.5.23's, checked against the named grid's goldens of v0.5.20
and v0.5.23. Before v0.5.19 the same names were handled inline in ServerArgs._handle_model_specific_adjustments, which
these rows do not claim to model.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.rules.engine import Scenario
from advisor.rules.releases import within
from advisor.rules.sglang.common import is_sm90, is_sm100


@dataclass(frozen=True, slots=True)
class AttentionStep:
    architectures: frozenset[str]
    first: str
    last: str | None  # None: still holds in the newest modelled release
    backends: tuple[tuple[str, str], ...]  # (GPU kind, backend), first match wins: sm100, sm90, sm120, sm80+, any
    where: str  # file:function under python/sglang/srt/, as architectures.json places the names it registers
    needs: str | None = None  # a ModelSpec flag the step also needs
    # where the same step lived before v0.5.19 (inline in server_args.py), for the rows the named grid's v0.5.14 golden
    # shows with the same backends
    before: tuple[str, ...] = ()
    # up to this release the step matched a substring of the name ('"Llama4" in model_arch', v0.5.7-v0.5.10), which no
    # list records: (substring, last release)
    contains: tuple[str, str] | None = None


INLINE = "server_args.py:ServerArgs._handle_model_specific_adjustments"


# MiniMax M3's own step (first in v0.5.16), which also sets page_size 128 and the MoE runner (attention.py page_size,
# moe_runner.py minimax_m3_runner)
MINIMAX_M3_STEP, MINIMAX_M3_FROM = "arg_groups/model_overrides/minimax_m3.py:_minimax_m3_overrides", "0.5.16"
_ALL_GPUS = (("any", "triton"),)
# fmt: off
ATTENTION_STEPS: tuple[AttentionStep, ...] = (
    AttentionStep(frozenset({"BeamForCausalLM"}), "0.5.23", None,
                  (("sm100", "trtllm_mha"), ("sm90", "trtllm_mha"), ("sm120", "trtllm_mha")),
                  "arg_groups/model_overrides/beam.py:_beam_overrides"),
    AttentionStep(frozenset({"Exaone4ForCausalLM", "ExaoneMoEForCausalLM", "ExaoneMoeForCausalLM"}), "0.5.19", None,
                  (("sm100", "trtllm_mha"), ("sm80+", "fa3"), ("any", "triton")),
                  "arg_groups/model_overrides/exaone.py:_exaone_overrides", needs="sliding_window_pattern"),
    # Gemma 4's first step (v0.5.11-v0.5.12 server_args.py _handle_model_specific_adjustments, the
    # ForConditionalGeneration name only) set triton on every GPU; v0.5.13 gave SM10x trtllm_mha
    AttentionStep(frozenset({"Gemma4ForConditionalGeneration"}), "0.5.11", "0.5.12", _ALL_GPUS, INLINE,
                  before=(INLINE,)),
    AttentionStep(frozenset({"Gemma4ForConditionalGeneration", "Gemma4ForCausalLM",
                             "Gemma4UnifiedForConditionalGeneration"}), "0.5.13", None,
                  (("sm100", "trtllm_mha"), ("any", "triton")), "arg_groups/model_overrides/gemma4.py:_gemma4_overrides",
                  before=(INLINE,)),
    AttentionStep(frozenset({"DiffusionGemmaForBlockDiffusion"}), "0.5.21", None, _ALL_GPUS,
                  "arg_groups/model_overrides/gemma4.py:_gemma4_overrides"),
    AttentionStep(frozenset({"Llama4ForConditionalGeneration", "Llama4ForCausalLM"}), "0.5.7", None,
                  (("sm100", "trtllm_mha"), ("sm90", "fa3"), ("any", "triton")),
                  "arg_groups/model_overrides/llama4.py:_llama4_overrides",
                  before=(INLINE, "server_args.py:LLAMA4_MODEL_ARCHS"), contains=("Llama4", "0.5.10")),
    AttentionStep(frozenset({"InklingForConditionalGeneration", "InklingForConditionalGenerationMTP"}), "0.5.19", None,
                  (("sm100", "fa4"), ("sm90", "fa4"), ("any", "triton")),
                  "arg_groups/model_overrides/inkling.py:_inkling_overrides"),
    AttentionStep(frozenset({"Lfm2ForCausalLM", "Lfm2MoeForCausalLM"}), "0.5.7", None, (("sm100", "flashinfer"),),
                  "arg_groups/model_overrides/lfm2.py:_lfm2_overrides", before=(INLINE,)),
    AttentionStep(frozenset({"MiniCPMV4_6ForConditionalGeneration", "MiniCPMV4_7ForConditionalGeneration"}), "0.5.7",
                  None, (("sm100", "triton"),), "arg_groups/model_overrides/minicpmv.py:_minicpm_v4_6_overrides",
                  before=(INLINE,)),
    AttentionStep(frozenset({"FalconH1ForCausalLM", "JetNemotronForCausalLM", "JetVLMForConditionalGeneration"}),
                  "0.5.7", None, (("sm100", "triton"),),
                  "arg_groups/model_overrides/falcon_h1.py:_falcon_h1_jet_overrides", before=(INLINE,)),
    AttentionStep(frozenset({"Olmo2ForCausalLM"}), "0.5.7", None,
                  (("sm100", "trtllm_mha"), ("sm80+", "fa3"), ("any", "triton")),
                  "arg_groups/model_overrides/olmo2.py:_olmo2_overrides", before=(INLINE,)),
    # Step 3.5's inline branch of v0.5.9-v0.5.12 sets only speculative / hierarchical-cache options; the fa4 / fa3
    # choice (with Step 3.7) came in v0.5.13 (server_args.py _handle_model_specific_adjustments)
    AttentionStep(frozenset({"Step3p5ForCausalLM", "Step3p7ForConditionalGeneration"}), "0.5.13", None,
                  (("sm100", "fa4"), ("sm120", "fa4"), ("sm90", "fa3")), "arg_groups/overrides.py:_step3p_overrides",
                  before=(INLINE,)),
    # MiniMax M3 (both names; v0.5.16-v0.5.18 arg_groups/overrides.py, v0.5.19+ model_overrides/minimax_m3.py
    # _minimax_m3_overrides): fa4 on SM10x, fa3 on Hopper, the default path elsewhere. From v0.5.19 an fp8_e4m3 KV
    # cache on SM10x takes trtllm_mha instead (not modelled: the step table has no KV dtype).
    AttentionStep(frozenset({"MiniMaxM3SparseForCausalLM", "MiniMaxM3SparseForConditionalGeneration"}), "0.5.16", None,
                  (("sm100", "fa4"), ("sm90", "fa3")), MINIMAX_M3_STEP),
    # Granite 4.0 hybrid (v0.5.15-v0.5.18 arg_groups/overrides.py, v0.5.19+ model_overrides/granitemoehybrid.py
    # _granite_moe_hybrid_overrides): flashinfer on SM10x when a layer of the config is "mamba" (has_mamba_layers)
    # Before, inline in server_args.py _handle_model_specific_adjustments through _handle_mamba_radix_cache's SM10x
    # default: triton in v0.5.9-v0.5.12, flashinfer in v0.5.13-v0.5.14 (also only with a "mamba" layer)
    AttentionStep(frozenset({"GraniteMoeHybridForCausalLM"}), "0.5.9", "0.5.12", (("sm100", "triton"),), INLINE,
                  needs="mamba_layers", before=(INLINE,)),
    AttentionStep(frozenset({"GraniteMoeHybridForCausalLM"}), "0.5.13", "0.5.14", (("sm100", "flashinfer"),), INLINE,
                  needs="mamba_layers", before=(INLINE,)),
    AttentionStep(frozenset({"GraniteMoeHybridForCausalLM"}), "0.5.15", None, (("sm100", "flashinfer"),),
                  "arg_groups/model_overrides/granitemoehybrid.py:_granite_moe_hybrid_overrides", needs="mamba_layers"),
    # Qwen4-Exp restates Qwen3.5's SM10x default (arg_groups/model_overrides/qwen4_exp.py)
    AttentionStep(frozenset({"Qwen4ExpForConditionalGeneration"}), "0.5.19", None, (("sm100", "triton"),),
                  "arg_groups/model_overrides/qwen4_exp.py:_qwen4_exp_overrides"),
    # Whisper: FlashInfer for its cross-attention CUDA graphs, on every GPU
    AttentionStep(frozenset({"WhisperForConditionalGeneration"}), "0.5.7", None, (("any", "flashinfer"),),
                  "arg_groups/model_override_base.py:get_default_attn_backend",
                  before=("server_args.py:ServerArgs._get_default_attn_backend",)),
    # EmbeddingGemma2 (arg_groups/model_overrides/embedding_gemma2.py, v0.5.22+): triton everywhere, radix cache off
    AttentionStep(frozenset({"EmbeddingGemma2Model"}), "0.5.22", None, _ALL_GPUS,
                  "arg_groups/model_overrides/embedding_gemma2.py:_embedding_gemma2_overrides"),
    # HRM-Text's bidirectional prefill (config prefix_lm, true when absent): triton everywhere
    AttentionStep(frozenset({"HrmTextForCausalLM"}), "0.5.16", None, _ALL_GPUS,
                  "arg_groups/model_hook.py:handle_model_capability_adjustments"),
)
# fmt: on


def gpu_kinds(s: Scenario) -> tuple[str, ...]:
    """The GPU kinds a step's table is read with, most specific first."""
    if s.no_gpu or s.major is None:
        return ()
    kinds = []
    if is_sm100(s)[0]:
        kinds.append("sm100")
    elif is_sm90(s)[0]:
        kinds.append("sm90")
    elif s.major == 12:
        kinds.append("sm120")
    if s.major >= 8:
        kinds.append("sm80+")
    return (*kinds, "any")


def same_function(place: str, where: str) -> bool:
    """Whether an architectures.json place is the step's function wherever the release keeps it: v0.5.15-v0.5.18 hold
    the steps in arg_groups/overrides.py, v0.5.19+ in arg_groups/model_overrides/<family>.py (and HRM-Text's in
    ServerArgs._handle_model_capability_adjustments before model_hook.py's handle_model_capability_adjustments)."""
    return place.rsplit(":", 1)[-1].rsplit(".", 1)[-1].lstrip("_") == where.rsplit(":", 1)[-1].lstrip("_")


def registered_by(architecture: str | None, release: str, where: str) -> bool | None:
    """Whether ``release`` places the name in the step ``where`` (wherever that release keeps the function: overrides.py
    up to v0.5.18, model_overrides/<family>.py from v0.5.19); None when the release places no name there at all (it
    was not read, or has no such step)."""
    from advisor.rules.sglang.architectures import named

    names = named(release) or {}
    if not any(same_function(place, where) for places in names.values() for place in places):
        return None
    return any(same_function(place, where) for place in names.get(architecture or "", ()))


def override_step(architecture: str, release: str) -> AttentionStep | None:
    """The step that sets this architecture's attention backend in ``release``: it registers the name there."""
    from advisor.rules.sglang.architectures import named

    places = (named(release) or {}).get(architecture, ())

    def registers(step: AttentionStep) -> bool:
        if step.contains is not None and within(release, step.first, step.contains[1]):
            return step.contains[0] in architecture
        return architecture in step.architectures and (
            any(same_function(place, step.where) for place in places) or any(b in places for b in step.before)
        )

    return next((step for step in ATTENTION_STEPS if registers(step) and within(release, step.first, step.last)), None)


# The DeepSeek branch of server_args.py _handle_model_specific_adjustments, v0.5.7-v0.5.14 (v0.5.15 moved it to
# arg_groups/overrides.py: _deepseek_family_overrides, _DEEPSEEK_FAMILY_ARCHS, read from architectures.json there): the
# names it listed inline. For them SGLang sets trtllm_mla on SM10x (not DSA) and picks the MoE runner from the
# quantization (attention.py, moe_runner.py).
_DEEPSEEK_V057 = frozenset({"DeepseekV3ForCausalLM", "MistralLarge3ForCausalLM", "PixtralForConditionalGeneration"})
_DEEPSEEK_V059 = _DEEPSEEK_V057 | {"KimiK25ForConditionalGeneration", "GlmMoeDsaForCausalLM"}
DEEPSEEK_BRANCH: tuple[tuple[str, str, frozenset[str]], ...] = (
    ("0.5.7", "0.5.8", _DEEPSEEK_V057),
    ("0.5.9", "0.5.11", _DEEPSEEK_V059),
    ("0.5.12", "0.5.14", _DEEPSEEK_V059 | {"DeepseekV32ForCausalLM"}),
)


def deepseek_branch(release: str) -> frozenset[str] | None:
    """The names the inline DeepSeek branch of ``release`` lists; None from v0.5.15 (the family step's own list)."""
    return next((names for first, last, names in DEEPSEEK_BRANCH if within(release, first, last)), None)


def registers_minimax_m3(architecture: str | None, release: str) -> bool:
    """Whether ``release`` runs MiniMax M3's step for this architecture (architectures.json places it there)."""
    from advisor.rules.sglang.architectures import named

    places = (named(release) or {}).get(architecture or "", ())
    return within(release, MINIMAX_M3_FROM, None) and any(same_function(p, MINIMAX_M3_STEP) for p in places)


# SGLang's own GraniteMoeHybridConfig (configs/granitemoehybrid.py) renames transformers >= 5.15's "linear_attention"
# layers to "mamba" from v0.5.19 (_to_sglang_layer_types), so a config written by a newer transformers counts as Mamba
# there; v0.5.15-v0.5.18 read the names as written (the named grid's v0.5.18 golden keeps the default path).
MAMBA_LAYER_ALIAS_FROM = "0.5.19"


def has_mamba_layers(model, release: str) -> bool:
    """The Granite step's has_mamba: a "mamba" entry in the config's layer_types as SGLang's config class reads it."""
    types = getattr(model, "layer_types", ()) or ()
    return "mamba" in types or ("linear_attention" in types and within(release, MAMBA_LAYER_ALIAS_FROM, None))


# step.needs names a ModelSpec flag, or one of these release-aware tests of the config
RELEASE_NEEDS = {"mamba_layers": has_mamba_layers}


def _needs_met(step: AttentionStep, model, release: str) -> bool:
    if step.needs is None:
        return True
    if step.needs in RELEASE_NEEDS:
        return model is not None and RELEASE_NEEDS[step.needs](model, release)
    return bool(getattr(model, step.needs, False))


def step_attention(s: Scenario, architecture: str, release: str) -> str | None:
    """The backend the architecture's own step sets on this GPU, or None where it leaves the default path."""
    step = override_step(architecture, release)
    if step is None or not _needs_met(step, s.model, release):
        return None
    kinds = gpu_kinds(s)
    return next((backend for kind, backend in step.backends if kind in kinds), None)


# ModelConfig.is_multimodal_chunked_prefill_supported: a multimodal model on its list runs without chunked prefill
# (chunked_prefill_size -1, "Automatically turn off --chunked-prefill-size"; server_args.py, from v0.5.19
# arg_groups/model_hook.py handle_model_capability_adjustments). The list is read from architectures.json.
CHUNKED_UNSUPPORTED = "configs/model_config.py:is_multimodal_chunked_prefill_supported"
# Called from v0.5.16 (the named grid's v0.5.16 to v0.5.23 goldens); v0.5.14's keeps chunked prefill for CLIP and Mllama.
CHUNKED_UNSUPPORTED_FROM = "0.5.16"
# HRM-Text (model_type hrm_text or the name; its config's prefix_lm, true when absent, is not read): chunked prefill,
# the radix cache and CUDA graphs off (server_args.py _handle_model_capability_adjustments from v0.5.16; v0.5.19+
# arg_groups/model_hook.py handle_model_capability_adjustments).
HRM_TEXT, HRM_TEXT_FROM = ("hrm_text", "HrmTextForCausalLM"), "0.5.16"


def is_hrm_text(model, release: str) -> bool:
    return (model is not None and within(release, HRM_TEXT_FROM, None)
            and (model.model_type == HRM_TEXT[0] or model.architecture == HRM_TEXT[1]))  # fmt: skip


def chunked_prefill_off(model, release: str) -> str | None:
    """Why SGLang turns chunked prefill off for this model (chunked_prefill_size -1), or None."""
    from advisor.rules.sglang.architectures import loaded_architecture, named
    from advisor.rules.sglang.embedding import chunked_prefill_off as embedding_chunked_prefill_off
    from advisor.rules.sglang.model_config import is_multimodal

    if model is None:
        return None
    if is_hrm_text(model, release):
        return "HRM-Text's bidirectional prefill (model_hook.py handle_model_capability_adjustments)"
    embedding = embedding_chunked_prefill_off(model, release)
    if embedding is not None:
        return embedding
    places = (named(release) or {}).get(loaded_architecture(model, release), ())
    if (
        CHUNKED_UNSUPPORTED in places
        and within(release, CHUNKED_UNSUPPORTED_FROM, None)
        and is_multimodal(model, release)
    ):
        return "a multimodal model without chunked-prefill support (model_config.py is_multimodal_chunked_prefill_supported)"
    return None
