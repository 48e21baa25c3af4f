"""Start-up refusals SGLang raises from the config and the layout before anything is sized (issue 31: the release's
rejections the differential fuzz run found): a model override step that refuses DP attention, and config classes that
refuse a config.json (ZAYA1's KV-head assertion, a key the class keeps as a read-only property).

Each is the release's own condition, read from its source; the plan shows it as an error problem with the release's
message and the change that lets it start.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from advisor.rules.config_class import no_config_class_problems
from advisor.rules.engine import Problem, Scenario
from advisor.rules.releases import within
from advisor.rules.sglang.architectures import loaded_architecture
from advisor.rules.sglang.config_defaults import class_read_only_keys, known_model_types
from advisor.rules.sglang.model_overrides import registered_by

DP_ATTENTION_REFUSED_ID = "sglang_dp_attention_refused"
CONFIG_REFUSED_ID = "sglang_config_class_refuses"
MODEL_TYPE_UNKNOWN_ID = "sglang_model_type_unknown"
REMOTE_CODE_REQUIRED_ID = "sglang_remote_code_required"
GET_CONFIG = ("python/sglang/srt/utils/hf_transformers/config.py (get_config: AutoConfig.from_pretrained, where the"
              " release registers its _CONFIG_REGISTRY classes)")  # fmt: skip
# From v0.5.16 the HF parser builds these architectures with SGLang's LongcatFlashConfig before AutoConfig
# (_try_load_longcat_config, _LONGCAT_ARCHS): their model_type is not looked up.
LONGCAT_ARCHS, LONGCAT_LOADER_FROM = frozenset({"LongcatCausalLM", "LongcatFlashForCausalLM",
                                                "LongcatFlashNgramForCausalLM"}), "0.5.16"  # fmt: skip
# Up to v0.5.11 get_config catches AutoConfig's ValueError naming deepseek_v32 and loads the config as DeepSeek V3
# (_load_deepseek_v32_model, hf_transformers_utils.py / hf_transformers/common.py); v0.5.12 dropped it.
DEEPSEEK_V32, DEEPSEEK_V32_FALLBACK_UNTIL = "deepseek_v32", "0.5.11"
OVERRIDES = "python/sglang/srt/arg_groups/model_overrides"

# Override steps that raise "... does not support DP attention" (arg_groups/model_overrides/<file>.py): the step, the
# first release it refuses in, the model's name in the message. v0.5.19-v0.5.21 test cfg.enable_dp_attention (so
# --enable-dp-attention refuses even at dp size 1); v0.5.23 tests attn_dp_enabled_of (attn_dp_size > 1); v0.5.22 was
# not read, so only a dp size above 1 is claimed there. MiniCPM's from v0.5.19 (not in v0.5.18's arg_groups/), IQuest
# Q1's from v0.5.21 and ERNIE 4.5 VL MoE's from v0.5.22 (the named grid's dpa8 goldens of v0.5.21 and v0.5.22).
DP_ATTENTION_STEPS: tuple[tuple[str, str, str], ...] = (
    ("arg_groups/model_overrides/minicpm.py:_minicpm_sala_overrides", "0.5.19", "MiniCPM"),
    ("arg_groups/model_overrides/iquest_q1.py:_iquest_q1_overrides", "0.5.21", "IQuest Q1"),
    ("arg_groups/model_overrides/ernie45_vl.py:_ernie45_vl_overrides", "0.5.22", "ERNIE 4.5 VL MoE"),
)
DP_FLAG_CHECK_UNTIL = "0.5.21"  # cfg.enable_dp_attention; from v0.5.23 attn_dp_enabled_of

# SGLang's ZayaConfig (configs/zaya.py, registered for model_type "zaya" from v0.5.14) asserts in __init__ that the
# query groups (num_query_groups, or the first non-zero num_query_groups_list entry) equal num_key_value_heads, and
# that head_dim (or kv_channels) is set; its defaults are 2, 2 and 128.
ZAYA_MODEL_TYPE, ZAYA_FROM = "zaya", "0.5.14"
ZAYA_DEFAULTS = {"num_query_groups": 2, "num_key_value_heads": 2, "head_dim": 128}


@cache
def _read_config(path: str, mtime: float) -> dict | None:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def config_json(model) -> dict | None:
    """The config.json the model was loaded from (its directory), as written; None for a catalog entry."""
    if model is None or not model.path:
        return None
    file = Path(model.path) / "config.json"
    try:
        return _read_config(str(file), file.stat().st_mtime)
    except OSError:
        return None


def dp_attention_problems(s: Scenario, release: str) -> list[Problem]:
    dp = s.intent.dp_size
    if s.model is None or not s.intent.dp_attention:
        return []
    if dp <= 1 and not within(release, "0.5.7", DP_FLAG_CHECK_UNTIL):
        return []
    arch = loaded_architecture(s.model, release)
    for where, first, name in DP_ATTENTION_STEPS:
        if within(release, first, None) and registered_by(arch, release, where):
            return [Problem(
                DP_ATTENTION_REFUSED_ID, "error",
                f"sglang v{release} refuses DP attention for {arch}: its override step raises \"{name} does not"
                " support DP attention\" at start-up",
                "drop --enable-dp-attention (plain tensor parallelism)",
                f"sglang v{release}, {OVERRIDES}/{where.split('/')[-1].replace(':', ' ')}",
            )]  # fmt: skip
    return []


def _zaya_refusal(config: dict) -> str | None:
    """ZayaConfig.__init__'s assertions on this config.json, or None when it passes them."""

    def value(key: str):
        return config.get(key, ZAYA_DEFAULTS.get(key))

    if value("head_dim") is None and config.get("kv_channels") is None:
        return "head_dim is required for ZayaConfig"
    groups = next((v for v in config.get("num_query_groups_list") or () if v), None) or value("num_query_groups")
    if groups != value("num_key_value_heads"):
        return (f"num_query_groups must equal num_key_value_heads for ZAYA1 checkpoints (num_query_groups {groups},"
                f" num_key_value_heads {value('num_key_value_heads')})")  # fmt: skip
    return None


def config_problems(s: Scenario, release: str) -> list[Problem]:
    """The config classes' refusals of this config.json at load time (AutoConfig.from_pretrained in get_config)."""
    config = config_json(s.model)
    if config is None:
        return []
    found: list[tuple[str, str, str]] = []  # (message, fix, source)
    if config.get("model_type") == ZAYA_MODEL_TYPE and within(release, ZAYA_FROM, None):
        why = _zaya_refusal(config)
        if why is not None:
            found.append((f"AssertionError: {why}", "set num_key_value_heads to the query groups (and head_dim)",
                          "python/sglang/srt/configs/zaya.py (ZayaConfig.__init__)"))  # fmt: skip
    parts = [("", config)]
    text = config.get("text_config")
    if isinstance(text, dict) and isinstance(text.get("model_type"), str):
        parts.append(("text_config.", text))
    for prefix, part in parts:
        model_type = part.get("model_type")
        refused = sorted(set(part) & class_read_only_keys(model_type if isinstance(model_type, str) else None, release))
        if refused:
            found.append((
                f"AttributeError: the {model_type} config class keeps {', '.join(prefix + k for k in refused)} as a"
                " read-only property (\"property ... has no setter\")",
                f"remove {', '.join(prefix + k for k in refused)} from config.json (the class derives it)",
                "the model_type's config class (advisor/rules/sglang/config_defaults.json read_only_keys)",
            ))  # fmt: skip
    return [Problem(
        CONFIG_REFUSED_ID, "error",
        f"sglang v{release} cannot load this config.json: {message}",
        fix,
        f"sglang v{release}, {source}",
    ) for message, fix, source in found]  # fmt: skip


def model_type_problems(s: Scenario, release: str) -> list[Problem]:
    """config.json's model_type without a config class (advisor/rules/config_class.py): SGLang passes
    --trust-remote-code (a plain switch) to AutoConfig."""
    read = known_model_types(release)
    model = s.model
    if read is None or model is None:
        return []
    if within(release, LONGCAT_LOADER_FROM, None) and LONGCAT_ARCHS & set(model.architecture_entries):
        return []
    if model.model_type == DEEPSEEK_V32 and within(release, "0.5.7", DEEPSEEK_V32_FALLBACK_UNTIL):
        return []
    return no_config_class_problems(
        model, read[0], s.has("--trust-remote-code"), engine="sglang", release=release, transformers=read[1],
        remote_id=REMOTE_CODE_REQUIRED_ID, unknown_id=MODEL_TYPE_UNKNOWN_ID, source=GET_CONFIG,
    )  # fmt: skip


def problems(s: Scenario, release: str) -> list[Problem]:
    # without a config class none is built: its own checks never run
    return dp_attention_problems(s, release) + (model_type_problems(s, release) or config_problems(s, release))
