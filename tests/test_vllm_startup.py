"""vLLM's start-up model (advisor/rules/vllm/startup.py): the issue's cases through build_plan, and properties of the KV
arithmetic (the word-for-word agreement with each release's own code is tests/conformance/test_vllm_memory_conformance.py)."""

from __future__ import annotations

import re
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.models import catalog_ids, resolve_model
from advisor.plan import Intent, build_plan
from advisor.probe.profiles import list_profiles, load_profile
from advisor.rules.vllm import RELEASES
from advisor.rules.vllm.startup import (
    KvSpec,
    estimate_max_model_len,
    kv_verdict,
    no_memory_message,
    num_blocks,
    parse_max_model_len,
)

GiB = 2**30


def vllm_plan(profile: str, model: str, tp: int, *overrides: str, version: str | None = None):
    intent = Intent(tp=tp, engine="vllm", engine_version=version, overrides=overrides)
    return build_plan(load_profile(profile), resolve_model(model), intent)


def test_llama_8b_on_a_4090_refuses_its_default_max_model_len():
    plan = vllm_plan("rtx-4090-2", "meta-llama/Llama-3.1-8B-Instruct", 1)
    startup = plan.startup
    assert startup.starts is False and startup.context_len == 131072
    assert startup.error.id == "kv_cache_too_small"
    message = startup.error.engine_message
    assert message.startswith("To serve at least one request with the ")
    estimate = int(re.search(r"estimated maximum model length is (\d+)", message).group(1))
    assert 16384 < estimate < 131072  # a 24 GiB GPU holds 15 GiB of weights and a few GiB of KV cache
    assert startup.error.fixes[0].startswith(f"--max-model-len {estimate} ")
    assert any(p.id == "kv_cache_too_small" and p.severity == "error" for p in plan.problems)


def test_the_estimated_max_model_len_starts():
    """The first fix, applied, gives a plan that starts; so does the smallest tp it names."""
    first = vllm_plan("rtx-4090-2", "meta-llama/Llama-3.1-8B-Instruct", 1).startup.error.fixes
    length = first[0].split()[1]
    assert vllm_plan("rtx-4090-2", "meta-llama/Llama-3.1-8B-Instruct", 1, "--max-model-len", length).startup.starts
    tp_fix = next(f for f in first if f.startswith("--tp "))
    tp = int(tp_fix.split()[1])
    assert vllm_plan("rtx-4090-2", "meta-llama/Llama-3.1-8B-Instruct", tp).startup.starts


def test_deepseek_v3_tp8_weights_exceed_what_gpu_memory_utilization_leaves():
    plan = vllm_plan("h100-sxm-8", "deepseek-ai/DeepSeek-V3", 8)
    startup = plan.startup
    assert startup.starts is False
    assert startup.weights_bytes > startup.fraction * startup.total_bytes
    assert startup.error.id == "startup_out_of_memory"
    assert startup.error.engine_message == no_memory_message(plan.engine["rules"])
    assert any("--nnodes 2" in fix for fix in startup.error.fixes)
    assert plan.has_errors


def test_a_model_that_fits_starts_with_its_kv_pool():
    startup = vllm_plan("h100-sxm-8", "Qwen/Qwen3-8B", 1).startup
    assert startup.starts is True and startup.error is None
    assert startup.kv_tokens > startup.context_len and startup.sequences >= 1
    assert startup.estimates  # the profile-run figures are named as estimates


def test_max_model_len_flag_is_the_context():
    startup = vllm_plan("h100-sxm-8", "Qwen/Qwen3-8B", 1, "--max-model-len", "8192").startup
    assert (startup.context_len, startup.context_source) == (8192, "--max-model-len")


def test_every_release_words_the_error_its_way():
    """The same too-short plan under each modelled release: the message is that release's."""
    words = {vllm_plan("rtx-4090-2", "meta-llama/Llama-3.1-8B-Instruct", 1, version=v).startup.error.engine_message
             for v in RELEASES}  # fmt: skip
    assert any("models's" in w for w in words) and any("model's max seq len" in w for w in words)


specs = st.builds(KvSpec, layers=st.integers(1, 128), num_kv_heads=st.integers(1, 16),
                  head_size=st.sampled_from([64, 128, 256, 576]), dtype_bytes=st.sampled_from([1, 2]),
                  mla=st.booleans(), block_size=st.sampled_from([16, 32, 64, 128]))  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(spec=specs, length=st.integers(1, 1 << 20), available=st.integers(-(1 << 34), 1 << 38),
       release=st.sampled_from(RELEASES))  # fmt: skip
def test_estimate_is_the_longest_length_that_fits(spec, length, available, release):
    estimate = estimate_max_model_len(spec, length, available)
    if estimate:
        assert spec.need_bytes(estimate) <= available
        assert estimate == length or spec.need_bytes(estimate + 1) > available
    else:
        assert spec.need_bytes(1) > available
    verdict = kv_verdict(release, spec, length, available)
    if verdict.ok:  # a request of max_model_len fits the blocks the pool is cut into
        assert verdict.num_blocks * spec.block_size >= length
    if available > 0:
        assert verdict.num_blocks == num_blocks(spec, available) == available // spec.block_bytes


def test_memory_held_by_others_is_the_free_memory_refusal():
    """Less free than gpu_memory_utilization x total: the worker's own refusal, with a utilization that fits the free."""
    facts = load_profile("h100-sxm-8")
    busy = replace(facts, gpus=(replace(facts.gpus[0], memory_free_mib=facts.gpus[0].memory_total_mib // 2),
                                *facts.gpus[1:]))  # fmt: skip
    plan = build_plan(busy, resolve_model("Qwen/Qwen3-8B"), Intent(tp=1, engine="vllm"))
    error = plan.startup.error
    assert error.id == "startup_memory_in_use"
    assert "on startup is less than desired GPU memory utilization" in error.engine_message
    assert error.fixes[0].startswith("--gpu-memory-utilization 0.49 ")  # floored: never above what is free


def test_max_model_len_as_vllms_parser_reads_it():
    assert [parse_max_model_len(v) for v in ("32768", "32k", "32K", "25.6k", "auto", "-1", "2.5K", "x")] == [
        32768, 32000, 32768, 25600, -1, -1, None, None]  # fmt: skip


def test_auto_max_model_len_fits_the_kv_cache_from_v0_14():
    """`--max-model-len auto`: the length the max_model_len error would have named, and the plan starts."""
    refused = vllm_plan("rtx-4090-2", "meta-llama/Llama-3.1-8B-Instruct", 1).startup.error.fixes[0]
    fitted = vllm_plan("rtx-4090-2", "meta-llama/Llama-3.1-8B-Instruct", 1, "--max-model-len", "auto").startup
    assert fitted.starts and f"--max-model-len {fitted.context_len} " in refused + " "
    nothing = vllm_plan("rtx-4090-2", "deepseek-ai/DeepSeek-V3", 1, "--max-model-len", "-1").startup
    assert nothing.starts is False and nothing.error.engine_message.startswith("Cannot auto-fit max_model_len")


@settings(max_examples=60, deadline=None)
@given(profile=st.sampled_from(list_profiles()), model=st.sampled_from(catalog_ids()),
       tp=st.sampled_from([1, 2, 4, 8]), release=st.sampled_from(RELEASES))  # fmt: skip
def test_every_plan_gets_a_verdict_that_agrees_with_its_problems(profile, model, tp, release):
    """Any machine x catalog model x tp x release: a verdict or the fact it lacks; an error exactly when it does not
    start, raised as the plan's error; a verdict that starts holds at least one request of its context length."""
    plan = vllm_plan(profile, model, tp, version=release)
    startup = plan.startup
    assert (startup.starts is None) == (startup.unknown is not None)
    assert (startup.starts is False) == (startup.error is not None)
    if startup.error is not None:
        assert any(p.id == startup.error.id and p.severity == "error" for p in plan.problems)
        assert startup.error.fixes and startup.error.engine_message
    if startup.starts:
        assert startup.sequences >= 1 and startup.kv_tokens >= startup.context_len
