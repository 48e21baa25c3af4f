"""SGLang rules, table-driven: every release row and every condition of docs/sglang.md, each both ways."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from advisor.facts import Facts
from advisor.models import ModelSpec, resolve_model
from advisor.plan import Intent
from advisor.probe.profiles import load_profile
from advisor.rules import engine as rules
from advisor.rules import sglang
from advisor.rules.engine import (
    AUTO_ENABLED,
    FORCED_OFF,
    FORCED_ON,
    NOT_ENABLED,
    UNAVAILABLE,
    Release,
    Scenario,
    fusion_outcomes,
)
from advisor.rules.sglang import attention as sglang_attention
from advisor.rules.sglang import common as sglang_common
from advisor.rules.sglang import custom_allreduce as sglang_custom_allreduce
from advisor.rules.sglang import fusion as sglang_fusion
from advisor.rules.sglang import memory as sglang_memory
from advisor.rules.sglang import moe_runner as sglang_moe_runner
from advisor.rules.sglang import releases as sglang_releases
from advisor.rules.sglang.architectures import ARCH_SEEN_AS
from advisor.rules.sglang.engine import ENGINE as SGLANG

QWEN3_MOE = "Qwen/Qwen3-30B-A3B"
QWEN3_VL = "Qwen/Qwen3-VL-235B-A22B-Instruct"
QWEN3_NEXT = "Qwen/Qwen3-Next-80B-A3B-Instruct"


def arch_model(arch: str, **kw) -> ModelSpec:
    return ModelSpec(id=arch, architecture=arch, hidden_size=kw.pop("hidden_size", 4096), **kw)


def scenario(profile: str | Facts, model: str | ModelSpec | None = QWEN3_MOE, *, tp: int = 8, torch: str | None = None,
             **intent) -> Scenario:  # fmt: skip
    facts = load_profile(profile) if isinstance(profile, str) else profile
    if torch is not None:
        facts = facts.with_packages({"torch": torch})
    if isinstance(model, str):
        model = resolve_model(model)
    return Scenario(facts, model, Intent(engine="sglang", tp=tp, **intent))


def fusion(s: Scenario, release: str):
    return sglang_fusion.fusion_decision(s, release)


def cond(decision, cid: str):
    return next(c for c in decision.conditions if c.id == cid)


def failed(decision) -> set[str]:
    return {c.id for c in decision.failed}


# -- the table ---------------------------------------------------------------------------------------------------------


def test_table_covers_every_modelled_release_once():
    covered = [r for r in sglang_releases.RELEASES if any(
        rules.parse_release(row.first) <= rules.parse_release(r) <= rules.parse_release(row.last)
        for row in sglang_releases.FUSION_TABLE)]  # fmt: skip
    assert covered == list(sglang_releases.RELEASES)
    assert sglang_releases.RELEASES[0] == "0.5.7" and sglang_releases.RELEASES[-1] == "0.5.23"


@pytest.mark.parametrize(("release", "count"), [("0.5.7", 4), ("0.5.10", 8), ("0.5.13", 13), ("0.5.14", 16), ("0.5.18", 17)])
def test_architecture_list_is_cumulative(release, count):
    row, _ = sglang_releases.row_for(release)
    archs = sglang_releases.architectures(row)
    assert len(archs) == len(set(archs)) == count


def test_newest_list_matches_reference():
    row, _ = sglang_releases.row_for("0.5.18")
    assert set(sglang_releases.architectures(row)) == {
        "DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM", "DeepseekV4ForCausalLM", "GptOssForCausalLM",
        "GlmMoeDsaForCausalLM", "Glm4MoeForCausalLM", "Glm4MoeLiteForCausalLM", "MistralLarge3ForCausalLM",
        "Qwen3MoeForCausalLM", "Qwen3VLMoeForConditionalGeneration", "Qwen3NextForCausalLM",
        "KimiK25ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration", "Qwen3_5ForConditionalGeneration",
        "InternS2PreviewForConditionalGeneration", "NemotronHForCausalLM", "NemotronHPuzzleForCausalLM",
    }  # fmt: skip


def test_adding_a_release_is_one_row(monkeypatch):
    row = sglang_releases.FusionRow("0.5.24", "0.5.24", ("NewMoeForCausalLM",), sglang_releases.V0523,
                                    sglang_common.BACKEND_FLAG, sglang_releases.OFF_V0512, sglang_common.OVERRIDES,
                                    "hypothetical")  # fmt: skip
    monkeypatch.setattr(sglang_releases, "FUSION_TABLE", (*sglang_releases.FUSION_TABLE, row))  # the module that reads it
    assert sglang_releases._expand(row) == ("0.5.24",)
    s = scenario("b300-8", arch_model("NewMoeForCausalLM"))
    assert fusion(s, "0.5.24").state == AUTO_ENABLED
    assert failed(fusion(s, "0.5.23")) == {"architecture"}
    assert len(sglang_releases.architectures(row)) == 22


def test_releases_through_0_5_23_are_modelled():
    assert sglang_releases.RELEASES[-5:] == ("0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23")
    assert sglang_releases.row_for("0.5.23") == (sglang_releases.FUSION_TABLE[-1], False)
    assert sglang_releases.row_for("0.5.24")[1] is True  # newer than modelled: the newest row, flagged


def test_dp_attention_with_dp_size_1_no_longer_blocks_from_0_5_22():
    s = scenario("b300-8", dp_attention=True, dp_size=1)
    assert "no_dp_attention" in failed(fusion(s, "0.5.21"))
    assert fusion(s, "0.5.22").state == AUTO_ENABLED
    assert "no_attn_dp" in failed(fusion(scenario("b300-8", dp_attention=True, dp_size=2), "0.5.22"))


def test_mimo_gets_the_cutedsl_backend_on_sm100_only_from_0_5_23():
    on = fusion(scenario("b200-8", arch_model("MiMoV2FlashForCausalLM")), "0.5.23")
    assert on.state == AUTO_ENABLED and on.value == "cutedsl"
    assert failed(fusion(scenario("h100-sxm-8", arch_model("MiMoV2FlashForCausalLM")), "0.5.23")) == {"mimo_sm100"}
    assert failed(fusion(scenario("b200-8", arch_model("MiMoV2FlashForCausalLM")), "0.5.22")) == {"architecture"}


# Every row's additions: auto-enabled from the row's first release, architecture condition failed in the release before.
ADDITIONS = [(row.first, arch) for row in sglang_releases.FUSION_TABLE for arch in row.added]


@pytest.mark.parametrize(("first", "arch"), ADDITIONS)
def test_each_added_architecture_turns_on_in_its_release(first, arch):
    s = scenario("b200-8" if arch in sglang_releases.MIMO_ARCHS else "h100-sxm-8", arch_model(arch))
    on = fusion(s, first)
    assert on.state == AUTO_ENABLED, [c for c in on.conditions if not c.ok]
    index = sglang_releases.RELEASES.index(first)
    if arch in ARCH_SEEN_AS:  # loaded under another listed name before (DeepSeek V3.2 as V3 in v0.5.8-v0.5.10)
        before = fusion(s, sglang_releases.RELEASES[index - 1])
        assert before.state == AUTO_ENABLED and "loaded as" in cond(before, "architecture").observed
    elif index > 0:
        before = fusion(s, sglang_releases.RELEASES[index - 1])
        assert before.state == NOT_ENABLED
        assert failed(before) == {"architecture"}


@pytest.mark.parametrize(
    ("release", "flags"),
    [("0.5.7", ("--enable-flashinfer-allreduce-fusion",)), ("0.5.13", ("--enable-flashinfer-allreduce-fusion",)),
     ("0.5.14", ("--flashinfer-allreduce-fusion-backend", "auto")), ("0.5.17", ("--flashinfer-allreduce-fusion-backend", "auto")),
     ("0.5.18", ("--flashinfer-allreduce-fusion-backend", "auto"))],
)  # fmt: skip
def test_flag_of_each_release(release, flags):
    d = fusion(scenario("h100-sxm-8"), release)
    assert d.state == AUTO_ENABLED and d.flags == flags
    assert d.value == ("auto" if len(flags) == 2 else True)


def test_log_line_from_v0_5_10_silent_before():
    s = scenario("h100-sxm-8")
    assert any("Auto-enabling FlashInfer AllReduce Fusion on SM90/SM10X for Qwen3MoeForCausalLM" in n
               for n in fusion(s, "0.5.10").notes)  # fmt: skip
    notes = fusion(s, "0.5.9").notes
    assert not any("Auto-enabling" in n for n in notes) and any("silently" in n for n in notes)


def test_source_cites_release_and_file():
    assert fusion(scenario("h100-sxm-8"), "0.5.14").source.release == "sglang v0.5.14"
    assert fusion(scenario("h100-sxm-8"), "0.5.14").source.file.endswith("server_args.py")
    assert fusion(scenario("h100-sxm-8"), "0.5.16").source.file.endswith("arg_groups/overrides.py")
    assert "28786" in fusion(scenario("h100-sxm-8"), "0.5.15").source.ref


# -- the seed scenarios ------------------------------------------------------------------------------------------------


def test_qwen3_vl_moe_on_b300_from_v0_5_14():
    s = scenario("b300-8", QWEN3_VL, tp=8)
    for release in ("0.5.14", "0.5.15", "0.5.16", "0.5.17", "0.5.18", "0.5.23"):
        assert fusion(s, release).state == AUTO_ENABLED
    old = fusion(s, "0.5.13")
    assert old.state == NOT_ENABLED and failed(old) == {"architecture"}
    assert cond(old, "architecture").observed == "Qwen3VLMoeForConditionalGeneration"
    matrix = SGLANG.release_matrix(s)  # the engine's release matrix (advisor.rules.engine.fusion_outcomes)
    assert [r.release for r in matrix if r.enabled] == [f"0.5.{n}" for n in range(14, 24)]
    assert all(r.failed_conditions == ("architecture",) for r in matrix if not r.enabled)


OVERRIDE_SETS = ((), ("--enable-flashinfer-allreduce-fusion",), ("--flashinfer-allreduce-fusion-backend", "trtllm"),
                 ("--enforce-disable-flashinfer-allreduce-fusion",), ("--enable-deterministic-inference",),
                 ("--attn-cp-size", "2"), ("--disable-custom-all-reduce",))  # fmt: skip


@pytest.mark.parametrize("overrides", OVERRIDE_SETS)
@pytest.mark.parametrize("profile", ["b300-8", "h100-sxm-8", "h20-8", "gb200-nvl72-tray", "rtx-4090-2", "cpu-only"])
def test_release_matrix_is_the_fusion_decisions_outcome_under_every_release(profile, overrides):
    """The matrix reads fusion_decision's verdicts alone, sharing the conditions across releases: the same outcomes as
    the full decisions (advisor.rules.engine.fusion_outcomes)."""
    models = (QWEN3_VL, QWEN3_NEXT, "deepseek-ai/DeepSeek-V3", None, arch_model("MiMoV2ForCausalLM"))
    for model, tp, extra in ((m, tp, x) for m in models for tp in (1, 4, 8) for x in ({}, {"nnodes": 2},
                             {"dp_attention": True, "dp_size": 1}, {"moe_a2a_backend": "deepep"})):  # fmt: skip
        s = scenario(profile, model, tp=tp, overrides=overrides, **extra)
        assert sglang_fusion.release_matrix(s) == fusion_outcomes(sglang_fusion.fusion_decision, sglang_releases.RELEASES, s)


def test_qwen3_next_on_h100_from_v0_5_11():
    s = scenario("h100-sxm-8", QWEN3_NEXT, tp=8)
    assert fusion(s, "0.5.11").state == AUTO_ENABLED
    assert failed(fusion(s, "0.5.10")) == {"architecture"}


def test_h20_before_and_after_v0_5_13():
    s = scenario("h20-8")
    for release in ("0.5.7", "0.5.10", "0.5.12"):
        d = fusion(s, release)
        assert d.state == NOT_ENABLED and failed(d) == {"not_h20"}, release
    assert fusion(s, "0.5.13").state == AUTO_ENABLED
    assert "not_h20" not in {c.id for c in fusion(s, "0.5.13").conditions}
    # H200's name contains "H20" but is not an H20.
    assert cond(fusion(scenario("h200-8"), "0.5.12"), "not_h20").ok is True


@pytest.mark.parametrize(
    ("profile", "tp", "release", "state", "blocker"),
    [
        ("h100-sxm-8", 16, "0.5.13", NOT_ENABLED, "single_node"),
        ("h100-sxm-8", 16, "0.5.14", NOT_ENABLED, "single_node_or_sm100"),
        ("h100-sxm-8", 16, "0.5.18", NOT_ENABLED, "single_node_or_sm100"),
        ("gb200-nvl72-tray", 8, "0.5.13", NOT_ENABLED, "single_node"),
        ("gb200-nvl72-tray", 8, "0.5.14", AUTO_ENABLED, None),
        ("b200-8", 16, "0.5.14", AUTO_ENABLED, None),
    ],
)
def test_two_nodes_sm90_vs_sm100(profile, tp, release, state, blocker):
    d = fusion(scenario(profile, tp=tp, nnodes=2), release)
    assert d.state == state
    assert failed(d) == ({blocker} if blocker else set())
    if state == AUTO_ENABLED:
        assert any("mnnvl" in n for n in d.notes)


def test_dp_attention_with_dp_size_1_still_blocks():
    d = fusion(scenario("b300-8", dp_attention=True, dp_size=1), "0.5.18")
    assert d.state == NOT_ENABLED and failed(d) == {"no_dp_attention"}
    assert "dp size 1" in cond(d, "no_dp_attention").observed
    assert "still blocks" in cond(d, "no_dp_attention").observed
    assert cond(fusion(scenario("b300-8"), "0.5.18"), "no_dp_attention").ok is True


def test_enforce_disable_forces_off_from_v0_5_10():
    s = scenario("b300-8", overrides=("--enforce-disable-flashinfer-allreduce-fusion",))
    for release in ("0.5.10", "0.5.14", "0.5.18"):
        d = fusion(s, release)
        assert d.state == FORCED_OFF and not d.enabled and d.flags == ()
        assert all(c.ok for c in d.conditions)  # every condition still evaluated and shown
    old = fusion(s, "0.5.9")
    assert old.state == AUTO_ENABLED
    assert any("does not exist in v0.5.9" in n for n in old.notes)


def test_deterministic_inference_forces_off_from_v0_5_12():
    s = scenario("h100-sxm-8", overrides=("--enable-deterministic-inference",))
    assert fusion(s, "0.5.12").state == FORCED_OFF
    assert fusion(s, "0.5.18").state == FORCED_OFF
    d = fusion(s, "0.5.11")
    assert d.state == AUTO_ENABLED and any("from v0.5.12" in n for n in d.notes)


def test_forced_off_beats_forced_on():
    s = scenario("b300-8", overrides=("--flashinfer-allreduce-fusion-backend", "trtllm",
                                      "--enforce-disable-flashinfer-allreduce-fusion"))  # fmt: skip
    assert fusion(s, "0.5.14").state == FORCED_OFF


# -- every condition both ways -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "profile", "torch", "release", "cid", "ok"),
    [
        ("SM120 counts as Blackwell in v0.5.7", "rtx-pro-6000-4", None, "0.5.7", "sm90_or_blackwell", True),
        ("SM120 dropped in v0.5.8", "rtx-pro-6000-4", None, "0.5.8", "sm90_or_sm100", False),
        ("A100 is neither", "a100-sxm-8", None, "0.5.7", "sm90_or_blackwell", False),
        ("H100 with torch cu128", "h100-sxm-8", None, "0.5.18", "sm90_or_sm100", True),
        ("H100 with torch cu121 (< 12.3)", "h100-sxm-8", "2.5.1+cu121", "0.5.18", "sm90_or_sm100", False),
        ("H100 with torch cu123", "h100-sxm-8", "2.5.1+cu123", "0.5.18", "sm90_or_sm100", True),
        ("B200 with torch cu126 (< 12.8)", "b200-8", "2.7.0+cu126", "0.5.18", "sm90_or_sm100", False),
        ("B300 (10.3) is SM100", "b300-8", None, "0.5.18", "sm90_or_sm100", True),
        ("B200 with CPU torch", "b200-8", "2.9.0+cpu", "0.5.18", "sm90_or_sm100", False),
        ("SM120 with torch cu126 in v0.5.7", "rtx-pro-6000-4", "2.7.0+cu126", "0.5.7", "sm90_or_blackwell", False),
    ],
)
def test_gpu_predicates(case, profile, torch, release, cid, ok):
    d = fusion(scenario(profile, tp=4, torch=torch), release)
    assert cond(d, cid).ok is ok, case


def test_gpu_predicates_unknown_facts_make_it_unavailable():
    facts = load_profile("h100-sxm-8")
    gpus = tuple(replace(g, capability=None, unknown={"capability": "NVML: NotSupported"}) for g in facts.gpus)
    d = fusion(scenario(replace(facts, gpus=gpus)), "0.5.18")
    assert cond(d, "sm90_or_sm100").ok is None and d.state == UNAVAILABLE
    no_torch = replace(facts, packages=tuple(p for p in facts.packages if p.name != "torch"))
    assert fusion(scenario(no_torch), "0.5.18").state == UNAVAILABLE
    assert fusion(scenario("h100-sxm-8", None), "0.5.18").state == UNAVAILABLE  # no model


def test_no_gpu_is_a_fact_not_unknown():
    d = fusion(scenario("cpu-only"), "0.5.18")
    assert d.state == NOT_ENABLED and cond(d, "sm90_or_sm100").ok is False
    assert cond(d, "sm90_or_sm100").observed.startswith("no GPU")


@pytest.mark.parametrize(
    ("release", "intent", "cid", "ok"),
    [
        ("0.5.10", {"tp": 1}, "tp_gt_1", False),
        ("0.5.10", {"tp": 2}, "tp_gt_1", True),
        ("0.5.18", {"tp": 1}, "tp_gt_1", False),
        ("0.5.10", {"overrides": ("--attn-cp-size", "2")}, "attn_cp_size", False),
        ("0.5.10", {"overrides": ("--attn-cp-size=1",)}, "attn_cp_size", True),
        ("0.5.13", {"nnodes": 2, "tp": 16}, "single_node", False),
        ("0.5.13", {"nnodes": 1}, "single_node", True),
        ("0.5.18", {"moe_a2a_backend": "deepep"}, "a2a_none", False),
        ("0.5.18", {"moe_a2a_backend": "none"}, "a2a_none", True),
        ("0.5.7", {"moe_a2a_backend": "mooncake"}, "a2a_none", False),
        ("0.5.18", {"dp_attention": True, "dp_size": 8}, "no_dp_attention", False),
    ],
)
def test_intent_conditions(release, intent, cid, ok):
    d = fusion(scenario("h100-sxm-8", **{"tp": 8, **intent}), release)
    assert cond(d, cid).ok is ok
    assert d.enabled is (ok and not d.failed)


def test_tp1_sets_the_flag_before_v0_5_10_but_nothing_is_fused():
    """SGLang sets the flag at tp 1 too (no tp > 1 condition yet), but one rank has no allreduce: the decision says
    not-enabled, "flag set, no effect", and keeps the flag SGLang sets (the goldens' fusion field)."""
    d = fusion(scenario("h100-sxm-8", tp=1), "0.5.9")
    assert d.state == NOT_ENABLED and not d.enabled and "tp_gt_1" not in {c.id for c in d.conditions}
    assert d.flags == ("--enable-flashinfer-allreduce-fusion",) and d.value is True
    assert any(n.startswith("flag set, no effect") for n in d.notes)
    assert fusion(scenario("h100-sxm-8", tp=2), "0.5.9").state == AUTO_ENABLED


def test_attn_cp_check_removed_in_v0_5_11():
    s = scenario("h100-sxm-8", overrides=("--attn-cp-size", "2"))
    assert fusion(s, "0.5.10").state == NOT_ENABLED
    assert fusion(s, "0.5.11").state == AUTO_ENABLED


def test_all_conditions_evaluated_without_short_circuit():
    d = fusion(scenario("a100-sxm-8", arch_model("LlamaForCausalLM"), tp=1, nnodes=1, dp_attention=True,
                        moe_a2a_backend="deepep"), "0.5.12")  # fmt: skip
    assert failed(d) == {"architecture", "sm90_or_sm100", "tp_gt_1", "no_dp_attention", "a2a_none"}
    for c in d.conditions:
        assert c.why and c.fix and c.expected is not None


def test_auto_enabled_although_flashinfer_will_not_import_says_so_plainly():
    # The seed case: SGLang's server_args auto-enables without trying `import flashinfer`, so the state stays
    # auto-enabled, but the first note says the fused path cannot run and names the problem that explains why.
    seed = load_profile("h100-sxm-8").with_packages(
        {"flashinfer-python": "0.6.12", "flashinfer-cubin": "0.6.12", "flashinfer-jit-cache": "0.6.11+cu128"})
    for release in ("0.5.9", "0.5.14"):
        d = fusion(scenario(seed), release)
        assert d.state == AUTO_ENABLED and d.enabled
        assert d.notes[0].startswith("the fused path cannot run here: `import flashinfer` will fail")
        assert "flashinfer-jit-cache 0.6.11+cu128" in d.notes[0]
        assert "see problem flashinfer_version_mismatch" in d.notes[0]
        assert not any(n.startswith("needs flashinfer importable") for n in d.notes)
    # Matching packages: no such note, the usual reminder instead.
    ok = fusion(scenario("h100-sxm-8"), "0.5.9")
    assert not any("cannot run" in n for n in ok.notes)
    assert any(n.startswith("needs flashinfer importable") for n in ok.notes)
    # Not installed at all: no problem id to point at, but still said plainly.
    h100 = load_profile("h100-sxm-8")
    gone = replace(h100, packages=tuple(p for p in h100.packages if p.name != "flashinfer-python"))
    d = fusion(scenario(gone), "0.5.9")
    assert d.state == AUTO_ENABLED
    assert d.notes[0] == ("the fused path cannot run here: `import flashinfer` will fail (flashinfer-python is not"
                          " installed); SGLang enables the fusion without trying the import, then fails where it imports"
                          " flashinfer")  # fmt: skip


# -- forced on ---------------------------------------------------------------------------------------------------------


def test_bool_flag_forces_on_up_to_v0_5_13():
    s = scenario("h100-sxm-8", arch_model("Qwen2MoeForCausalLM"), overrides=("--enable-flashinfer-allreduce-fusion",))
    d = fusion(s, "0.5.13")
    assert d.state == FORCED_ON and d.value is True
    assert d.flags == ()  # the user's flag is on the command line already
    assert failed(d) == {"architecture"}  # still shown
    d = fusion(s, "0.5.14")  # deprecated, mapped to auto
    assert d.state == FORCED_ON and d.value == "auto"
    assert any("deprecated" in n for n in d.notes)


def test_backend_flag_forces_a_backend_from_v0_5_14():
    s = scenario("h100-sxm-8", arch_model("Qwen2MoeForCausalLM"),
                 overrides=("--flashinfer-allreduce-fusion-backend", "mnnvl"))  # fmt: skip
    d = fusion(s, "0.5.14")
    assert d.state == FORCED_ON and d.value == "mnnvl" and d.flags == ()
    old = fusion(s, "0.5.13")
    assert old.state == NOT_ENABLED and any("does not exist in v0.5.13" in n for n in old.notes)


# -- run-time backend resolution (v0.5.14+) ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("profile", "tp", "nnodes", "value", "backend", "error"),
    [
        ("h100-sxm-8", 8, 1, "auto", "trtllm", None),
        ("b300-8", 8, 1, "auto", "mnnvl", None),
        ("gb200-nvl72-tray", 8, 2, "auto", "mnnvl", None),
        ("h100-sxm-8", 16, 2, "auto", None, "multi-node SM90"),
        ("b200-8", 16, 2, "trtllm", None, "single-node only"),
        ("h100-sxm-8", 8, 1, "trtllm", "trtllm", None),
        ("h100-sxm-8", 8, 1, "mnnvl", "mnnvl", None),
        ("h100-sxm-8", 16, 2, "mnnvl", None, "needs SM10x"),
        ("b200-8", 16, 2, "mnnvl", "mnnvl", None),
    ],
)
def test_backend_resolution(profile, tp, nnodes, value, backend, error):
    s = scenario(profile, tp=tp, nnodes=nnodes)
    got, err = sglang_fusion.resolve_backend(s, value)
    assert got == backend
    assert (err is None) if error is None else (error in err)


def test_forced_auto_on_multi_node_sm90_is_a_problem():
    s = scenario("h100-sxm-8", tp=16, nnodes=2, overrides=("--flashinfer-allreduce-fusion-backend", "auto"))
    decisions, problems = sglang.decide(s, Release("0.5.18", "0.5.18"))
    assert decisions[0].state == FORCED_ON
    assert [p.id for p in problems] == ["fusion_backend_error"] and problems[0].severity == "error"
    _, fine = sglang.decide(scenario("h100-sxm-8"), Release("0.5.18", "0.5.18"))
    assert fine == []


def test_forced_bool_flag_across_nodes_before_v0_5_14_is_a_problem():
    s = scenario("h100-sxm-8", tp=16, nnodes=2, overrides=("--enable-flashinfer-allreduce-fusion",))
    _, problems = sglang.decide(s, Release("0.5.13", "0.5.13"))
    assert problems and "2006" in problems[0].source


# -- versions ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("version", "rules", "newer"), [("0.5.7", "0.5.7", False), ("v0.5.15", "0.5.15", False),
                                                       ("0.5.14.post2", "0.5.14", False), ("0.5.19", "0.5.19", False),
                                                       ("0.5.24", "0.5.23", True), ("0.6.0", "0.5.23", True)])  # fmt: skip
def test_release_lookup(version, rules, newer):
    assert sglang_releases.rules_release(version) == rules
    assert sglang_releases.row_for(version)[1] is newer


@pytest.mark.parametrize("version", ["abc", "0.5.6", "0.4.9", ""])
def test_unmodelled_versions_raise_one_line(version):
    with pytest.raises(rules.ReleaseError) as info:
        sglang_releases.row_for(version)
    assert "\n" not in str(info.value) and "--engine-version" in str(info.value)


# -- custom allreduce --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("profile", "tp", "intent", "release", "state", "value", "blocker"),
    [
        ("h100-sxm-8", 8, {}, "0.5.12", AUTO_ENABLED, "v2", None),
        ("h100-sxm-8", 8, {}, "0.5.11", AUTO_ENABLED, "v1", None),
        ("b300-8", 4, {}, "0.5.18", AUTO_ENABLED, "v2", None),
        ("h100-sxm-8", 1, {}, "0.5.18", NOT_ENABLED, None, "tp_gt_1"),
        ("h100-sxm-8", 16, {"nnodes": 2}, "0.5.18", NOT_ENABLED, None, "single_node"),
        ("l40s-4", 4, {}, "0.5.18", NOT_ENABLED, None, "full_nvlink"),
        ("l40s-4", 2, {}, "0.5.18", AUTO_ENABLED, "v1", None),
        ("a100-sxm-8", 8, {}, "0.5.18", AUTO_ENABLED, "v1", None),
        ("h100-sxm-8", 8, {"overrides": ("--disable-custom-all-reduce",)}, "0.5.18", FORCED_OFF, None, None),
        ("h100-sxm-8", 8, {"overrides": ("--enable-deterministic-inference",)}, "0.5.18", FORCED_OFF, None, None),
    ],
)
def test_custom_allreduce(profile, tp, intent, release, state, value, blocker):
    d = sglang_custom_allreduce.custom_allreduce_decision(scenario(profile, tp=tp, **intent), release)
    assert d.state == state and d.value == value
    if blocker:
        assert blocker in failed(d)


def test_custom_allreduce_without_gpus_says_so():
    d = sglang_custom_allreduce.custom_allreduce_decision(scenario("cpu-only", tp=4), "0.5.18")
    assert cond(d, "full_nvlink").ok is False and cond(d, "full_nvlink").observed == "no GPUs"


def test_custom_allreduce_world_size():
    facts = load_profile("h100-sxm-8")
    d = sglang_custom_allreduce.custom_allreduce_decision(scenario(facts, tp=3), "0.5.18")
    assert failed(d) == {"world_size"}


# -- default attention backend -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("profile", "model", "value"),
    [
        ("h100-sxm-8", QWEN3_MOE, "fa3"),
        ("b300-8", QWEN3_VL, "trtllm_mha"),
        ("l40s-4", "meta-llama/Llama-3.1-8B-Instruct", "flashinfer"),
        ("l40s-4", "openai/gpt-oss-120b", "triton"),
        ("b200-8", "openai/gpt-oss-120b", "trtllm_mha"),
        ("h200-8", "deepseek-ai/DeepSeek-V3", "fa3"),
        ("b200-8", "deepseek-ai/DeepSeek-V3", "trtllm_mla"),
        ("b200-8", "moonshotai/Kimi-K2.5", "trtllm_mla"),  # the v0.5.14 and v0.5.23 goldens (was flashinfer)
        ("a100-sxm-8", "deepseek-ai/DeepSeek-V3", "triton"),
    ],
)
def test_attention_backend_defaults(profile, model, value):
    d = sglang_attention.attention_decision(scenario(profile, model, tp=4), "0.5.18")
    assert d.state == AUTO_ENABLED and d.value == value
    assert any(f"Use {value} backend by default" in n for n in d.notes)


def test_attention_backend_explicit_and_unknown():
    d = sglang_attention.attention_decision(scenario("h100-sxm-8", overrides=("--attention-backend", "triton")), "0.5.18")
    assert d.state == FORCED_ON and d.value == "triton"
    assert sglang_attention.attention_decision(scenario("h100-sxm-8", None), "0.5.18").state == UNAVAILABLE
    assert sglang_attention.attention_decision(scenario("cpu-only"), "0.5.18").state == NOT_ENABLED


# -- MoE runner backend ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("profile", "model", "intent", "state", "value", "blocker"),
    [
        ("b300-8", QWEN3_VL, {}, AUTO_ENABLED, "flashinfer_trtllm", None),
        ("b200-8", "deepseek-ai/DeepSeek-V3", {}, AUTO_ENABLED, "flashinfer_trtllm", None),
        ("b200-8", "zai-org/GLM-4.5", {}, AUTO_ENABLED, "flashinfer_trtllm", None),
        ("b200-8", "openai/gpt-oss-120b", {}, AUTO_ENABLED, "flashinfer_mxfp4", None),
        ("h100-sxm-8", QWEN3_VL, {}, NOT_ENABLED, "auto", "sm100"),
        ("b200-8", "meta-llama/Llama-3.1-8B-Instruct", {}, NOT_ENABLED, "auto", "moe_model"),
        ("b200-8", QWEN3_MOE, {"moe_a2a_backend": "deepep"}, NOT_ENABLED, "auto", "a2a_none"),
        ("b200-8", "moonshotai/Kimi-K2.5", {}, NOT_ENABLED, "auto", "quantization"),
        ("b200-8", QWEN3_MOE, {"overrides": ("--moe-runner-backend", "triton")}, FORCED_ON, "triton", None),
    ],
)
def test_moe_runner_backend(profile, model, intent, state, value, blocker):
    d = sglang_moe_runner.moe_runner_decision(scenario(profile, model, **intent), "0.5.18")
    assert d.state == state and d.value == value
    if blocker:
        assert blocker in failed(d)
    if intent.get("moe_a2a_backend"):
        assert any("ep_size = tp_size" in n for n in d.notes)


def test_moe_runner_quantization_both_ways():
    fp8 = replace(resolve_model("Qwen/Qwen3-30B-A3B"), quantization="fp8")
    awq = replace(fp8, quantization="awq")
    assert sglang_moe_runner.moe_runner_decision(scenario("b200-8", fp8), "0.5.18").value == "flashinfer_trtllm"
    assert "quantization" in failed(sglang_moe_runner.moe_runner_decision(scenario("b200-8", awq), "0.5.18"))


# -- GPU-memory defaults -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mem_mib", "tp", "chunk", "max_bs"),
    [
        (15360, 1, 2048, 8),
        (24564, 2, 2048, 24),
        (24564, 4, 2048, 80),
        (46068, 2, 4096, 32),
        (46068, 4, 4096, 160),
        (81559, 2, 8192, 256),
        (81559, 8, 8192, 512),
        (143771, 8, 8192, 512),
        (183359, 2, 16384, 512),
        (None, 8, 4096, 160),
    ],
)
def test_memory_table(mem_mib, tp, chunk, max_bs):
    value = sglang_memory.memory_defaults(mem_mib, tp, False, 1)
    assert (value["chunked_prefill_size"], value["cuda_graph_max_bs"]) == (chunk, max_bs)
    assert (value["mem_fraction_static"] is None) is (mem_mib is None)


def test_mem_fraction_estimate():
    # H100 tp 8: reserved = 512 + 1.5 x 8192 + 2 x 512 + 8/8 x 1024 = 14848 MiB (over the 10 GiB floor).
    assert sglang_memory.memory_defaults(81559, 8, False, 1)["mem_fraction_static"] == round((81559 - 14848) / 81559, 3)
    # A small GPU: 512 + 1.5 x 2048 + 2 x 24 + 2/8 x 1024 = 3888 MiB, no floor below 60 GiB.
    assert sglang_memory.memory_defaults(24564, 2, False, 1)["mem_fraction_static"] == round((24564 - 3888) / 24564, 3)
    # The floor: B300 tp 2 reserves at least 10 GiB.
    small = 512 + 1.5 * 16384 + 2 * 512 + 2 / 8 * 1024
    assert small > 10240 and sglang_memory.memory_defaults(275040, 2, False, 1)["mem_fraction_static"] == round(
        (275040 - small) / 275040, 3)  # fmt: skip


def test_memory_dp_attention_divides_chunk():
    value = sglang_memory.memory_defaults(81559, 8, True, 4)
    assert value["chunked_prefill_size"] == 2048
    d = sglang_memory.memory_decision(scenario("h100-sxm-8", dp_attention=True, dp_size=4), "0.5.18")
    assert d.value["chunked_prefill_size"] == 2048 and any("divided" in n for n in d.notes)


def test_memory_decision_states():
    d = sglang_memory.memory_decision(scenario("b300-8"), "0.5.18")
    assert d.state == AUTO_ENABLED
    assert set(d.value) == {"chunked_prefill_size", "cuda_graph_max_bs", "mem_fraction_static"}
    d = sglang_memory.memory_decision(scenario("b300-8", overrides=("--chunked-prefill-size", "4096")), "0.5.18")
    assert d.state == FORCED_ON and d.value["chunked_prefill_size"] == 4096
    assert sglang_memory.memory_decision(scenario("cpu-only"), "0.5.18").state == NOT_ENABLED


# -- settings resolved with a decision: page_size, ep_size, the prefill CUDA graph --------------------------------------
# Each case was run through the release's own resolution (the conformance runner with these flags added) and agrees.
DEEPSEEK_V3 = "deepseek-ai/DeepSeek-V3"
LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


def _setting(decision, name: str):
    return next(s.value for s in decision.settings if s.name == name)


def _conformance_model(name: str) -> ModelSpec:
    from pathlib import Path

    from advisor.models import load_config_dir

    return load_config_dir(Path(__file__).parent / "conformance" / "configs" / name, model_id=name)


@pytest.mark.parametrize(
    ("profile", "model", "tp", "overrides", "release", "page"),
    [
        ("b200-8", LLAMA, 1, (), "0.5.14", 64),  # trtllm_mha by default: unset becomes 64
        ("h100-sxm-8", LLAMA, 1, (), "0.5.14", 1),  # fa3: the default 1
        ("h100-sxm-8", LLAMA, 1, ("--page-size", "16"), "0.5.14", 16),
        ("b200-8", LLAMA, 1, ("--page-size", "16"), "0.5.14", 16),  # trtllm_mha takes 16
        ("b200-8", LLAMA, 1, ("--page-size", "128"), "0.5.14", 64),  # ... not 128 up to v0.5.16
        ("b200-8", LLAMA, 1, ("--page-size", "128"), "0.5.17", 128),  # ... 128 from v0.5.17
        ("b200-8", LLAMA, 1, ("--attention-backend", "fa4"), "0.5.14", 1),  # only --prefill-attention-backend fa4
        ("b200-8", LLAMA, 1, ("--attention-backend", "fa4"), "0.5.15", 128),
        ("h100-sxm-8", DEEPSEEK_V3, 8, ("--attention-backend", "flashmla"), "0.5.14", 64),
        ("b200-8", DEEPSEEK_V3, 8, ("--attention-backend", "cutlass_mla"), "0.5.14", 128),
        ("b200-8", DEEPSEEK_V3, 8, ("--page-size", "32"), "0.5.14", 32),  # trtllm_mla takes 32 or 64
        ("b200-8", DEEPSEEK_V3, 8, ("--page-size", "16"), "0.5.14", 64),
        ("b200-8", QWEN3_NEXT, 4, ("--page-size", "16"), "0.5.14", 1),  # the hybrid step sets 1 with triton
        ("b200-8", QWEN3_NEXT, 4, ("--attention-backend", "trtllm_mha"), "0.5.14", 64),
        ("h100-sxm-8", QWEN3_NEXT, 4, ("--page-size", "16"), "0.5.10", 16),
        ("h100-sxm-8", QWEN3_NEXT, 4, ("--page-size", "16"), "0.5.11", 1),  # Mamba no_buffer, v0.5.11-v0.5.13
        ("h100-sxm-8", QWEN3_NEXT, 4, ("--page-size", "16", "--disable-radix-cache"), "0.5.13", 16),
        ("h100-sxm-8", QWEN3_NEXT, 4, ("--page-size", "16"), "0.5.14", 16),
    ],
)
def test_page_size(profile, model, tp, overrides, release, page):
    d = sglang_attention.attention_decision(scenario(profile, model, tp=tp, overrides=overrides), release)
    assert _setting(d, "page_size") == page
    assert any(n.startswith(f"page_size {page}: ") for n in d.notes)


def test_page_size_of_deepseek_sparse_attention_is_64_whatever_is_passed():
    s = scenario("h100-sxm-8", _conformance_model("deepseek-v3.2"), overrides=("--page-size", "16"))
    d = sglang_attention.attention_decision(s, "0.5.14")
    assert d.value == "dsa" and _setting(d, "page_size") == 64


def test_page_size_is_unknown_without_a_backend():
    d = sglang_attention.attention_decision(scenario("h100-sxm-8", None), "0.5.14")
    assert _setting(d, "page_size") is None


@pytest.mark.parametrize(
    ("a2a", "overrides", "ep"),
    [
        ("none", (), 1),
        ("none", ("--ep-size", "4"), 4),
        ("none", ("--expert-parallel-size", "8"), 8),
        ("none", ("--ep", "2"), 2),
        ("deepep", ("--ep-size", "2"), 8),  # every a2a backend sets ep_size = tp_size
        ("mooncake", (), 8),
    ],
)
def test_ep_size(a2a, overrides, ep):
    d = sglang_moe_runner.moe_runner_decision(scenario("h100-sxm-8", QWEN3_MOE, moe_a2a_backend=a2a, overrides=overrides), "0.5.14")
    assert _setting(d, "ep_size") == ep


@pytest.mark.parametrize(
    ("model", "overrides", "release", "on", "max_tokens"),
    [
        (QWEN3_MOE, (), "0.5.9", False, 8192),  # off by default up to v0.5.9 (--enable-piecewise-cuda-graph)
        (QWEN3_MOE, (), "0.5.10", True, 8192),  # on from v0.5.10, up to the chunked-prefill size
        (QWEN3_MOE, ("--chunked-prefill-size", "4096"), "0.5.10", True, 4096),
        (DEEPSEEK_V3, (), "0.5.7", False, 8192),
        (DEEPSEEK_V3, (), "0.5.8", False, 2048),  # MLA models: 2048 tokens from v0.5.8
        (QWEN3_MOE, (), "0.5.14", True, 8192),  # cuda_graph_config.prefill.max_bs, by the same rule
        (DEEPSEEK_V3, ("--chunked-prefill-size", "4096"), "0.5.22", True, 2048),
        (DEEPSEEK_V3, ("--chunked-prefill-size", "4096"), "0.5.23", True, 4096),  # MLA: min(8192, chunk) from v0.5.23
        (DEEPSEEK_V3, ("--chunked-prefill-size", "16384"), "0.5.23", True, 8192),
    ],
)
def test_prefill_graph_settings(model, overrides, release, on, max_tokens):
    d = sglang_memory.memory_decision(scenario("h100-sxm-8", model, overrides=overrides), release)
    assert _setting(d, "piecewise_cuda_graph") is on
    assert _setting(d, "piecewise_cuda_graph_max_tokens") == max_tokens


@pytest.mark.parametrize(
    ("intent", "release", "max_tokens"),
    [
        ({"dp_attention": True, "dp_size": 2}, "0.5.16", 8192),  # DP attention keeps the graph off: no re-clamp
        ({"dp_attention": True, "dp_size": 2}, "0.5.17", 4096),  # re-clamped to the chunk per DP rank
        ({"dp_attention": True, "dp_size": 8}, "0.5.23", 1024),
        ({"moe_a2a_backend": "deepep"}, "0.5.16", 8192),  # DeepEP keeps the graph off up to v0.5.16
        ({"moe_a2a_backend": "deepep"}, "0.5.17", 2048),  # DeepEP's sizes from 2048, rounded up to multiples of 8
    ],
)
def test_prefill_graph_max_tokens_clamps(intent, release, max_tokens):
    d = sglang_memory.memory_decision(scenario("h100-sxm-8", QWEN3_MOE, **intent), release)
    assert _setting(d, "piecewise_cuda_graph_max_tokens") == max_tokens


def test_prefill_graph_max_tokens_for_llama_2_by_model_path(tmp_path):
    """From v0.5.10 "For Llama2 series models" the default size is capped at 4096, by "llama-2" in the model path."""
    import shutil

    from advisor.models import load_config_dir

    path = tmp_path / "Llama-2-7b-hf"
    shutil.copytree(Path(__file__).parent / "conformance" / "configs" / "llama-3.1-8b", path)
    model = load_config_dir(path)
    for release, max_tokens in (("0.5.9", 8192), ("0.5.10", 4096), ("0.5.19", 4096), ("0.5.23", 4096)):
        d = sglang_memory.memory_decision(scenario("h100-sxm-8", model), release)
        assert _setting(d, "piecewise_cuda_graph_max_tokens") == max_tokens, release


def test_prefill_graph_off_keeps_its_size_under_dp_attention():
    """v0.5.23 b200-8/deepseek-v3/dpa8 golden: the graph is off (trtllm_mla) before the DP re-clamp, so max_bs stays."""
    d = sglang_memory.memory_decision(scenario("b200-8", DEEPSEEK_V3, dp_attention=True, dp_size=8), "0.5.23")
    assert _setting(d, "piecewise_cuda_graph") is False
    assert _setting(d, "piecewise_cuda_graph_max_tokens") == 8192


def test_prefill_graph_off_for_trtllm_moe_runner_in_v0_5_10_to_v0_5_12():
    for release, on in (("0.5.10", False), ("0.5.12", False), ("0.5.13", True)):
        d = sglang_memory.memory_decision(scenario("b200-8", QWEN3_MOE), release)
        assert _setting(d, "piecewise_cuda_graph") is on, release


def test_prefill_graph_off_for_deepseek_v3_on_trtllm_mla_from_v0_5_15():
    assert _setting(sglang_memory.memory_decision(scenario("b200-8", DEEPSEEK_V3), "0.5.18"), "piecewise_cuda_graph") is False
    assert _setting(sglang_memory.memory_decision(scenario("h100-sxm-8", DEEPSEEK_V3), "0.5.18"), "piecewise_cuda_graph") is True
