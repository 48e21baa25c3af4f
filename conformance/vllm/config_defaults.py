"""Write advisor/rules/vllm/config_defaults.json: per vLLM release, what the config classes it builds a config.json
with (vLLM's own ``_CONFIG_REGISTRY`` class for a model_type it registers, else its pinned transformers') make of the
keys a config.json writes or leaves out.

- ``text_config_dict``: the model_types whose class keeps a config.json's ``text_config`` as a plain dict. vLLM's
  ``get_hf_text_config`` (vllm/transformers_utils/config.py) takes ``config.get_text_config()`` and raises "The
  text_config extracted from the model config does not have `num_attention_heads` attribute" when that is not the
  config itself and has no ``num_attention_heads``.
- ``text_defaults``: the composite classes (a text sub-config beside the top level) that build their default text
  sub-config when config.json has no text_config, top-level text keys not reaching it: ``get_hf_text_config`` then
  returns that default, so vLLM reads its sizes, not the top level's. Only the keys the advisor reads are kept;
  ``text_key`` names the top-level key whose object holds the text sub-config (ColPali's vlm_config);
  ``text_config_ignored`` the classes a text_config does not reach (ColPali: its text lives in vlm_config).
- ``class_defaults``: what the text config's class gives a key config.json leaves out (the MLA ranks, the sparse
  indexer's index_topk, max_position_embeddings), where it gives a value.
- ``head_dim_from_rope``: the classes that set head_dim to qk_rope_head_dim, "always" (over a written head_dim:
  transformers' MiniCPM3Config) or by "default" (where config.json writes none: DeepseekV3Config).
- ``layer_head_dims``: classes whose layer types have different head widths (transformers' per_layer_config): the
  default width per layer type, and the key each follows when written (Gemma 4's full attention: global_head_dim).
- ``rope_scaling_ignored``: the classes that drop a legacy rope_scaling when rope_parameters is nested by layer type
  (vLLM's own Step3p7TextConfig), where transformers' classes let rope_scaling win.
- ``read_only_keys``: the keys (of those the advisor reads) a class holds as a read-only property (vLLM's
  KimiK3Config's hidden_size, transformers' FalconMambaConfig's layer_types): a config.json writing one at its top
  level stops the config's build with an AttributeError.
- ``missing_attrs``: the MLA attributes (kv_lora_rank, qk_nope_head_dim) an MLA-shaped text class does not have at all
  (transformers' DeepseekV4Config): vLLM's attention backends read them as attributes.

    python -m conformance.vllm.config_defaults 0.33.0 [0.20.2 ...]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conformance.vllm.env import pythonpath

OUT = Path(__file__).resolve().parents[2] / "advisor" / "rules" / "vllm" / "config_defaults.json"
RESOLVER_DIR = Path(__file__).resolve().parent  # resolve.py's stubs load the config classes on a CPU torch

# The keys kept from a default text sub-config and filled from a class: what advisor/models.py reads.
FILL_KEYS = ("kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "index_topk",
             "max_position_embeddings")  # fmt: skip
MLA_ATTRS = ("kv_lora_rank", "qk_nope_head_dim")
MLA_SHAPE = ("kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "index_topk", "compress_rates", "compress_ratios")


def read_keys() -> list[str]:
    from advisor.models import CONFIG_READ_KEYS

    return sorted(CONFIG_READ_KEYS)


# Run on the release's path (argv: the keys to keep, JSON).
_READER = """
import json, sys, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, RESOLVER_DIR)
import resolve
resolve._stub_extensions()
import torch
resolve._stub_ops(torch)
from transformers import AutoConfig
from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES
from vllm.transformers_utils.config import _CONFIG_REGISTRY
keys = json.loads(sys.argv[1])
FILL, MLA_ATTRS, MLA_SHAPE = json.loads(sys.argv[2])
text = {"hidden_size": 256, "num_attention_heads": 4, "num_hidden_layers": 2, "vocab_size": 1000}
# top-level text keys a composite class may hand on to its text sub-config (values no default has)
flat = {"max_position_embeddings": 4321, "num_hidden_layers": 7}
out = {"text_config_dict": [], "text_defaults": {}, "class_defaults": {}, "missing_attrs": {}, "head_dim_from_rope": {},
       "text_key": {}, "text_config_ignored": [], "layer_head_dims": {},
       "rope_scaling_ignored": [], "read_only_keys": {}}
own = set(_CONFIG_REGISTRY.keys())
from transformers import __version__ as transformers_version
out["transformers"] = transformers_version
# every model_type get_config builds a class for (vLLM's own, else transformers'); any other is refused at start-up
out["model_types"] = sorted(set(CONFIG_MAPPING_NAMES) | own)


def build(model_type, **kwargs):
    if model_type in own:
        return _CONFIG_REGISTRY[model_type](**kwargs)
    return AutoConfig.for_model(model_type, **kwargs)


def attr(obj, key, default=None):
    try:
        return getattr(obj, key, default)
    except Exception:  # a heterogeneous class refuses a per-layer attribute read globally
        return default


def has(obj, key):
    try:
        return hasattr(obj, key)
    except Exception:
        return True


def text_key_holds(value, found):
    # whether a sub-config attribute holds the text config: is it, or has it as its own text config
    if value is found:
        return True
    try:
        return value is not None and value.get_text_config() is found
    except Exception:
        return False


def plain(value):
    try:
        json.dumps(value)
        return True
    except (TypeError, ValueError):
        return False


for model_type in sorted(set(CONFIG_MAPPING_NAMES) | own):
    try:
        config = build(model_type, text_config=dict(text))
        found = config.get_text_config()
        if found is not config and not has(found, "num_attention_heads"):
            out["text_config_dict"].append(model_type)
    except Exception:
        pass
    try:
        config = build(model_type)
        found = config.get_text_config()
    except Exception:
        continue
    if found is not config and has(found, "num_attention_heads"):
        try:
            passed = build(model_type, **flat).get_text_config()
            reaches = all(attr(passed, k) == v for k, v in flat.items())
        except Exception:
            reaches = True  # the class refuses top-level text keys: nothing to read in their place
        if not reaches:
            try:
                values = found.to_dict()
            except Exception:
                values = {}
            out["text_defaults"][model_type] = {k: values[k] for k in keys if k in values and plain(values[k])}
            try:  # a text_config handed to the class: does it become the text sub-config?
                handed = {**values, "max_position_embeddings": 4321}
                takes = attr(build(model_type, text_config=handed).get_text_config(), "max_position_embeddings") == 4321
            except Exception:
                takes = False
            if not takes:
                out["text_config_ignored"].append(model_type)
            out["text_key"][model_type] = next((name for name in getattr(config, "sub_configs", {}) or {}
                                                if text_key_holds(attr(config, name), found)), None)
    fills = {k: attr(found, k) for k in FILL if isinstance(attr(found, k), int)}
    if fills:
        out["class_defaults"][model_type] = fills
    if isinstance(attr(found, "qk_rope_head_dim"), int):
        # the class sets head_dim to qk_rope_head_dim: "always" over a written head_dim, "default" where none is written
        try:
            over = build(model_type, head_dim=4321, qk_rope_head_dim=48).get_text_config()
            left = build(model_type, qk_rope_head_dim=48).get_text_config()
            how = "always" if attr(over, "head_dim") == 48 else "default" if attr(left, "head_dim") == 48 else None
        except Exception:
            how = None
        if how:
            out["head_dim_from_rope"][model_type] = how
    types = attr(found, "layer_types")
    if isinstance(types, list) and types:
        # per-layer head widths (transformers' per_layer_config: Gemma 4's full-attention layers take global_head_dim)
        try:
            view = found.per_layer_config
            widths = {}
            for i, layer_type in enumerate(types):
                widths.setdefault(layer_type, attr(view[i], "head_dim"))
        except Exception:
            widths = {}
        if len(set(widths.values())) > 1:
            entry = {"widths": widths, "follows": {}}
            try:  # which key sets each layer type's width: the text class built with both written
                wide = type(found)(head_dim=96, global_head_dim=384)
                for i, layer_type in enumerate(wide.layer_types):
                    width = attr(wide.per_layer_config[i], "head_dim")
                    entry["follows"][layer_type] = {96: "head_dim", 384: "global_head_dim"}.get(width)
            except Exception:
                pass
            out["layer_head_dims"][model_type] = entry
    if isinstance(types, list) and types:
        # a legacy rope_scaling beside rope_parameters nested by layer type: does the class still apply it?
        nested = {t: {"rope_type": "default", "rope_theta": 10000.0} for t in set(types)}
        try:
            built = type(found)(rope_parameters=nested, rope_scaling={"rope_type": "linear", "factor": 2.0})
            params = attr(built, "rope_parameters") or {}
            entries = [v for v in params.values() if isinstance(v, dict)] or [params]
            if not any(e.get("factor") == 2.0 for e in entries):
                out["rope_scaling_ignored"].append(model_type)
        except Exception:
            pass
    # keys the class holds as read-only properties: a config.json writing one at the top level stops the build
    refused = []
    for key in keys:
        prop = getattr(type(config), key, None)
        if isinstance(prop, property) and prop.fset is None:
            try:
                build(model_type, **{key: attr(config, key)})
            except AttributeError:
                refused.append(key)
            except Exception:
                pass
    if refused:
        out["read_only_keys"][model_type] = refused
    if any(has(found, k) for k in MLA_SHAPE):
        missing = [k for k in MLA_ATTRS if not has(found, k)]
        if missing:
            out["missing_attrs"][model_type] = missing
print(json.dumps(out, sort_keys=True))
"""


def read(version: str) -> dict:
    env = {**os.environ, "PYTHONPATH": pythonpath(version), "TRANSFORMERS_VERBOSITY": "error", "PYTHONNOUSERSITE": "1",
           "VLLM_TARGET_DEVICE": "cuda"}  # fmt: skip
    code = _READER.replace("RESOLVER_DIR", repr(str(RESOLVER_DIR)))
    argv = [json.dumps(read_keys()), json.dumps([FILL_KEYS, MLA_ATTRS, MLA_SHAPE])]
    done = subprocess.run([sys.executable, "-c", code, *argv], env=env, capture_output=True, text=True, timeout=1800,
                          check=True)  # fmt: skip
    found = json.loads(done.stdout.strip().splitlines()[-1])
    found["text_config_dict"] = sorted(found["text_config_dict"])
    return found


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m conformance.vllm.config_defaults X.Y.Z [X.Y.Z ...]", file=sys.stderr)
        return 2
    doc = json.loads(OUT.read_text()) if OUT.exists() else {}
    doc["about"] = (
        "Per vLLM release, what the config class vLLM builds a config.json with (its own _CONFIG_REGISTRY class, else"
        " the pinned transformers') makes of it. text_config_dict: model_types that keep a config.json's text_config"
        " as a dict, so get_hf_text_config (vllm/transformers_utils/config.py) refuses the model. text_defaults: the"
        " default text sub-config a composite class builds when config.json has none (top-level text keys do not"
        " reach it), the keys the advisor reads; text_key: the top-level key holding it; text_config_ignored:"
        " classes a text_config does not reach. class_defaults: what the text class gives a left-out MLA rank,"
        " index_topk or max_position_embeddings. head_dim_from_rope: classes setting head_dim to qk_rope_head_dim"
        " (always, or by default where config.json has none). layer_head_dims: default head widths per layer type where"
        " they differ, and the key each follows when written. rope_scaling_ignored: classes dropping rope_scaling beside"
        " a nested rope_parameters. read_only_keys: keys a class holds as read-only properties. missing_attrs: MLA attributes an MLA-shaped text class"
        " lacks."
        " Written by python -m conformance.vllm.config_defaults X.Y.Z (0.20.2: text_config_dict only, read before"
        " the others and without vLLM's own classes)."
    )
    releases = doc.setdefault("releases", {})
    for version in argv:
        releases[version] = read(version)
        entry = releases[version]
        print(f"vllm {version}: " + ", ".join(f"{len(v)} {k}" for k, v in entry.items()))
    doc["releases"] = dict(sorted(releases.items(), key=lambda kv: tuple(int(x) for x in kv[0].split("."))))
    OUT.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
