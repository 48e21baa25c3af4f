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
