"""The model as vLLM reads its config.json: through the config class it builds it with (vLLM's own _CONFIG_REGISTRY
class for a model_type it registers, else transformers'), whose defaults stand in for what config.json leaves out.

vLLM's ModelConfig reads the language model's sizes from ``get_hf_text_config`` (vllm/transformers_utils/config.py,
v0.33.0), the config's ``get_text_config()``:

- a composite class (a text sub-config beside the top level: Qwen3-VL, SigLIP, ColPali) builds its *default* text
  sub-config when config.json has no text_config, and top-level text keys do not reach it: vLLM reads that default's
  sizes and context length, not the top level's;
- a key config.json leaves out takes the class's default (DeepseekV3Config's kv_lora_rank 512, a context length), so a
  DeepSeek config without kv_lora_rank is still MLA to vLLM.

What each release's classes give is read into config_defaults.json by ``python -m conformance.vllm.config_defaults
X.Y.Z``; a release not read there (or read before text_defaults existed) keeps what config.json says.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from advisor.models import NESTED_TEXT_WRAPPERS, ModelError, ModelSpec, spec_from_config
from advisor.rules.vllm.text_config import config_defaults

# What the model keeps from config.json's top level when its text part is the class's default text sub-config: what
# vLLM reads from hf_config (architectures, quantization_config, dtype, vision_config) and where the spec came from.
TOP_LEVEL_FIELDS = ("id", "architecture", "architectures", "model_type", "dtype", "quantization", "weight_bits",
                    "quant_method", "quant_config", "modelopt_kv_cache", "path", "origin", "notes", "num_params",
                    "vision", "has_text_config", "language_config", "top_level_index_topk", "config_objects",
                    "nested_text", "top_level_keys")  # fmt: skip




def default_text_config(model_type: str | None, version: str) -> dict[str, Any] | None:
    """The default text sub-config (the keys the advisor reads) ``version``'s class for ``model_type`` builds when
    config.json has no text_config; None where the class has none, or top-level keys reach it."""
    return config_defaults(version).get("text_defaults", {}).get(model_type) if model_type else None


def text_key(model_type: str | None, version: str) -> str | None:
    """The top-level key whose object a composite class builds its text sub-config from (text_config; ColPali's
    vlm_config, Qwen3-Omni's thinker_config); None where the reader found none."""
    return config_defaults(version).get("text_key", {}).get(model_type) if model_type else None


def class_defaults(model_type: str | None, version: str) -> dict[str, int]:
    """What the text config's class gives a left-out MLA rank, index_topk or max_position_embeddings."""
    return config_defaults(version).get("class_defaults", {}).get(model_type, {}) if model_type else {}


def missing_attributes(model_type: str | None, version: str) -> frozenset[str]:
    """The MLA attributes (kv_lora_rank, qk_nope_head_dim) the text config's class does not have at all."""
    return frozenset(config_defaults(version).get("missing_attrs", {}).get(model_type, ())) if model_type else frozenset()


def head_dim_from_rope(model_type: str | None, version: str) -> str | None:
    """How the class sets head_dim to qk_rope_head_dim: "always", over a written one (transformers' MiniCPM3Config);
    "default", only where config.json writes none; None where it keeps head_dim as written."""
    return config_defaults(version).get("head_dim_from_rope", {}).get(model_type) if model_type else None


def layer_head_sizes(model: ModelSpec, version: str) -> frozenset[int] | None:
    """The head widths of the model's layer types where its class gives them different widths (transformers'
    per_layer_config: Gemma 4's full-attention layers take global_head_dim, 512 by default): each layer type's width is
    the key it follows as config.json writes it, else the class's default. None where the class gives one width, or
    config.json writes no layer_types."""
    entry = config_defaults(version).get("layer_head_dims", {}).get(model.model_type) if model.model_type else None
    if entry is None or not model.layer_types:
        return None
    written = {"head_dim": model.config_head_dim, "global_head_dim": model.global_head_dim}
    widths = set()
    for layer_type in set(model.layer_types):
        width = written.get(entry["follows"].get(layer_type) or "") or entry["widths"].get(layer_type)
        if width is None:
            width = model.config_head_dim or model.head_dim
        if width is not None:
            widths.add(width)
    return frozenset(widths)


def vllm_model(model: ModelSpec | None, version: str) -> ModelSpec | None:
    """``model`` as ``version`` reads it (see the module docstring); ``model`` itself where nothing changes."""
    if model is None:
        return None
    model = _class_view(model, version)
    nested = any(r.key == "rope_parameters" and r.layer is not None for r in model.rope)
    if nested and model.model_type in config_defaults(version).get("rope_scaling_ignored", ()):
        # the class drops a legacy rope_scaling beside rope_parameters nested by layer type (vLLM's Step3p7TextConfig)
        model = replace(model, rope=tuple(r for r in model.rope if r.key != "rope_scaling"))
    return model


def _class_view(model: ModelSpec, version: str) -> ModelSpec:
    defaults = default_text_config(model.model_type, version)
    if defaults is not None and not _text_handed(model, version):
        return _with_default_text(model, defaults)
    if defaults is not None and not _reads_text_config(model, version):
        # handed its text in another sub-config: the text_config one level down (thinker_config's, vlm_config's) over
        # the class's defaults, where config.json has one
        if model.nested_text and text_key(model.model_type, version) in NESTED_TEXT_WRAPPERS:
            return _with_default_text(model, {**defaults, **dict(model.nested_text)})
        return model

    model = _filled(model, class_defaults(model.model_type, version))
    how = head_dim_from_rope(model.model_type, version)
    rope = model.qk_rope_head_dim
    if rope and (how == "always" or (how == "default" and "head_dim" in model.unwritten)):
        model = replace(model, head_dim=rope, config_head_dim=rope, head_dim_zero=False)
    return model


def _text_handed(model: ModelSpec, version: str) -> bool:
    """Whether config.json hands the composite class its text sub-config: a text_config the class takes, or the key
    whose object holds it (ColPali's vlm_config); where the reader found no such key, any language sub-config."""
    key = text_key(model.model_type, version)
    if key is None:
        return model.language_config is not None
    return _reads_text_config(model, version) or key in model.config_objects


def _reads_text_config(model: ModelSpec, version: str) -> bool:
    """config.json's text_config is the composite class's text sub-config (the one the spec reads)."""
    ignored = model.model_type in config_defaults(version).get("text_config_ignored", ())
    return "text_config" in model.config_objects and not ignored


def _with_default_text(model: ModelSpec, defaults: dict[str, Any]) -> ModelSpec:
    config = {"architectures": list(model.architecture_entries), "model_type": model.model_type,
              "text_config": dict(defaults)}  # fmt: skip
    try:
        text = spec_from_config(config, model_id=model.id, path=model.path, origin=model.origin,
                                where=f"{model.id} (default text config)")  # fmt: skip
    except ModelError:  # a default the reader cannot take: keep what config.json says
        return model
    return replace(text, **{name: getattr(model, name) for name in TOP_LEVEL_FIELDS})


def _filled(model: ModelSpec, defaults: dict[str, int]) -> ModelSpec:
    fill = {key: value for key, value in defaults.items() if key in model.unwritten}
    if not fill:
        return model
    changes: dict[str, Any] = {key: value for key, value in fill.items() if key != "max_position_embeddings"}
    if "max_position_embeddings" in fill:
        length = fill["max_position_embeddings"]
        changes["max_position_embeddings"] = length
        changes["context_lengths"] = (*model.context_lengths, ("max_position_embeddings", length))
    return replace(model, **changes, unwritten=tuple(k for k in model.unwritten if k not in fill))
