"""vLLM rules: the fusion pass default, its max-size table (tokens fused), and custom allreduce."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.models import ModelSpec, resolve_model
from advisor.plan import Intent
from advisor.probe.profiles import load_profile
from advisor.rules import vllm
from advisor.rules.engine import (
    AUTO_ENABLED,
    FORCED_OFF,
    FORCED_ON,
    NOT_ENABLED,
    UNAVAILABLE,
    Release,
    ReleaseError,
    Scenario,
)
from advisor.rules.vllm import attention as vllm_attention
from advisor.rules.vllm import common as vllm_common
from advisor.rules.vllm import compilation as vllm_compilation
from advisor.rules.vllm import custom_allreduce as vllm_custom_allreduce
from advisor.rules.vllm import fusion as vllm_fusion
from advisor.rules.vllm import memory as vllm_memory
from advisor.rules.vllm import scheduling as vllm_scheduling

HIDDEN_8192 = ModelSpec(id="big", architecture="LlamaForCausalLM", hidden_size=8192, dtype="bfloat16")


def scenario(profile: str, model=HIDDEN_8192, *, tp: int = 8, packages: dict | None = None, **intent) -> Scenario:
    facts = load_profile(profile)
    if packages:
        facts = facts.with_packages(packages)
    if isinstance(model, str):
        model = resolve_model(model)
    return Scenario(facts, model, Intent(engine="vllm", tp=tp, **intent))


def failed(d) -> set[str]:
    return {c.id for c in d.failed}


def test_h200_tp8_bf16_hidden_8192_fuses_32_tokens():
    d = vllm_fusion.fusion_decision(scenario("h200-8"), "0.18.0")
    assert d.state == AUTO_ENABLED and d.value == 32
    assert d.source.release == "vllm v0.18.0"


@pytest.mark.parametrize(
    ("capability", "world", "mb"),
    [((9, 0), 2, 64), ((9, 0), 4, 2), ((9, 0), 8, 0.5), ((9, 0), 16, None), ((10, 0), 8, 1), ((10, 0), 16, 64),
     ((10, 3), 8, 4), ((10, 7), 4, 64), ((10, 7), 16, None), ((12, 0), 2, None), ((8, 0), 2, None)],
)  # fmt: skip
def test_max_size_table(capability, world, mb):
    assert vllm_fusion.max_size_mb(capability, world) == mb


@pytest.mark.parametrize(
    ("profile", "tp", "packages", "overrides", "state", "blocker"),
    [
        ("b300-8", 8, None, (), AUTO_ENABLED, None),
        ("b300-8", 1, None, (), NOT_ENABLED, "tp_gt_1"),
        ("b300-8", 8, None, ("-O1",), NOT_ENABLED, "compilation"),
        ("b300-8", 8, None, ("-O", "0"), NOT_ENABLED, "compilation"),
        ("b300-8", 8, None, ("-O3",), AUTO_ENABLED, None),
        ("b300-8", 8, None, ("--enforce-eager",), NOT_ENABLED, "compilation"),
        ("a100-sxm-8", 8, None, (), NOT_ENABLED, "capability"),
        ("rtx-pro-6000-4", 4, None, (), NOT_ENABLED, "capability"),
        ("h200-8", 16, None, (), NOT_ENABLED, "size_entry"),
        ("cpu-only", 2, None, (), NOT_ENABLED, "cuda"),
        ("b300-8", 8, {"torch": "2.9.0+cpu"}, (), NOT_ENABLED, "cuda"),
        ("b300-8", 8, {"flashinfer-python": "0.6.12", "flashinfer-jit-cache": "0.6.11+cu128"}, (), NOT_ENABLED, "flashinfer"),
        ("b300-8", 8, None, ("-cc.pass_config.fuse_allreduce_rms=False",), FORCED_OFF, None),
        ("a100-sxm-8", 8, None, ("-cc.pass_config.fuse_allreduce_rms=True",), FORCED_ON, "capability"),
    ],
)  # fmt: skip
def test_fusion_conditions(profile, tp, packages, overrides, state, blocker):
    # v0.30.0: the first modelled release with the SM103 x 8 entry at 4 MB (v0.18 has no SM103 entry at all)
    d = vllm_fusion.fusion_decision(scenario(profile, tp=tp, packages=packages, overrides=overrides), "0.30.0")
    assert d.state == state
    if blocker:
        assert blocker in failed(d)
    else:
        assert not d.failed


def test_unknown_capability_is_unavailable():
    facts = load_profile("h200-8")
    facts = replace(facts, gpus=tuple(replace(g, capability=None) for g in facts.gpus))
    d = vllm_fusion.fusion_decision(Scenario(facts, HIDDEN_8192, Intent(engine="vllm", tp=8)), "0.18.0")
    assert d.state == UNAVAILABLE


def test_tokens_fused_follow_dtype_and_hidden():
    qwen = resolve_model("Qwen/Qwen3-30B-A3B")  # hidden 2048, bf16
    assert vllm_fusion.fusion_decision(scenario("b300-8", qwen, tp=8), "0.30.0").value == 4 * 2**20 // (2048 * 2)
    assert vllm_fusion.fusion_decision(scenario("b300-8", qwen, tp=8, dtype="float32"), "0.30.0").value == 4 * 2**20 // (2048 * 4)


def test_versions():
    assert vllm_common.rules_release("0.18.0") == "0.18.0"
    assert vllm_common.rules_release("0.10.2") == vllm_common.MODELLED_FROM
    assert [p.id for p in vllm_common.version_problems("0.10.2")] == ["engine_version_older"]
    assert vllm_common.version_problems("0.13.0") == []
    # about the vllm package only when the installed vllm is the release judged (not an --engine-version)
    assert vllm_common.version_problems("0.10.2", installed="0.10.2")[0].packages == ("vllm",)
    assert vllm_common.version_problems("0.10.2", installed="0.13.0")[0].packages == ()
    assert vllm_common.version_problems("0.10.2")[0].packages == ()
    with pytest.raises(ReleaseError):
        vllm_common.rules_release("latest")


@pytest.mark.parametrize(
    ("profile", "tp", "intent", "state", "blocker"),
    [
        ("h100-sxm-8", 8, {}, AUTO_ENABLED, None),
        ("l40s-4", 4, {}, NOT_ENABLED, "full_nvlink"),
        # no P2P between the two RTX 4090s: vLLM sets its kernel up and _can_p2p turns it off at start-up
        ("rtx-4090-2", 2, {}, NOT_ENABLED, "peer_access"),
        ("h100-pcie-2-bridge", 2, {}, AUTO_ENABLED, None),
        ("h100-sxm-8", 1, {}, NOT_ENABLED, "tp_gt_1"),
        ("h100-sxm-8", 16, {"nnodes": 2}, NOT_ENABLED, "single_node"),
        ("h100-sxm-8", 8, {"overrides": ("--disable-custom-all-reduce",)}, FORCED_OFF, None),
    ],
)
def test_custom_allreduce(profile, tp, intent, state, blocker):
    d = vllm_custom_allreduce.custom_allreduce_decision(scenario(profile, tp=tp, **intent), "0.18.0")
    assert d.state == state
    if blocker:
        assert blocker in failed(d)


@pytest.mark.parametrize(("profile", "tp", "nnodes"), [
    ("h100-sxm-8", 8, 1), ("l40s-4", 4, 1), ("rtx-4090-2", 2, 1), ("h100-sxm-8", 1, 1), ("h100-sxm-8", 16, 2),
    ("cpu-only", 4, 1),
])  # fmt: skip
def test_custom_allreduce_conditions_agree_with_sglang(profile, tp, nnodes):
    """Same kernel lineage, one condition set (advisor.rules.engine.custom_ar_conditions): only the words differ."""
    from advisor.rules.sglang import custom_allreduce as sglang_custom_allreduce

    s = scenario(profile, tp=tp, nnodes=nnodes)
    ours = vllm_custom_allreduce.custom_allreduce_decision(s, "0.18.0").conditions
    theirs = sglang_custom_allreduce.custom_allreduce_decision(s, "0.5.18").conditions
    assert [(c.id, c.ok, c.observed) for c in ours] == [(c.id, c.ok, c.observed) for c in theirs]
    assert [c.id for c in ours] == ["tp_gt_1", "single_node", "world_size", "full_nvlink", "peer_access"]
    assert ours[1].expected == "all ranks on one node" and theirs[1].expected == "the TP group on one node"


def test_installed_release_rules_and_newer_release_warning():
    from advisor.plan import build_plan

    facts = load_profile("h200-8").with_packages({"vllm": "0.20.2"})
    model = resolve_model("Qwen/Qwen3-8B")
    installed = build_plan(facts, model, Intent(model="Qwen/Qwen3-8B", engine="vllm", tp=2))
    assert installed.engine["rules"] == "0.20.2"
    assert installed.decision("memory_defaults").value["gpu_memory_utilization"] == 0.92
    newer = build_plan(facts, model, Intent(model="Qwen/Qwen3-8B", engine="vllm", tp=2, engine_version="99.1.0"))
    assert newer.engine == {"name": "vllm", "version": "99.1.0", "rules": vllm_common.NEWEST}
    assert "engine_version_newer" in {p.id for p in newer.problems}
    assert "engine_version_newer" not in {p.id for p in installed.problems}


@pytest.mark.parametrize(
    ("version", "profile", "tp", "mb"),
    [("0.18.0", "b300-8", 8, None), ("0.19.1", "b300-8", 8, 2), ("0.29.0", "b300-8", 8, 4), ("0.24.0", "b200-8", 16, None),
     ("0.25.1", "b200-8", 16, 64)],
)  # fmt: skip
def test_size_table_per_release(version, profile, tp, mb):
    assert vllm_fusion.max_size_mb(load_profile(profile).engine_gpus[0].capability, tp, version) == mb


def test_fusion_off_by_default_before_0_17_1():
    assert "release_default" in failed(vllm_fusion.fusion_decision(scenario("h200-8"), "0.16.0"))
    assert vllm_fusion.fusion_decision(scenario("h200-8"), "0.17.1").state == AUTO_ENABLED


def test_forced_fusion_without_compilation_says_it_cannot_take_effect():
    d = vllm_fusion.fusion_decision(scenario("h200-8", overrides=("-O0", f"{vllm_common.FUSE_FLAG}=True")), "0.33.0")
    assert d.state == NOT_ENABLED and "cannot take effect" in d.notes[0]


@pytest.mark.parametrize(
    ("overrides", "value"),
    [((), (2, 3, "FULL_AND_PIECEWISE")), (("-O0",), (0, 0, "NONE")), (("-O1",), (1, 3, "PIECEWISE")),
     (("--enforce-eager",), (2, 0, "NONE"))],
)  # fmt: skip
def test_compilation_value(overrides, value):
    d = vllm_compilation.compilation_decision(scenario("h200-8", overrides=overrides), "0.33.0")
    assert tuple(d.value.values()) == value


@pytest.mark.parametrize(
    ("profile", "version", "seqs", "tokens"),
    [("a100-sxm-8", "0.33.0", 256, 2048), ("h100-sxm-8", "0.33.0", 1024, 8192), ("b200-8", "0.27.1", 1024, 8192),
     ("b200-8", "0.28.0", 1024, 16384), ("l40s-4", "0.33.0", 256, 2048)],
)  # fmt: skip
def test_batch_defaults(profile, version, seqs, tokens):
    value = vllm_memory.memory_decision(scenario(profile, tp=2), version).value
    assert (value["max_num_seqs"], value["max_num_batched_tokens"]) == (seqs, tokens)
    forced = vllm_memory.memory_decision(scenario(profile, tp=2, overrides=("--max-num-seqs", "64")), version)
    assert forced.state == FORCED_ON and forced.value["max_num_seqs"] == 64


def test_switches_follow_flags():
    s = scenario("h200-8", overrides=("--no-enable-prefix-caching", "--async-scheduling"))
    assert vllm_scheduling.switch_decision(s, "0.33.0", "prefix_caching").state == FORCED_OFF
    assert vllm_scheduling.switch_decision(s, "0.33.0", "async_scheduling").state == FORCED_ON
    assert vllm_scheduling.switch_decision(s, "0.33.0", "chunked_prefill").state == AUTO_ENABLED


# DeepSeek V3 (MLA, qk_nope_head_dim 128): the block size vLLM forces for the MLA backend it expects (the goldens
# of v0.12.0 and v0.15.1 record these; nothing is forced from v0.19.1).
@pytest.mark.parametrize(
    ("profile", "version", "overrides", "block"),
    [("b200-8", "0.12.0", (), 128), ("b300-8", "0.12.0", (), 16), ("h100-sxm-8", "0.12.0", (), 64),
     ("a100-sxm-8", "0.12.0", (), 16), ("b300-8", "0.15.1", (), 64), ("h200-8", "0.17.1", (), 64),
     ("h200-8", "0.19.1", (), 16), ("b200-8", "0.15.1", ("--attention-backend", "CUTLASS_MLA"), 128),
     ("h100-sxm-8", "0.15.1", ("--attention-backend", "TRITON_MLA"), 16),
     ("h100-sxm-8", "0.15.1", ("--block-size", "128"), 128)],
)  # fmt: skip
def test_mla_block_size(profile, version, overrides, block):
    s = scenario(profile, "deepseek-ai/DeepSeek-V3", overrides=overrides)
    assert vllm_memory.memory_decision(s, version).value["block_size"] == block
    assert vllm_memory.memory_decision(scenario(profile, overrides=overrides), version).value["block_size"] in (16, 128)


def test_attention_backend_choice_before_the_flag_existed():
    s = scenario("h100-sxm-8", "Qwen/Qwen3-8B", overrides=("--attention-backend", "TRITON_ATTN"))
    old = vllm_attention.attention_decision(s, "0.12.0")
    assert "rejects --attention-backend" in old.notes[0] and "VLLM_ATTENTION_BACKEND=TRITON_ATTN" in old.notes[0]
    assert vllm_attention.attention_decision(s, "0.15.1").notes == ("the value given",)
    assert "VLLM_ATTENTION_BACKEND" in vllm_attention.attention_decision(scenario("h100-sxm-8"), "0.12.0").conditions[0].fix


def test_max_model_len_is_the_models_unless_given():
    s = scenario("h200-8", "deepseek-ai/DeepSeek-V3")
    assert vllm_memory.memory_decision(s, "0.33.0").value["max_model_len"] == 163840
    given = vllm_memory.memory_decision(scenario("h200-8", "Qwen/Qwen3-8B", overrides=("--max-model-len", "8192")), "0.33.0")
    assert given.state == FORCED_ON and given.value["max_model_len"] == 8192


# vLLM's own parser and VllmConfig, run in the conformance environments of v0.12.0 and v0.33.0: -O3 resolves; -O9 and
# --optimization-level 4 fail VllmConfig validation; "-O 7" is rejected by the argument parser.
@pytest.mark.parametrize(("overrides", "bad"), [
    (("-O3",), None), (("-O0",), None), (("-O", "1"), None), (("--optimization-level=2",), None), ((), None),
    (("-O9",), "9"), (("-O", "7"), "7"), (("--optimization-level", "4"), "4"), (("-O=5",), "5"),
    (("-O9", "-O2"), "9"),
])  # fmt: skip
def test_an_optimization_level_vllm_does_not_know_is_an_error(overrides, bad):
    problems = vllm_compilation.optimization_level_problems(scenario("h200-8", overrides=overrides))
    if bad is None:
        assert problems == []
    else:
        assert [(p.id, p.severity) for p in problems] == [("vllm_optimization_level", "error")]
        assert f"-O{bad} " in problems[0].message and "-O2" in problems[0].fix
        _, found = vllm.decide(scenario("h200-8", overrides=overrides), Release(vllm_common.NEWEST, vllm_common.NEWEST))
        assert "vllm_optimization_level" in {p.id for p in found}


# MLA on SM100 from the text config's qk_nope_head_dim, not head_dim: transformers' DeepSeek V2/V3 and LongCat config
# classes write head_dim = qk_rope_head_dim (64) while qk_nope_head_dim stays 128 (vllm v0.15.1-v0.17.1
# CudaPlatform.check_and_update_config forces FlashInfer MLA and its block of 64 for 128 only; FlashInferMLABackend
# .supports_combination takes 128 only there, 64 / 128 / 192 from v0.19.1, else CUTLASS MLA runs with its block of 128).
@pytest.mark.parametrize(
    ("version", "nope", "backend", "block"),
    [("0.15.1", 128, "FLASHINFER_MLA", 64), ("0.17.1", 128, "FLASHINFER_MLA", 64), ("0.17.1", 192, "CUTLASS_MLA", 128),
     ("0.15.1", 64, "CUTLASS_MLA", 128), ("0.19.1", 192, "FLASHINFER_MLA", 16), ("0.19.1", 96, "CUTLASS_MLA", 16),
     ("0.33.0", 64, "FLASHINFER_MLA", 16), ("0.14.1", 128, "CUTLASS_MLA", 128)],
)  # fmt: skip
def test_sm100_mla_follows_qk_nope_head_dim(version, nope, backend, block):
    v3 = replace(resolve_model("deepseek-ai/DeepSeek-V3"), head_dim=64, config_head_dim=64, qk_nope_head_dim=nope)
    s = scenario("b200-8", v3)
    assert vllm_attention.attention_decision(s, version).value == backend
    assert vllm_memory.memory_decision(s, version).value["block_size"] == block


@settings(max_examples=60, deadline=None)
@given(nope=st.integers(1, 512))
def test_sm100_mla_backend_and_forced_block_agree(nope):
    """v0.15.1-v0.17.x: the block forced for FlashInfer MLA (64) exactly where FlashInfer MLA is the backend."""
    s = scenario("b200-8", replace(resolve_model("deepseek-ai/DeepSeek-V3"), qk_nope_head_dim=nope))
    for version in ("0.15.1", "0.17.1"):
        flashinfer = vllm_attention.attention_decision(s, version).value == "FLASHINFER_MLA"
        assert vllm_memory.memory_decision(s, version).value["block_size"] == (64 if flashinfer else 128)


# A head_dim written as 0 (GLM-5-Next's config class): up to v0.20.2 vLLM's get_head_size returns it, so FlashInfer is
# ruled out and FlashAttention (any multiple of 8) runs on SM100; from v0.25.1 the size is derived (FlashInfer).
@pytest.mark.parametrize(("version", "backend"), [("0.15.1", "FLASH_ATTN"), ("0.20.2", "FLASH_ATTN"),
                                                  ("0.25.1", "FLASHINFER")])  # fmt: skip
def test_zero_head_dim_is_a_head_size_up_to_v0_20(version, backend):
    zero = ModelSpec(id="zero", architecture="LlamaForCausalLM", hidden_size=4096, num_heads=32, head_dim_zero=True,
                     dtype="bfloat16")  # fmt: skip
    assert vllm_attention.attention_decision(scenario("b200-8", zero, tp=1), version).value == backend
    assert vllm_attention.selector_head_size(zero, version) == (0 if backend == "FLASH_ATTN" else 128)


# GLM-5 (DeepSeek sparse attention, qk_nope_head_dim 192) at 8 heads per rank on SM100: FlashInfer's sparse MLA backend
# comes first at 16 heads or fewer, but takes qk_nope_head_dim 128 only in v0.17.1 (FlashMLA's sparse kernel runs),
# 128 and 192 from v0.19.1 (FlashInferMLASparseBackend.supports_combination).
@pytest.mark.parametrize(("version", "backend"), [("0.17.1", "FLASHMLA_SPARSE"), ("0.19.1", "FLASHINFER_MLA_SPARSE")])
def test_sparse_mla_on_sm100_follows_qk_nope_head_dim(version, backend):
    glm5 = resolve_model(str(Path(__file__).parent / "conformance" / "configs" / "glm-5"))
    assert glm5.qk_nope_head_dim == 192 and glm5.num_heads // 8 <= 16
    assert vllm_attention.attention_decision(scenario("b200-8", glm5, tp=8), version).value == backend
