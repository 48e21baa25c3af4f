"""Runs inside a release's venv (never imported by the project): what each config class gives a config.json that leaves
a key out, for the keys the advisor's SGLang rules read.

Usage: python -m config_defaults_reader JOB.json OUT.json, JOB {"placeholders": [...]}; OUT {key: [model_type, ...]}:
every model_type (transformers' CONFIG_MAPPING and SGLang's own _CONFIG_REGISTRY, whose class wins as in get_config) whose class, built with no
arguments, has learnable_sink true, a sliding_window_pattern or an index_topk that is not None, or a text sub-config the release's own
get_hf_text_config returns (a config class that builds a default text_config for a config.json without one).
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import sys

import runner


def _sglang_registry() -> dict:
    """SGLang's own config classes by model_type (_CONFIG_REGISTRY, wherever the release keeps it)."""
    for module in ("sglang.srt.utils.hf_transformers.common", "sglang.srt.utils.hf_transformers_utils"):
        with contextlib.suppress(ImportError):
            registry = getattr(importlib.import_module(module), "_CONFIG_REGISTRY", None)
            if isinstance(registry, dict):
                return registry
    return {}


def main(job_path: str, out_path: str) -> None:
    with open(job_path) as f:
        job = json.load(f)
    runner.stand_in_for_cuda_packages(job["placeholders"])
    importlib.import_module("sglang.srt.utils.hf_transformers_utils")  # registers the release's config classes
    from sglang.srt.utils.hf_transformers_utils import get_hf_text_config
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    registry = _sglang_registry()
    keys = ("learnable_sink", "sliding_window_pattern", "text_sub_config", "index_topk")
    out: dict[str, list[str]] = {key: [] for key in keys}
    for model_type in sorted(set(CONFIG_MAPPING.keys()) | set(registry)):
        # get_config reloads a model_type of SGLang's own registry with SGLang's class
        cls = registry.get(model_type) or CONFIG_MAPPING[model_type]
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                config = cls()
        except Exception:  # a class that needs arguments: no defaults to read
            continue
        if getattr(config, "learnable_sink", False) is True:
            out["learnable_sink"].append(model_type)
        if getattr(config, "sliding_window_pattern", None) is not None:
            out["sliding_window_pattern"].append(model_type)
        if getattr(config, "index_topk", None) is not None:  # what SGLang's is_deepseek_dsa(hf_config) reads
            out["index_topk"].append(model_type)
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                text = get_hf_text_config(config)
        except Exception:
            continue
        if text is not config:
            out["text_sub_config"].append(model_type)
    with open(out_path, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
