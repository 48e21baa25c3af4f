"""vLLM refuses a config.json whose config class rejects a changed key at load (get_config, vllm/transformers_utils/config.py).

transformers 5 validates every config class at construction (``@strict`` PreTrainedConfig: ``validate_layer_type``,
``validate_rope`` and the classes' own overrides; huggingface_hub's StrictDataclassClassValidationError), some classes
compute layer_types (a property without a setter: AttributeError), and vLLM's own classes of its ``_CONFIG_REGISTRY``
check their keys in ``__init__`` (ValueError). Which class refuses what is read per release by building each class with
one key changed (``python -m conformance.vllm.config_validation X.Y.Z``, config_validation.json); a release not read
there gets no finding. Five refusals:

- layer_types written for a class that computes it;
- a layer kind the class does not accept (of the kinds the table probed; others are not judged);
- a layer_types whose length is not the class's num_hidden_layers (the config's, else the class's default);
- a flat rope_scaling of a rope type the class refuses beside its per-layer-type rope_parameters;
- null written for a size key (advisor.models.NULL_KEYS) whose field type does not admit it.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from advisor.rules.engine import Problem, Scenario, parse_release

VALIDATION_FILE = Path(__file__).with_name("config_validation.json")
PROBED_KINDS = ("full_attention", "sliding_attention", "linear_attention", "chunked_attention", "mamba", "attention")
CONFIG_REFUSED = "vllm_config_class_refuses"
SOURCE = "vllm/transformers_utils/config.py (get_config)"


@cache
def _release(version: str) -> dict:
    """The newest release read at or below ``version`` (empty when none: releases before it get no finding)."""
    releases = json.loads(VALIDATION_FILE.read_text())["releases"]
    read = [r for r in releases if parse_release(r) <= parse_release(version)]
    return releases[max(read, key=parse_release)] if read else {}


def class_facts(model_type: str | None, version: str) -> dict:
    """What the release's config class of ``model_type`` refuses (empty: nothing read, or nothing refused)."""
    return _release(version).get("model_types", {}).get(model_type or "", {})


def _reason(model, facts: dict) -> tuple[str, str] | None:
    """(what the class refuses, the fix); None when it accepts the config."""
    kinds = model.layer_types
    if kinds and facts.get("layer_types_readonly"):
        return ("computes layer_types itself and cannot set the one config.json writes (AttributeError: property"
                " 'layer_types' has no setter)", "remove layer_types from config.json")  # fmt: skip
    allowed = facts.get("layer_types_allowed")
    odd = sorted({k for k in kinds if k in PROBED_KINDS and allowed is not None and k not in allowed})
    if odd:
        return (f"accepts only {', '.join(allowed) or 'no'} layers in layer_types, and config.json names {', '.join(odd)}",
                "write layer_types with the kinds the model's class accepts, or remove it")  # fmt: skip
    layers = model.num_layers if model.num_layers is not None else facts.get("num_hidden_layers")
    if kinds and facts.get("layer_types_length") and layers is not None and len(kinds) != layers:
        return (f"wants one layer_types entry per layer: config.json lists {len(kinds)} for {layers} layers"
                " (validate_layer_type)", f"write {layers} entries in layer_types, or remove it")  # fmt: skip
    nulls = [k for k in model.null_keys if k in facts.get("null_refused", ())]
    if nulls:
        return (f"declares {', '.join(nulls)} a number, and config.json writes null (StrictDataclassFieldValidationError)",
                f"write a value for {nulls[0]} or remove the key (the class's default then applies)")  # fmt: skip
    refused = set(facts.get("rope_scaling_refused", ()))
    flat = sorted({r.type for r in model.rope if r.key == "rope_scaling" and r.layer is None and r.type in refused})
    if flat:
        return (f"wants RoPE parameters per attention layer type, and config.json sets a flat {flat[0]} rope_scaling"
                " (validate_rope)", "write the scaling into rope_parameters under each layer type, or remove"
                " rope_scaling")  # fmt: skip
    return None


def config_validation_problems(s: Scenario, version: str) -> list[Problem]:
    model = s.model
    if model is None:
        return []
    model_type = model.text_model_type or model.model_type
    found = _reason(model, class_facts(model_type, version))
    if found is None:
        return []
    what, fix = found
    return [Problem(
        CONFIG_REFUSED, "error",
        f"vllm {version} cannot load config.json: the config class of model_type {model_type!r} {what}",
        fix, f"vllm v{version}, {SOURCE}; the class's own validation (config_validation.json)",
    )]  # fmt: skip
