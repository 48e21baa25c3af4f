"""vLLM refuses a config.json whose ``text_config`` its model_type's config class keeps as a plain dict.

``get_hf_text_config`` (vllm/transformers_utils/config.py) takes ``config.get_text_config()`` and raises "The
text_config extracted from the model config does not have `num_attention_heads` attribute" when that is not the config
itself and has no ``num_attention_heads``; a transformers class with no text sub-config stores the key as a dict.
Which model types do is read per release from its pinned transformers into config_defaults.json (``python -m
conformance.vllm.config_defaults X.Y.Z``); a release not read there gets no finding. The same table lists the keys a
class holds as read-only properties, which config.json cannot set (vllm_config_key_read_only).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from advisor.rules.config_class import no_config_class_problems
from advisor.rules.engine import Problem, Scenario
from advisor.rules.vllm.common import rules_release
from advisor.rules.vllm.config_validation import class_facts
from advisor.rules.vllm.scheduling import switch_setting

CONFIG_DEFAULTS_FILE = Path(__file__).with_name("config_defaults.json")
TEXT_CONFIG_DICT = "vllm_text_config_unread"
READ_ONLY_KEY = "vllm_config_key_read_only"
MODEL_TYPE_UNKNOWN = "vllm_model_type_unknown"
REMOTE_CODE_REQUIRED = "vllm_remote_code_required"
ROPE_NESTED_REFUSED = "vllm_rope_parameters_refused"
NEWER_LAYOUT = "vllm_config_newer_transformers"
GET_CONFIG = "vllm/transformers_utils/config.py (get_config: its _CONFIG_REGISTRY, else transformers' AutoConfig)"


@cache
def config_defaults(version: str) -> dict[str, Any]:
    """The release's entry of config_defaults.json (a version past the newest modelled one reads the newest's; empty
    for a release not read)."""
    releases = json.loads(CONFIG_DEFAULTS_FILE.read_text(encoding="utf-8"))["releases"]
    return releases.get(rules_release(version), {})


def _text_config_dict(version: str) -> frozenset[str]:
    return frozenset(config_defaults(version).get("text_config_dict", ()))


def _read_only_keys(version: str) -> dict[str, list[str]]:
    return config_defaults(version).get("read_only_keys", {})


def read_only_problems(s: Scenario, version: str) -> list[Problem]:
    """vllm_config_key_read_only: config.json writes at its top level a key the config class vLLM builds it with holds
    as a read-only property (vLLM's KimiK3Config's hidden_size, transformers' FalconConfig's head_dim): the
    class's __init__ sets every key it is given, and that one raises AttributeError ("has no setter"), so vLLM stops
    before any decision. Read per release into config_defaults.json (read_only_keys)."""
    model = s.model
    if model is None:
        return []
    # a read-only layer_types is config_validation.py's finding (vllm_config_class_refuses): not said twice
    known = class_facts(model.model_type, version)
    keys = [k for k in _read_only_keys(version).get(model.model_type or "", ())
            if k in model.top_level_keys and not known.get(f"{k}_readonly")]  # fmt: skip
    if not keys:
        return []
    return [Problem(
        READ_ONLY_KEY, "error",
        f"config.json sets {', '.join(keys)} at its top level, which the config class vllm {version} builds model_type"
        f" {model.model_type!r} with derives itself (a read-only property): building the config stops with an"
        " AttributeError ('has no setter')",
        f"remove {', '.join(keys)} from config.json's top level (or put the language model's keys in its text_config)",
        f"vllm v{version}, vllm/transformers_utils/config.py (get_config: the config class's __init__)",
    )]  # fmt: skip


@cache
def _model_types(version: str) -> frozenset[str]:
    return frozenset(config_defaults(version).get("model_types", ()))


def model_type_problems(s: Scenario, version: str) -> list[Problem]:
    """What get_config makes of config.json's model_type: vLLM's own config class where its _CONFIG_REGISTRY names
    it, else transformers' AutoConfig (advisor/rules/config_class.py). --trust-remote-code is a switch: the last of it
    and --no-trust-remote-code wins."""
    return no_config_class_problems(
        s.model, _model_types(version), switch_setting(s, "--trust-remote-code") is True, engine="vllm",
        release=version, transformers=config_defaults(version).get("transformers", "?"),
        remote_id=REMOTE_CODE_REQUIRED, unknown_id=MODEL_TYPE_UNKNOWN, source=GET_CONFIG,
    )  # fmt: skip


def rope_parameters_problems(s: Scenario, version: str) -> list[Problem]:
    """vllm_rope_parameters_refused: under transformers 4 (the releases pinning transformers<5), get_config's
    patch_rope_parameters takes a written rope_scaling as the rope_parameters, else keeps config.json's rope_parameters
    and writes the class's rope_theta into it; one nested by layer type (as transformers 5 writes Gemma 3's,
    ModernBERT's, OLMo 3's) or without a rope_type then has no rope_type and vLLM stops: "rope_parameters should have a
    'rope_type' key" (vllm/transformers_utils/config.py, v0.14.1)."""
    model = s.model
    transformers = config_defaults(version).get("transformers")
    if model is None or _major(transformers) != 4 or any(r.key == "rope_scaling" for r in model.rope):
        return []
    written = [r for r in model.rope if r.key == "rope_parameters"]
    if not any(r.layer is not None or r.type is None for r in written):
        return []
    how = "nested by layer type (as transformers 5 writes it)" if written[0].layer else "without a rope_type"
    return [Problem(
        ROPE_NESTED_REFUSED, "error",
        f"config.json's rope_parameters is {how}; vllm {version} runs transformers {transformers}, whose config class"
        " keeps it as written, and its patch_rope_parameters then refuses it: \"rope_parameters should have a"
        " 'rope_type' key\"",
        "use a vLLM release on transformers 5 (v0.19.1 or newer), or write the checkpoint's RoPE the transformers 4 way"
        " (rope_theta and a flat rope_scaling with its rope_type)",
        f"vllm v{version}, vllm/transformers_utils/config.py (patch_rope_parameters)",
    )]  # fmt: skip


def _major(version: str | None) -> int | None:
    head = (version or "").split(".", 1)[0]
    return int(head) if head.isdigit() else None


def newer_layout_problems(s: Scenario, version: str) -> list[Problem]:
    """vllm_config_newer_transformers (a warning): config.json was written by a transformers major version newer than
    the one the release runs (its pin; config_defaults.json ``transformers``). An older major's classes read the newer
    layout their own way: under transformers 4, nested rope_parameters stop vLLM (vllm_rope_parameters_refused),
    Qwen2-VL's class drops the architectures of a config with a text_config, DBRX's refuses the sub-config keys
    transformers 5 writes."""
    model = s.model
    runs = config_defaults(version).get("transformers")
    written, running = _major(model.written_by if model else None), _major(runs)
    if written is None or running is None or written <= running:
        return []
    return [Problem(
        NEWER_LAYOUT, "warning",
        f"config.json was written by transformers {model.written_by}; vllm {version} runs transformers {runs}, whose"
        " config classes may read that layout differently from what the checkpoint's authors saw",
        f"use a vLLM release on transformers {written} (its pin admits it), or check the start-up log's resolved"
        " architecture and sizes",
        f"vllm v{version}, its wheel's Requires-Dist (transformers)",
    )]  # fmt: skip


def text_config_problems(s: Scenario, version: str) -> list[Problem]:
    model = s.model
    unknown = model_type_problems(s, version)
    if unknown:
        return unknown  # no config class is built: nothing after it is read
    found = read_only_problems(s, version) + rope_parameters_problems(s, version) + newer_layout_problems(s, version)
    if model is None or model.language_config != "text_config" or model.model_type not in _text_config_dict(version):
        return found
    return [Problem(
        TEXT_CONFIG_DICT, "error",
        f"config.json has a text_config, but transformers' config class of model_type {model.model_type!r} has no text"
        f" sub-config: it keeps the text_config as a plain dict and vllm {version} refuses the model ('The text_config"
        " extracted from the model config does not have `num_attention_heads` attribute')",
        "move the text_config keys to the top level of config.json, or set the model_type of a class that has a"
        " text_config (the model's own)",
        f"vllm v{version}, vllm/transformers_utils/config.py (get_hf_text_config)",
    ), *found]  # fmt: skip
