"""One vLLM scenario's resolved fields against the advisor's plan for it: the fields vLLM's create_engine_config decides
(as recorded by conformance/vllm/resolve.py) and the plan's value for each. Used by the fuzzer
(conformance/vllm/fuzz.py) and its golden's test (tests/conformance/test_vllm_fuzz_golden.py); the architectures grid's
test (tests/conformance/test_vllm_conformance.py) compares the same fields.
"""

from __future__ import annotations

from functools import cache

from advisor.models import ModelSpec
from advisor.plan import Intent, build_plan
from advisor.probe.profiles import load_profile
from advisor.rules.engine import ARCHITECTURE_NOT_NAMED, FORCED_OFF
from advisor.rules.vllm import compilation as vllm_compilation
from advisor.rules.vllm import fusion as vllm_fusion
from advisor.rules.vllm.attention import NO_BACKEND

MiB = 2**20
# What vLLM says when its registry serves no architecture of the config (_raise_for_unsupported), and when tp does not
# split the attention heads (ModelConfig.verify_with_parallel_config).
REFUSED = "are not supported for now"
NOT_DIVISIBLE = "must be divisible by tensor parallel size"
# The plan's errors about what happens after the engine config is resolved (the weights and the KV cache against the GPU's
# memory, which vLLM measures when it loads the model): create_engine_config decides none of them.
RUNTIME_REFUSALS = frozenset({"startup_out_of_memory", "kv_cache_too_small"})
MEMORY_KEYS = ("gpu_memory_utilization", "max_num_seqs", "max_num_batched_tokens", "kv_cache_dtype", "block_size",
               "max_model_len")  # fmt: skip


@cache
def facts(profile: str):
    return load_profile(profile)


def plan_for(version: str, profile: str, tp: int, model: ModelSpec, overrides: tuple[str, ...] = ()):
    intent = Intent(model=model.id, tp=tp, engine="vllm", engine_version=version, overrides=overrides)
    return build_plan(facts(profile), model, intent)


def differences(record: dict, plan, profile: str, tp: int, version: str) -> dict[str, tuple[object, object]]:
    """field -> (vLLM's, the plan's) for every field that differs, vLLM's record having resolved."""
    compilation = plan.decision("compilation").value
    memory = plan.decision("memory_defaults").value
    expected = {
        "optimization_level": compilation["optimization_level"],
        "compilation_mode": compilation["compilation_mode"],
        "cudagraph_mode": compilation["cudagraph_mode"],
        "fusion_runs": plan.decision("flashinfer_allreduce_fusion").enabled,
        "disable_custom_all_reduce": plan.decision("custom_allreduce").state == FORCED_OFF,
        "attention_backend": plan.decision("attention_backend").value,
        "enable_chunked_prefill": plan.decision("chunked_prefill").enabled,
        "enable_prefix_caching": plan.decision("prefix_caching").enabled,
        "async_scheduling": plan.decision("async_scheduling").enabled,
        **{key: memory[key] for key in MEMORY_KEYS},
    }
    golden = {key: record.get(key) for key in expected if key != "fusion_runs"}
    if str(golden["attention_backend"]).startswith("error:"):  # no backend fits: vLLM fails, the plan picks none
        golden["attention_backend"] = None
    golden["fusion_runs"] = (
        bool(record["fuse_allreduce_rms"]) and record["compilation_mode"] == vllm_compilation.VLLM_COMPILE
    )
    if record.get("fi_allreduce_fusion_max_bytes") is not None or record["fuse_allreduce_rms"]:
        size = vllm_fusion.max_size_mb(facts(profile).engine_gpus[0].capability, tp, version)
        expected["fi_allreduce_fusion_max_bytes"] = int(size * MiB) if size is not None else None
        golden["fi_allreduce_fusion_max_bytes"] = record.get("fi_allreduce_fusion_max_bytes")
    return {k: (golden[k], expected[k]) for k in expected if golden[k] != expected[k]}


def refusal_class(error: str, plan) -> str | None:
    """None when the plan refuses what vLLM refused with ``error``; else the class of the disagreement."""
    errors = [p for p in plan.problems if p.severity == "error"]
    if REFUSED in error:
        return (
            None if any(p.id == ARCHITECTURE_NOT_NAMED for p in plan.problems) else "refusal: architecture not served"
        )
    if NOT_DIVISIBLE in error:
        return None if any(p.id == "tp_not_divisible" for p in errors) else "refusal: tp does not split the heads"
    return None if errors else "refusal: " + error.split(":")[0]


def accepted_class(record: dict, plan) -> str | None:
    """A scenario vLLM resolved: the plan must not refuse it (an unserved architecture is served when vLLM ran it through
    its Transformers backend, which the plan names with the same problem; no attention backend is a start-up failure
    the harness records as the selector's error)."""
    if str(record.get("architecture") or "").startswith("Transformers"):
        return None
    if any(p.id == ARCHITECTURE_NOT_NAMED for p in plan.problems):
        return "plan refuses: architecture not named"
    ignored = RUNTIME_REFUSALS | ({NO_BACKEND} if str(record.get("attention_backend")).startswith("error:") else set())
    errors = [p.id for p in plan.problems if p.severity == "error" and p.id not in ignored]
    return f"plan refuses: {errors[0]}" if errors else None
