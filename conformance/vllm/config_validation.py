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

# Run on the release's path: prints the findings of config_probe.probe for every class vLLM can build.
_READER = """
import json, logging, sys, warnings
warnings.simplefilter("ignore")
logging.disable(logging.WARNING)
sys.path.insert(0, sys.argv[3])
import resolve  # the resolver's fakes: vLLM's config module imports what a CPU build lacks
from config_probe import probe

resolve._stub_extensions()
import torch

resolve._fake_torch_cuda(torch)
resolve._stub_ops(torch)
resolve._fake_platform()
from transformers import __version__ as transformers_version
from transformers.models.auto.configuration_auto import CONFIG_MAPPING, CONFIG_MAPPING_NAMES
from vllm.transformers_utils.config import _CONFIG_REGISTRY


def classes():
    for model_type in sorted(set(CONFIG_MAPPING_NAMES) | set(_CONFIG_REGISTRY)):
        try:
            yield model_type, (_CONFIG_REGISTRY[model_type] if model_type in _CONFIG_REGISTRY
                               else CONFIG_MAPPING[model_type])
        except Exception:
            continue


found = probe(classes(), json.loads(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[4]))
print(json.dumps({"transformers": transformers_version, "model_types": found}))
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
