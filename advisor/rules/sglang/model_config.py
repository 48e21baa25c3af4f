"""What SGLang's ModelConfig (python/sglang/srt/configs/model_config.py) derives from config.json, per release: MLA,
the K/V head widths, learned attention sinks. The rules ask these instead of comparing names of their own, so an
architecture the advisor has never seen is resolved the way the release resolves it (issue 31, item 3).

MLA is a list of names in every release (``_derive_model_shapes``'s if/elif chain), read from each wheel into
config_keys.json by ``python -m conformance sglang-config-keys``: a config with ``kv_lora_rank`` under any other name is
MHA there, and takes the MHA defaults (FA3 on Hopper, trtllm_mha or fa4 on SM10x, FlashInfer or triton elsewhere).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from advisor.rules.releases import within
from advisor.rules.sglang.architectures import has_attention_sinks as named_sinks
from advisor.rules.sglang.architectures import is_deepseek_v4, loaded_architecture
from advisor.rules.sglang.config_defaults import (
    class_default,
    class_text_kv_lora_rank,
    class_text_widths,
    merges_text_config,
)

CONFIG_KEYS_FILE = Path(__file__).with_name("config_keys.json")
# Used before config_keys.json existed and for a release it lacks: MLA by the config's kv_lora_rank or these names.
FALLBACK_MLA_ARCHS = frozenset({
    "DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM", "DeepseekV4ForCausalLM",
    "KimiK25ForConditionalGeneration", "GlmMoeDsaForCausalLM", "MistralLarge3ForCausalLM", "Glm4MoeLiteForCausalLM",
})  # fmt: skip
# ModelConfig.has_asymmetric_kv (head_dim != v_head_dim, or the sliding layers' widths differ) from v0.5.17:
# get_default_attn_backend (server_args.py; v0.5.19+ arg_groups/model_override_base.py) gives an MHA model fa4 instead of
# trtllm_mha on SM10x ("trtllm_mha requires equal K/V row widths").
ASYMMETRIC_KV_FROM = "0.5.17"
# ModelConfig._detect_attention_sinks reads the config's learnable_sink from v0.5.20 (before: the name list only).
LEARNABLE_SINK_FROM = "0.5.20"
# transformers' config classes that set head_dim = qk_rope_head_dim when config.json gives none (transformers 5.19
# models/*/configuration_*.py: DeepseekV2Config, DeepseekV3Config, DeepseekV32Config, GlmMoeDsaConfig, Glm5NextConfig,
# HYV4Config, KimiLinearConfig, MiniCPM3Config, YoutuConfig, AXK1Config, AXK2Config). SGLang's MHA path reads that
# head_dim, so an unnamed architecture of these families has K rows of qk_rope_head_dim and V rows of v_head_dim.
ROPE_HEAD_DIM_MODEL_TYPES = frozenset({
    "deepseek_v2", "deepseek_v3", "deepseek_v32", "glm_moe_dsa", "glm5_next", "hy_v4", "kimi_linear", "minicpm3",
    "youtu", "axk1", "axk2",
})  # fmt: skip


def config_learnable_sink(model, release: str) -> bool:
    """hf_text_config.learnable_sink as the release's config class holds it: config.json's value, else the class
    default (SGLang's HYV4Config defaults it to true, configs/hy_v4.py)."""
    if model.learnable_sink is not None:
        return model.learnable_sink
    return class_default(model.text_model_type or model.model_type, "learnable_sink", release)


def config_sliding_window_pattern(model, release: str) -> bool:
    """hf_config.sliding_window_pattern is not None as the release's config class holds it: config.json's key, else the
    class default (transformers' Exaone4Config / ExaoneMoeConfig default it to 4, and to 0 without a sliding window)."""
    if model.sliding_window_pattern is not None:
        return model.sliding_window_pattern
    return class_default(model.model_type, "sliding_window_pattern", release)


def class_text_config(model, release: str) -> bool:
    """The release's config class for the model_type builds a default text sub-config when config.json has none
    (get_hf_text_config then returns it, so ModelConfig sees a multimodal wrapper)."""
    return class_default(model.model_type, "text_sub_config", release)


@cache
def _config_keys() -> dict[str, dict]:
    return json.loads(CONFIG_KEYS_FILE.read_text(encoding="utf-8"))["releases"]


def mla_architectures(release: str) -> dict[str, str | None] | None:
    """{architecture: the config key it also needs} that ``release`` reads as MLA; None when the release was not read."""
    entry = _config_keys().get(release)
    return None if entry is None else entry["mla"]


def _key_holds(model, key: str | None, release: str) -> bool:
    if key is None:
        return True
    name, _, default = key.partition("=")
    if name == "kv_lora_rank":
        if class_built_text_widths(model, release) is not None:
            # the name's check reads hf_text_config, here the class's own default (a flattened Pixtral has none)
            return class_text_kv_lora_rank(model.model_type, release)
        return model.kv_lora_rank is not None
    if name == "use_mla":
        return model.use_mla if model.use_mla is not None else default != "false"
    return False  # a key the advisor does not read: the branch is not taken


def is_mla(model, release: str) -> bool:
    """ModelConfig.attention_arch == AttentionArch.MLA: architectures[0] (as loaded) on the release's list, with the
    config key that name needs."""
    if model is None:
        return False
    names = mla_architectures(release)
    if names is None:
        return model.uses_mla or model.architecture in FALLBACK_MLA_ARCHS
    arch = loaded_architecture(model, release)
    return arch in names and _key_holds(model, names[arch], release)


def kv_head_dims(model) -> tuple[int | None, int | None]:
    """(K, V) row widths of an MHA model as ModelConfig._derive_model_shapes reads them: the config's head_dim (or the
    one transformers' config class sets), else hidden_size // num_attention_heads; v_head_dim, else head_dim."""
    head = model.config_head_dim
    if head is None and model.model_type in ROPE_HEAD_DIM_MODEL_TYPES and model.qk_rope_head_dim is not None:
        head = model.qk_rope_head_dim
    if head is None and model.hidden_size and model.num_heads:
        head = model.hidden_size // model.num_heads
    return head, model.v_head_dim or head


def class_built_text_widths(model, release: str) -> tuple[int, int, int, int] | None:
    """The K/V widths ModelConfig reads when get_hf_text_config returns a text sub-config the release's config class
    built itself because config.json does not hold it under the class's key (a flattened Qwen3.5 or Mllama, a
    Bailing-MM whose llm_config was moved under text_config): the class's own widths, whatever the top level says
    (sglang v0.5.23 utils/hf_transformers/common.py get_hf_text_config; config_defaults.json text_kv_widths). None when
    config.json holds that sub-config, or the release was not read."""
    built = class_text_widths(model.model_type, release)
    if built is None:
        return None
    sub_config, widths = built
    return None if model.language_config == sub_config else widths


def has_asymmetric_kv(model, release: str) -> bool:
    """ModelConfig.has_asymmetric_kv for an MHA model (v0.5.17+): K and V rows differ in width, in the full or the
    sliding layers."""
    if model is None or not within(release, ASYMMETRIC_KV_FROM, None) or is_mla(model, release):
        return False
    if is_deepseek_v4(model, release):
        return False  # _derive_model_shapes gives V4 and its drafts v_head_dim = head_dim

    built = class_built_text_widths(model, release)
    if built is not None:
        head, v_head, swa_head, swa_v_head = built
        return head != v_head or swa_head != swa_v_head
    if model.language_config not in (None, "text_config"):
        # get_hf_text_config returns a sub-config the advisor does not size from (llm_config, language_config,
        # thinker_config): the release compares K and V there, not the top-level head_dim / v_head_dim (InternVL,
        # Bailing-MM in the fuzz golden)
        return False
    head, v_head = kv_head_dims(model)
    if head is None:
        # no head_dim and no heads: _derive_model_shapes gives a pure SSM head_dim 0 (any other model stops there)
        head, v_head = 0, model.v_head_dim or 0
    swa_head = model.swa_head_dim or head
    swa_v_head = model.swa_v_head_dim or swa_head
    return head != v_head or swa_head != swa_v_head


def has_attention_sinks(model, release: str) -> bool:
    """ModelConfig.has_attention_sinks: the release's sink list (architectures.json), or from v0.5.20 the config's
    learnable_sink. Not read: MiMo V2's add_swa_attention_sink_bias / add_full_attention_sink_bias."""
    if model is None:
        return False
    return named_sinks(model, release) or (
        within(release, LEARNABLE_SINK_FROM, None) and config_learnable_sink(model, release)
    )


# ModelConfig.__init__'s multimodal test beyond the name list: v0.5.10 any config with a text sub-config or a
# vision_config / audio_config; v0.5.11+ a text sub-config (vision_config / audio_config only with
# --model-impl transformers, which the advisor does not take). Up to v0.5.9 the name list alone.
SUBCONFIG_MULTIMODAL_FROM, ANY_VISION_CONFIG_MULTIMODAL_IN = "0.5.10", "0.5.10"


def is_multimodal(model, release: str) -> bool:
    """ModelConfig.is_multimodal with the default --enable-multimodal: off for the release's mm_disabled_models, else
    on the multimodal list (multimodal_model_archs) or, from v0.5.10, a config with a text sub-config."""
    if model is None:
        return False
    entry = _config_keys().get(release)
    if entry is None:
        return model.vision is not None
    arch = loaded_architecture(model, release)
    if arch in entry["multimodal_off"]:
        return False
    if arch in entry["multimodal"]:
        return True
    if not within(release, SUBCONFIG_MULTIMODAL_FROM, None):
        return False
    has_text = (model.has_text_config and not merges_text_config(model, release)) or class_text_config(model, release)
    return has_text or (within(release, ANY_VISION_CONFIG_MULTIMODAL_IN, ANY_VISION_CONFIG_MULTIMODAL_IN)
                                     and model.vision is not None)  # fmt: skip


# SGLang's own config class for these model types (configs/minimax_vl.py MiniMaxM3VLConfig, registered from v0.5.16)
# comes out of get_config with vision_config still a plain dict (checked with v0.5.23's get_config and its pinned
# transformers 5.19), so adjust_mem_fraction_for_vlm's getattr reads its 24-layer, 1024-wide defaults (the named
# grid's v0.5.16-v0.5.23 goldens: x 0.95).
DICT_VISION_CONFIG_MODEL_TYPES, DICT_VISION_CONFIG_FROM = frozenset({"minimax_m3_vl"}), "0.5.16"


# get_config replaces Phi-4-multimodal's vision_config with a fixed SigLIP tower of 26 layers x 1152 in every modelled
# release (v0.5.7-v0.5.10 utils/hf_transformers_utils.py, from v0.5.11 utils/hf_transformers/config.py), whatever
# config.json says (transformers' converted config: 27 layers; the named grid's v0.5.10 golden reads 26).
FIXED_VISION_TOWERS: dict[str, tuple[tuple[int, int], str]] = {"Phi4MMForCausalLM": ((26, 1152), "0.5.7")}


def multimodal_vision(model, release: str) -> tuple[int | None, int | None] | None:
    """The vision tower adjust_mem_fraction_for_vlm scales the static fraction by: the config's vision_config when the
    release treats the model as multimodal, else None."""
    if model is None or not is_multimodal(model, release):
        return None
    if model.model_type in DICT_VISION_CONFIG_MODEL_TYPES and within(release, DICT_VISION_CONFIG_FROM, None):
        return (None, None)
    fixed = FIXED_VISION_TOWERS.get(loaded_architecture(model, release))
    if fixed is not None and within(release, fixed[1], None):
        return fixed[0]
    return model.vision
