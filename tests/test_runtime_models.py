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



@pytest.mark.parametrize(
    ("kind", "moe_path", "kernels"),
    [
        ("qwen3_moe", "grouped", "plain"),  # the tiny prompts would otherwise always take the dense path
        ("qwen3_moe", "grouped", "onednn"),
        ("qwen3_moe", "dense", "onednn"),
        ("qwen3_vl_moe", "grouped", "onednn"),
        ("qwen3_vl_moe", "dense", "onednn"),
        ("llama", "default", "onednn"),  # tied embeddings, vocab 251
        ("qwen2", "default", "onednn"),  # qkv bias
        ("qwen3", "default", "onednn"),
    ],
)
def test_moe_paths_and_prepacked_kernels_match_transformers(
    kind, moe_path, kernels, tiny_models, references, monkeypatch  # noqa: F811
):
    from launcher.runtime.layers import moe, onednn

    if moe_path != "default":
        monkeypatch.setattr(moe, "use_dense", lambda tokens, experts, top_k: moe_path == "dense")
    if kernels == "onednn":
        monkeypatch.setattr(onednn, "PACK_MIN_ELEMENTS", 0)
    engine = open_runtime(tiny_models[kind])
    model = engine.model
    heads = [model.lm_head.weight] + [layer.attn.qkv.weight for layer in model.layers]
    assert all(w.is_mkldnn for w in heads) if kernels == "onednn" else not any(p.is_mkldnn for p in model.parameters())
    hf_logits, hf_tokens = references[kind]
    for ours, theirs in zip(runtime_logits(engine, PROMPTS), hf_logits, strict=True):
        assert torch.allclose(ours, theirs, atol=ATOL, rtol=0), float((ours - theirs).abs().max())
    assert engine.generate(PROMPTS, SamplingParams(max_tokens=16, ignore_eos=True)) == hf_tokens


def test_moe_path_choice():
    from launcher.runtime.layers.moe import DENSE_MAX_TOKENS, use_dense

    assert use_dense(4, 8, 2)  # decode, batch 4: every expert likely routed to
    assert not use_dense(1, 8, 2)  # one token reads 2 of 8 experts: grouped reads less
    assert not use_dense(1, 128, 8)
    assert not use_dense(DENSE_MAX_TOKENS + 1, 8, 2)  # prefill-sized: the dense form's extra arithmetic dominates


def test_onednn_linear_matches_f_linear_and_keeps_other_weights_plain():
    from torch import nn

    from launcher.runtime.layers.onednn import PACK_MIN_ELEMENTS, can_pack, linear, packed_param

    assert can_pack(torch.zeros(512, 256))  # this CPU build has oneDNN: the fast path is really exercised here
    weight = nn.Parameter(torch.randn(1024, 128), requires_grad=False)
    x, bias = torch.randn(2, 3, 128), torch.randn(1024)
    packed = packed_param(weight)
    assert packed.is_mkldnn and packed.shape == weight.shape
    torch.testing.assert_close(linear(x, packed, bias), torch.nn.functional.linear(x, weight, bias))
    small = nn.Parameter(torch.randn(64, 64), requires_grad=False)  # oneDNN's fixed cost outweighs its gain here
    half = nn.Parameter(torch.randn(PACK_MIN_ELEMENTS, 1, dtype=torch.bfloat16), requires_grad=False)
    assert packed_param(small) is small and packed_param(half) is half
    assert not can_pack(torch.zeros(8, 128, 128))
