"""The context length SGLang derives from config.json (ModelConfig._derive_context_length, get_context_length).

get_context_length (utils/hf_transformers_utils.py; utils/hf_transformers/common.py from v0.5.11; the same function in
every modelled release) reads the language model's config (hf_text_config): the first of CONTEXT_LENGTH_KEYS it sets,
in that order, times the rope_scaling dict's ``factor``, which it skips when the dict holds
original_max_position_embeddings or its rope_type is llama3; 2048 when it sets none of the keys. What ``rope_scaling``
holds is transformers': up to v0.5.9 (transformers 4.57) the dict as written under rope_scaling; from v0.5.10
(transformers 5) rope_scaling or else rope_parameters, standardized (PreTrainedConfig.convert_rope_params_to_dict,
standardize_rope_params): rope_type from ``type`` else "default", and llama3 / yarn / longrope get
original_max_position_embeddings, so those take no factor. A nested dict (one per layer type) has no ``factor`` of its
own: no scaling. From v0.5.22 EmbeddingGemma2Model's context is capped at 8192 (the name read from the release's
architectures.json at ModelConfig._derive_context_length).
"""

from __future__ import annotations

from advisor.rules.releases import within

# get_context_length's CONTEXT_LENGTH_KEYS, in its order: the first one the config sets wins.
CONTEXT_LENGTH_KEYS = (
    "max_sequence_length",
    "seq_length",
    "max_seq_len",
    "model_max_length",
    "max_position_embeddings",
)
DEFAULT_CONTEXT = 2048  # where the config sets none of them
TRANSFORMERS_5_FROM = "0.5.10"  # the release whose pinned transformers standardizes the RoPE dict (transformers==5.3.0)
# transformers 5's standardize_rope_params gives these types original_max_position_embeddings
STANDARDIZED_ORIGINAL = frozenset({"llama3", "yarn", "longrope"})
CAPPED_CONTEXT = ("configs/model_config.py:ModelConfig._derive_context_length", 8192)


def rope_factor(model, release: str) -> float:
    """The factor get_context_length multiplies the context length by in ``release``."""
    modern = within(release, TRANSFORMERS_5_FROM, None)
    keys = ("rope_scaling",) if not modern else ("rope_scaling", "rope_parameters")
    entries = next((e for key in keys if (e := [r for r in model.rope if r.key == key])), [])
    if len(entries) != 1 or entries[0].layer is not None:
        return 1.0  # none, or a nested dict: rope_scaling.get("factor", 1) finds no factor at its top
    rope = entries[0]
    if rope.has_original or rope.type == "llama3" or (modern and rope.type in STANDARDIZED_ORIGINAL):
        return 1.0
    return rope.factor if rope.factor is not None else 1.0


def derived_context_length(model, release: str) -> tuple[int, str]:
    """(ModelConfig.context_len without --context-length, where it comes from)."""
    from advisor.rules.sglang.architectures import loaded_architecture, placed_in

    lengths = dict(model.context_lengths)
    key = next((k for k in CONTEXT_LENGTH_KEYS if k in lengths), None)
    if key is None:
        return DEFAULT_CONTEXT, "SGLang's default where config.json names no context length, get_context_length"
    factor = rope_factor(model, release)
    length = int(factor * lengths[key])
    source = f"the model's {key}" + (f" x rope_scaling factor {factor:g}" if factor != 1 else "")
    where, cap = CAPPED_CONTEXT
    if length > cap and placed_in(loaded_architecture(model, release), release, where):
        return cap, f"{source}, capped at {cap} for this architecture (ModelConfig._derive_context_length)"
    return length, source
