"""transformers' config-class facts vLLM reads a config.json through: attribute_map aliases, DBRX / MPT KV heads in
attn_config, and a text_config a class with no text sub-config keeps as a dict (docs/vllm.md, differential fuzzing)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.models import ModelError, load_config_dir
from advisor.rules.vllm.config_validation import VALIDATION_FILE
from advisor.rules.vllm.text_config import TEXT_CONFIG_DICT, config_defaults
from conformance.vllm.compare import plan_for

# every release the architectures goldens model (python -m conformance.vllm X --grid architectures)
RELEASES = sorted(p.stem.removeprefix("vllm-architectures-") for p in
                  (Path(__file__).parent / "conformance" / "golden").glob("vllm-architectures-*.jsonl"))  # fmt: skip
GPT2 = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_layer": 12,
        "n_positions": 1024, "vocab_size": 50257}  # fmt: skip
LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
         "num_key_value_heads": 8, "num_hidden_layers": 32, "intermediate_size": 14336, "vocab_size": 128256,
         "max_position_embeddings": 8192}  # fmt: skip


def _load(tmp_path: Path, config: dict):
    (tmp_path / "config.json").write_text(json.dumps(config))
    return load_config_dir(tmp_path, model_id="m")


def test_gpt2_aliases_fill_the_canonical_keys(tmp_path: Path):
    spec = _load(tmp_path, GPT2)
    assert (spec.num_heads, spec.hidden_size, spec.num_layers, spec.max_position_embeddings) == (12, 768, 12, 1024)
    assert spec.head_dim == 64


def test_canonical_key_wins_over_its_alias(tmp_path: Path):
    assert _load(tmp_path, {**GPT2, "num_attention_heads": 16}).num_heads == 16


def test_alias_of_another_model_type_is_not_read(tmp_path: Path):
    assert _load(tmp_path, {**LLAMA, "model_type": "llama", "n_head": 7}).num_heads == 32


def test_gpt2_n_head_takes_part_in_the_tp_check(tmp_path: Path):
    plan = plan_for("0.33.0", "h100-sxm-8", 8, _load(tmp_path, GPT2))  # 12 heads over 8 ranks
    assert any(p.id == "tp_not_divisible" and p.severity == "error" for p in plan.problems)


@pytest.mark.parametrize("model_type", ["dbrx", "mpt"])
def test_kv_heads_of_dbrx_and_mpt_come_from_attn_config(tmp_path: Path, model_type: str):
    config = {**LLAMA, "model_type": model_type, "num_key_value_heads": 5, "attn_config": {"kv_n_heads": 8}}
    assert _load(tmp_path, config).num_kv_heads == 8


def test_attn_config_kv_heads_read_only_for_dbrx_and_mpt(tmp_path: Path):
    with pytest.raises(ModelError, match="does not divide"):
        _load(tmp_path, {**LLAMA, "num_key_value_heads": 5, "attn_config": {"kv_n_heads": 8}})


@pytest.mark.parametrize("version", RELEASES)
def test_text_config_under_a_class_without_one_is_refused(tmp_path: Path, version: str):
    nested = {**LLAMA, "model_type": "qwen3", "text_config": {"hidden_size": 4096, "num_attention_heads": 32}}
    plan = plan_for(version, "h100-sxm-8", 1, _load(tmp_path, nested))
    assert any(p.id == TEXT_CONFIG_DICT and p.severity == "error" for p in plan.problems)


@pytest.mark.parametrize("version", RELEASES)
def test_every_modelled_release_has_its_config_classes_read(version: str):
    # a release missing from either table would silently read config.json as written (python -m
    # conformance.vllm.config_defaults / config_validation X.Y.Z add it)
    defaults = config_defaults(version)
    assert {"text_config_dict", "text_defaults", "class_defaults", "read_only_keys"} <= set(defaults)
    assert version in json.loads(VALIDATION_FILE.read_text())["releases"], "config_validation.json lacks the release"
    assert "model_types" in defaults and defaults["transformers"]


def test_composite_class_text_config_is_not_refused(tmp_path: Path):
    composite = {**LLAMA, "model_type": "qwen3_vl", "architectures": ["Qwen3VLForConditionalGeneration"],
                 "text_config": {**LLAMA, "model_type": "qwen3_vl_text"}}  # fmt: skip
    plan = plan_for("0.33.0", "h100-sxm-8", 1, _load(tmp_path, composite))
    assert not any(p.id == TEXT_CONFIG_DICT for p in plan.problems)


def test_a_plan_without_a_model_raises_no_text_config_finding():
    # the app plans before a model is chosen: the rule has nothing to read then
    from advisor.intent import Intent
    from advisor.plan import build_plan
    from advisor.probe.profiles import load_profile

    plan = build_plan(load_profile("h100-sxm-8"), None, Intent(model=None, engine="vllm", engine_version="0.33.0"))
    assert "vllm_text_config_unread" not in {p.id for p in plan.problems}
