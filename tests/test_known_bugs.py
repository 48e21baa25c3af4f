"""The known-bug tables (advisor/rules/<engine>/known_bugs.json): well-formed, each entry exercised through `check` (a plan
that meets its condition under an affected release warns with the workaround; the fixed release does not) and `diff`
(the entry shows as fixed or introduced between modelled releases around it), and `verify` naming one for a logged
error."""

from __future__ import annotations

import json
import re
import shutil
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from advisor.diff import build_diff
from advisor.intent import Intent
from advisor.models import load_config_dir
from advisor.plan import build_plan
from advisor.probe.profiles import load_profile
from advisor.rules import known_bugs, registry
from advisor.rules.known_bugs import CHECKED_IN, CONDITION_KEYS, LINK, KnownBug, table
from advisor.verify.compare import LogText, verify
from advisor.versions import parse_release

CONFIGS = Path(__file__).resolve().parent / "conformance" / "configs"
ENGINES = ("sglang", "vllm")
BUGS = [bug for engine in ENGINES for bug in table(engine)]

# A launch that meets each entry's condition: (profile, GPU name override, config dir, architecture override,
# quantization override, tp, nnodes, dp_size, dp_attention, engine arguments, visible GPUs).
LAUNCHES = {
    "sglang_custom_ar_v2_multinode_vmm": ("gb200-nvl72-tray", "NVIDIA GB300", "llama-3.1-8b", None, None, 8, 2, 1, False, (), None),
    "sglang_fusion_sm103_eagle_ima": ("b300-8", None, "deepseek-v3", None, None, 8, 1, 1, False,
                                      ("--speculative-algorithm", "EAGLE"), None),
    "sglang_fusion_pdl_graph_crash": ("b200-8", None, "glm-5", None, None, 8, 1, 1, False,
                                      ("--enable-flashinfer-allreduce-fusion",), None),
    "sglang_fusion_hybrid_ep_tp": ("b200-8", None, "qwen3-30b-a3b", None, None, 8, 1, 1, False,
                                   ("--enable-flashinfer-allreduce-fusion", "--ep-size", "2"), None),
    "sglang_dsv4_dpa_multinode_hang": ("h20-8", None, "deepseek-v3", "DeepseekV4ForCausalLM", None, 16, 2, 4, True, (), None),
    "sglang_dsv4_graph_oom_h200": ("h200-8", None, "deepseek-v3", "DeepseekV4ForCausalLM", None, 16, 2, 16, True, (), None),
    "sglang_kimi_dp32_graph_memory": ("h200-8", None, "deepseek-v3", None, None, 32, 4, 32, True,
                                      ("--cuda-graph-max-bs", "128"), None),
    "sglang_fusion_b200_qwen3_moe": ("b200-8", None, "qwen3-30b-a3b", None, None, 4, 1, 1, False,
                                     ("--enable-flashinfer-allreduce-fusion",), None),
    "sglang_trtllm_moe_nvfp4_b200": ("b200-8", None, "qwen3-30b-a3b", None, None, 8, 1, 1, False,
                                     ("--moe-runner-backend", "flashinfer_trtllm"), None),
    "sglang_qwen36_fp8_h20": ("h20-8", None, "qwen3-30b-a3b-fp8", None, None, 1, 1, 1, False, (), None),
    "sglang_dsv31_h20_tp16_crash": ("h20-8", None, "deepseek-v3", None, None, 16, 2, 1, False, (), None),
    "sglang_piecewise_graph_055": ("h100-sxm-8", None, "llama-3.1-8b", None, None, 8, 1, 1, False,
                                   ("--enable-piecewise-cuda-graph",), None),
    "sglang_glm52_h20_cp_pp": ("h20-8", None, "glm-5", None, "fp8", 8, 2, 1, False, ("--pp-size", "2"), None),
    "sglang_dsv3_multinode_fusion": ("h200-8", None, "deepseek-v3", None, None, 16, 2, 1, False,
                                     ("--enable-flashinfer-allreduce-fusion",), None),
    "sglang_graph_max_bs_not_captured": ("h100-sxm-8", None, "llama-3.1-8b", None, None, 8, 1, 1, False,
                                         ("--cuda-graph-max-bs", "300"), None),
    "vllm_custom_ar_multinode_hang": ("h100-sxm-8", None, "llama-3.1-8b", None, None, 16, 2, 1, False, (), None),
    "vllm_fusion_multinode_hang": ("b200-8", None, "deepseek-v3", None, None, 16, 2, 1, False,
                                   ("-cc.pass_config.fuse_allreduce_rms=True",), None),
    "vllm_fusion_nvl_bridge_crash": ("h100-pcie-2-bridge", "NVIDIA H100 NVL", "llama-3.1-8b", None, None, 2, 1, 1, False,
                                     ("-cc.pass_config.fuse_allreduce_rms=True",), None),
    "vllm_fusion_multi_nvl72_wrong": ("gb200-nvl72-tray", None, "qwen3-30b-a3b", None, None, 8, 2, 1, False, (), None),
    "vllm_symm_mem_subset_hang": ("b200-8", None, "llama-3.1-8b", None, None, 2, 1, 1, False, (), (0, 1)),
    "vllm_v2_runner_graph_oom": ("h100-sxm-8", None, "llama-3.1-8b", None, None, 8, 1, 1, False, (), None),
    "vllm_qwen35_fp8_h200_ima": ("h200-8", None, "qwen3.5-397b-a17b", None, "fp8", 8, 1, 1, False, (), None),
    "vllm_flashinfer_068_ep_hang": ("b200-8", None, "qwen3-30b-a3b", None, None, 8, 1, 1, False,
                                    ("--enable-expert-parallel",), None),
    "vllm_dsv32_sm120": ("rtx-pro-6000-4", None, "deepseek-v3.2", None, None, 4, 1, 1, False, (), None),
    "vllm_qwen36_nvfp4_b300_slow": ("b300-8", None, "qwen3-30b-a3b", None, "nvfp4", 1, 1, 1, False, (), None),
    "vllm_trtllm_moe_dp_ep_stuck": ("h200-8", None, "deepseek-v3", None, None, 8, 1, 2, False,
                                    ("--enable-expert-parallel",), None),
    "vllm_qwen3vl_moe_012": ("h100-sxm-8", None, "qwen3-vl-30b-a3b", None, None, 4, 1, 1, False, (), None),
    "vllm_gptoss_h100_kv": ("h100-sxm-8", None, "gpt-oss-120b", None, None, 1, 1, 1, False, (), None),
    "vllm_dsr1_b200_nccl_hang": ("b200-8", None, "deepseek-v3", None, None, 8, 1, 1, False, (), None),
    "vllm_graph_estimate_high_util_oom": ("h100-sxm-8", None, "llama-3.1-8b", None, None, 8, 1, 1, False,
                                          ("--gpu-memory-utilization", "0.98"), None),
}  # fmt: skip
QUANT = {"fp8": {"quant_method": "fp8"}, "nvfp4": {"quant_method": "modelopt", "quant_algo": "NVFP4"}}


def test_each_engine_has_at_least_15_well_formed_entries():
    for engine in ENGINES:
        bugs = table(engine)
        assert len(bugs) >= 15, engine
        assert len({b.id for b in bugs}) == len(bugs)
        for bug in bugs:
            assert bug.id.startswith(engine + "_") and LINK.match(bug.link), bug.id
            assert set(bug.condition) <= CONDITION_KEYS, bug.id
            assert parse_release(bug.first_affected) is not None and bug.evidence, bug.id
            if bug.fixed_in:
                assert parse_release(bug.fixed_in) > parse_release(bug.first_affected), bug.id
            assert bug.symptom and bug.workaround and bug.condition_text, bug.id
            if bug.symptom_pattern:
                re.compile(bug.symptom_pattern)


def test_every_entry_has_a_launch_that_meets_it():
    assert set(LAUNCHES) == {b.id for b in BUGS}


def _launch(bug: KnownBug, release: str, tmp_path: Path):
    profile, gpu_name, config, arch, quant, tp, nnodes, dp, dpa, args, visible = LAUNCHES[bug.id]
    facts = load_profile(profile)
    if gpu_name:
        facts = replace(facts, gpus=tuple(replace(g, name=gpu_name) for g in facts.gpus))
    if visible is not None:
        facts = replace(facts, visible_gpus=visible)
    directory = tmp_path / config
    if not directory.exists():
        shutil.copytree(CONFIGS / config, directory)
        data = json.loads((directory / "config.json").read_text())
        if arch:
            data["architectures"] = [arch]
        if quant:
            data["quantization_config"] = QUANT[quant]
        (directory / "config.json").write_text(json.dumps(data))
    model = load_config_dir(directory, model_id=config)
    intent = Intent(model=config, tp=tp, nnodes=nnodes, dp_attention=dpa, dp_size=dp, engine=bug.engine,
                    engine_version=release, overrides=args)  # fmt: skip
    return facts, model, intent


def _check_release(bug: KnownBug) -> str:
    """An affected release the plan can be made for: first_affected, or the oldest modelled release when older."""
    oldest = registry.modelled_releases(bug.engine)[0]
    return max(bug.first_affected, oldest, key=parse_release)


@pytest.mark.parametrize("bug", BUGS, ids=lambda b: b.id)
def test_check_warns_under_an_affected_release_with_the_workaround(bug, tmp_path):
    plan = build_plan(*_launch(bug, _check_release(bug), tmp_path))
    found = [p for p in plan.problems if p.id == f"known_bug_{bug.id}"]
    assert found, [p.id for p in plan.problems]
    assert found[0].severity == "warning" and bug.workaround in found[0].fix and found[0].source == bug.link
    if bug.fixed_in:
        fixed = build_plan(*_launch(bug, bug.fixed_in, tmp_path))
        assert not [p for p in fixed.problems if p.id == f"known_bug_{bug.id}"]


def _modelled_around(bug: KnownBug) -> tuple[str, str]:
    """Two modelled releases the entry's state changes between (from, to); the same release when it holds for all."""
    releases = registry.modelled_releases(bug.engine)
    inside = [r for r in releases if bug.affects(r)]
    before = [r for r in releases if parse_release(r) < parse_release(bug.first_affected)]
    after = [r for r in releases if bug.fixed_in and parse_release(r) >= parse_release(bug.fixed_in)]
    if before and inside:
        return before[-1], inside[0]
    if inside and after:
        return inside[-1], after[0]
    return releases[-1], releases[-1]


@pytest.mark.parametrize("bug", BUGS, ids=lambda b: b.id)
def test_diff_shows_the_entry_fixed_or_introduced(bug, tmp_path):
    start, end = _modelled_around(bug)
    facts, model, intent = _launch(bug, end, tmp_path)
    diff = build_diff(facts, model, intent, start, end)
    fixed = {b.id: hits for b, hits in diff.bugs_fixed}
    introduced = {b.id: hits for b, hits in diff.bugs_introduced}
    if start == end:  # it holds across every modelled release: both plans warn, the diff lists nothing
        assert bug.id not in fixed and bug.id not in introduced
        assert any(p.id == f"known_bug_{bug.id}" for p in diff.plan_to.problems)
    elif bug.affects(end):
        assert introduced.get(bug.id) is True, (start, end, introduced)
    else:
        assert fixed.get(bug.id) is True, (start, end, fixed)


def test_changed_lists_what_an_upgrade_fixes_and_introduces():
    fixed, introduced = known_bugs.changed("vllm", "0.25.1", "0.30.0")
    assert "vllm_v2_runner_graph_oom" in {b.id for b in fixed}
    fixed, introduced = known_bugs.changed("vllm", "0.25.1", "0.27.1")
    assert "vllm_custom_ar_multinode_hang" in {b.id for b in introduced}
    fixed, introduced = known_bugs.changed("vllm", "0.28.0", "0.29.0")
    assert "vllm_custom_ar_multinode_hang" in {b.id for b in fixed}


def test_the_multinode_custom_allreduce_hang_spares_blackwell_gated_releases_only_below_sm_10(tmp_path):
    """v0.29.0's _group_can_attempt_mnnvl returns before the rendezvous on pre-Blackwell GPUs only (PR #53253)."""
    bug = next(b for b in BUGS if b.id == "vllm_custom_ar_multinode_hang")
    facts, model, intent = _launch(bug, "0.28.0", tmp_path)
    assert any(p.id == f"known_bug_{bug.id}" for p in build_plan(facts, model, intent).problems)
    blackwell = load_profile("b200-8")
    plan = build_plan(blackwell, model, intent)
    assert not any(p.id == f"known_bug_{bug.id}" for p in plan.problems)  # sm 10.0: not this entry's condition
    flagged = replace(intent, overrides=("--disable-custom-all-reduce",))
    assert not any(p.id == f"known_bug_{bug.id}" for p in build_plan(facts, model, flagged).problems)


def test_every_bound_says_where_it_was_checked():
    for bug in BUGS:
        assert bug.checked is not None and set(bug.checked) == {"first_affected", "fixed_in"}, bug.id
        assert set(bug.checked.values()) <= CHECKED_IN, bug.id
        if "wheels" in bug.checked.values():
            assert "wheel" in bug.evidence, bug.id  # the evidence names the code


# The bounds marked "wheels", each against the released code: (bug, bound, wheel member, marker, "appears" / "gone"):
# the marker appears (or is gone) in the bound's release and not (or still) in the newest cached release before it.
WHEEL_EVIDENCE = (
    ("vllm_custom_ar_multinode_hang", "first_affected", "vllm/distributed/device_communicators/custom_all_reduce.py",
     "spans across nodes", "gone"),
    ("vllm_custom_ar_multinode_hang", "fixed_in", "vllm/distributed/device_communicators/custom_all_reduce.py",
     "_group_can_attempt_mnnvl(group", "appears"),
    ("vllm_fusion_multinode_hang", "fixed_in", "vllm/distributed/device_communicators/flashinfer_all_reduce.py",
     "Auto-selected", "appears"),
    ("vllm_fusion_multi_nvl72_wrong", "first_affected", "vllm/distributed/device_communicators/flashinfer_all_reduce.py",
     "Auto-selected", "appears"),
    ("vllm_v2_runner_graph_oom", "first_affected", "vllm/config/vllm.py", "_is_default_v2_model_runner_model", "appears"),
    ("vllm_v2_runner_graph_oom", "fixed_in", "vllm/config/vllm.py", "_is_default_v2_model_runner_model", "gone"),
    ("vllm_flashinfer_068_ep_hang", "first_affected", "METADATA", "flashinfer-python==0.6.8.post1", "appears"),
    ("sglang_custom_ar_v2_multinode_vmm", "first_affected",
     "sglang/srt/distributed/device_communicators/custom_all_reduce_v2.py", "_is_vmm_backed_allocator", "appears"),
    ("sglang_fusion_sm103_eagle_ima", "first_affected", "sglang/srt/server_args.py",
     "flashinfer_allreduce_fusion_backend", "appears"),
    ("sglang_fusion_pdl_graph_crash", "first_affected", "sglang/srt/server_args.py",
     "flashinfer_allreduce_fusion_backend", "appears"),
    ("sglang_graph_max_bs_not_captured", "fixed_in", "sglang/srt/server_args.py",
     "if self.cuda_graph_max_bs not in capture_bs", "appears"),
)  # fmt: skip
WHEELS = Path.home() / ".cache" / "tp-advisor" / "conformance" / "wheels"


def _wheel_text(engine: str, release: str, member: str) -> str | None:
    """The member's text in the cached wheel of ``release`` ("" when the wheel lacks it); None without the wheel."""
    found = sorted(WHEELS.glob(f"{engine}-{release}-*.whl"))
    if not found:
        return None
    with zipfile.ZipFile(found[0]) as wheel:
        names = [
            n for n in wheel.namelist() if n == member or (member == "METADATA" and n.endswith(".dist-info/METADATA"))
        ]
        return wheel.read(names[0]).decode("utf-8", "replace") if names else ""


def test_every_wheels_bound_has_its_code_evidence():
    marked = {(b.id, bound) for b in BUGS for bound, where in (b.checked or {}).items() if where == "wheels"}
    assert marked == {(bug_id, bound) for bug_id, bound, *_ in WHEEL_EVIDENCE}


@pytest.mark.parametrize(("bug_id", "bound", "member", "marker", "change"), WHEEL_EVIDENCE, ids=lambda x: str(x)[:40])
def test_a_wheels_bound_matches_the_released_code(bug_id, bound, member, marker, change):
    bug = next(b for b in BUGS if b.id == bug_id)
    release = getattr(bug, bound)
    cached = sorted({p.name.split("-")[1] for p in WHEELS.glob(f"{bug.engine}-*.whl")}, key=parse_release)
    earlier = [r for r in cached if parse_release(r) < parse_release(release)]
    at = _wheel_text(bug.engine, release, member)
    if at is None or not earlier:
        pytest.skip(f"the {bug.engine} {release} wheel or an earlier one is not cached in {WHEELS}")
    before = _wheel_text(bug.engine, earlier[-1], member)
    present = (marker in before, marker in at)
    assert present == ((False, True) if change == "appears" else (True, False)), (earlier[-1], release, present)


def test_verify_names_the_known_bug_a_logged_error_matches():
    log = (Path(__file__).resolve().parent / "fixtures" / "logs" / "vllm-0.30.0-llama-3.1-8b-tp8.log").read_text()
    failure = ("(Worker_TP0 pid=4110) ERROR 11-02 09:00:30 [core.py:130] torch.OutOfMemoryError: CUDA out of memory."
               " Tried to allocate 2.00 GiB")  # fmt: skip
    result = verify([LogText("oom.log", log.replace("Application startup complete.", "x") + failure + "\n")],
                    __import__("advisor.context", fromlist=["Options"]).Options(profile="h100-sxm-8"))  # fmt: skip
    assert result.observed["startup_error"].startswith("torch.OutOfMemoryError")
    assert result.known_bugs[0].id == "vllm_graph_estimate_high_util_oom"  # the one affecting v0.30.0 comes first
