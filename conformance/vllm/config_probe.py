"""Stdlib only, imported inside a release's environment by conformance/vllm/config_validation.py's reader: build each
config class with one key changed and say what it refuses (the keys of config_validation.json)."""

from __future__ import annotations

import copy
from collections.abc import Iterable


def build(cls, **kwargs) -> str:
    """The outcome: "ok", or what the refusal names: "readonly" (layer_types has no setter), "layer_type", "rope", "field" (another
    field's declared type: StrictDataclassFieldValidationError), "other"."""
    try:
        cls(**kwargs)
        return "ok"
    except AttributeError as exc:
        return "readonly" if "layer_types" in str(exc) and "setter" in str(exc) else "other"
    except Exception as exc:
        text = f"{type(exc).__name__} {exc} {exc.__cause__ or ''}"
        if "layer_type" in text or "attention type" in text:
            return "layer_type"
        if "rope" in text:
            return "rope"
        return "field" if "FieldValidation" in type(exc).__name__ else "other"


def probe_class(cls, kinds: list[str], ropes: dict[str, dict], nulls: list[str]) -> dict:
    """What ``cls`` refuses of: layer_types of each kind, one entry too many, a flat rope_scaling of each rope type
    beside its default rope_parameters, null for each key it holds a value for ({}: nothing, or no default build)."""
    try:
        base = cls()
    except Exception:
        return {}
    found: dict = {}
    layers = getattr(base, "num_hidden_layers", None)
    if isinstance(layers, int) and 0 < layers <= 512:
        results = {kind: build(cls, num_hidden_layers=layers, layer_types=[kind] * layers) for kind in kinds}
        if "readonly" in results.values():
            found["layer_types_readonly"] = True
        else:
            allowed = [k for k, r in results.items() if r == "ok"]
            if any(r == "layer_type" for r in results.values()):
                found["layer_types_allowed"] = allowed
            if (
                allowed
                and build(cls, num_hidden_layers=layers, layer_types=[allowed[0]] * (layers + 1)) == "layer_type"
            ):
                found["layer_types_length"] = True
                found["num_hidden_layers"] = layers  # the class's default, for a config.json that writes none
    default_rope = copy.deepcopy(getattr(base, "rope_parameters", None))
    refused = []
    for name, rope in ropes.items():
        kwargs = {"rope_scaling": dict(rope)}
        if default_rope:
            kwargs["rope_parameters"] = copy.deepcopy(default_rope)
        if build(cls, **kwargs) == "rope":
            refused.append(name)
    if refused:
        found["rope_scaling_refused"] = refused
    null_refused = []
    for key in nulls:
        try:
            if getattr(base, key) is None:
                continue
        except Exception:  # not an attribute of the class, or one it will not answer globally
            continue
        if build(cls, **{key: None}) != "ok" and _field_refused(cls, key):
            null_refused.append(key)
    if null_refused:
        found["null_refused"] = null_refused
    return found


def _field_refused(cls, key: str) -> bool:
    """Whether null for ``key`` stops the class at its field's type check (not at a validator that reads it)."""
    try:
        cls(**{key: None})
    except Exception as exc:
        return "FieldValidation" in type(exc).__name__
    return False


def probe(classes: Iterable[tuple[str, type]], kinds: list[str], ropes: dict[str, dict], nulls: list[str]) -> dict:
    """{model_type: what its class refuses} for the classes that refuse a probe."""
    out = {}
    for model_type, cls in classes:
        found = probe_class(cls, kinds, ropes, nulls)
        if found:
            out[model_type] = found
    return out
