"""The attention backend CudaPlatform.get_attn_backend_cls picks."""

from __future__ import annotations

from advisor.rules import engine as rules
from advisor.rules.engine import Decision, Scenario
from advisor.rules.releases import at
from advisor.rules.vllm.common import PLATFORM_FILE, rules_release

# Each change table here is a list of (first release, value) read with advisor.rules.releases.at, from the
# released wheels' code: a version gets the value of the newest entry at or below it. The releases named are the
# first read with the change (the one before it, read too, lacks it).

# The backend CudaPlatform.get_attn_backend_cls picks: the first of the priority list whose checks pass.
ATTENTION_FLAG = "--attention-backend"
# First MLA backend on SM100 (_get_backend_priorities): CUTLASS MLA up to v0.14.1, FlashInfer MLA from v0.15.1.
MLA_SM100_FIRST: list[tuple[str, str]] = [("0.12.0", "CUTLASS_MLA"), ("0.15.1", "FLASHINFER_MLA")]
# Attention sinks (gpt-oss) on SM100: Triton in v0.12.0 and v0.15.1, FlashAttention from v0.20.2 (goldens; the releases
# between v0.15.1 and v0.20.2 are unproven).
SINKS_SM100: list[tuple[str, str]] = [("0.12.0", "TRITON_ATTN"), ("0.20.2", "FLASH_ATTN")]


# How a person chooses the backend: v0.12.0 reads the VLLM_ATTENTION_BACKEND environment variable and its parser has no
# --attention-backend (vllm/envs.py, vllm/engine/arg_utils.py); v0.15.1 has the flag. The flag's first release between
# the two is unproven.
ATTENTION_FLAG_FROM: list[tuple[str, bool]] = [("0.12.0", False), ("0.15.1", True)]
ATTENTION_ENV = "VLLM_ATTENTION_BACKEND"


def attention_choice_hint(version: str) -> str:
    """How to choose the backend in this release."""
    if at(ATTENTION_FLAG_FROM, version):
        return f"pass {ATTENTION_FLAG} NAME to choose"
    return f"set {ATTENTION_ENV}=NAME in the environment to choose (v{version} has no {ATTENTION_FLAG})"


def attention_backend(s: Scenario, version: str) -> str | None:
    """The backend name vLLM selects for the model's attention layers on this GPU (None when the GPU is unknown)."""
    cap = s.capability
    model = s.model
    if cap is None or model is None:
        return None
    major = cap[0]
    if model.uses_mla:
        sm100 = at(MLA_SM100_FIRST, version)
        return {10: sm100, 9: "FLASH_ATTN_MLA"}.get(major, "TRITON_MLA")
    sinks = model.model_type == "gpt_oss"  # attention sinks: FlashInfer's prefill path rejects them
    if major == 10:
        return at(SINKS_SM100, version) if sinks else "FLASHINFER"
    if sinks and major != 9:
        return "TRITON_ATTN"
    return "FLASH_ATTN"


def attention_decision(s: Scenario, version: str) -> Decision:
    release = rules_release(version)
    chosen = s.flag(ATTENTION_FLAG)
    value = chosen or attention_backend(s, release)

    def gpu(s: Scenario):
        cap = s.capability
        if s.no_gpu:
            return False, "no GPU", "a CUDA GPU with a known capability"
        return (None, "capability unknown", "a known capability") if cap is None else (True, f"{cap[0]}.{cap[1]}", "a known capability")

    def model(s: Scenario):
        m = s.model
        if m is None:
            return None, "no model", "a model config"
        kind = "MLA" if m.uses_mla else ("attention sinks" if m.model_type == "gpt_oss" else "standard attention")
        return True, f"{m.architecture} ({kind})", "a model config"

    hint = attention_choice_hint(release)
    conditions = (
        rules.Condition("gpu", "GPU capability known", gpu,
                  "the priority list depends on the major capability (FlashInfer first on 10.x, FlashAttention elsewhere)",
                  hint),
        rules.Condition("model", "model attention kind", model,
                  "MLA models use the MLA backends; sinks (gpt-oss) need FlashAttention 3 (SM90) or another backend",
                  hint),
    )  # fmt: skip
    results = rules.evaluate(conditions, s)
    state = rules.state_of(results, forced_on=chosen is not None)
    source = rules.Source(f"vllm v{release}", PLATFORM_FILE, "_get_backend_priorities, get_attn_backend_cls")
    return rules.decided("attention_backend", "attention backend", state, results, source,
                   value=value if rules.is_enabled(state) else None, notes=_attention_notes(chosen, release))  # fmt: skip


def _attention_notes(chosen: str | None, release: str) -> tuple[str, ...]:
    if not chosen:
        return (f"vLLM's own choice; {attention_choice_hint(release)}",)
    if not at(ATTENTION_FLAG_FROM, release):
        return (f"the value given, but vLLM v{release} rejects {ATTENTION_FLAG} (no such flag): "
                f"set {ATTENTION_ENV}={chosen} in the environment instead",)  # fmt: skip
    return ("the value given",)
