"""Scheduling switches: chunked prefill, prefix caching and async scheduling."""

from __future__ import annotations

from advisor.rules import engine as rules
from advisor.rules.engine import Decision, Scenario
from advisor.rules.releases import at
from advisor.rules.vllm.architectures import attention_kind, prefix_caching_forced_off
from advisor.rules.vllm.common import ARG_UTILS_FILE, VLLM_CONFIG_FILE, rules_release
from advisor.rules.vllm.runner import (
    HYBRID_POOLING_PREFIX_OFF,
    POOLING_ASYNC_OFF,
    encoder_decoder,
    is_pooling,
    pooling_unchunked,
)

# Each change table here is a list of (first release, value) read with advisor.rules.releases.at, from the
# released wheels' code: a version gets the value of the newest entry at or below it. The releases named are the
# first read with the change (the one before it, read too, lacks it).

# (decision id, title, --flag, why it is on by default)
SWITCHES = (
    ("chunked_prefill", "chunked prefill", "--enable-chunked-prefill",
     "on for every generative model that supports it (ModelConfig.is_chunked_prefill_supported)"),
    ("prefix_caching", "prefix caching", "--enable-prefix-caching",
     "on for every model that supports it (ModelConfig.is_prefix_caching_supported)"),
    ("async_scheduling", "async scheduling", "--async-scheduling",
     "on unless pipeline parallelism, speculative decoding, a pooling model or an executor without support rules it out"),
)  # fmt: skip


def switch_setting(s: Scenario, flag: str) -> bool | None:
    """True for --flag, False for --no-flag (the last one wins), None when neither is given."""
    setting = None
    negative = "--no-" + flag[2:]
    for token in s.overrides:
        name = token.split("=", 1)[0]
        if name == flag:
            setting = token.split("=", 1)[1].lower() not in ("false", "0") if "=" in token else True
        elif name == negative:
            setting = False
    return setting


# SchedulerConfig.async_scheduling: False up to v0.13.0, None (rules.decided by VllmConfig: on where supported) from v0.14.1.
ASYNC_SCHEDULING_DEFAULT_ON: list[tuple[str, bool]] = [("0.12.0", False), ("0.14.1", True)]


# ModelConfig.is_prefix_caching_supported for a generative model: decoder yes, attention-free no; hybrid (Mamba or linear
# attention beside attention) no up to v0.25.x ("still experimental"); v0.27.1 supports it but EngineArgs still leaves
# it off by default ("and not model_config.is_hybrid", vllm/engine/arg_utils.py); on by default from v0.28.0.
HYBRID_PREFIX_CACHING: list[tuple[str, bool]] = [("0.12.0", False), ("0.28.0", True)]


def prefix_caching_supported(s: Scenario, version: str) -> tuple[bool, str]:
    """(whether vLLM turns prefix caching on by default for the model, the model's attention kind)."""
    if is_pooling(s.model, version):
        hybrid_off = attention_kind(s.model, version) == "hybrid" and at(HYBRID_POOLING_PREFIX_OFF, version)
        return not pooling_unchunked(s.model, version) and not hybrid_off, "pooling"
    if encoder_decoder(s.model, version):
        return False, "encoder-decoder"
    kind = attention_kind(s.model, version)
    if kind == "hybrid":
        return at(HYBRID_PREFIX_CACHING, version), kind
    return kind == "decoder", kind


def switch_decision(s: Scenario, version: str, which: str) -> Decision:
    release = rules_release(version)
    decision_id, title, flag, why = next(sw for sw in SWITCHES if sw[0] == which)

    def single_node(s: Scenario):
        return True, "generative model, no pipeline parallelism", "a generative model"

    def by_default(s: Scenario):
        on = at(ASYNC_SCHEDULING_DEFAULT_ON, release)
        return on, f"vllm {version}", "v0.14.1 or newer (on by default)"

    def generative(s: Scenario):
        pooling = is_pooling(s.model, release) and at(POOLING_ASYNC_OFF, release)
        return not pooling, "pooling model" if pooling else "generative model", "a generative model (pooling ones: off)"

    def chunkable(s: Scenario):
        if is_pooling(s.model, release):
            ok = not pooling_unchunked(s.model, release)
            return ok, "pooling model" + ("" if ok else " pooling the whole sequence"), "last-token pooling"
        if encoder_decoder(s.model, release):
            return False, "encoder-decoder model", "a decoder-only model"
        return True, "decoder model", "a decoder-only model"

    def model_supports(s: Scenario):
        ok, kind = prefix_caching_supported(s, release)
        return ok, f"{kind} model", "a decoder model (hybrid ones from v0.28.0)"

    conditions = (rules.Condition("default", f"{title} supported", single_node, why, f"pass --no-{flag[2:]} to turn it off"),)
    if which == "prefix_caching":
        conditions += (rules.Condition("model_kind", "a model kind with prefix caching", model_supports,
                                       "off by default for attention-free (Mamba) models, and for hybrid ones before "
                                       "v0.28.0 (ModelConfig.is_prefix_caching_supported, EngineArgs)", f"pass {flag} to force it"),)  # fmt: skip
    if which == "async_scheduling":
        conditions += (rules.Condition("release_default", "on by default in this release", by_default,
                                 "SchedulerConfig.async_scheduling defaulted to False before v0.14.1",
                                 f"pass {flag} or upgrade vLLM"),)  # fmt: skip
        conditions += (rules.Condition("generative", "a generative model", generative,
                                       "VllmConfig leaves async scheduling off by default for pooling models (v0.20.2+)",
                                       f"pass {flag}"),)  # fmt: skip
    if which == "chunked_prefill":
        conditions += (rules.Condition("model_kind", "a model kind with chunked prefill", chunkable,
                                       "ModelConfig.is_chunked_prefill_supported: not for encoder-decoder models, nor "
                                       "pooling models that pool the whole sequence or attend both ways", f"pass {flag} to force it"),)  # fmt: skip
    results = rules.evaluate(conditions, s)
    setting = switch_setting(s, flag)
    state = rules.state_of(results, forced_on=setting is True, forced_off=setting is False)
    if which == "prefix_caching" and prefix_caching_forced_off(s.model, release):
        state = rules.FORCED_OFF  # the model's config fix-up (MODELS_CONFIG_MAP) turns it off whatever was passed
    source = rules.Source(f"vllm v{release}", ARG_UTILS_FILE if which != "async_scheduling" else VLLM_CONFIG_FILE)
    return rules.decided(decision_id, title, state, results, source)
