"""Write advisor/rules/vllm/config_validation.json: per vLLM release, the config classes that refuse a config.json at
load because a key they validate was changed (transformers' strict dataclass validators, or a vLLM config class's own
checks), and on what.

vLLM's get_config (vllm/transformers_utils/config.py) builds the model's config class from config.json: vLLM's own
class for a model_type of its ``_CONFIG_REGISTRY``, else transformers' (AutoConfig). transformers 5 validates each
config at construction (``@strict`` on PreTrainedConfig, huggingface_hub's dataclasses: ``validate_layer_type``,
``validate_rope`` and the classes' overrides; StrictDataclassClassValidationError), some classes make a key read-only (a
property without a setter: AttributeError), and vLLM's own classes check in ``__init__`` (ValueError). vLLM stops at
start-up with that error. Which classes refuse what is found by building each class in the release's environment with
one key changed at a time:

- ``layer_types_readonly``: the class computes layer_types (a property): any layer_types in config.json is refused;
- ``layer_types_allowed``: the layer kinds (of LAYER_KINDS) the class accepts in layer_types, where it refuses some;
- ``layer_types_length``: the class refuses a layer_types whose length is not num_hidden_layers (``num_hidden_layers``:
  the class's default count, which a config.json that writes none gets);
- ``rope_scaling_refused``: the rope types (of ROPE_PROBES) the class refuses as a flat (not per layer type)
  ``rope_scaling`` beside its default ``rope_parameters``;
- ``null_refused``: the keys (of advisor.models.NULL_KEYS, the sizes the advisor reads) whose declared field type does
  not admit null (StrictDataclassFieldValidationError when config.json writes ``null``).

    python -m conformance.vllm.config_validation 0.33.0 [X.Y.Z ...]

A release is read with the transformers the harness runs (the running interpreter's, as the resolver's); a release not
read gets no finding (advisor/rules/vllm/config_validation.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from advisor.models import NULL_KEYS
from conformance.vllm.env import RESOLVER, pythonpath

OUT = Path(__file__).resolve().parents[2] / "advisor" / "rules" / "vllm" / "config_validation.json"
LAYER_KINDS = ("full_attention", "sliding_attention", "linear_attention", "chunked_attention", "mamba", "attention")
ROPE_PROBES = {"linear": {"rope_type": "linear", "factor": 2.0},
               "yarn": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096}}  # fmt: skip

# Run on the release's path: prints {model_type: findings} for every class that refuses one of the probes.
_READER = """
import copy, json, logging, sys, warnings
warnings.simplefilter("ignore")
logging.disable(logging.WARNING)
sys.path.insert(0, sys.argv[3])
import resolve  # the resolver's fakes: vLLM's config module imports what a CPU build lacks

resolve._stub_extensions()
import torch

resolve._fake_torch_cuda(torch)
resolve._stub_ops(torch)
resolve._fake_platform()
from transformers import __version__ as transformers_version
from transformers.models.auto.configuration_auto import CONFIG_MAPPING, CONFIG_MAPPING_NAMES
from vllm.transformers_utils.config import _CONFIG_REGISTRY
KINDS, ROPES, NULLS = json.loads(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[4])


def build(cls, **kwargs):
    try:
        cls(**kwargs)
        return "ok"
    except AttributeError as exc:
        return "readonly" if "layer_types" in str(exc) and "setter" in str(exc) else "other"
    except Exception as exc:
        text = f"{type(exc).__name__} {exc} {exc.__cause__ or ''}"
        for word in ("layer_type", "rope", "attention type"):
            if word in text:
                return word
        return "other"


def classes():
    for model_type in sorted(set(CONFIG_MAPPING_NAMES) | set(_CONFIG_REGISTRY)):
        try:
            yield model_type, (_CONFIG_REGISTRY[model_type] if model_type in _CONFIG_REGISTRY
                               else CONFIG_MAPPING[model_type])
        except Exception:
            continue


out = {}
for model_type, cls in classes():
    try:
        base = cls()
    except Exception:
        continue
    found = {}
    layers = getattr(base, "num_hidden_layers", None)
    if isinstance(layers, int) and 0 < layers <= 512:
        results = {kind: build(cls, num_hidden_layers=layers, layer_types=[kind] * layers) for kind in KINDS}
        if any(r == "readonly" for r in results.values()):
            found["layer_types_readonly"] = True
        else:
            allowed = [k for k, r in results.items() if r == "ok"]
            refused = [k for k, r in results.items() if r in ("layer_type", "attention type")]
            if refused:
                found["layer_types_allowed"] = allowed
            if allowed and build(cls, num_hidden_layers=layers, layer_types=[allowed[0]] * (layers + 1)) in (
                    "layer_type", "attention type"):
                found["layer_types_length"] = True
                found["num_hidden_layers"] = layers  # the class's default, for a config.json that writes none
    default_rope = copy.deepcopy(getattr(base, "rope_parameters", None))
    refused = []
    for name, rope in ROPES.items():
        kwargs = {"rope_scaling": dict(rope)}
        if default_rope:
            kwargs["rope_parameters"] = copy.deepcopy(default_rope)
        if build(cls, **kwargs) == "rope":
            refused.append(name)
    if refused:
        found["rope_scaling_refused"] = refused
    nulls = []
    for key in NULLS:
        try:
            if getattr(base, key) is None:
                continue
        except Exception:  # not an attribute of the class, or one it will not answer globally
            continue
        try:
            cls(**{key: None})
        except Exception as exc:
            if "FieldValidation" in type(exc).__name__:
                nulls.append(key)
    if nulls:
        found["null_refused"] = nulls
    if found:
        out[model_type] = found
print(json.dumps({"transformers": transformers_version, "model_types": out}))
"""


def read(version: str) -> dict:
    env = {**os.environ, "PYTHONPATH": pythonpath(version), "TRANSFORMERS_VERBOSITY": "error", "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "VLLM_TARGET_DEVICE": "cuda", "PYTHONNOUSERSITE": "1"}  # fmt: skip
    argv = [sys.executable, "-c", _READER, json.dumps(LAYER_KINDS), json.dumps(ROPE_PROBES), str(RESOLVER.parent),
            json.dumps(NULL_KEYS)]  # fmt: skip
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=1800, check=False)
    if done.returncode:
        raise SystemExit(f"vllm {version}: the reader failed: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _dump(doc: dict) -> str:
    """One line per model type."""
    out = ["{", f' "about": {json.dumps(doc["about"])},', ' "releases": {']
    for i, (release, entry) in enumerate(doc["releases"].items()):
        types = sorted(entry["model_types"].items())
        rows = ",\n".join(f"    {json.dumps(t)}: {json.dumps(f, sort_keys=True)}" for t, f in types)
        out += [f"  {json.dumps(release)}: {{", f'   "transformers": {json.dumps(entry["transformers"])},',
                '   "model_types": {', rows, "   }", "  }" + ("," if i < len(doc["releases"]) - 1 else "")]  # fmt: skip
    return "\n".join([*out, " }", "}"]) + "\n"


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m conformance.vllm.config_validation X.Y.Z [X.Y.Z ...]", file=sys.stderr)
        return 2
    doc = json.loads(OUT.read_text()) if OUT.exists() else {"releases": {}}
    doc["about"] = (
        "Per vLLM release: the model_types whose config class (vLLM's own for its _CONFIG_REGISTRY, else transformers')"
        " refuses a config.json at load over a changed key: layer_types_readonly (a computed property), layer_types_allowed"
        " (the layer kinds it accepts, where it refuses some), layer_types_length (one entry per num_hidden_layers),"
        " rope_scaling_refused (rope types refused as a flat rope_scaling), null_refused (keys whose field type does not"
        " admit null). Read by building each class with one key"
        " changed, with the transformers named (python -m conformance.vllm.config_validation X.Y.Z)."
    )
    for version in argv:
        doc["releases"][version] = read(version)
        found = doc["releases"][version]["model_types"]
        print(f"vllm {version}: {len(found)} model types refuse a probe", flush=True)
    doc["releases"] = dict(sorted(doc["releases"].items()))
    OUT.write_text(_dump(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
