"""The runtime against transformers at tp 1 (in-process): same weights, logits within tolerance, 16 greedy tokens equal."""

from __future__ import annotations

import pytest
import torch
from runtime_models import ATOL, MODELS, PROMPTS, open_runtime, references, runtime_logits, tiny_models  # noqa: F401

from launcher.runtime.engine import SamplingParams


@pytest.mark.parametrize("kind", MODELS)
def test_logits_and_greedy_tokens_match_transformers(kind, tiny_models, references):  # noqa: F811
    engine = open_runtime(tiny_models[kind])
    hf_logits, hf_tokens = references[kind]
    for ours, theirs in zip(runtime_logits(engine, PROMPTS), hf_logits, strict=True):
        assert ours.shape == theirs.shape
        assert torch.allclose(ours, theirs, atol=ATOL, rtol=0), float((ours - theirs).abs().max())
    tokens = engine.generate(PROMPTS, SamplingParams(max_tokens=16, ignore_eos=True))
    assert tokens == hf_tokens


def test_llama3_rope_scaling_matches_transformers(tmp_path):
    import json

    import transformers
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    from launcher.runtime.config import load_config
    from launcher.runtime.layers.rotary import inverse_frequencies

    scaling = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 64}
    hf_config = transformers.LlamaConfig(hidden_size=256, num_attention_heads=2, head_dim=128, rope_theta=500000.0,
                                         rope_scaling=scaling, architectures=["LlamaForCausalLM"])
    expected, _ = ROPE_INIT_FUNCTIONS["llama3"](hf_config)
    hf_config.save_pretrained(tmp_path)
    assert "llama3" in json.dumps(json.loads((tmp_path / "config.json").read_text()))
    ours = load_config(tmp_path)  # whichever field transformers wrote it to, the runtime reads it back
    torch.testing.assert_close(inverse_frequencies(128, ours.rope_theta, ours.rope_scaling), expected)
