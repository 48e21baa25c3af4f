"""Tiny random Hugging Face checkpoints for the runtime's tests, built and saved with transformers.

Sizes are small enough to build in well under a second each; init scale is raised so logits are far from uniform and
greedy choices are not near-ties. Shapes are chosen to exercise the awkward cases: vocab not divisible by 2 (vocab
padding), one kv head at tp 2 (kv-head replication), tied embeddings, qkv bias, a dense layer inside a MoE model,
norm_topk_prob off, and Qwen3-VL-MoE's fused expert tensors under model.language_model.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

TINY = {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4, "head_dim": 16}
MODELS = ("llama", "qwen2", "qwen3", "qwen3_moe", "qwen3_vl_moe")


def _config(kind: str):
    import transformers as tf

    common = dict(TINY, rms_norm_eps=1e-6, max_position_embeddings=256, initializer_range=0.15, bos_token_id=1, eos_token_id=2)
    if kind == "llama":
        return tf.LlamaConfig(**common, num_key_value_heads=2, vocab_size=251, tie_word_embeddings=True, rope_theta=10000.0)
    if kind == "qwen2":
        common.pop("head_dim")
        return tf.Qwen2Config(**common, num_key_value_heads=2, vocab_size=256, tie_word_embeddings=False)
    if kind == "qwen3":
        return tf.Qwen3Config(**common, num_key_value_heads=1, vocab_size=253, tie_word_embeddings=False)
    moe = dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=48)
    if kind == "qwen3_moe":
        return tf.Qwen3MoeConfig(
            **common, **moe, num_key_value_heads=2, vocab_size=256, norm_topk_prob=False, mlp_only_layers=[1],
            tie_word_embeddings=False,
        )
    if kind == "qwen3_vl_moe":
        text = dict(common, **moe, num_key_value_heads=2, vocab_size=256)
        text.pop("bos_token_id"), text.pop("eos_token_id")
        vision = dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=64, deepstack_visual_indexes=[0])
        return tf.Qwen3VLMoeConfig(text_config=text, vision_config=vision, tie_word_embeddings=False)
    raise ValueError(kind)


def build_hf_model(kind: str, seed: int = 0):
    import transformers as tf

    torch.manual_seed(seed)
    config = _config(kind)
    config._attn_implementation = "eager"
    cls = {
        "llama": tf.LlamaForCausalLM,
        "qwen2": tf.Qwen2ForCausalLM,
        "qwen3": tf.Qwen3ForCausalLM,
        "qwen3_moe": tf.Qwen3MoeForCausalLM,
        "qwen3_vl_moe": tf.Qwen3VLMoeForConditionalGeneration,
    }[kind]
    model = cls(config).eval()
    with torch.no_grad():  # norms start at one; perturb them so a wrong norm wiring shows
        for name, param in model.named_parameters():
            if "norm" in name:
                param.add_(torch.randn_like(param) * 0.1)
    return model


def save_tiny_model(kind: str, path: Path) -> Path:
    """Save a tiny checkpoint plus a byte-level tokenizer.json; returns the directory."""
    from launcher.runtime.demo import build_byte_tokenizer

    model = build_hf_model(kind)
    model.save_pretrained(path)
    vocab = model.config.get_text_config().vocab_size
    build_byte_tokenizer(max(vocab, 259)).save(str(path / "tokenizer.json"))
    return path


ATOL = 2e-4  # float32 runtime vs transformers; observed differences are about 3e-6 with logits of std ~1.2


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("tiny-models")
    return {kind: save_tiny_model(kind, root / kind) for kind in MODELS}


@pytest.fixture(scope="session")
def references() -> dict:
    """transformers' logits and 16 greedy tokens per model for PROMPTS."""
    return {kind: hf_reference(build_hf_model(kind), PROMPTS) for kind in MODELS}


PROMPTS = [[5, 17, 42, 99, 3, 8, 250 % 251, 11], [7, 7, 123, 45]]


def open_runtime(
    model_dir: Path, max_batch_size: int = 4, max_model_len: int = 64, allreduce: str = "torch", cuda_graphs: bool = False
):
    """An InferenceEngine for a checkpoint in this process (world of one unless a process group is up), as the worker builds it."""
    from launcher.runtime.communicator import Communicator
    from launcher.runtime.config import load_config
    from launcher.runtime.dist import init_parallel
    from launcher.runtime.engine import InferenceEngine
    from launcher.runtime.loader import load_model

    config = load_config(model_dir)
    comm = Communicator(init_parallel(torch.device("cpu")), allreduce)
    comm.setup(max_batch_size * max_model_len, config.hidden_size, torch.float32)
    model = load_model(model_dir, config, comm, torch.float32, max_model_len)
    return InferenceEngine(model, max_batch_size, max_model_len, config.eos_token_ids, cuda_graphs=cuda_graphs)


def runtime_logits(engine, prompts: list[list[int]]) -> list[torch.Tensor]:
    """Logits at every position of each prompt, all prompts in one right-padded batch."""
    width = max(len(p) for p in prompts)
    ids = torch.zeros(len(prompts), width, dtype=torch.long)
    for row, prompt in enumerate(prompts):
        ids[row, : len(prompt)] = torch.tensor(prompt)
    positions = torch.arange(width).expand(len(prompts), width)
    logits = engine.model.logits(engine.model(ids, positions, torch.arange(len(prompts))))
    return [logits[row, : len(prompt)] for row, prompt in enumerate(prompts)]


def hf_reference(model, prompts: list[list[int]], new_tokens: int = 16) -> tuple[list[torch.Tensor], list[list[int]]]:
    """transformers' logits for each prompt and its greedy continuation (EOS not stopping it)."""
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    logits, tokens = [], []
    with torch.no_grad():
        for prompt in prompts:
            ids = torch.tensor([prompt])
            logits.append(model(input_ids=ids).logits[0].float())
            out = model.generate(ids, max_new_tokens=new_tokens, do_sample=False, attention_mask=torch.ones_like(ids))
            tokens.append(out[0, len(prompt) :].tolist())
    return logits, tokens
