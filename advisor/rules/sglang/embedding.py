"""SGLang's embedding mode: which models a release serves as embedding models on its own, and what that changes.

From v0.5.17 ModelConfig resolves an embedding capability for the model (configs/embedding_model_spec.py
resolve_embedding_model_spec, called from ModelConfig.__init__), and the capability step (server_args.py
ServerArgs._handle_model_capability_adjustments; v0.5.19+ arg_groups/model_hook.py handle_model_capability_adjustments)
acts on it:

- an architecture on the release's embedding list (_EMBEDDING_ARCHITECTURES: BertModel, CLIPModel, Contriever,
  LlamaEmbeddingModel, MistralModel, XLMRobertaModel), one resolve_embedding_model_spec names itself
  (EmbeddingGemma2Model from v0.5.22), or EmbeddingGemma (hf_text_config.model_type "gemma3_text" with a truthy
  use_bidirectional_attention: is_embedding_gemma) switches embedding mode on by itself (is_embedding = True, "Embedding
  architecture detected: enabling embedding mode automatically."), as --is-embedding does; a classification
  architecture (_CLASSIFICATION_ARCHITECTURES) is checked first and is not switched;
- from v0.5.22 the capability's safe_disable_radix_cache / safe_disable_chunked_prefill turn the radix cache off and
  chunked prefill off (chunked_prefill_size -1) for EmbeddingGemma2 and EmbeddingGemma;
- EmbeddingGemma (v0.5.17+) also turns the radix cache and chunked prefill off in its own branch, plus what this module
  does not model: the decode CUDA graph off, the breakable prefill graph sized to max(context length, 16384) tokens,
  --prefill-only-disable-kv-cache on Hopper / SM10x with fa3 / fa4 or no backend given.

The lists are the release's own, read from its wheel into architectures.json (``python -m conformance
sglang-architectures``): a name placed in EMBEDDING_LIST or SPEC_NAMED. Before v0.5.17 only --is-embedding sets
embedding mode (ModelConfig.is_generation is False for the names is_generation_model lists, which the serving loop
reads, not the argument resolution). In every release embedding mode itself changes none of the resolved fields the
advisor reports (attention backend, chunked prefill, graphs, memory): its visible effect is the steps above, and
--prefill-only-disable-kv-cache, which the release refuses without --is-embedding (v0.5.12+ ServerArgs
._validate_prefill_only_disable_kv_cache_args; v0.5.19+ arg_groups/kv_cache_hook.py).
"""

from __future__ import annotations

from advisor.rules.engine import Problem, Scenario
from advisor.rules.releases import within
from advisor.rules.sglang.common import SERVER_ARGS

EMBEDDING_LIST = "configs/embedding_model_spec.py:_EMBEDDING_ARCHITECTURES"
CLASSIFICATION_LIST = "configs/embedding_model_spec.py:_CLASSIFICATION_ARCHITECTURES"
SPEC_NAMED = "configs/embedding_model_spec.py:resolve_embedding_model_spec"  # EmbeddingGemma2Model (v0.5.22+)
AUTO_FROM = "0.5.17"  # ModelConfig.embedding_model_spec and the auto switch
SAFE_DISABLE_FROM = "0.5.22"  # safe_disable_radix_cache / safe_disable_chunked_prefill read by the capability step
EMBEDDING_GEMMA = ("gemma3_text", "use_bidirectional_attention")
IS_EMBEDDING = "--is-embedding"
PREFILL_ONLY_NO_KV = "--prefill-only-disable-kv-cache"
PREFILL_ONLY_NO_KV_FROM = "0.5.12"
NEEDS_EMBEDDING_ID = "sglang_prefill_only_needs_embedding"


def is_embedding_gemma(model, release: str) -> bool:
    """ModelConfig.is_embedding_gemma (v0.5.17+): the language model's model_type gemma3_text with
    use_bidirectional_attention set."""
    return (model is not None and within(release, AUTO_FROM, None)
            and model.text_model_type == EMBEDDING_GEMMA[0] and model.bidirectional_attention)  # fmt: skip


def _places(model, release: str) -> tuple[str, ...]:
    from advisor.rules.sglang.architectures import loaded_architecture, named

    return tuple((named(release) or {}).get(loaded_architecture(model, release), ()))


def auto_embedding(model, release: str) -> str | None:
    """Why ``release`` switches embedding mode on by itself for this model, or None (auto_enable_embedding)."""
    if model is None or not within(release, AUTO_FROM, None):
        return None
    if is_embedding_gemma(model, release):
        return "EmbeddingGemma (gemma3_text with use_bidirectional_attention)"
    places = _places(model, release)
    if SPEC_NAMED in places:
        return "an embedding architecture resolve_embedding_model_spec names"
    if CLASSIFICATION_LIST in places:
        return None
    if EMBEDDING_LIST in places:
        return "an architecture on the release's embedding list (_EMBEDDING_ARCHITECTURES)"
    return None


def embedding_mode(s: Scenario, release: str) -> str | None:
    """Why the engine runs in embedding mode (--is-embedding given, or switched on by itself), or None."""
    if s.has(IS_EMBEDDING):
        return f"{IS_EMBEDDING} given"
    return auto_embedding(s.model, release)


def chunked_prefill_off(model, release: str) -> str | None:
    """Why embedding mode turns chunked prefill off (chunked_prefill_size -1), or None."""
    if is_embedding_gemma(model, release):
        return "EmbeddingGemma's bidirectional prefill (model_hook.py handle_model_capability_adjustments)"
    if model is not None and within(release, SAFE_DISABLE_FROM, None) and SPEC_NAMED in _places(model, release):
        return "an embedding model whose capability disables chunked prefill (embedding_model_spec.py)"
    return None


def embedding_problems(s: Scenario, release: str) -> list[Problem]:
    """--prefill-only-disable-kv-cache without embedding mode: the release refuses it at start-up."""
    # the check runs early in the resolution, before the capability step switches embedding mode on by itself, so only
    # --is-embedding counts (v0.5.17 ServerArgs.__post_init__, v0.5.19+ arg_groups/pipeline.py)
    if not s.has(PREFILL_ONLY_NO_KV) or s.has(IS_EMBEDDING) or not within(release, PREFILL_ONLY_NO_KV_FROM, None):
        return []
    where = "arg_groups/kv_cache_hook.py" if within(release, "0.5.19", None) else SERVER_ARGS
    return [Problem(
        NEEDS_EMBEDDING_ID, "error",
        f"sglang v{release} refuses {PREFILL_ONLY_NO_KV} at start-up without {IS_EMBEDDING} (its check runs before"
        " an embedding architecture switches embedding mode on by itself)",
        f"add {IS_EMBEDDING} after --, or drop {PREFILL_ONLY_NO_KV}",
        f"sglang v{release}, {where} (validate_prefill_only_disable_kv_cache_args)",
    )]  # fmt: skip
