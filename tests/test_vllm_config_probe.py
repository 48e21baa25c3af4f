"""The probe behind advisor/rules/vllm/config_validation.json (conformance/vllm/config_probe.py): what a config class
refuses when one key of its defaults changes, read from the error it raises. Fake classes stand in for transformers'."""

from __future__ import annotations

from conformance.vllm.config_probe import probe, probe_class
from conformance.vllm.config_validation import LAYER_KINDS, ROPE_PROBES


class StrictDataclassFieldValidationError(ValueError):
    """Named as huggingface_hub names its field-type error."""


class Checked:
    """Validates layer_types like transformers' validate_layer_type (two kinds only), a per-type rope, a typed head_dim."""

    def __init__(self, num_hidden_layers=4, layer_types=None, rope_scaling=None, rope_parameters=None, head_dim=64,
                 sliding_window=None):  # fmt: skip
        if head_dim is None:
            raise StrictDataclassFieldValidationError("Validation error for field 'head_dim': expected int")
        self.num_hidden_layers, self.head_dim, self.sliding_window = num_hidden_layers, head_dim, sliding_window
        self.rope_parameters = rope_parameters or {"full_attention": {"rope_type": "default"}}
        if layer_types is not None:
            if any(k not in ("full_attention", "sliding_attention") for k in layer_types):
                raise ValueError("The `layer_types` entries must be in ['full_attention', 'sliding_attention']")
            if len(layer_types) != num_hidden_layers:
                raise ValueError("`num_hidden_layers` must be equal to the number of `layer_types`")
        if rope_scaling is not None:
            raise ValueError("rope_parameters must define each attention block type")


class Computed:
    """layer_types is a property without a setter (Jamba)."""

    def __init__(self, num_hidden_layers=4, layer_types=None, **_):
        self.num_hidden_layers = num_hidden_layers
        if layer_types is not None:
            self.layer_types = layer_types

    @property
    def layer_types(self):
        return ["full_attention"] * self.num_hidden_layers


class Lenient:
    def __init__(self, **kwargs):
        self.num_hidden_layers = kwargs.get("num_hidden_layers", 4)
        self.head_dim = kwargs.get("head_dim", 64)


def test_a_validating_class_reports_each_refusal():
    found = probe_class(Checked, list(LAYER_KINDS), ROPE_PROBES, ["head_dim", "sliding_window", "q_lora_rank"])
    assert found == {"layer_types_allowed": ["full_attention", "sliding_attention"], "layer_types_length": True,
                     "num_hidden_layers": 4, "rope_scaling_refused": ["linear", "yarn"],
                     "null_refused": ["head_dim"]}  # fmt: skip


def test_a_computed_layer_types_is_read_only():
    assert probe_class(Computed, list(LAYER_KINDS), {}, []) == {"layer_types_readonly": True}


def test_a_class_that_refuses_nothing_is_left_out():
    assert probe([("lenient", Lenient), ("checked", Checked)], list(LAYER_KINDS), ROPE_PROBES, ["head_dim"]).keys() == {
        "checked"
    }
