"""The architectures each SGLang release names, and the model's architecture as a release sees it.

architectures.json (written by ``python -m conformance sglang-architectures``; docs/architectures.md) holds, per release,
every architecture name (config.json ``architectures[0]``) the release's argument resolution compares against, with the
functions that do. An architecture a release does not name takes the release's default path everywhere: the plan says
so with one info problem instead of guessing. ``seen_architecture`` applies the renames SGLang makes while it loads the
config, before any list is consulted; every rule that compares the architecture against a list goes through it.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from advisor.rules.engine import ARCHITECTURE_NOT_NAMED, Problem, Scenario
from advisor.rules.releases import within
from advisor.rules.sglang.config_defaults import class_default, merges_text_config
from advisor.rules.sglang.releases import rules_release

ARCHITECTURES_FILE = Path(__file__).with_name("architectures.json")
NOT_NAMED = ARCHITECTURE_NOT_NAMED

# architectures[0] -> (the name SGLang replaces it with, first release, last release or None while it holds).
# v0.5.7 to v0.5.11 load a config.json whose model_type their transformers does not know ("deepseek_v32") as DeepSeek V3:
# hf_transformers_utils._load_deepseek_v32_model rewrites architectures to ["DeepseekV3ForCausalLM"], so every later
# step (the fusion list included) sees that name (the goldens' log: "... for DeepseekV3ForCausalLM").
# From v0.5.21 DeepSeek V4.1's config class (configs/deepseek_v41.py, normalize_deepseek_v41_config, called from
# DeepseekV41Config.__init__ and get_config) replaces architectures ["DeepseekV41ForCausalLM"] with
# ["DeepseekV4ForCausalLM"], so V4.1 takes every V4 step (fusion list, MoE runner, page size, memory).
ARCH_SEEN_AS: dict[str, tuple[str, str, str | None]] = {
    "DeepseekV32ForCausalLM": ("DeepseekV3ForCausalLM", "0.5.7", "0.5.11"),
    "DeepseekV41ForCausalLM": ("DeepseekV4ForCausalLM", "0.5.21", None),
    # configs/olmo3.py Olmo3Config.__init__ (every modelled release; the config class SGLang registers for model_type
    # olmo3) replaces Olmo3ForCausalLM with Olmo2ForCausalLM: OLMo 3 takes OLMo 2's step (fa3 on SM80+, trtllm_mha on
    # SM10x).
    "Olmo3ForCausalLM": ("Olmo2ForCausalLM", "0.5.7", None),
    # From v0.5.10 get_config loads a LongCat checkpoint through SGLang's LongcatFlashConfig (v0.5.11+
    # utils/hf_transformers/config.py _try_load_longcat_config, _LONGCAT_ARCHS), which holds LongcatFlashForCausalLM as
    # its architectures: the n-gram-embedding variant takes every LongCat-Flash step (MLA, the family step).
    "LongcatFlashNgramForCausalLM": ("LongcatFlashForCausalLM", "0.5.10", None),
}


def seen_architecture(architecture: str, release: str) -> str:
    """architectures[0] as SGLang ``release`` sees it after loading the config."""
    alias = ARCH_SEEN_AS.get(architecture)
    if alias and within(release, alias[1], alias[2]):
        return alias[0]
    return architecture


# v0.5.7 to v0.5.11 load a config whose model_type is deepseek_v32 (unknown to their transformers) as DeepSeek V3,
# whatever its architectures say (utils/hf_transformers_utils.py _load_deepseek_v32_model rewrites both).
DEEPSEEK_V32_LOADED_AS = ("deepseek_v32", "DeepseekV3ForCausalLM", "0.5.7", "0.5.11")


# get_config's last step replaces architectures by model_type, whatever config.json names (v0.5.7-v0.5.10
# utils/hf_transformers_utils.py, v0.5.11+ utils/hf_transformers/config.py: 'if config.model_type == "longcat_flash":
# _set_architectures(config, "LongcatFlashForCausalLM")'): a renamed LongCat-Flash is LongCat-Flash to every list (MLA,
# the DeepSeek family step), found by the fuzz run. model_type -> (architecture, first release, last or None).
# SGLang's IQuestQ1MTPConfig (configs/iquest_q1.py, v0.5.21+) writes architectures=["IQuestQ1MTP"] over what config.json
# says, so a renamed IQuest Q1 draft is still IQuestQ1MTP to its override step (fa3, DP attention refused).
MODEL_TYPE_LOADED_AS: dict[str, tuple[str, str, str | None]] = {
    "multi_modality": ("MultiModalityCausalLM", "0.5.7", None),
    "longcat_flash": ("LongcatFlashForCausalLM", "0.5.10", None),
    "iquest_q1_mtp": ("IQuestQ1MTP", "0.5.21", None),
    # SGLang's DeepseekVL2Config (configs/deepseekvl2.py, every modelled release) sets architectures itself; DeepSeek-OCR
    # checkpoints share the model_type and are told apart by their auto_map (get_config then loads them as
    # DeepseekOCRForCausalLM), approximated here by an OCR architecture name
    "deepseek_vl_v2": ("DeepseekVL2ForCausalLM", "0.5.7", None),
    "dots_vlm": ("DotsVLMForCausalLM", "0.5.7", None),  # DotsVLMConfig (configs/dots_vlm.py), every modelled release
}


def _ocr_checkpoint(model, loaded: str) -> bool:
    return loaded == "DeepseekVL2ForCausalLM" and "OCR" in (model.architecture or "")


def loaded_architecture(model, release: str) -> str:
    """architectures[0] as ``release`` holds it after loading the config: the name renames of architectures.py, and the
    model_type-keyed loads (DeepSeek V3.2 in v0.5.7 to v0.5.11, MODEL_TYPE_LOADED_AS)."""
    model_type, loaded, first, last = DEEPSEEK_V32_LOADED_AS
    if model.model_type == model_type and within(release, first, last):
        return loaded
    by_type = MODEL_TYPE_LOADED_AS.get(model.model_type or "")
    if by_type is not None and within(release, by_type[1], by_type[2]) and not _ocr_checkpoint(model, by_type[0]):
        return by_type[0]
    return seen_architecture(model.architecture, release)


@cache
def _releases() -> dict[str, dict[str, list[str]]]:
    """architectures.json's releases, read once."""
    return json.loads(ARCHITECTURES_FILE.read_text(encoding="utf-8"))["releases"]


def named(release: str) -> dict[str, list[str]] | None:
    """Every architecture ``release`` names -> where (``file:function`` under python/sglang/srt/); None when the
    release was not read."""
    return _releases().get(release)


# configs/model_config.py: is_deepseek_nsa (renamed is_deepseek_dsa) holds the architectures whose config, when it has
# an index_topk, selects DeepSeek sparse attention (the dsa/nsa backend, page size 64, no prefill graph).
DSA_CHECKS = ("configs/model_config.py:is_deepseek_nsa", "configs/model_config.py:is_deepseek_dsa")


@cache
def dsa_architectures(release: str) -> frozenset[str]:
    """The architectures ``release``'s DeepSeek-sparse-attention check lists (read from architectures.json)."""
    names = named(release) or {}
    return frozenset(name for name, places in names.items() if any(p in DSA_CHECKS for p in places))


def _top_level_index_topk(model, release: str) -> bool:
    """hf_config.index_topk is not None: config.json's top-level key, else the config class's default."""
    if merges_text_config(model, rules_release(release)):
        return model.index_topk is not None or bool(model.top_level_index_topk)  # the class merged text_config up
    if model.top_level_index_topk is not None:
        return model.top_level_index_topk
    if model.index_topk is not None and not model.has_text_config:
        return True  # a spec built without the top-level flag (index_topk then is the top level's)
    return class_default(model.model_type, "index_topk", rules_release(release))


def uses_dsa(model, release: str) -> bool:
    """SGLang's is_deepseek_nsa / is_deepseek_dsa: architectures[0] (as loaded) on its list and an index_topk in the
    config. A name on the list without index_topk (DeepSeek V3) is plain MLA; one off the list never is DSA. The
    check reads the top-level config (server_args.py / arg_groups: is_deepseek_dsa(hf_config), v0.5.23
    configs/model_config.py _hf_attr(config, "index_topk")): an index_topk only under text_config is not seen, and a
    top level without the key takes the config class's default (transformers' GlmMoeDsaConfig sets 2048)."""
    if model is None or not _top_level_index_topk(model, release):
        return False
    return loaded_architecture(model, release) in dsa_architectures(release)


def placed_in(architecture: str | None, release: str, *places: str) -> bool:
    """Whether ``release``'s architectures.json places ``architecture`` in one of ``places`` (file:function or
    file:CONSTANT): the release itself names it there."""
    where = (named(release) or {}).get(architecture or "", ())
    return any(place in where for place in places)


# configs/model_config.py is_deepseek_v4 (v0.5.18+): DeepSeek V4 and its NextN / DSpark drafts. The release's
# _derive_model_shapes reads them as MHA with K and V rows of head_dim, and its breakable-prefill-graph check
# (server_args.py v0.5.18, arg_groups/cuda_graph_hook.py disable_breakable_cudagraph_if_incompatible from v0.5.19)
# turns the prefill graph off for them ("heavy capture-pool memory pressure").
DEEPSEEK_V4_CHECK = "configs/model_config.py:is_deepseek_v4"
DEEPSEEK_V4 = "DeepseekV4ForCausalLM"


def is_deepseek_v4(model, release: str) -> bool:
    """SGLang's is_deepseek_v4 on the architecture as loaded (V4.1 is renamed V4 first), read from the release's own
    list; where the release was not read, the V4 name alone."""
    if model is None:
        return False
    arch = loaded_architecture(model, release)
    if named(release) is None:
        return arch == DEEPSEEK_V4
    return placed_in(arch, release, DEEPSEEK_V4_CHECK)


# configs/model_config.py ModelConfig._detect_attention_sinks (v0.5.11+; the list SWA_SINK_ARCHS from v0.5.19): the
# architectures that always have learned attention sinks. get_default_attn_backend then gives a standard-attention
# model triton instead of FlashInfer off Hopper and SM10x ("FlashInfer does not support attention sinks").
SINK_CHECKS = ("configs/model_config.py:ModelConfig._detect_attention_sinks", "configs/model_config.py:SWA_SINK_ARCHS")


@cache
def sink_architectures(release: str) -> frozenset[str]:
    """The architectures ``release``'s attention-sink detection names (read from architectures.json)."""
    names = named(release) or {}
    return frozenset(name for name, places in names.items() if any(p in SINK_CHECKS for p in places))


def has_attention_sinks(model, release: str) -> bool:
    """ModelConfig.has_attention_sinks by name. Not read: MiMo V2's add_*_sink_bias and any config's learnable_sink
    (later releases), which ModelSpec does not hold."""
    return model is not None and loaded_architecture(model, release) in sink_architectures(release)


def architecture_problems(s: Scenario, version: str) -> list[Problem]:
    """One info problem when the release names the model's architecture nowhere in its argument resolution."""
    release = rules_release(version)
    names = named(release)
    if s.model is None or names is None:
        return []
    arch = s.model.architecture
    seen = loaded_architecture(s.model, release)
    if seen in names or arch in names:
        return []
    loaded = f" (loaded as {seen})" if seen != arch else ""
    return [Problem(
        NOT_NAMED, "info",
        f"{arch}{loaded} is not named by sglang {release}: default rules. Its argument resolution compares the "
        f"architecture against {len(names)} names, none of them this one: every step keyed on the name takes its"
        " default path, and only the config's properties (MLA, attention sinks, experts, quantization) decide",
        "nothing to do; a model-specific step added in a later release would show up as a name there"
        " (python -m conformance sglang-architectures)",
        f"sglang v{release}, advisor/rules/sglang/architectures.json",
    )]  # fmt: skip
