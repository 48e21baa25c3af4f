"""The default attention backend (_handle_attention_backend_compatibility and the model-specific steps before it), and
the KV-cache page_size resolved with it."""

from __future__ import annotations

from dataclasses import dataclass

from advisor.rules.engine import (
    NOT_ENABLED,
    Condition,
    Decision,
    Scenario,
    Setting,
    Source,
    evaluate,
    parse_release,
    state_of,
)
from advisor.rules.releases import within
from advisor.rules.sglang.architectures import loaded_architecture, named, placed_in, uses_dsa
from advisor.rules.sglang.common import ATTENTION_BACKEND, OVERRIDES, SERVER_ARGS, is_sm90, is_sm100
from advisor.rules.sglang.model_config import has_asymmetric_kv, has_attention_sinks, is_mla
from advisor.rules.sglang.model_overrides import (
    deepseek_branch,
    is_hrm_text,
    registered_by,
    registers_minimax_m3,
    same_function,
    step_attention,
)
from advisor.rules.sglang.releases import NEWEST, rules_release

SINK_ARCHS = frozenset({"GptOssForCausalLM"})


def attention_kind(model, version: str | None = None) -> str | None:
    """ "mla" where SGLang's ModelConfig reads the model as MLA (its per-release list, model_config.is_mla: a config
    with kv_lora_rank under another name is MHA there), "sinks" for GPT-OSS, else "standard"."""
    if model is None:
        return None
    if is_mla(model, rules_release(version) if version else NEWEST):
        return "mla"
    if model.architecture in SINK_ARCHS:
        return "sinks"
    return "standard"


def attention_decision(s: Scenario, version: str) -> Decision:
    release = rules_release(version)
    kind = attention_kind(s.model, version)
    major = None if s.no_gpu else s.major

    def gpu(s: Scenario):
        if s.no_gpu:
            return False, "no GPU", "a CUDA GPU"
        return (None if major is None else True), f"SM {s.gpu.capability_text}" if s.gpu else "SM ?", "a CUDA GPU"

    def attention(s: Scenario):
        text = {
            "mla": "MLA (DeepSeek family)",
            "sinks": "standard with attention sinks",
            "standard": "standard MHA/GQA",
        }
        observed = text.get(kind, "model unknown")
        if kind == "standard" and s.model.uses_mla:  # configs/model_config.py _derive_model_shapes keys MLA on names
            observed = (f"standard MHA/GQA: the config has kv_lora_rank, but sglang v{release} reads MLA only for the"
                        " architectures on its list")  # fmt: skip
        return (kind is not None) or None, observed, "known attention type"

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
    notes = (
        [f"log line: Attention backend not specified. Use {value} backend by default."] if value and not chosen else []
    )
    # HRM-Text forces triton in a pass after page_size is resolved with the default path's backend
    page_backend = value
    if not chosen and value is not None and is_hrm_text(s.model, release):
        page_backend = _default_attention(kind, major, s.model, s, version, steps=False)
    page, why = page_size(s, version, page_backend, kind, major, chosen)
    notes.append(f"page_size {'unknown' if page is None else page}: {why}")
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
        settings=(Setting("page_size", page),),
    )


# is_fa3_default_architecture (python/sglang/srt/utils/common.py): in v0.5.7 the standard-attention models that default
# to FA3 on Hopper; any other standard model gets FlashInfer there. From v0.5.8 _handle_attention_backend_compatibility
# no longer calls it (flashinfer 0.6.1's Hopper regression, sglang issue #17411): every standard-attention model gets
# FA3 on Hopper, named or not (architectures.json: no release from v0.5.8 names is_fa3_default_architecture).
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


# IQuest-Q1's step (arg_groups/model_overrides/iquest_q1.py _iquest_q1_overrides, v0.5.21+) sets fa3 itself whenever
# no backend is given, for every name it registers (the model and its MTP draft, IQuestQ1MTP): read from the release's
# architectures.json; the model's name alone where the release was not read.
IQUEST_Q1, IQUEST_Q1_FA3_FROM = "IQuestQ1ForCausalLM", "0.5.21"
IQUEST_Q1_STEP = "arg_groups/model_overrides/iquest_q1.py:_iquest_q1_overrides"


# Kimi K3's step (v0.5.17-v0.5.18 arg_groups/overrides.py, v0.5.19+ arg_groups/model_overrides/kimi_k3.py
# _kimi_k3_overrides, for the names the release registers there): on SM100 / SM103 (device_sm 100 or 103), with no
# backend given, no context parallelism and no DSPARK drafting, it sets the prefill and decode backends to trtllm_mla
# ("Use trtllm_mla as the default prefill and decode attention backend for Kimi-K3 on SM100/SM103"), which the
# resolved attention_backend then reads too (the fuzz golden's Kimi K3 with MLA fields on B200).
KIMI_K3_STEP, KIMI_K3_FROM = "arg_groups/model_overrides/kimi_k3.py:_kimi_k3_overrides", "0.5.17"
KIMI_K3_DEVICES = ((10, 0), (10, 3))


def _kimi_k3_trtllm_mla(s: Scenario, model, release: str) -> bool:
    if not within(release, KIMI_K3_FROM, None) or s.no_gpu or s.capability not in KIMI_K3_DEVICES:
        return False
    if (s.flag("--speculative-algorithm") or "").upper() == "DSPARK":
        return False
    return bool(registered_by(loaded_architecture(model, release), release, KIMI_K3_STEP))


def _iquest_q1_step(model, release: str) -> bool:
    arch = loaded_architecture(model, release)
    return arch == IQUEST_Q1 if named(release) is None else placed_in(arch, release, IQUEST_Q1_STEP)


DSA_NAME_FROM = "0.5.13"  # the sparse-attention backend "nsa" is called "dsa" from v0.5.13
# From v0.5.8 every standard-attention model gets FA3 on Hopper (no architecture list), and Qwen3.5 (seen from v0.5.14)
# gets Qwen3-Next's triton default on SM100.
ANY_ARCH_FA3_FROM = "0.5.8"
TRTLLM_MLA_ARCHS = frozenset({"DeepseekV3ForCausalLM", "KimiK25ForConditionalGeneration"})
# Qwen3.5's SM10x triton default is its step's (arg_groups/model_overrides/qwen3_5.py registers the two
# ForConditionalGeneration names), not every name starting with Qwen3_5 (Qwen3_5ForCausalLM takes trtllm_mha).
QWEN3_5_TRITON = frozenset({"Qwen3_5MoeForConditionalGeneration", "Qwen3_5ForConditionalGeneration"})
# The DeepSeek family's own step (_deepseek_family_overrides: arg_groups/overrides.py from v0.5.16, v0.5.19+
# model_overrides/deepseek_v2.py) sets trtllm_mla on SM10x for every architecture it registers that is not DSA
# (LongCat-Flash, Mistral Large 3, ...): the names architectures.json places in that function (v0.5.15 has it in
# arg_groups/overrides.py already).
FAMILY_STEP, FAMILY_STEP_FROM = "arg_groups/model_overrides/deepseek_v2.py:_deepseek_family_overrides", "0.5.15"


# InternS2-Preview joins that list in v0.5.12 (inline in _handle_model_specific_adjustments up to v0.5.14). From v0.5.15
# the step is read from the release (arg_groups/overrides.py _qwen3_5_hybrid_overrides, v0.5.19+
# model_overrides/qwen3_5.py): every name it registers (InternS2-Preview and InternS2-Mobius too) takes triton on SM10x,
# with page_size 1.
INTERN_S2, INTERN_S2_FROM = "InternS2PreviewForConditionalGeneration", "0.5.12"
QWEN3_5_STEP, QWEN3_5_STEP_FROM = "arg_groups/model_overrides/qwen3_5.py:_qwen3_5_hybrid_overrides", "0.5.15"


def _qwen3_5_step(model, release: str) -> bool:
    return _qwen3_5_hybrid(loaded_architecture(model, release), release)


def _qwen3_5_hybrid(arch: str | None, release: str) -> bool:
    """Whether the Qwen3.5 hybrid step (triton on SM10x, trtllm_mha with speculative decoding) handles this name."""
    registered = registered_by(arch, release, QWEN3_5_STEP) if within(release, QWEN3_5_STEP_FROM, None) else None
    if registered is not None:
        return registered
    return arch in QWEN3_5_TRITON or (arch == INTERN_S2 and within(release, INTERN_S2_FROM, None))


def _trtllm_mla(model, release: str) -> bool:
    arch = loaded_architecture(model, release)
    inline = deepseek_branch(release)  # v0.5.7-v0.5.14: the inline branch's names (model_overrides.py)
    if inline is not None:
        return arch in inline
    if arch in TRTLLM_MLA_ARCHS:
        return True
    if not within(release, FAMILY_STEP_FROM, None):
        return False
    return any(same_function(place, FAMILY_STEP) for place in (named(release) or {}).get(arch, ()))


def _family_step(model, release: str) -> bool:
    """The DeepSeek family's step registers the name (v0.5.15+, architectures.json) and the model is not DSA: its
    "DeepSeek V3/R1/V3.1" branch sets trtllm_mla on SM10x when no backend is given. v0.5.7-v0.5.14 do the same inline in
    server_args.py _handle_model_specific_adjustments for the names that branch lists (model_overrides.py
    deepseek_branch), MLA or not: the named grid's Pixtral wrapper with a Mistral text config takes trtllm_mla."""
    if uses_dsa(model, release):
        return False
    arch = loaded_architecture(model, release)
    inline = deepseek_branch(release)
    if inline is not None:
        return arch in inline
    if not within(release, FAMILY_STEP_FROM, None):
        return False
    return any(same_function(place, FAMILY_STEP) for place in (named(release) or {}).get(arch, ()))


def _dsa_backend(model, release: str) -> bool:
    """The dsa/nsa backend: a DSA model (is_deepseek_dsa) whose name the DeepSeek family's step registers, where the
    backend is set (v0.5.16+ _deepseek_family_overrides: "if is_deepseek_dsa(hf_config)"). A draft the DSA check names
    but the step does not (GLM-5's and DeepSeek V3's NextN) takes the MLA default. Before v0.5.16, the DSA check alone."""
    if not uses_dsa(model, release):
        return False
    if not within(release, FAMILY_STEP_FROM, None) or named(release) is None:
        return True
    arch = loaded_architecture(model, release)
    return any(same_function(place, FAMILY_STEP) for place in (named(release) or {}).get(arch, ()))


def _default_attention(
    kind: str | None,
    major: int | None,
    model,
    s: Scenario | None = None,
    version: str | None = None,
    steps: bool = True,
) -> str | None:
    """SGLang's default (v0.5.7 _handle_attention_backend_compatibility and the model-specific steps before it)."""
    if kind is None or major is None:
        return None
    release = parse_release(rules_release(version)) if version else parse_release(NEWEST)
    any_arch_fa3 = release >= parse_release(ANY_ARCH_FA3_FROM)
    if _dsa_backend(model, rules_release(version) if version else NEWEST):  # DeepSeek sparse attention: every GPU
        return "dsa" if release >= parse_release(DSA_NAME_FROM) else "nsa"
    if release >= parse_release(IQUEST_Q1_FA3_FROM) and _iquest_q1_step(
        model, rules_release(version) if version else NEWEST
    ):
        return "fa3"  # on every GPU: arg_groups/model_overrides/iquest_q1.py (its sinks come from the softmax LSE)
    rules = rules_release(version) if version else NEWEST
    if s is not None and steps and _kimi_k3_trtllm_mla(s, model, rules):
        return "trtllm_mla"
    if loaded_architecture(model, rules) == "DeepseekV4ForCausalLM" and release >= parse_release(DEEPSEEK_V4_PAGE_FROM):
        return "dsv4"  # its own step, on every GPU (deepseek_v4_hook.py; v0.5.19+ model_overrides/deepseek_v4.py)
    if s is not None and steps and is_hrm_text(model, rules):
        # keyed on model_type hrm_text as well as the name (model_hook.py handle_model_capability_adjustments; v0.5.16
        # to v0.5.18 server_args.py _handle_model_capability_adjustments): a renamed HRM-Text takes triton too
        return "triton"
    if s is not None and steps:
        stepped = step_attention(s, loaded_architecture(model, rules), rules)
        if stepped is not None:
            return stepped  # the architecture's own override step (model_overrides.py)
    sm90 = is_sm90(s)[0] if s is not None else major == 9
    sm100 = is_sm100(s)[0] if s is not None else major == 10
    if sm100 and _family_step(model, rules):
        return "trtllm_mla"  # the family step sets it on SM10x whatever the attention kind (Pixtral without MLA fields)
    if kind == "mla":
        if sm90:
            return "fa3"
        if sm100:
            return "trtllm_mla" if _trtllm_mla(model, rules) else "flashinfer"
        return "triton"
    if kind == "sinks":
        return "trtllm_mha" if sm100 else "fa3" if sm90 else "triton"
    if sm100 and model.architecture == "NemotronHForCausalLM" and release >= parse_release(NEMOTRON_TRTLLM_MHA_FROM):
        return "trtllm_mha"
    if sm100 and _speculative_qwen_hybrid_trtllm(model.architecture, s, release):
        return "trtllm_mha"
    if sm100 and model.architecture in SM100_MODEL_ATTENTION:
        return SM100_MODEL_ATTENTION[model.architecture]
    if sm100 and any_arch_fa3 and _qwen3_5_step(model, rules):
        return "triton"
    topk_ok = s is None or _no_spec_or_topk_one(s)
    fa3_arch = any_arch_fa3 or model.architecture in FA3_DEFAULT_ARCHS
    if sm90 and topk_ok and fa3_arch:
        return "fa3"
    if sm100 and topk_ok and (s is None or not s.flag("--speculative-algorithm") or s.flag(EAGLE_TOPK) is not None):
        # v0.5.17+: "trtllm_mha requires equal K/V row widths; fa4 carries v_head_dim through"
        return "fa4" if has_asymmetric_kv(model, rules_release(version) if version else NEWEST) else "trtllm_mha"
    if not sm90 and not sm100 and has_attention_sinks(model, rules_release(version) if version else NEWEST):
        return "triton"  # v0.5.11+: "FlashInfer does not support attention sinks" (Granite SWA, IQuest-Q1 ...)
    return "flashinfer"


# -- page_size ---------------------------------------------------------------------------------------------------------
PAGE_SIZE = "--page-size"
DEFAULT_PAGE_SIZE = 1  # _handle_page_size: a page_size still unset at the end is 1 (on CUDA)


@dataclass(frozen=True, slots=True)
class PageRule:
    """An attention backend that takes only some page sizes (releases first..last): any other becomes ``forced``.
    sglang server_args.py _handle_attention_backend_compatibility, from v0.5.15 arg_groups/overrides.py
    (_mla_backend_page_constraints, _fa4_page_constraint)."""

    backend: str
    first: str
    last: str | None  # None: the row still holds in the newest modelled release
    allowed: frozenset[int]  # empty: every page size becomes ``forced``
    forced: int
    non_mla_sm100_only: bool = False  # fa4: only for non-MLA models on SM10x


# fmt: off
PAGE_RULES: tuple[PageRule, ...] = (
    PageRule("flashmla", "0.5.7", None, frozenset(), 64),  # "FlashMLA only supports a page_size of 64"
    PageRule("cutlass_mla", "0.5.7", "0.5.19", frozenset(), 128),  # gone from the list in v0.5.20
    PageRule("trtllm_mla", "0.5.7", None, frozenset({32, 64}), 64),
    PageRule("tokenspeed_mla", "0.5.12", "0.5.22", frozenset({32, 64}), 64),
    PageRule("cutedsl_mla", "0.5.13", None, frozenset({32, 64}), 64),
    PageRule("trtllm_mha", "0.5.7", "0.5.16", frozenset({16, 32, 64}), 64),
    PageRule("trtllm_mha", "0.5.17", None, frozenset({16, 32, 64, 128}), 64),  # 128: trtllm-gen's dynamic pages
    PageRule("hpc_ops", "0.5.17", None, frozenset({64}), 64),
    # v0.5.7 refuses fa4 as --attention-backend (prefill only); v0.5.8-v0.5.14 force 128 only for
    # --prefill-attention-backend fa4, which the advisor does not read; from v0.5.15 --attention-backend fa4 too.
    PageRule("fa4", "0.5.15", None, frozenset(), 128, non_mla_sm100_only=True),
)
# fmt: on
# The model steps that set page_size before the backend constraints:
# DeepSeek sparse attention (DSA/NSA) on CUDA: 64 ("Setting page size to 64 for DeepSeek NSA", server_args.py
# _handle_model_specific_adjustments; from v0.5.19 arg_groups/model_overrides/deepseek_v2.py, where v0.5.22 makes it
# 64 x the config's index_kpool, absent from the published DeepSeek V3.2 and GLM-5 configs, so 64).
DSA_PAGE_SIZE = 64
# DeepSeek V4: 256 (arg_groups/deepseek_v4_hook.py from v0.5.12; v0.5.19 arg_groups/model_overrides/deepseek_v4.py).
DEEPSEEK_V4_PAGE_SIZE, DEEPSEEK_V4_PAGE_FROM = 256, "0.5.12"
# The hybrid linear-attention models on SM10x without --attention-backend: from v0.5.14 their step sets the backend
# and page_size together, 64 for trtllm_mha (speculative decoding or the Mamba extra buffer) else 1, over --page-size
# (server_args.py v0.5.14; v0.5.15 arg_groups/overrides.py; v0.5.19 arg_groups/model_overrides/qwen3_5.py).
HYBRID_PAGE_FROM = "0.5.14"
HYBRID_PAGE_ARCHS = frozenset({"Qwen3NextForCausalLM", "Qwen3_5MoeForConditionalGeneration",
                               "Qwen3_5ForConditionalGeneration", "InternS2PreviewForConditionalGeneration"})  # fmt: skip


# v0.5.11 to v0.5.13: the Mamba radix cache in its default no_buffer mode needs page_size 1 for the hybrid models, so
# a --page-size other than 1 becomes 1 unless --disable-radix-cache or --mamba-scheduler-strategy extra_buffer
# (server_args.py _handle_mamba_radix_cache: "with radix cache requires page_size=1 in the current Mamba scheduling
# mode (no_buffer)"); gone in v0.5.14. Run through v0.5.11, v0.5.13 and v0.5.14 for the models below.
MAMBA_PAGE_FIRST, MAMBA_PAGE_LAST = "0.5.11", "0.5.13"
MAMBA_PAGE_ARCHS = frozenset({"Qwen3NextForCausalLM", "Qwen3_5MoeForConditionalGeneration",
                              "Qwen3_5ForConditionalGeneration", "NemotronHForCausalLM"})  # fmt: skip


# MiniMax M3's step (overrides.py / model_overrides/minimax_m3.py _minimax_m3_overrides, v0.5.16+): page_size 128 for
# its sparse attention blocks when unset, on SM10x with fa4 (trtllm_mha too from v0.5.19) and on Hopper with fa3.
MINIMAX_M3_PAGE_SIZE, MINIMAX_M3_TRTLLM_PAGE_FROM = 128, "0.5.19"


def _minimax_m3_page(s: Scenario, arch: str | None, release: str, backend: str) -> bool:
    if not registers_minimax_m3(arch, release) or s.no_gpu:
        return False
    if is_sm100(s)[0]:
        return backend == "fa4" or (backend == "trtllm_mha" and within(release, MINIMAX_M3_TRTLLM_PAGE_FROM, None))
    return is_sm90(s)[0] and backend == "fa3"


def page_rule(backend: str | None, release: str) -> PageRule | None:
    """The page-size constraint ``backend`` has in ``release`` (a modelled release), if any."""
    return next((rule for rule in PAGE_RULES if rule.backend == backend and within(release, rule.first, rule.last)),
                None)  # fmt: skip


def page_size(
    s: Scenario, version: str, backend: str | None, kind: str | None, major: int | None, chosen: str | None
) -> tuple[int | None, str]:
    """(the page_size SGLang resolves, why): --page-size or unset, then the model steps, then the backend's
    constraint, then the default 1. None when the backend is unknown and could change it."""
    release = rules_release(version)
    r = parse_release(release)
    page = s.int_flag(PAGE_SIZE)
    why = "not set" if page is None else f"{PAGE_SIZE} {s.flag(PAGE_SIZE)}"
    model = s.model
    arch = loaded_architecture(model, release) if model is not None else None
    where = OVERRIDES if r >= (0, 5, 15) else SERVER_ARGS
    if kind is not None and major is not None and _default_attention(kind, major, model, s, version) in ("nsa", "dsa"):
        page, why = DSA_PAGE_SIZE, f"DeepSeek sparse attention sets {DSA_PAGE_SIZE} (sglang v{release}, model step)"
    elif arch == "DeepseekV4ForCausalLM" and r >= parse_release(DEEPSEEK_V4_PAGE_FROM) and not s.no_gpu:
        page, why = DEEPSEEK_V4_PAGE_SIZE, f"DeepSeek V4 sets {DEEPSEEK_V4_PAGE_SIZE} (sglang v{release}, model step)"
    elif (not chosen and (arch in HYBRID_PAGE_ARCHS or (model is not None and _qwen3_5_step(model, release)))
          and r >= parse_release(HYBRID_PAGE_FROM) and backend is not None
          and is_sm100(s)[0]):  # fmt: skip
        page = 64 if backend == "trtllm_mha" else 1
        why = f"the hybrid model's SM10x step sets {page} with {backend} (sglang v{release}, model step)"
    elif page is None and backend is not None and _minimax_m3_page(s, arch, release, backend):
        page = MINIMAX_M3_PAGE_SIZE
        why = f"MiniMax M3's step sets {page} with {backend} (sglang v{release}, model step)"
    if (arch in MAMBA_PAGE_ARCHS and within(r, MAMBA_PAGE_FIRST, MAMBA_PAGE_LAST)
            and page not in (None, 1) and not s.has("--disable-radix-cache")
            and s.flag("--mamba-scheduler-strategy") != "extra_buffer"):  # fmt: skip
        page, why = (
            1,
            f"the Mamba radix cache (no_buffer) needs 1 (sglang v{release}, {SERVER_ARGS} _handle_mamba_radix_cache)",
        )
    if backend is None:
        return None, "unknown: the attention backend is unknown, and some backends take only some page sizes"
    rule = page_rule(backend, release)
    if rule is not None and rule.non_mla_sm100_only and (kind == "mla" or not is_sm100(s)[0]):
        rule = None
    if rule is not None and page not in rule.allowed:
        sizes = ", ".join(map(str, sorted(rule.allowed))) if rule.allowed else str(rule.forced)
        was = "unset" if page is None else str(page)
        page, why = (
            rule.forced,
            f"{backend} takes page sizes {sizes}, so {was} becomes {rule.forced} (sglang v{release}, {where})",
        )
    if page is None:
        page, why = DEFAULT_PAGE_SIZE, f"the default (sglang v{release}, {SERVER_ARGS} _handle_page_size)"
    return page, why


EAGLE_TOPK = "--speculative-eagle-topk"
# v0.5.10 server_args.py _handle_model_specific_adjustments (from v0.5.19 arg_groups/model_overrides/qwen3_5.py): on SM10x
# Qwen3-Next and Qwen3.5 take trtllm_mha instead of triton where the general default is trtllm_mha and speculative
# decoding is on (page size 1 is needed only with the radix cache, no mamba extra buffer and no speculative decoding).
QWEN_HYBRID_SPEC_TRTLLM_FROM = "0.5.10"
QWEN_HYBRID_ARCHS = frozenset(
    {"Qwen3NextForCausalLM", "Qwen3_5MoeForConditionalGeneration", "Qwen3_5ForConditionalGeneration"}
)


def _speculative_qwen_hybrid_trtllm(architecture: str, s: Scenario | None, release: tuple[int, ...]) -> bool:
    if s is None or release < parse_release(QWEN_HYBRID_SPEC_TRTLLM_FROM):
        return False
    text = ".".join(map(str, release))
    if architecture not in QWEN_HYBRID_ARCHS and not _qwen3_5_hybrid(architecture, text):
        return False
    return bool(s.flag("--speculative-algorithm")) and _no_spec_or_topk_one(s) and s.flag(EAGLE_TOPK) is not None


def _no_spec_or_topk_one(s: Scenario) -> bool:
    """is_no_spec_infer_or_topk_one (python/sglang/srt/utils/common.py, v0.5.7-v0.5.23): the top-k the user passed (SGLang
    chooses its own only later, in _handle_speculative_decoding) is absent, or 1 with page size 1. Speculative decoding
    with another top-k keeps standard models off FA3 on Hopper and off trtllm_mha on SM10x, which also needs an explicit
    top-k under speculative decoding (the goldens' spec-* scenarios)."""
    topk, page = s.flag(EAGLE_TOPK), s.flag("--page-size")
    return topk is None or (topk == "1" and page in (None, "1"))
