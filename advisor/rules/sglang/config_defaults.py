"""What each release's config classes give a config.json that leaves a key out (config_defaults.json)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

# What the release's config class (SGLang's own _CONFIG_REGISTRY class, else its transformers') gives a config.json that
# leaves a key out, per model_type: read from each release by ``python -m conformance sglang-config-defaults X.Y.Z``
# (conformance/sglang/config_defaults_reader.py). A release not read there keeps what config.json says.
CONFIG_DEFAULTS_FILE = Path(__file__).with_name("config_defaults.json")


@cache
def _config_defaults() -> dict[str, dict]:
    return json.loads(CONFIG_DEFAULTS_FILE.read_text(encoding="utf-8"))["releases"]


def class_default(model_type: str | None, key: str, release: str) -> bool:
    """Whether ``release``'s config class for ``model_type`` sets ``key`` (learnable_sink true, a sliding_window_pattern,
    a text sub-config) when config.json leaves it out; False where the release was not read."""
    return model_type is not None and model_type in _config_defaults().get(release, {}).get(key, ())


def class_text_widths(model_type: str | None, release: str) -> tuple[str, tuple[int, int, int, int]] | None:
    """(the attribute the class keeps its text sub-config under, its (head_dim, v_head_dim, swa_head_dim,
    swa_v_head_dim)) for a model_type whose class builds a default text sub-config that config.json's top-level
    head_dim / v_head_dim do not reach (``text_kv_widths``, read from the release's classes); None where the release
    was not read or the class takes its widths from the top level."""
    entry = _config_defaults().get(release, {}).get("text_kv_widths", {}).get(model_type or "")
    if entry is None:
        return None
    head, v_head, swa_head, swa_v_head = entry["widths"]
    return entry["sub_config"], (head, v_head, swa_head, swa_v_head)


def class_read_only_keys(model_type: str | None, release: str) -> frozenset[str]:
    """The config.json keys ``release``'s config class for ``model_type`` refuses because it keeps them as properties
    without a setter (``read_only_keys``: "*" for every class, plus the class's own); empty where the release or the
    model_type was not read."""
    table = _config_defaults().get(release, {}).get("read_only_keys")
    if table is None or model_type is None:
        return frozenset()
    return frozenset(table.get("*", ())) | frozenset(table.get(model_type, ()))


def merges_text_config(model, release: str) -> bool:
    """The release's config class for the model_type merges config.json's text_config into its own top level (SGLang's
    DeepseekV41Config, configs/deepseek_v41.py normalize_deepseek_v41_config: text keys under the top level's), so the
    release sees one flat config: no text sub-config (not multimodal by it), the text keys read as top-level ones."""
    return model.language_config == "text_config" and class_default(model.model_type, "flattens_text_config", release)


def class_text_kv_lora_rank(model_type: str | None, release: str) -> bool:
    """The class-built default text config of ``text_kv_widths`` has a kv_lora_rank (Kimi-VL, DeepSeek-VL2)."""
    entry = _config_defaults().get(release, {}).get("text_kv_widths", {}).get(model_type or "")
    return bool(entry and entry.get("kv_lora_rank"))


@cache
def known_model_types(release: str) -> tuple[frozenset[str], str] | None:
    """(every model_type get_config finds a config class for, the transformers it was read with); None where the
    release was not read."""
    entry = _config_defaults().get(release, {})
    if "model_types" not in entry:
        return None
    return frozenset(entry["model_types"]), entry.get("transformers", "?")
