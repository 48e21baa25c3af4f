"""The vLLM rules that follow the config (issue 31): the registry's suffix normalization and runner, pooling and
encoder-decoder models, the attention backends' head sizes, max_model_len from every context-length key. Proven against
vLLM itself by the architectures goldens (tests/conformance/test_vllm_conformance.py); these pin the rules' edges."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from advisor.models import CONTEXT_LENGTH_KEYS, spec_from_config
from advisor.rules.vllm import attention, memory, runner

NEWEST = "0.33.0"


def spec(**config):
    config.setdefault("architectures", ["LlamaForCausalLM"])
    return spec_from_config(config, model_id="m", path=None, origin="directory", where="m")


def test_a_suffix_the_registry_lacks_runs_its_causal_lm_as_a_pooling_model():
    model = spec(architectures=["LlamaForSequenceClassification"])
    assert runner.registry_architecture(model, NEWEST) == "LlamaForCausalLM"
    assert runner.runner_type(model, NEWEST) == "pooling"
    assert runner.chunked_prefill_supported(model, NEWEST)  # converted: last-token pooling
    assert runner.registry_architecture(spec(architectures=["AcmeForSequenceClassification"]), NEWEST) is None


def test_a_cls_pooling_class_has_neither_chunked_prefill_nor_prefix_caching():
    bert = spec(architectures=["BertForSequenceClassification"])
    assert runner.is_pooling(bert, NEWEST) and runner.pooling_unchunked(bert, NEWEST)
    assert not runner.chunked_prefill_supported(bert, NEWEST)
    assert runner.runner_type(spec(), NEWEST) == "generate"


def test_an_encoder_decoder_config_is_not_chunked():
    whisper = spec(architectures=["WhisperForConditionalGeneration"], is_encoder_decoder=True)
    assert runner.encoder_decoder(whisper, NEWEST) and not runner.chunked_prefill_supported(whisper, NEWEST)


def test_head_sizes_rule_out_backends_in_priority_order():
    assert attention.supports_head_size("FLASH_ATTN", 512, 9, "0.20.2")
    assert not attention.supports_head_size("FLASH_ATTN", 512, 9, "0.19.1")
    assert not attention.supports_head_size("FLASH_ATTN", 512, 8, NEWEST)  # no FA4 on SM80
    assert attention.supports_head_size("FLASHINFER", 512, 10, "0.25.1")
    assert not attention.supports_head_size("FLASHINFER", 512, 10, "0.20.2")
    assert not attention.supports_head_size("TRITON_ATTN", 16, 9, NEWEST)


@given(head=st.integers(1, 1024), major=st.sampled_from([8, 9, 10]))
def test_the_backend_is_the_first_of_the_priority_list_that_takes_the_head_size(head, major):
    model = spec(hidden_size=head * 8, num_attention_heads=8, head_dim=head)
    scenario = type("S", (), {"capability": (major, 0), "model": model, "tp": 1})()
    chosen = attention.attention_backend(scenario, NEWEST)
    order = ["FLASHINFER", "FLASH_ATTN"] if major == 10 else ["FLASH_ATTN", "FLASHINFER"]
    order += ["TRITON_ATTN", "FLEX_ATTENTION"]
    assert chosen == next(b for b in order if attention.supports_head_size(b, head, major, NEWEST))


def test_mamba_without_heads_has_head_size_zero():
    assert attention.selector_head_size(spec(architectures=["MambaForCausalLM"], hidden_size=768)) == 0


@given(st.dictionaries(st.sampled_from(CONTEXT_LENGTH_KEYS), st.integers(1, 2**21), max_size=4))
def test_max_model_len_is_the_smallest_stated_length_model_max_length_first(lengths):
    got = memory.derived_max_model_len(spec(**lengths))
    if "model_max_length" in lengths:
        assert got == lengths["model_max_length"]
    else:
        assert got == (min(lengths.values()) if lengths else memory.DEFAULT_MAX_MODEL_LEN)


def test_an_omni_models_length_is_its_thinkers():
    model = spec(architectures=["Qwen2_5OmniForConditionalGeneration"],
                 thinker_config={"text_config": {"max_position_embeddings": 32768}})  # fmt: skip
    assert memory.derived_max_model_len(model) == 32768
