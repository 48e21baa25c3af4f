"""The embedded demo model: a small Qwen3-MoE with random weights (fixed seed) and a byte-level tokenizer.

Written once to a cache directory as an ordinary Hugging Face checkpoint and then loaded through the normal path, so
every code path runs on any machine. Its text output is meaningless; its mechanics are real.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import torch
from safetensors.torch import save_file
from tokenizers import Tokenizer, decoders, models, pre_tokenizers

DEMO_SEED = 1234
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
DEMO_CONFIG = {
    "architectures": ["Qwen3MoeForCausalLM"],
    "model_type": "qwen3_moe",
    "hidden_size": 256,
    "num_hidden_layers": 4,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "head_dim": 32,
    "intermediate_size": 512,
    "moe_intermediate_size": 256,
    "num_experts": 8,
    "num_experts_per_tok": 2,
    "norm_topk_prob": True,
    "decoder_sparse_step": 1,
    "mlp_only_layers": [],
    "vocab_size": 384,
    "rms_norm_eps": 1e-6,
    "rope_theta": 1000000.0,
    "max_position_embeddings": 4096,
    "hidden_act": "silu",
    "attention_bias": False,
    "torch_dtype": "float32",
    "tie_word_embeddings": False,
    "bos_token_id": 256,
    "eos_token_id": 258,
}


def cache_root() -> Path:
    return Path(os.environ.get("TP_ADVISOR_CACHE") or Path.home() / ".cache" / "tp-advisor")


def demo_dir() -> Path:
    digest = hashlib.sha256(json.dumps([DEMO_CONFIG, DEMO_SEED, CHAT_TEMPLATE], sort_keys=True).encode()).hexdigest()
    return cache_root() / f"demo-{digest[:12]}"


def ensure_demo_model() -> Path:
    """The demo checkpoint's directory, written on first use. Safe when several ranks start at once: a file lock
    serialises them and the directory appears by an atomic rename, so nobody ever sees a half-written one."""
    target = demo_dir()
    if (target / "config.json").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f"{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target / "config.json").is_file():
            staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
            try:
                write_demo_checkpoint(staging)
                os.rename(staging, target)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
    return target


def write_demo_checkpoint(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps(DEMO_CONFIG, indent=2))
    (path / "generation_config.json").write_text(json.dumps({"eos_token_id": [258, 256]}))
    save_file(demo_weights(), str(path / "model.safetensors"), metadata={"format": "pt"})
    build_byte_tokenizer(DEMO_CONFIG["vocab_size"]).save(str(path / "tokenizer.json"))
    tokenizer_config = {
        "chat_template": CHAT_TEMPLATE,
        "eos_token": "<|im_end|>",
        "bos_token": None,
        "pad_token": "<|endoftext|>",
        "model_max_length": DEMO_CONFIG["max_position_embeddings"],
    }
    (path / "tokenizer_config.json").write_text(json.dumps(tokenizer_config, indent=2))


def demo_weights() -> dict[str, torch.Tensor]:
    c = DEMO_CONFIG
    generator = torch.Generator().manual_seed(DEMO_SEED)
    h, d, vocab = c["hidden_size"], c["head_dim"], c["vocab_size"]
    q, kv, inter, experts = c["num_attention_heads"] * d, c["num_key_value_heads"] * d, c["moe_intermediate_size"], c["num_experts"]

    def rand(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=generator) * 0.05

    weights = {"model.embed_tokens.weight": rand(vocab, h), "model.norm.weight": torch.ones(h), "lm_head.weight": rand(vocab, h)}
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}"
        weights |= {
            f"{p}.input_layernorm.weight": torch.ones(h),
            f"{p}.post_attention_layernorm.weight": torch.ones(h),
            f"{p}.self_attn.q_proj.weight": rand(q, h),
            f"{p}.self_attn.k_proj.weight": rand(kv, h),
            f"{p}.self_attn.v_proj.weight": rand(kv, h),
            f"{p}.self_attn.o_proj.weight": rand(h, q),
            f"{p}.self_attn.q_norm.weight": torch.ones(d),
            f"{p}.self_attn.k_norm.weight": torch.ones(d),
            f"{p}.mlp.gate.weight": rand(experts, h),
        }
        for e in range(experts):
            weights |= {
                f"{p}.mlp.experts.{e}.gate_proj.weight": rand(inter, h),
                f"{p}.mlp.experts.{e}.up_proj.weight": rand(inter, h),
                f"{p}.mlp.experts.{e}.down_proj.weight": rand(h, inter),
            }
    return weights


def build_byte_tokenizer(vocab_size: int) -> Tokenizer:
    """256 byte tokens, the special tokens, then reserved tokens up to vocab_size."""
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    byte_vocab = {symbol: i for i, symbol in enumerate(sorted(alphabet, key=_byte_of))}
    tokenizer = Tokenizer(models.BPE(vocab=byte_vocab, merges=[]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tokenizer.decoder = decoders.ByteLevel()
    reserved = [f"<|reserved_{i}|>" for i in range(vocab_size - 256 - len(SPECIAL_TOKENS))]
    tokenizer.add_special_tokens(SPECIAL_TOKENS + reserved)
    return tokenizer


def _byte_of(symbol: str) -> int:
    """ByteLevel maps each byte to one printable character; order the vocab so that id == byte value."""
    return _BYTE_OF_SYMBOL[symbol]


def _bytes_to_unicode() -> dict[int, str]:
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    mapping, extra = {}, 0
    for b in range(256):
        if b in printable:
            mapping[b] = chr(b)
        else:
            mapping[b] = chr(256 + extra)
            extra += 1
    return mapping


_BYTE_OF_SYMBOL = {symbol: byte for byte, symbol in _bytes_to_unicode().items()}
