"""The config grid: architectures the release does not name, and named ones whose config.json sets a property the
release reads from the config, run through each release's own resolution (issue 31, items 3 and 4).

Each variant is a real config of tests/conformance/configs/ with ``architectures[0]`` replaced by a name no release
names (the model_type stays, so transformers still loads the config class; SGLang then sees a custom model of a known
family) or with one config key added. What SGLang decides for them comes from the config alone: the MLA list, the
hybrid-SWA list, the attention-sink list and the MoE families are keyed on names, so an unnamed MLA, sliding-window or
linear-attention model takes the default path, while head dims (asymmetric K/V), ``learnable_sink``, ``is_hybrid_swa``,
the quantization method and the expert count still apply.

    python -m conformance sglang-configs write        # (re)write tests/conformance/configs/synthetic-*/config.json
    python -m conformance sglang 0.5.23 --grid configs  # golden tests/conformance/golden/sglang-configs-0.5.23.jsonl
"""

from __future__ import annotations

import json
from pathlib import Path

CONFIGS = Path(__file__).resolve().parents[2] / "tests" / "conformance" / "configs"
PREFIX = "synthetic-"

# name -> (the real config it starts from, architectures[0] or None to keep it, keys set on the config (or on its
# text_config when it has one), whether it is a MoE model for the layouts)
VARIANTS: dict[str, tuple[str, str | None, dict, bool]] = {
    # unnamed architectures of known families: only the config's properties can decide
    "x-mla-moe": ("deepseek-v3", "XMlaMoeForCausalLM", {}, True),  # kv_lora_rank, n_routed_experts, fp8 blocks
    "x-dsa": ("deepseek-v3.2", "XDsaForCausalLM", {}, True),  # index_topk without a DSA name
    "x-swa-sinks": ("gpt-oss-120b", "XSwaForCausalLM", {}, True),  # layer_types sliding_attention, mxfp4
    "x-linear-hybrid": ("qwen3-next-80b-a3b", "XLinearHybridForCausalLM", {}, True),  # linear attention layers
    "x-mamba-hybrid": ("nemotron-h-56b", "XMambaHybridForCausalLM", {}, False),  # Mamba layers
    "x-moe": ("qwen3-30b-a3b", "XMoeForCausalLM", {}, True),  # num_experts
    "x-moe-fp8": ("qwen3-30b-a3b-fp8", "XMoeFp8ForCausalLM", {}, True),  # num_experts, fp8
    "x-vl-moe": ("qwen3-vl-30b-a3b", "XVlMoeForConditionalGeneration", {}, True),  # vision_config, text_config
    "x-dense": ("llama-3.1-8b", "XDenseForCausalLM", {}, False),
    # named architectures with a config key the release reads
    "llama-learnable-sink": ("llama-3.1-8b", None, {"learnable_sink": True}, False),
    "llama-asymmetric-kv": ("llama-3.1-8b", None, {"head_dim": 128, "v_head_dim": 64}, False),
    "llama-hybrid-swa": ("llama-3.1-8b", None, {"is_hybrid_swa": True, "sliding_window": 4096}, False),
    "qwen3-moe-mla-fields": ("qwen3-30b-a3b", None, {"kv_lora_rank": 512, "qk_rope_head_dim": 64}, True),
}  # fmt: skip

GPUS = ("a100-sxm-8", "l40s-4", "h100-sxm-8", "b200-8", "rtx-pro-6000-4")


def variant_config(name: str) -> dict:
    base, architecture, keys, _ = VARIANTS[name]
    config = json.loads((CONFIGS / base / "config.json").read_text())
    if architecture is not None:
        config["architectures"] = [architecture]
    target = config["text_config"] if isinstance(config.get("text_config"), dict) else config
    target.update(keys)
    return config


def model_dir(name: str) -> str:
    """The folder name under tests/conformance/configs/ (what a scenario's ``model`` is)."""
    return PREFIX + name


def write() -> list[Path]:
    out = []
    for name in VARIANTS:
        path = CONFIGS / model_dir(name) / "config.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(variant_config(name), indent=2, sort_keys=True) + "\n")
        out.append(path)
    return out


def layouts(moe: bool) -> list[dict]:
    out = [dict(tp=tp, nnodes=1, dp_attention=False, dp_size=1, a2a="none") for tp in (1, 8)]
    if moe:
        out += [dict(tp=8, nnodes=1, dp_attention=True, dp_size=8, a2a="none"),
                dict(tp=8, nnodes=1, dp_attention=False, dp_size=1, a2a="deepep")]  # fmt: skip
    return out


def scenarios(limit: int | None = None) -> list[dict]:
    from conformance.sglang.grid import scenario_id

    out = [
        {"id": scenario_id(gpu, model_dir(name), layout), "gpu": gpu, "model": model_dir(name), **layout}
        for gpu in GPUS
        for name, (_, _, _, moe) in VARIANTS.items()
        for layout in layouts(moe)
    ]
    return out if limit is None else out[:limit]


# -- the named grid: every architecture a release names that transformers has a config class for -------------------
# Each config.json is transformers' own default for the class's model_type (``AutoConfig.for_model(model_type)``, the
# reference checkpoint's shape in most classes) with ``architectures`` set to the name; written once by
# ``python -m conformance sglang-configs write-named X.Y.Z`` and stored, so the tests never need transformers.
NAMED_PREFIX = "named-"
NAMED_GPUS = ("a100-sxm-8", "h100-sxm-8", "b200-8", "rtx-pro-6000-4")


def transformers_model_types() -> dict[str, str]:
    """{architecture class name: model_type} from transformers' auto mappings (the first model_type naming it)."""
    from transformers.models.auto import modeling_auto

    out: dict[str, str] = {}
    for attr in sorted(dir(modeling_auto)):
        mapping = getattr(modeling_auto, attr)
        if attr.endswith("_MAPPING_NAMES") and isinstance(mapping, dict):
            for model_type, classes in mapping.items():
                for cls in classes if isinstance(classes, (list, tuple)) else [classes]:
                    out.setdefault(cls, model_type)
    return out


def transformers_default_config(arch: str, types: dict[str, str]) -> dict | None:
    """transformers' default config of the class ``arch`` belongs to (``types``: transformers_model_types()), with
    ``architectures`` set to it and ``_written_by`` saying so; None when transformers has no class for the name or its
    config class needs arguments."""
    import transformers
    from transformers import AutoConfig

    if arch not in types:
        return None
    try:
        config = AutoConfig.for_model(types[arch]).to_dict()
    except Exception:  # a config class that needs arguments: not in the grid
        return None
    config["architectures"] = [arch]
    config["_written_by"] = f"transformers {transformers.__version__} AutoConfig.for_model({types[arch]!r})"
    return config


def write_named(release: str) -> list[Path]:
    from conformance.sglang.architectures import extract

    types = transformers_model_types()
    out = []
    for arch in extract(release):
        config = transformers_default_config(arch, types)
        if config is None:
            continue
        path = CONFIGS / (NAMED_PREFIX + arch) / "config.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(config, indent=1, sort_keys=True, default=str) + "\n")
        out.append(path)
    return out


def named_models() -> list[str]:
    return sorted(p.name for p in CONFIGS.glob(NAMED_PREFIX + "*") if (p / "config.json").is_file())


def named_moe(model: str) -> bool:
    """Whether the config declares experts, as the advisor's own model reading decides (ModelSpec.is_moe): MoE
    configs also get the DP-attention and DeepEP layouts. A config the advisor cannot read gets the plain layouts."""
    from advisor.models import ModelError, load_config_dir

    try:
        return load_config_dir(CONFIGS / model, model_id=model).is_moe
    except ModelError:
        return False


def named_scenarios(limit: int | None = None) -> list[dict]:
    from conformance.sglang.grid import scenario_id

    out = [
        {"id": scenario_id(gpu, model, layout), "gpu": gpu, "model": model, **layout}
        for gpu in NAMED_GPUS
        for model in named_models()
        for layout in layouts(named_moe(model))
    ]
    return out if limit is None else out[:limit]
