"""A context flag above what the config allows: SGLang's ModelConfig._derive_context_length and vLLM's
_get_and_verify_max_len refuse it at start-up unless an environment variable lets it through
(advisor/rules/sglang/context.py context_problems, advisor/rules/vllm/memory.py max_model_len_problems)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.intent import Intent
from advisor.models import spec_from_config
from advisor.plan import build_plan
from advisor.probe.profiles import load_profile

BASE = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 1024, "num_attention_heads": 8,
        "num_key_value_heads": 8, "num_hidden_layers": 2, "intermediate_size": 2048, "vocab_size": 32000,
        "torch_dtype": "bfloat16", "max_position_embeddings": 4096}  # fmt: skip
ENGINES = {"sglang": ("0.5.23", "--context-length", "sglang_context_length_too_long"),
           "vllm": ("0.33.0", "--max-model-len", "vllm_max_model_len_too_long")}  # fmt: skip


def problem_ids(engine: str, length: int, environment: dict[str, str] | None = None, extra: tuple[str, ...] = (),
                **config) -> set[str]:  # fmt: skip
    version, flag, _ = ENGINES[engine]
    model = spec_from_config({**BASE, **config}, model_id="t", path=None, origin="directory", where="config.json")
    facts = load_profile("h100-sxm-8")
    if environment:
        facts = replace(facts, environment={**facts.environment, **environment})
    intent = Intent(model="t", tp=1, engine=engine, engine_version=version, overrides=(flag, str(length), *extra))
    return {p.id for p in build_plan(facts, model, intent).problems}


@pytest.mark.parametrize("engine", ENGINES)
def test_up_to_the_config_length_starts_above_it_is_refused(engine):
    refused = ENGINES[engine][2]
    assert refused not in problem_ids(engine, 4096)
    assert refused in problem_ids(engine, 4097)


@pytest.mark.parametrize(("engine", "variable", "value"), [
    ("sglang", "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", "1"), ("sglang", "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", "Yes"),
    ("sglang", "SGLANG_IS_IN_CI", "true"), ("vllm", "VLLM_ALLOW_LONG_MAX_MODEL_LEN", " TRUE "),
    ("vllm", "VLLM_ALLOW_LONG_MAX_MODEL_LEN", "1")])  # fmt: skip
def test_the_engines_environment_variable_lets_it_through(engine, variable, value):
    assert ENGINES[engine][2] not in problem_ids(engine, 100_000, {variable: value})


@pytest.mark.parametrize(("engine", "variable"), [("sglang", "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"),
                                                  ("vllm", "VLLM_ALLOW_LONG_MAX_MODEL_LEN")])  # fmt: skip
def test_a_false_variable_does_not(engine, variable):
    assert ENGINES[engine][2] in problem_ids(engine, 100_000, {variable: "0"})


@pytest.mark.parametrize("engine", ENGINES)
def test_rope_scaling_raises_the_bound(engine):
    scaled = {"rope_scaling": {"rope_type": "linear", "factor": 4.0}}
    assert ENGINES[engine][2] not in problem_ids(engine, 16384, **scaled)
    assert ENGINES[engine][2] in problem_ids(engine, 16385, **scaled)


def test_vllm_admits_up_to_model_max_length_and_bounds_a_left_out_length_by_the_class_default():
    assert "vllm_max_model_len_too_long" not in problem_ids("vllm", 8192, model_max_length=8192)
    # vLLM reads the length from the config class, whose default fills a left-out max_position_embeddings
    # (transformers' LlamaConfig: 2048; rules/vllm/hf_config.py)
    unkeyed = {k: v for k, v in BASE.items() if k != "max_position_embeddings"}
    version, flag, refused = ENGINES["vllm"]
    model = spec_from_config(unkeyed, model_id="t", path=None, origin="directory", where="config.json")
    for length, is_refused in (("2048", False), ("2049", True)):
        intent = Intent(model="t", engine="vllm", engine_version=version, overrides=(flag, length))
        assert (refused in {p.id for p in build_plan(load_profile("h100-sxm-8"), model, intent).problems}) is is_refused


def test_vllm_disable_sliding_window_lowers_the_bound():
    assert "vllm_max_model_len_too_long" in problem_ids("vllm", 2048, extra=("--disable-sliding-window",),
                                                        sliding_window=1024)  # fmt: skip
    assert "vllm_max_model_len_too_long" not in problem_ids("vllm", 2048, sliding_window=1024)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(sorted(ENGINES)), st.integers(1, 1 << 20))
def test_refused_exactly_above_the_config_length(engine, length):
    assert (ENGINES[engine][2] in problem_ids(engine, length)) == (length > 4096)
