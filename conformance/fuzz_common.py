"""What the SGLang and vLLM differential fuzzers (conformance/sglang/fuzz.py, conformance/vllm/fuzz.py) share: the
public configs they start from, where a config keeps the language model's keys, and the perturbations both engines'
resolutions branch on the same way (dtype, KV heads, hybrid layer fields). Each perturbation changes the config in
place and returns a tag "cause:detail"."""

from __future__ import annotations

import random

PUBLIC = ("llama-3.1-8b", "qwen3-32b", "qwen3-30b-a3b", "qwen3-30b-a3b-fp8", "qwen3-next-80b-a3b", "qwen3-vl-30b-a3b",
          "qwen3.5-397b-a17b", "deepseek-v3", "deepseek-v3.2", "kimi-k2.5", "glm-4.5", "glm-5", "gpt-oss-120b",
          "nemotron-h-56b")  # fmt: skip
EXPERT_KEYS = ("num_experts", "n_routed_experts", "num_local_experts")
SUB_CONFIG = "text_config"


def text_part(config: dict) -> dict:
    """Where the language model's keys live (text_config when the config nests them)."""
    sub = config.get(SUB_CONFIG)
    return sub if isinstance(sub, dict) else config


def int_of(d: dict, key: str, default: int) -> int:
    value = d.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default


def p_dtype(config: dict, rng: random.Random) -> str:
    dtype = rng.choice(("bfloat16", "float16", "float32"))
    for target in (config, text_part(config)):
        target["torch_dtype"] = dtype
        if "dtype" in target:
            target["dtype"] = dtype
    return f"dtype:{dtype}"


def p_kv_heads(config: dict, rng: random.Random) -> str:
    text = text_part(config)
    heads = int_of(text, "num_attention_heads", 32)
    text["num_key_value_heads"] = rng.choice([d for d in (1, 2, 4, 8, heads) if heads % d == 0])
    return "kv_heads"


def p_hybrid(config: dict, rng: random.Random) -> str:
    text = text_part(config)
    layers = int_of(text, "num_hidden_layers", 32)
    how = rng.choice(("linear_attention", "mamba_pattern", "full_attention_interval", "mamba_fields"))
    if how == "linear_attention":
        text["layer_types"] = ["full_attention" if i % 4 == 3 else "linear_attention" for i in range(layers)]
        text.update(linear_num_value_heads=32, linear_num_key_heads=16, linear_key_head_dim=128,
                    linear_value_head_dim=128, linear_conv_kernel_dim=4)  # fmt: skip
    elif how == "mamba_pattern":
        text["hybrid_override_pattern"] = "".join("*" if i % 4 == 3 else "M" for i in range(layers))
        text.update(mamba_num_heads=64, mamba_head_dim=64, ssm_state_size=128, n_groups=8, conv_kernel=4)
    elif how == "full_attention_interval":
        text["full_attention_interval"] = 4
    else:
        text.update(mamba_d_state=128, mamba_d_conv=4, mamba_expand=2, attn_layer_period=8, attn_layer_offset=4)
    return f"hybrid:{how}"
