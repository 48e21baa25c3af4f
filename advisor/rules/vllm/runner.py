"""Which model class vLLM's registry runs for an architecture, and the runner it takes: "generate" or "pooling".

vLLM's registry (vllm/model_executor/models/registry.py, _ModelRegistry._normalize_arch) serves a name its tables lack
when the name ends with a known suffix and the same name with another suffix is in them (LlamaForSequenceClassification
runs LlamaForCausalLM converted to a classifier, Qwen3Model Qwen3ForCausalLM converted to an embedder).
ModelConfig._get_default_runner_type (vllm/config/model.py) takes "pooling" for a class that is a pooling model and,
for a name the tables lack, the runner its suffix names (_SUFFIX_TO_DEFAULTS). A pooling model gets no full CUDA graphs
(VllmConfig.__post_init__: PIECEWISE), no async scheduling by default (from v0.20.2), and neither chunked prefill nor
prefix caching when its pooling or attention reads the whole sequence (ModelConfig.is_chunked_prefill_supported,
is_prefix_caching_supported: CLS / MEAN pooling, step pooling, bidirectional attention).
"""

from __future__ import annotations

from advisor.rules.engine import Problem
from advisor.rules.releases import at
from advisor.rules.vllm.architectures import _kinds, class_kinds, registry_architecture, resolution

# v0.27.1 alone: EngineArgs leaves prefix caching off by default for every hybrid class ("and not
# model_config.is_hybrid", vllm/engine/arg_utils.py), pooling ones included; v0.25.1 and v0.28.0 have no such clause.
HYBRID_POOLING_PREFIX_OFF: list[tuple[str, bool]] = [("0.12.0", False), ("0.27.1", True), ("0.28.0", False)]
# VllmConfig.__post_init__ turns async scheduling off by default for a pooling model from v0.20.2 (v0.19.1 has not).
POOLING_ASYNC_OFF: list[tuple[str, bool]] = [("0.12.0", False), ("0.20.2", True)]


def runner_type(model, version: str) -> str:
    """ModelConfig.runner_type for --runner auto (architectures.resolution: the first entry of architectures the
    registry serves decides by its class, else the first whose suffix vLLM knows by the suffix)."""
    return resolution(model, version).runner


def is_pooling(model, version: str) -> bool:
    return runner_type(model, version) == "pooling"


def pooling_unchunked(model, version: str) -> bool:
    """A pooling model whose class pools the whole sequence (CLS / MEAN), by step, or attends both ways: vLLM turns
    chunked prefill and prefix caching off. A generative class converted to pooling pools the last token."""
    if not is_pooling(model, version):
        return False
    # the Transformers backend's class follows architectures[0] (ModelConfig._get_transformers_backend_cls)
    arch = registry_architecture(model, version) or _transformers_pooling_class(model.architecture)
    return arch in _kinds(version, "pooling_unchunked")


# A pooling name the registry cannot serve runs on vLLM's Transformers backend (registry._try_resolve_transformers): a
# classifier for the classification suffixes, an embedder for the others.
CLASSIFY_SUFFIXES = ("ForSequenceClassification", "ForTokenClassification", "ForAudioClassification",
                     "ForImageClassification", "ForVideoClassification", "ClassificationModel")  # fmt: skip


def _transformers_pooling_class(architecture: str) -> str:
    if architecture.endswith(CLASSIFY_SUFFIXES):
        return "TransformersForSequenceClassification"
    return "TransformersEmbeddingModel"


def encoder_decoder(model, version: str) -> bool:
    """ModelConfig.attn_type "encoder_decoder": the config says is_encoder_decoder, on the generate runner."""
    return model is not None and model.is_encoder_decoder and not is_pooling(model, version)


def chunked_prefill_supported(model, version: str) -> bool:
    """ModelConfig.is_chunked_prefill_supported: not for encoder-decoder models, nor for pooling models that pool the
    whole sequence or attend both ways."""
    return not (pooling_unchunked(model, version) or encoder_decoder(model, version))


# -- the runner asked for, and the one vLLM refuses ----------------------------------------------------------------
RUNNER_ID = "vllm_runner_unsupported"
# From v0.25.1 ModelConfig.__post_init__ first refuses a pooling-only class under --runner generate / draft with its own
# message ("Embedding models do not support `--runner generate`"); v0.12.0 to v0.20.2 reach the general check ("This
# model does not support `--runner generate`"), which refuses any class that does not generate text.
EMBEDDING_MESSAGE: list[tuple[str, bool]] = [("0.12.0", False), ("0.25.1", True)]
# _RUNNER_CONVERTS["pooling"]: the convert types that adapt a generative class to --runner pooling (v0.12.0 also
# "reward"; v0.15.1 on, embed and classify).
POOLING_CONVERTS: list[tuple[str, tuple[str, ...]]] = [("0.12.0", ("embed", "classify", "reward")),
                                                       ("0.15.1", ("embed", "classify"))]  # fmt: skip


def runner(s, version: str) -> str:
    """ModelConfig.runner_type: --runner as given, else (auto) "pooling" when --convert names a conversion, else the
    runner the architectures resolve to."""
    given = (s.flag("--runner") or "auto").lower()
    if given != "auto":
        return given
    if (s.flag("--convert") or "auto").lower() not in ("auto", "none"):
        return "pooling"
    return runner_type(s.model, version)


def runner_problems(s, version: str) -> list[Problem]:
    """ModelConfig.__post_init__'s runner checks (vllm/config/model.py): a class that does not generate text under
    --runner generate (a pooling-only class under generate or draft from v0.25.1), and a class that does not pool under
    --runner pooling with a --convert that adapts nothing."""
    kinds = class_kinds(s.model, version)
    if kinds is None:  # no served class: the Transformers backend or a refusal (architecture_problems says which)
        return []
    pooling, generative = kinds
    run = runner(s, version)
    source = f"vllm v{version}, vllm/config/model.py (ModelConfig.__post_init__, _RUNNER_CONVERTS)"
    arch = registry_architecture(s.model, version) or s.model.architecture
    if pooling and not generative and (run == "draft" or run == "generate") and at(EMBEDDING_MESSAGE, version):
        said = f"Embedding models do not support `--runner {run}`"
    elif run == "generate" and not generative:
        said = "This model does not support `--runner generate`"
    elif run == "pooling" and not pooling and (s.flag("--convert") or "auto").lower() not in (
            "auto", *at(POOLING_CONVERTS, version)):  # fmt: skip
        return [
            Problem(
                RUNNER_ID,
                "error",
                f"vllm {version} runs {arch} under --runner pooling only converted, and --convert"
                f" {s.flag('--convert')} adapts nothing: it refuses the model at start-up ('This model does not"
                " support `--runner pooling`')",
                f"pass --convert {'|'.join(at(POOLING_CONVERTS, version))}, or leave --convert auto",
                source,
            )
        ]
    else:
        return []
    why = ("the first entry of architectures names a generative suffix, so --runner auto resolves to generate"
           if (s.flag("--runner") or "auto").lower() == "auto" else f"--runner {run} was passed")  # fmt: skip
    kind = "a pooling model" if pooling else "a class that does not generate text"
    return [Problem(
        RUNNER_ID, "error",
        f"vllm {version} serves {arch} as {kind}, and {why}: it refuses the model at start-up ('{said}')",
        "pass --runner pooling (or --runner auto), or put the generative architecture first in config.json's"
        " architectures" if pooling else "use a generative architecture, or --runner pooling with --convert embed",
        source,
    )]  # fmt: skip
