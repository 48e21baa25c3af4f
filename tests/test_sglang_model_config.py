"""SGLang's ModelConfig as the rules read it from config.json (advisor/rules/sglang/model_config.py, config_keys.json)."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.models import spec_from_config
from advisor.rules.sglang import model_config
from advisor.rules.sglang.attention import attention_kind
from advisor.rules.sglang.config_defaults import known_model_types
from advisor.rules.sglang.releases import RELEASES

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from conformance.sglang.config_keys import assigned_list, mla_architectures  # noqa: E402

DEEPSEEK = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "hidden_size": 7168,
            "num_attention_heads": 128, "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
            "v_head_dim": 128, "num_hidden_layers": 61}  # fmt: skip
LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
         "num_key_value_heads": 8, "num_hidden_layers": 32}  # fmt: skip


def spec(config: dict):
    return spec_from_config(config, model_id="t", path=None, origin="directory", where="test")


def test_every_modelled_release_has_its_config_keys():
    for release in RELEASES:
        assert model_config.mla_architectures(release), release
        assert "DeepseekV3ForCausalLM" in model_config.mla_architectures(release)


def test_mla_is_the_release_list_not_the_kv_lora_rank():
    named, unnamed = spec(DEEPSEEK), spec({**DEEPSEEK, "architectures": ["MyMlaForCausalLM"]})
    for release in RELEASES:
        assert model_config.is_mla(named, release) and attention_kind(named, release) == "mla"
        assert not model_config.is_mla(unnamed, release) and attention_kind(unnamed, release) == "standard"


def test_pixtral_is_mla_only_with_kv_lora_rank_where_the_release_says_so():
    pixtral = {**LLAMA, "architectures": ["PixtralForConditionalGeneration"]}
    assert model_config.mla_architectures("0.5.23")["PixtralForConditionalGeneration"] == "kv_lora_rank"
    assert not model_config.is_mla(spec(pixtral), "0.5.23")
    assert model_config.is_mla(spec({**pixtral, "kv_lora_rank": 512}), "0.5.23")


@settings(max_examples=60, deadline=None)
@given(name=st.from_regex(r"[A-Z][a-z]{2,8}For(CausalLM|ConditionalGeneration)", fullmatch=True),
       release=st.sampled_from(RELEASES), rank=st.integers(1, 4096))  # fmt: skip
def test_an_unnamed_architecture_with_mla_fields_is_mha_in_every_release(name, release, rank):
    known = model_config.mla_architectures(release)
    model = spec({**DEEPSEEK, "architectures": [name], "kv_lora_rank": rank})
    assert model_config.is_mla(model, release) == (name in known)


def test_asymmetric_kv_from_v0_5_17_for_mha_models():
    # transformers' DeepseekV3Config sets head_dim = qk_rope_head_dim (64); v_head_dim is 128
    unnamed = spec({**DEEPSEEK, "architectures": ["MyMlaForCausalLM"]})
    assert model_config.kv_head_dims(unnamed) == (64, 128)
    assert model_config.has_asymmetric_kv(unnamed, "0.5.17") and not model_config.has_asymmetric_kv(unnamed, "0.5.16")
    assert not model_config.has_asymmetric_kv(spec(DEEPSEEK), "0.5.23")  # MLA: not asked
    assert not model_config.has_asymmetric_kv(spec(LLAMA), "0.5.23")
    assert model_config.has_asymmetric_kv(spec({**LLAMA, "head_dim": 128, "v_head_dim": 64}), "0.5.23")


def test_learnable_sink_counts_from_v0_5_20():
    model = spec({**LLAMA, "learnable_sink": True})
    assert model.learnable_sink
    assert model_config.has_attention_sinks(model, "0.5.20") and not model_config.has_attention_sinks(model, "0.5.19")
    assert not model_config.has_attention_sinks(spec(LLAMA), "0.5.23")


def test_multimodal_by_list_subconfig_and_the_disabled_list():
    vision = {"vision_config": {"num_hidden_layers": 27, "hidden_size": 1152}}
    wrapped = spec(
        {"architectures": ["MyVlForConditionalGeneration"], "model_type": "x", "text_config": LLAMA, **vision}
    )
    assert wrapped.has_text_config
    assert not model_config.is_multimodal(wrapped, "0.5.8")  # the name list alone
    assert model_config.is_multimodal(wrapped, "0.5.10") and model_config.is_multimodal(wrapped, "0.5.23")
    assert model_config.multimodal_vision(wrapped, "0.5.23") == (27, 1152)
    assert model_config.multimodal_vision(wrapped, "0.5.8") is None
    gemma3 = replace(wrapped, architecture="Gemma3ForConditionalGeneration")  # multimodal off by default
    assert not model_config.is_multimodal(gemma3, "0.5.23")


def test_deepseek_v32_model_type_loads_as_v3_in_v0_5_7_to_v0_5_11():
    """The configs grid's v0.5.11 golden: synthetic-x-dsa (model_type deepseek_v32) resolves as DeepSeek V3 with DSA;
    v0.5.12 registers its own deepseek_v32 config class and keeps the name."""
    model = spec({**DEEPSEEK, "architectures": ["MyDsaForCausalLM"], "model_type": "deepseek_v32", "index_topk": 2048})
    for release in ("0.5.7", "0.5.9", "0.5.11"):
        assert model_config.loaded_architecture(model, release) == "DeepseekV3ForCausalLM", release
    assert model_config.loaded_architecture(model, "0.5.12") == "MyDsaForCausalLM"
    assert attention_kind(model, "0.5.11") == "mla" and attention_kind(model, "0.5.12") == "standard"


def test_the_reader_takes_the_mla_branches_and_their_keys():
    source = """
class ModelConfig:
    def _derive_model_shapes(self):
        if (
            "AForCausalLM" in self.hf_config.architectures
            or ("BForCausalLM" in self.hf_config.architectures
                and getattr(self.hf_text_config, "kv_lora_rank", None) is not None)
        ):
            self.attention_arch = AttentionArch.MLA
        elif "CForCausalLM" in self.hf_config.architectures and getattr(self.hf_text_config, "use_mla", True):
            self.attention_arch = AttentionArch.MLA
        elif "DForCausalLM" in self.hf_config.architectures:
            self.attention_arch = AttentionArch.MHA

multimodal_model_archs = ["EForConditionalGeneration", "FModel"]
"""
    assert mla_architectures(source) == {"AForCausalLM": None, "BForCausalLM": "kv_lora_rank",
                                         "CForCausalLM": "use_mla=true"}  # fmt: skip
    assert assigned_list(source, "multimodal_model_archs") == ["EForConditionalGeneration", "FModel"]
    assert assigned_list(source, "mm_disabled_models") is None


def _scenario(profile: str, model):
    from advisor.plan import Intent, build_plan
    from advisor.probe.profiles import load_profile

    return build_plan(load_profile(profile), model, Intent(tp=1, engine="sglang", engine_version="0.5.23"))


def test_override_steps_follow_the_release_registration_and_config():
    from advisor.rules.sglang.model_overrides import override_step

    assert override_step("ExaoneMoeForCausalLM", "0.5.23") is not None  # registered in v0.5.23 ...
    assert override_step("ExaoneMoeForCausalLM", "0.5.20") is None  # ... not yet in v0.5.20 (only ExaoneMoEForCausalLM)
    assert override_step("MyLlama4VariantForCausalLM", "0.5.9") is not None  # '"Llama4" in model_arch' up to v0.5.10
    assert override_step("MyLlama4VariantForCausalLM", "0.5.14") is None
    exaone = {**LLAMA, "architectures": ["Exaone4ForCausalLM"], "model_type": "exaone4"}
    with_pattern = _scenario("a100-sxm-8", spec({**exaone, "sliding_window_pattern": 4}))
    without = _scenario("a100-sxm-8", spec({**exaone, "sliding_window_pattern": None}))
    assert with_pattern.decision("attention_backend").value == "fa3"  # the step needs the sliding layers
    assert without.decision("attention_backend").value == "flashinfer"
    # left out, Exaone4Config's default (4) holds: the step applies (the fuzz golden's EXAONE cases)
    assert _scenario("a100-sxm-8", spec(exaone)).decision("attention_backend").value == "fa3"
    renamed = {**exaone, "architectures": ["MyExaoneForCausalLM"]}
    assert _scenario("a100-sxm-8", spec(renamed)).decision("attention_backend").value == "flashinfer"  # name-keyed


def test_an_unnamed_mla_config_takes_the_mha_defaults_on_sm100():
    unnamed = spec({**DEEPSEEK, "architectures": ["MyMlaForCausalLM"]})
    decision = _scenario("b200-8", unnamed).decision("attention_backend")
    assert decision.value == "fa4"  # K rows 64 (qk_rope_head_dim), V rows 128: asymmetric
    assert any(s.name == "page_size" and s.value == 128 for s in decision.settings)
    assert _scenario("b200-8", spec(DEEPSEEK)).decision("attention_backend").value == "trtllm_mla"


def test_a_thinker_config_wrapper_is_multimodal_from_v0_5_10():
    omni = spec({"architectures": ["MyOmniForConditionalGeneration"], "model_type": "x", "thinker_config": {"x": 1},
                 **LLAMA | {"architectures": ["MyOmniForConditionalGeneration"]}})  # fmt: skip
    assert omni.has_text_config  # get_hf_text_config unwraps thinker_config, llm_config and language_config too
    assert model_config.is_multimodal(omni, "0.5.23") and not model_config.is_multimodal(omni, "0.5.9")


def _named_config(architecture: str) -> dict:
    import json

    return json.loads((REPO / "tests/conformance/configs" / f"named-{architecture}" / "config.json").read_text())


def _plan(profile: str, model, release: str):
    from advisor.plan import Intent, build_plan
    from advisor.probe.profiles import load_profile

    return build_plan(load_profile(profile), model, Intent(tp=1, engine="sglang", engine_version=release))


def test_granite_hybrid_counts_linear_attention_as_mamba_from_v0_5_19():
    from advisor.rules.sglang.model_overrides import has_mamba_layers

    granite = spec(_named_config("GraniteMoeHybridForCausalLM"))
    assert not has_mamba_layers(granite, "0.5.18") and has_mamba_layers(granite, "0.5.19")
    assert has_mamba_layers(replace(granite, layer_types=("mamba", "attention")), "0.5.18")
    assert _plan("b200-8", granite, "0.5.23").decision("attention_backend").value == "flashinfer"
    assert _plan("h100-sxm-8", granite, "0.5.23").decision("attention_backend").value == "fa3"  # SM10x only


def test_minimax_m3_step_sets_backend_page_and_triton_runner():
    m3 = spec(_named_config("MiniMaxM3SparseForConditionalGeneration"))
    for profile, backend in (("b200-8", "fa4"), ("h100-sxm-8", "fa3")):
        plan = _plan(profile, m3, "0.5.23")
        attention = plan.decision("attention_backend")
        assert attention.value == backend
        assert any(s.name == "page_size" and s.value == 128 for s in attention.settings)
        assert plan.decision("moe_runner_backend").value == "triton"
    assert _plan("b200-8", m3, "0.5.14").decision("attention_backend").value != "fa4"  # no step before v0.5.16


def test_post_capture_sizing_only_for_muse_spark_in_v0_5_23():
    from advisor.rules.sglang.memory import post_capture_fraction

    fraction, _ = post_capture_fraction(81920, 1, vision=(None, None))
    assert abs(fraction - 0.88) < 1e-9  # the named grid's v0.5.23 golden on an 80 GiB A100, tp 1
    muse = spec(_named_config("MuseSparkForConditionalGeneration"))
    value = _plan("a100-sxm-8", muse, "0.5.23").decision("memory_defaults").value["mem_fraction_static"]
    assert round(value, 3) == 0.88
    llama = _plan("a100-sxm-8", spec(LLAMA), "0.5.23").decision("memory_defaults").value["mem_fraction_static"]
    assert llama < 0.87  # the activation and graph reserve stays for everything else


def test_config_class_defaults_decide_where_config_json_leaves_a_key_out():
    """config_defaults.json (read from each release's config classes): HY-V4's class defaults learnable_sink to true,
    a multimodal class builds a text sub-config for a config.json without one. Every release is read."""
    hy = spec({**LLAMA, "architectures": ["MyHyForCausalLM"], "model_type": "hy_v4"})
    assert hy.learnable_sink is None
    assert model_config.has_attention_sinks(hy, "0.5.23")
    said_no = spec({**LLAMA, "architectures": ["MyHyForCausalLM"], "model_type": "hy_v4", "learnable_sink": False})
    assert not model_config.has_attention_sinks(said_no, "0.5.23")
    # learnable_sink counts from v0.5.20, whose HYV4Config defaults it too; v0.5.19 reads no sinks from it at all
    assert model_config.has_attention_sinks(hy, "0.5.20") and not model_config.has_attention_sinks(hy, "0.5.19")
    assert _scenario("a100-sxm-8", hy).decision("attention_backend").value == "triton"
    flat_vl = spec({**LLAMA, "architectures": ["MyVlForConditionalGeneration"], "model_type": "qwen3_vl"})
    assert not flat_vl.has_text_config
    assert model_config.is_multimodal(flat_vl, "0.5.23") and model_config.is_multimodal(flat_vl, "0.5.20")


def test_a_class_built_text_config_keeps_the_class_widths():
    """A config.json without the sub-config its class reads (text keys flattened to the top level, or an llm_config
    moved under text_config) gets the class's default text config: v0.5.23's K/V comparison reads the class's widths
    (config_defaults.json text_kv_widths), so top-level widths that differ do not make it asymmetric."""
    skewed = {"hidden_size": 4096, "num_attention_heads": 32, "head_dim": 192, "v_head_dim": 128}
    flat_mllama = spec({**skewed, "architectures": ["MyMllamaForConditionalGeneration"], "model_type": "mllama"})
    assert model_config.class_built_text_widths(flat_mllama, "0.5.23") == (128, 128, 128, 128)
    assert not model_config.has_asymmetric_kv(flat_mllama, "0.5.23")
    assert _plan("b200-8", flat_mllama, "0.5.23").decision("attention_backend").value == "trtllm_mha"
    # every release's MllamaConfig builds the same default text config (read for each): v0.5.21 compares its widths too
    assert not model_config.has_asymmetric_kv(flat_mllama, "0.5.21")
    # the sub-config under the class's own key is config.json's: its widths count
    nested = spec({"architectures": ["MyMllamaForConditionalGeneration"], "model_type": "mllama",
                   "text_config": {**skewed, "model_type": "mllama_text_model"}})  # fmt: skip
    assert model_config.class_built_text_widths(nested, "0.5.23") is None
    assert model_config.has_asymmetric_kv(nested, "0.5.23")
    assert _plan("b200-8", nested, "0.5.23").decision("attention_backend").value == "fa4"
    # Bailing-MM 2 reads llm_config: one moved under text_config leaves the class's default llm_config (64 / 64)
    bailing = spec({"architectures": ["BailingMM2NativeForConditionalGeneration"], "model_type": "bailingmm_moe_v2_lite",
                    "text_config": {**skewed, "model_type": "bailingmm_moe_v2_lite"}})  # fmt: skip
    assert model_config.class_built_text_widths(bailing, "0.5.23") == (64, 64, 64, 64)
    assert not model_config.has_asymmetric_kv(bailing, "0.5.23")
    # Qwen4ExpConfig builds its text config from a top level that has hidden_size and num_hidden_layers (older
    # text-only exports): no class widths there, config.json's top level decides
    flat_qwen4 = spec({**skewed, "architectures": ["Qwen4ExpForCausalLMMTP"], "model_type": "qwen4_exp",
                       "num_hidden_layers": 48})  # fmt: skip
    assert model_config.class_built_text_widths(flat_qwen4, "0.5.23") is None
    assert model_config.has_asymmetric_kv(flat_qwen4, "0.5.23")


def test_deepseek_v41_merges_a_nested_text_config_into_its_top_level():
    """SGLang's DeepseekV41Config (v0.5.23 configs/deepseek_v41.py) merges text_config into the top level: the release
    sees a flat config, not a multimodal wrapper, and reads the nested index_topk as the top level's (DSA)."""
    from advisor.rules.sglang.architectures import uses_dsa

    flat = _named_config("DeepseekV41ForCausalLM")
    keep = ("architectures", "model_type", "quantization_config", "dtype", "torch_dtype", "transformers_version")
    nested = {k: v for k, v in flat.items() if k in keep}
    nested["text_config"] = {k: v for k, v in flat.items() if k not in keep}
    flat_spec, nested_spec = spec(flat), spec(nested)
    assert nested_spec.has_text_config and not model_config.is_multimodal(nested_spec, "0.5.23")
    assert uses_dsa(nested_spec, "0.5.23") == uses_dsa(flat_spec, "0.5.23")
    renamed = spec({**nested, "architectures": ["MyV41ForCausalLM"]})
    assert not model_config.is_multimodal(renamed, "0.5.23")
    # the class (and its merge) exists from v0.5.21; v0.5.20 has no config class for deepseek_v41 at all
    assert not model_config.is_multimodal(nested_spec, "0.5.21")
    assert "deepseek_v41" not in known_model_types("0.5.20")[0]


def test_a_class_built_text_config_decides_pixtrals_mla_key():
    """Pixtral is MLA only with hf_text_config.kv_lora_rank (v0.5.23 _derive_model_shapes): flattened under the llava
    class, the text config is the class's default, without kv_lora_rank, so a top-level one does not make it MLA."""
    pixtral = _named_config("PixtralForConditionalGeneration")
    text = {**pixtral["text_config"], "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128}
    nested = spec({**pixtral, "text_config": text})
    assert model_config.is_mla(nested, "0.5.23")
    flat = {k: v for k, v in pixtral.items() if k != "text_config"}
    for key, value in text.items():
        flat.setdefault(key, value)
    flat_spec = spec(flat)
    assert flat_spec.kv_lora_rank == 512 and not model_config.is_mla(flat_spec, "0.5.23")
    assert not model_config.is_mla(flat_spec, "0.5.21")  # v0.5.21's llava class builds the same text config
