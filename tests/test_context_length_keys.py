"""The context length each engine derives from config.json (advisor/rules/sglang/context.py, advisor/rules/vllm/memory.py):
the keys it reads, in its order, and the RoPE scaling factor as each release applies it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from advisor.cli import main
from advisor.models import CONTEXT_LENGTH_KEYS as VLLM_KEYS
from advisor.models import spec_from_config
from advisor.rules.sglang.context import CONTEXT_LENGTH_KEYS as SGLANG_KEYS
from advisor.rules.sglang.context import DEFAULT_CONTEXT, derived_context_length
from advisor.rules.sglang.releases import RELEASES
from advisor.rules.vllm.memory import derived_max_model_len

BASE = {"architectures": ["KeyTestForCausalLM"], "model_type": "key_test", "hidden_size": 1024,
        "num_attention_heads": 8, "num_key_value_heads": 8, "num_hidden_layers": 2, "intermediate_size": 2048,
        "vocab_size": 32000, "torch_dtype": "bfloat16"}  # fmt: skip


def spec(**extra):
    return spec_from_config({**BASE, **extra}, model_id="t", path=None, origin="directory", where="config.json")


@pytest.mark.parametrize("key", VLLM_KEYS)
def test_a_config_with_only_one_key(key):
    model = spec(**{key: 12345})
    sglang = 12345 if key in SGLANG_KEYS else DEFAULT_CONTEXT  # SGLang reads five of vLLM's nine keys
    for release in RELEASES:
        assert derived_context_length(model, release)[0] == sglang, (key, release)
    assert derived_max_model_len(model, "0.33.0") == 12345


def test_a_text_config_key_counts_for_both():
    model = spec(text_config={"seq_length": 4096})
    assert derived_context_length(model, "0.5.23")[0] == 4096 and derived_max_model_len(model, "0.33.0") == 4096


@given(st.dictionaries(st.sampled_from(VLLM_KEYS), st.integers(1, 2**20), min_size=1))
def test_sglang_takes_the_first_key_in_its_order_vllm_the_smallest(lengths):
    model = spec(**lengths)
    first = next((lengths[k] for k in SGLANG_KEYS if k in lengths), DEFAULT_CONTEXT)
    assert derived_context_length(model, "0.5.23")[0] == first
    want = lengths.get("model_max_length") or min(lengths.values())
    assert derived_max_model_len(model, "0.33.0") == want


def test_a_linear_rope_factor_scales_both_engines():
    model = spec(max_position_embeddings=4096, rope_scaling={"rope_type": "linear", "factor": 4.0})
    for release in ("0.5.7", "0.5.23"):
        assert derived_context_length(model, release)[0] == 16384
    for release in ("0.12.0", "0.33.0"):
        assert derived_max_model_len(model, release) == 16384


def test_yarn_is_scaled_only_where_the_release_scales_it():
    model = spec(max_position_embeddings=32768, rope_scaling={"rope_type": "yarn", "factor": 4.0})
    # SGLang: transformers 4.57 (v0.5.7-v0.5.9) keeps the dict as written; transformers 5 adds the original length
    assert derived_context_length(model, "0.5.9")[0] == 131072
    assert derived_context_length(model, "0.5.10")[0] == 32768
    with_original = spec(max_position_embeddings=131072,
                         rope_scaling={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768})  # fmt: skip
    assert derived_context_length(with_original, "0.5.9")[0] == 131072  # the dict holds the original: no factor
    # vLLM up to v0.29: original x factor; from v0.30 the YaRN length is taken as already scaled
    assert derived_max_model_len(with_original, "0.29.0") == 131072
    assert derived_max_model_len(model, "0.29.0") == 131072
    assert derived_max_model_len(model, "0.30.0") == 32768


def test_llama3_nested_and_gemma3_are_not_scaled():
    llama3 = spec(max_position_embeddings=131072, rope_scaling={"rope_type": "llama3", "factor": 8.0})
    nested = spec(max_position_embeddings=8192, rope_parameters={"full_attention": {"rope_type": "linear", "factor": 8.0},
                                                                 "sliding_attention": {"rope_type": "default"}})  # fmt: skip
    gemma3 = spec(model_type="gemma3_text", max_position_embeddings=131072,
                  rope_scaling={"rope_type": "linear", "factor": 8.0})  # fmt: skip
    for release in ("0.5.7", "0.5.23"):
        assert derived_context_length(llama3, release)[0] == 131072
        assert derived_context_length(nested, release)[0] == 8192  # a nested dict has no factor at its top
    assert derived_max_model_len(llama3, "0.33.0") == 131072
    assert derived_max_model_len(gemma3, "0.33.0") == 131072
    assert derived_max_model_len(nested, "0.33.0") == 65536  # vLLM reads each layer type's dict


def test_longrope_defaults_to_the_original_length_in_vllm():
    model = spec(max_position_embeddings=131072, original_max_position_embeddings=4096,
                 rope_scaling={"rope_type": "longrope", "short_factor": [1.0], "long_factor": [1.0]})  # fmt: skip
    assert derived_max_model_len(model, "0.33.0") == 4096
    assert derived_context_length(model, "0.5.23")[0] == 131072


def test_embedding_gemma2_is_capped_at_8192_from_v0_5_22():
    config = json.loads((Path(__file__).resolve().parent / "conformance" / "configs" / "named-EmbeddingGemma2Model"
                         / "config.json").read_text())  # fmt: skip
    model = spec_from_config({**config, "max_position_embeddings": 32768}, model_id="t", path=None,
                             origin="directory", where="config.json")  # fmt: skip
    assert derived_context_length(model, "0.5.22")[0] == 8192
    assert derived_context_length(model, "0.5.21")[0] == 32768


def test_check_reports_the_derived_length(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({**BASE, "seq_length": 4096}))
    args = ["--profile", "h100-sxm-8", "--model", str(tmp_path), "--engine-version"]
    sglang = json.loads(CliRunner().invoke(main, [*args, "0.5.23", "--engine", "sglang", "check", "--json"]).stdout)
    assert sglang["startup"]["context_len"] == 4096 and "seq_length" in sglang["startup"]["context_source"]
    vllm = json.loads(CliRunner().invoke(main, [*args, "0.33.0", "--engine", "vllm", "check", "--json"]).stdout)
    memory = next(d for d in vllm["decisions"] if d["id"] == "memory_defaults")
    assert memory["value"]["max_model_len"] == 4096
