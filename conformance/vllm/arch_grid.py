"""The architectures grid: every config.json under tests/conformance/configs/ (public checkpoints' configs, and the
synthetic variants this module writes) resolved by each release on one GPU of each kind the rules tell apart.

    python -m conformance.vllm 0.33.0 --grid architectures

A scenario names its model by the config directory (relative to the repository), so the conformance test rebuilds the
same plan from it (tests/conformance/test_vllm_architectures_conformance.py). The synthetic variants are what a model
the grid does not hold looks like to vLLM: an architecture name its registry does not list with MLA fields, with
sliding-window layer_types, with Mamba layers (vLLM refuses each: its registry decides which model class runs), and
names it lists with config properties the public checkpoints lack (sliding-window layers on Qwen3, smaller Mamba2 /
gated-delta-net states).
"""

from __future__ import annotations

import json
from pathlib import Path

from conformance.vllm.grid import gpu_of

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "tests" / "conformance" / "configs"
# SM90, SM100 and SM80: the attention priority lists and the MLA block sizes differ by major capability.
PROFILES = ("h100-sxm-8", "b200-8", "a100-sxm-8")
# Draft models (EAGLE heads): vLLM loads them only as a speculative config's draft, never as the served model.
DRAFTS = ("eagle-llama-3.1-8b", "eagle3-llama-3.1-8b")
SYNTHETIC_PREFIX = "synthetic-"


def _config(name: str) -> dict:
    return json.loads((CONFIGS / name / "config.json").read_text())


def synthetic_configs() -> dict[str, dict]:
    """Directory name -> config.json of each synthetic variant, built from the public configs."""
    unknown_mla = {**_config("deepseek-v3"), "architectures": ["AcmeMlaForCausalLM"]}
    layers = _config("qwen3-32b")["num_hidden_layers"]
    windows = ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(layers)]
    qwen3_swa = {**_config("qwen3-32b"), "use_sliding_window": True, "sliding_window": 4096, "max_window_layers": 0,
                 "layer_types": windows}  # fmt: skip
    unknown_swa = {**qwen3_swa, "architectures": ["AcmeSwaForCausalLM"]}
    unknown_mamba = {**_config("nemotron-h-56b"), "architectures": ["AcmeHybridForCausalLM"]}
    # Names vLLM serves, with config properties no public checkpoint here has: the rules must follow the config. (A key
    # left out is no variant: transformers' config class fills its default, e.g. GLM-5's index_topk, DeepSeek V3's
    # kv_lora_rank, and vLLM reads the filled value.)
    nemotron_small = {**_config("nemotron-h-56b"), "mamba_num_heads": 128, "ssm_state_size": 128,
                      "mamba_ssm_cache_dtype": "float16"}  # fmt: skip
    qwen3_next_small = {**_config("qwen3-next-80b-a3b"), "linear_num_value_heads": 16, "linear_value_head_dim": 64}
    return {f"{SYNTHETIC_PREFIX}{name}": config for name, config in (
        ("unknown-mla", unknown_mla), ("unknown-swa", unknown_swa), ("unknown-mamba", unknown_mamba),
        ("qwen3-swa", qwen3_swa), ("nemotron-h-small-state", nemotron_small),
        ("qwen3-next-small-state", qwen3_next_small))}  # fmt: skip


def write_synthetic() -> None:
    """(Re)write the synthetic variants' config.json files (committed: CI reads them without this module)."""
    for name, config in synthetic_configs().items():
        path = CONFIGS / name / "config.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(config, indent=1) + "\n")


def config_dirs() -> list[str]:
    """Every config directory of the grid, relative to the repository."""
    names = sorted(p.parent.name for p in CONFIGS.glob("*/config.json") if p.parent.name not in DRAFTS)
    return [str((CONFIGS / name).relative_to(REPO)) for name in names]


def scenarios() -> list[dict]:
    out = []
    for profile in PROFILES:
        for model in config_dirs():
            out.append({"id": f"{profile}|{model}|tp1|", "profile": profile, "model": model, "tp": 1, "overrides": []})
    return out


def resolver_input(root: Path, items: list[dict]) -> list[dict]:
    """Each scenario as the resolver takes it: the faked GPU and the ``vllm serve`` argv on the config directory."""
    return [{"id": s["id"], "gpu": gpu_of(s["profile"]),
             "argv": ["--model", str(REPO / s["model"]), "--tensor-parallel-size", str(s["tp"]),
                      "--skip-tokenizer-init"]}
            for s in items]  # fmt: skip
