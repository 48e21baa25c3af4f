"""The runtime against transformers at tp 1 (in-process): same weights, logits within tolerance, 16 greedy tokens equal."""

from __future__ import annotations

import pytest
import torch
from runtime_models import MODELS, PROMPTS, build_hf_model, hf_reference, open_runtime, runtime_logits, save_tiny_model

from launcher.runtime.engine import SamplingParams

ATOL = 2e-4


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("tiny-models")
    return {kind: save_tiny_model(kind, root / kind) for kind in MODELS}


@pytest.fixture(scope="session")
def references() -> dict:
    return {kind: hf_reference(build_hf_model(kind), PROMPTS) for kind in MODELS}


@pytest.mark.parametrize("kind", MODELS)
def test_logits_and_greedy_tokens_match_transformers(kind, tiny_models, references):
    engine = open_runtime(tiny_models[kind])
    hf_logits, hf_tokens = references[kind]
    for ours, theirs in zip(runtime_logits(engine, PROMPTS), hf_logits, strict=True):
        assert ours.shape == theirs.shape
        assert torch.allclose(ours, theirs, atol=ATOL, rtol=0), float((ours - theirs).abs().max())
    tokens = engine.generate(PROMPTS, SamplingParams(max_tokens=16, ignore_eos=True))
    assert tokens == hf_tokens
