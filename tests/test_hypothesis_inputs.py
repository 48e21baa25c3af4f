"""Property tests over the numbers in the files the advisor reads: whatever integer a model's config.json or a facts
file holds, `advisor check` and `advisor layouts` end with a documented exit code and at most one `error:` line, never a
traceback (ZeroDivisionError, OverflowError and int-conversion limits included). In-process through click's CliRunner."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.cli import main
from advisor.models import ZERO_MEANS_NONE, catalog_config
from advisor.probe.profiles import load_profile
from advisor.report.data import facts_to_dict

SETTINGS = settings(max_examples=30, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
ENGINES = ("sglang", "vllm", "bundled")
SIZE_KEYS = ["hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
             "intermediate_size", "num_experts", "n_routed_experts", "num_experts_per_tok", "moe_intermediate_size",
             "vocab_size", "kv_lora_rank", "max_position_embeddings", "qk_nope_head_dim", "qk_rope_head_dim",
             "v_head_dim", "q_lora_rank", "full_attention_interval", "sliding_window"]  # fmt: skip
# a 0 the model reader takes as "none" (a dense model's experts, no sliding window, a head_dim to derive)
ZERO_IS_NONE = ZERO_MEANS_NONE
EXPERT_COUNT_KEYS = ("num_experts", "num_local_experts", "n_routed_experts")  # the reader takes the first set
# Every kind of integer a careless or hostile file may hold: the edges, small, realistic, huge, and past int limits.
numbers = st.one_of(
    st.sampled_from([0, -1, 1, 2, 3, 7, 2**31, 2**63, 10**30, -(10**30)]),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.integers(min_value=1, max_value=65536),
)


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def assert_clean(result, args) -> None:
    assert result.exit_code in (0, 1, 2), (args, result.exit_code, result.output, repr(result.exception))
    assert result.exception is None or isinstance(result.exception, SystemExit), (args, repr(result.exception))
    errors = result.stderr.splitlines()
    assert len(errors) <= 1 and all(line.startswith("error: ") for line in errors), (args, result.stderr)
    assert "Traceback" not in result.output


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=True)


@SETTINGS
@given(key=st.sampled_from(SIZE_KEYS), value=numbers, engine=st.sampled_from(ENGINES),
       base=st.sampled_from(["Qwen/Qwen3-30B-A3B", "deepseek-ai/DeepSeek-V3", "meta-llama/Llama-3.1-8B-Instruct"]))
def test_any_size_in_config_json_ends_cleanly(workdir, key, value, engine, base):
    model = workdir / "model"
    model.mkdir(exist_ok=True)
    config = dict(catalog_config(base))
    # an expert count under a second name is one neither engine reads (Qwen's num_experts comes first)
    shadowed = key in EXPERT_COUNT_KEYS and any(k in config for k in EXPERT_COUNT_KEYS if k != key)
    config[key] = value
    (model / "config.json").write_text(json.dumps(config), encoding="utf-8")
    for command in ("check", "layouts"):
        args = [command, "--profile", "h100-sxm-8", "--engine", engine, "--model", str(model)]
        result = run(*args)
        assert_clean(result, args)
        if value <= 0 and not (value == 0 and key in ZERO_IS_NONE) and not shadowed:
            assert result.exit_code == 1 and key in result.stderr, (args, result.stderr)


@SETTINGS
@given(field=st.sampled_from(["memory_total_mib", "memory_free_mib", "nvlinks_active", "index"]), value=numbers,
       engine=st.sampled_from(ENGINES))
def test_any_gpu_number_in_a_facts_file_ends_cleanly(workdir, field, value, engine):
    data = facts_to_dict(load_profile("h100-sxm-8"))
    data["gpus"][0][field] = value
    facts = workdir / "facts.json"
    facts.write_text(json.dumps(data), encoding="utf-8")
    for command in ("check", "layouts"):
        args = [command, "--facts", str(facts), "--engine", engine, "--model", "Qwen/Qwen3-30B-A3B"]
        assert_clean(run(*args), args)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_gpu_with_no_memory_is_refused_with_one_line(workdir, engine):
    data = facts_to_dict(load_profile("h100-sxm-8"))
    for gpu in data["gpus"]:
        gpu["memory_total_mib"] = 0
    facts = workdir / "facts.json"
    facts.write_text(json.dumps(data), encoding="utf-8")
    result = run("layouts", "--facts", str(facts), "--engine", engine, "--model", "Qwen/Qwen3-30B-A3B")
    assert result.exit_code == 1 and "memory_total_mib 0" in result.stderr
