"""Runs inside a release's venv (never imported by the project): what each config class gives a config.json that leaves
a key out, for the keys the advisor's SGLang rules read.

Usage: python -m config_defaults_reader JOB.json OUT.json, JOB {"placeholders": [...]}; OUT {key: [model_type, ...]}:
every model_type (transformers' CONFIG_MAPPING and SGLang's own _CONFIG_REGISTRY, whose class wins as in get_config) whose class, built with no
arguments, has learnable_sink true, a sliding_window_pattern or an index_topk that is not None, or a text sub-config the release's own
get_hf_text_config returns (a config class that builds a default text_config for a config.json without one). Under
"text_kv_widths" (a mapping, not a list): for those classes, the attribute the text sub-config sits under and the
(head_dim, v_head_dim, swa_head_dim, swa_v_head_dim) ModelConfig._derive_model_shapes's generic part reads from it,
where top-level head_dim / v_head_dim keys do not reach it (a flattened config.json keeps the class's widths).
Under "read_only_keys" (a mapping): for every class built with no arguments, the config.json keys it refuses because
it exposes them as properties without a setter (the class's __init__ hands them to PretrainedConfig, whose setattr
raises "property ... has no setter"; KimiK3Config's hidden_size, FalconMambaConfig's layer_types, FalconH1Config's
layer_types through its attribute_map), by transformers' class or SGLang's (get_config builds both where both exist);
"*" holds the ones every class refuses (PretrainedConfig's own), a model_type only what its classes add.
"flattens_text_config": the classes that merge a config.json's text_config into their own top level.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
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


# get_hf_text_config's order (thinker_config, then llm_config, language_config, text_config: utils/hf_transformers/common.py)
SUB_CONFIG_ATTRS = ("thinker_config", "llm_config", "language_config", "text_config")


def _sub_config_attr(config, text) -> str | None:
    """The attribute of ``config`` get_hf_text_config took ``text`` from (a thinker's own text_config counts as it)."""
    for attr in SUB_CONFIG_ATTRS:
        sub = getattr(config, attr, None)
        if sub is not None and (sub is text or getattr(sub, "text_config", None) is text):
            return attr
    return None


def _widths(text) -> list[int] | None:
    """ModelConfig._derive_model_shapes's generic K/V widths of a text config (before its per-architecture branches)."""
    try:
        head = getattr(text, "head_dim", None)
        if head is None:
            head = text.hidden_size // text.num_attention_heads
        v_head = getattr(text, "v_head_dim", None) or head
        swa_head = getattr(text, "swa_head_dim", None)
        swa_head = head if swa_head is None else swa_head
        swa_v_head = getattr(text, "swa_v_head_dim", None)
        return [head, v_head, swa_head, swa_head if swa_v_head is None else swa_v_head]
    except Exception:  # a text config without the keys (or a per-layer attribute): the release stops there too
        return None


def _follows_top_level(cls, text, widths: list[int], get_hf_text_config) -> bool:
    """Whether top-level text keys reach the class-built text config (some classes build it from the top level of an
    older text-only export, e.g. Qwen4ExpConfig when hidden_size and num_hidden_layers are there): the class is built
    with the text config's own keys flattened, widths changed; a class that refuses them is judged on the next try."""
    changed = {"head_dim": widths[0] + 8, "v_head_dim": widths[1] + 16}
    size_keys = ("hidden_size", "num_hidden_layers", "num_attention_heads")
    skip = ("model_type", "architectures")
    own = {k: v for k, v in text.to_dict().items() if not k.startswith("_") and k not in skip}
    for kwargs in ({**own, **changed}, {**{k: getattr(text, k) for k in size_keys if hasattr(text, k)}, **changed},
                   changed):  # fmt: skip
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                probe = _widths(get_hf_text_config(cls(**kwargs)))
        except Exception:
            continue
        return probe is not None and probe[:2] != widths[:2]
    return False


def _read_only_keys(cls, config) -> list[str]:
    """The public properties without a setter, and the attribute_map names that lead to one (FalconH1Config's
    layer_types -> layers_block_type), that building the class with that key (its default's value) refuses."""
    keys = []
    read_only = set()
    for name in dir(cls):
        attr = inspect.getattr_static(cls, name, None)
        if not name.startswith("_") and isinstance(attr, property) and attr.fset is None:
            read_only.add(name)
    aliases = {alias for alias, target in (getattr(cls, "attribute_map", None) or {}).items() if target in read_only}
    for name in sorted(read_only | aliases):
        try:
            value = getattr(config, name)
        except Exception:
            value = None
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                cls(**{name: value})
        except AttributeError as exc:
            if "no setter" in str(exc) or "can't set" in str(exc):
                keys.append(name)
        except Exception:
            continue
    return keys


def _flattens_text_config(cls) -> bool:
    """Whether the class merges a config.json's text_config into its own top level (SGLang's DeepseekV41Config,
    normalize_deepseek_v41_config): built with a text_config, it keeps no text sub-config and holds its keys itself."""
    probe = {"hidden_size": 1536, "num_attention_heads": 12, "num_hidden_layers": 3}
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            config = cls(text_config=dict(probe))
    except Exception:
        return False
    text = getattr(config, "text_config", None)
    return text is None and all(getattr(config, key, None) == value for key, value in probe.items())


def main(job_path: str, out_path: str) -> None:
    with open(job_path) as f:
        job = json.load(f)
    runner.stand_in_for_cuda_packages(job["placeholders"])
    importlib.import_module("sglang.srt.utils.hf_transformers_utils")  # registers the release's config classes
    import transformers
    from sglang.srt.utils.hf_transformers_utils import get_hf_text_config
    from transformers import PretrainedConfig
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    registry = _sglang_registry()
    keys = ("learnable_sink", "sliding_window_pattern", "text_sub_config", "index_topk", "flattens_text_config")
    out: dict = {key: [] for key in keys}
    out["text_kv_widths"] = {}
    common = _read_only_keys(PretrainedConfig, PretrainedConfig())
    out["read_only_keys"] = {"*": common}
    # every model_type get_config finds a class for (transformers' AutoConfig, where the release registers its own);
    # any other is refused unless auto_map names the checkpoint's own class and trust_remote_code is on
    out["model_types"] = sorted(set(CONFIG_MAPPING.keys()) | set(registry))
    out["transformers"] = transformers.__version__  # what the release's pin installed: the messages name it
    for model_type in sorted(set(CONFIG_MAPPING.keys()) | set(registry)):
        # get_config reloads a model_type of SGLang's own registry with SGLang's class
        cls = registry.get(model_type) or CONFIG_MAPPING[model_type]
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                config = cls()
        except Exception:  # a class that needs arguments: no defaults to read
            continue
        # get_config builds AutoConfig's class first and reloads with the registry's after it: either may refuse a key
        read_only = {key for key in _read_only_keys(cls, config) if key not in common}
        try:  # transformers' lazy mapping: its own __getitem__ imports the class
            auto_cls = CONFIG_MAPPING[model_type]
        except KeyError:
            auto_cls = None
        if auto_cls is not None and auto_cls is not cls:
            with (
                contextlib.suppress(Exception),
                contextlib.redirect_stdout(io.StringIO()),
                contextlib.redirect_stderr(io.StringIO()),
            ):
                read_only |= {key for key in _read_only_keys(auto_cls, auto_cls()) if key not in common}
        read_only = sorted(read_only)
        if read_only:
            out["read_only_keys"][model_type] = read_only
        if _flattens_text_config(cls):
            out["flattens_text_config"].append(model_type)
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
            attr, widths = _sub_config_attr(config, text), _widths(text)
            if attr is None or widths is None:
                continue
            if not _follows_top_level(cls, text, widths, get_hf_text_config):
                entry = {"sub_config": attr, "widths": widths}
                if getattr(text, "kv_lora_rank", None) is not None:  # the MLA key some names need (Pixtral)
                    entry["kv_lora_rank"] = True
                out["text_kv_widths"][model_type] = entry
    with open(out_path, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
