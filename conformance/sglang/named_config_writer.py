"""Runs inside a release's venv (never imported by the project): its own config classes, instantiated with defaults.

Usage: python -m named_config_writer JOB.json OUT.json, JOB {"classes": {architecture: "module:Class"}, "placeholders":
[...], "release": "X.Y.Z"}; OUT {architecture: config dict}. A dataclass config with required fields (DeepSeek V4's)
gets its field defaults and the fp8 block quantization its checkpoints declare. A model_type the release's
transformers does not load without remote code gets the ``auto_map`` such a checkpoint carries.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import sys

import runner

FP8_BLOCK = {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [128, 128]}


def _dataclass_defaults(cls) -> dict:
    out = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
        elif str(f.type).startswith(("List", "list", "typing.List")):
            out[f.name] = []  # a list field whose factory the class decorator consumed
    return out


def instantiate(cls) -> dict:
    try:
        return cls().to_dict()
    except TypeError:
        if not dataclasses.is_dataclass(cls):
            raise
    values = _dataclass_defaults(cls)
    values["quantization_config"] = dict(FP8_BLOCK)
    values["model_type"] = cls.model_type
    layers = values.get("num_hidden_layers", 0)
    if not values.get("compress_ratios") and "compress_ratios" in cls.__dataclass_fields__:
        # per layer (and the MTP layer): two uncompressed layers, then 4x and 128x compression alternating
        values["compress_ratios"] = [0, 0] + [4 if i % 2 == 0 else 128 for i in range(layers - 1)]
    if values.get("rope_scaling") == {}:
        values["rope_scaling"] = None  # an empty dict is no rope scaling; transformers refuses it as parameters
    return json.loads(json.dumps(values, default=str))


def main(job_path: str, out_path: str) -> None:
    with open(job_path) as f:
        job = json.load(f)
    runner.stand_in_for_cuda_packages(job["placeholders"])
    importlib.import_module("sglang.srt.utils.hf_transformers_utils")  # registers the release's config classes
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    out = {}
    for arch, where in job["classes"].items():
        module, name = where.split(":")
        cls = getattr(importlib.import_module(f"sglang.srt.configs.{module}"), name)
        config = instantiate(cls)
        config["_written_by"] = f"sglang {job['release']} sglang/srt/configs/{module}.py {name}() defaults"
        if config.get("model_type") not in CONFIG_MAPPING:
            config["auto_map"] = {"AutoConfig": f"configuration.{name}"}
        out[arch] = config
    with open(out_path, "w") as f:
        json.dump(out, f, default=str)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
