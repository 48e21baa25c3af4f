"""SGLang's start-up refusals from the config and the layout (advisor/rules/sglang/refusals.py): the override steps that
refuse DP attention, ZAYA1's KV-head assertion and the config classes' read-only keys, on the named grid's configs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.models import load_config_dir
from advisor.plan import Intent, build_plan
from advisor.probe.profiles import load_profile
from advisor.rules.sglang.architectures import loaded_architecture
from advisor.rules.sglang.refusals import (
    CONFIG_REFUSED_ID,
    DP_ATTENTION_REFUSED_ID,
    MODEL_TYPE_UNKNOWN_ID,
    REMOTE_CODE_REQUIRED_ID,
)

CONFIGS = Path(__file__).resolve().parent / "conformance" / "configs"


def _model(tmp_path: Path, architecture: str, **changes):
    """The named grid's config for ``architecture`` with ``changes`` at its top level, loaded from a folder."""
    config = json.loads((CONFIGS / f"named-{architecture}" / "config.json").read_text())
    config.update(changes)
    folder = tmp_path / architecture
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    return load_config_dir(folder, model_id=architecture)


def _ids(model, release: str, tp: int = 1, dp: int = 1, dp_attention: bool = False) -> set[str]:
    intent = Intent(tp=tp, dp_size=dp, dp_attention=dp_attention, engine="sglang", engine_version=release)
    plan = build_plan(load_profile("h100-sxm-8"), model, intent)
    return {p.id for p in plan.problems if p.severity == "error"}


@pytest.mark.parametrize(
    "architecture, first",
    [
        ("IQuestQ1ForCausalLM", "0.5.21"),
        ("IQuestQ1MTP", "0.5.21"),
        ("Ernie4_5_VLMoeForConditionalGeneration", "0.5.22"),
    ],
)
def test_override_steps_refuse_dp_attention_from_their_release(tmp_path, architecture, first):
    model = _model(tmp_path, architecture)
    assert DP_ATTENTION_REFUSED_ID in _ids(model, "0.5.23", tp=8, dp=8, dp_attention=True)
    assert DP_ATTENTION_REFUSED_ID in _ids(model, first, tp=8, dp=8, dp_attention=True)
    assert DP_ATTENTION_REFUSED_ID not in _ids(model, "0.5.20", tp=8, dp=8, dp_attention=True)
    assert DP_ATTENTION_REFUSED_ID not in _ids(model, "0.5.23", tp=8)


def test_minicpm_refuses_the_dp_attention_flag_itself_up_to_v0_5_21(tmp_path):
    """v0.5.19-v0.5.21 test cfg.enable_dp_attention, v0.5.23 attn_dp_enabled_of (a DP-attention size above 1)."""
    model = _model(tmp_path, "MiniCPMForCausalLM")
    assert DP_ATTENTION_REFUSED_ID in _ids(model, "0.5.21", tp=8, dp=1, dp_attention=True)
    assert DP_ATTENTION_REFUSED_ID not in _ids(model, "0.5.23", tp=8, dp=1, dp_attention=True)
    assert DP_ATTENTION_REFUSED_ID in _ids(model, "0.5.23", tp=8, dp=8, dp_attention=True)
    assert DP_ATTENTION_REFUSED_ID not in _ids(model, "0.5.18", tp=8, dp=8, dp_attention=True)


def test_a_renamed_iquest_draft_loads_as_iquest_q1_mtp(tmp_path):
    """IQuestQ1MTPConfig writes architectures=["IQuestQ1MTP"] whatever config.json says (v0.5.21+)."""
    model = _model(tmp_path, "IQuestQ1MTP", architectures=["FuzzBC2484ForCausalLM"])
    assert loaded_architecture(model, "0.5.23") == "IQuestQ1MTP"
    assert loaded_architecture(model, "0.5.20") == "FuzzBC2484ForCausalLM"
    assert DP_ATTENTION_REFUSED_ID in _ids(model, "0.5.23", tp=8, dp=8, dp_attention=True)


def test_zaya1_asserts_its_query_groups_equal_the_kv_heads(tmp_path):
    unchanged = _model(tmp_path, "ZayaForCausalLM")
    assert CONFIG_REFUSED_ID not in _ids(unchanged, "0.5.23")
    groups = json.loads((CONFIGS / "named-ZayaForCausalLM" / "config.json").read_text()).get("num_query_groups", 2)
    skewed = _model(tmp_path, "ZayaForCausalLM", num_key_value_heads=groups * 2)
    assert CONFIG_REFUSED_ID in _ids(skewed, "0.5.23")
    assert CONFIG_REFUSED_ID in _ids(skewed, "0.5.14")
    assert CONFIG_REFUSED_ID not in _ids(skewed, "0.5.13")  # no ZayaConfig in SGLang before v0.5.14


def test_a_key_the_config_class_keeps_as_a_read_only_property_is_refused(tmp_path):
    """KimiK3Config derives hidden_size from its text config and FalconMambaConfig its layer_types: a config.json that
    sets them stops at load ("property ... has no setter"); read for every release."""
    kimi = _model(tmp_path, "KimiK3ForConditionalGeneration", hidden_size=7168)
    assert CONFIG_REFUSED_ID in _ids(kimi, "0.5.23")
    assert CONFIG_REFUSED_ID in _ids(kimi, "0.5.21")
    # v0.5.7 has no class for kimi_k3 at all: that refusal comes first, and the class's checks never run
    assert {MODEL_TYPE_UNKNOWN_ID} <= _ids(kimi, "0.5.7") and CONFIG_REFUSED_ID not in _ids(kimi, "0.5.7")
    falcon = _model(tmp_path, "FalconMambaForCausalLM", layer_types=["mamba"] * 4)
    assert CONFIG_REFUSED_ID in _ids(falcon, "0.5.23")
    assert CONFIG_REFUSED_ID not in _ids(_model(tmp_path, "FalconMambaForCausalLM"), "0.5.23")


def test_an_attribute_map_name_of_a_read_only_property_is_refused_too(tmp_path):
    """FalconH1Config maps layer_types to its read-only layers_block_type (attribute_map): transformers' class, which
    get_config builds before SGLang's own FalconH1Config, refuses a config.json that sets layer_types."""
    falcon = _model(tmp_path, "FalconH1ForCausalLM", layer_types=["attention"] * 4)
    assert CONFIG_REFUSED_ID in _ids(falcon, "0.5.23")
    assert CONFIG_REFUSED_ID not in _ids(_model(tmp_path, "FalconH1ForCausalLM"), "0.5.23")


def _ids_with(model, release: str, *overrides: str) -> set[str]:
    intent = Intent(tp=1, engine="sglang", engine_version=release, overrides=overrides)
    return {p.id for p in build_plan(load_profile("h100-sxm-8"), model, intent).problems if p.severity == "error"}


def test_remote_config_code_needs_trust_remote_code(tmp_path):
    baichuan = _model(tmp_path, "BaichuanForCausalLM")  # model_type baichuan, auto_map names its own config class
    assert REMOTE_CODE_REQUIRED_ID in _ids_with(baichuan, "0.5.23")
    assert not {REMOTE_CODE_REQUIRED_ID, MODEL_TYPE_UNKNOWN_ID} & _ids_with(baichuan, "0.5.23", "--trust-remote-code")


def test_a_model_type_no_class_exists_for_is_refused(tmp_path):
    made_up = _model(tmp_path, "LlamaForCausalLM", model_type="llama_made_up")
    assert MODEL_TYPE_UNKNOWN_ID in _ids_with(made_up, "0.5.23")
    assert MODEL_TYPE_UNKNOWN_ID in _ids_with(made_up, "0.5.23", "--trust-remote-code")  # no auto_map: nothing to run
    assert not {MODEL_TYPE_UNKNOWN_ID, REMOTE_CODE_REQUIRED_ID} & _ids_with(_model(tmp_path, "Qwen3ForCausalLM"), "0.5.23")


def test_the_release_transformers_decides_which_model_types_exist(tmp_path):
    gemma4 = _model(tmp_path, "Gemma4ForCausalLM")  # gemma4_text: not in v0.5.7's transformers 4.57.1
    assert MODEL_TYPE_UNKNOWN_ID in _ids_with(gemma4, "0.5.7")
    assert MODEL_TYPE_UNKNOWN_ID not in _ids_with(gemma4, "0.5.23")


def test_longcat_architectures_load_with_sglangs_class_from_v0_5_16(tmp_path):
    longcat = _model(tmp_path, "LongcatFlashForCausalLM", model_type="longcat_made_up")
    assert MODEL_TYPE_UNKNOWN_ID not in _ids_with(longcat, "0.5.16")
    assert MODEL_TYPE_UNKNOWN_ID in _ids_with(longcat, "0.5.15")


def test_deepseek_v32_loads_through_the_fallback_up_to_v0_5_11(tmp_path):
    v32 = _model(tmp_path, "DeepseekV32ForCausalLM")
    assert v32.model_type == "deepseek_v32"
    assert MODEL_TYPE_UNKNOWN_ID not in _ids_with(v32, "0.5.7")
