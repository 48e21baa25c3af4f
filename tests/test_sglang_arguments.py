"""Engine arguments after `--`, checked against what each SGLang release's own parser declares (cli_args.json, written
from the releases by `python -m conformance sglang-args`). The refusals below were run through the releases' own
prepare_server_args in their conformance environments: `--cuda-graph-max-bs 256` parses on v0.5.19 and is refused as
ambiguous (it starts both --cuda-graph-max-bs-decode and --cuda-graph-max-bs-prefill) from v0.5.20."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.models import resolve_model
from advisor.plan import Intent, build_plan
from advisor.probe.profiles import load_profile
from advisor.rules.engine import Scenario
from advisor.rules.sglang import arguments, memory
from advisor.rules.sglang import releases as sglang_releases

ERROR = arguments.ERROR_ID


def problems(overrides: tuple[str, ...], version: str = "0.5.23") -> list:
    intent = Intent(engine="sglang", engine_version=version, tp=8, overrides=overrides)
    plan = build_plan(load_profile("h200-8"), resolve_model("Qwen/Qwen3-30B-A3B"), intent)
    return [p for p in plan.problems if p.id == ERROR]


def test_every_modelled_release_has_its_arguments():
    assert set(json.loads(Path(arguments.ARGUMENTS_FILE).read_text())["releases"]) == set(sglang_releases.RELEASES)


@pytest.mark.parametrize("overrides", [
    (), ("--attention-backend", "fa3"), ("--attention-backend=triton",), ("--chunked-prefill-size", "4096"),
    ("--mem-fraction-static", "0.8"), ("--moe-runner-backend", "flashinfer_trtllm"), ("--tp-size", "8"),
    ("--cuda-graph-max-bs-decode", "64"), ("--enable-dp-attention",), ("--ep-size", "4"), ("--ep", "2"),
    ("--page-size", "64"),
])  # fmt: skip
def test_what_the_release_accepts_is_no_problem(overrides):
    assert problems(overrides) == []


@pytest.mark.parametrize(("overrides", "words"), [
    (("--attention-backend", "nonsense"), "--attention-backend 'nonsense' is not one of its choices"),
    (("--moe-runner-backend=bogus",), "--moe-runner-backend 'bogus' is not one of its choices"),
    (("--chunked-prefill-size", "abc"), "--chunked-prefill-size 'abc' is not a whole number"),
    (("--mem-fraction-static", "x"), "--mem-fraction-static 'x' is not a number"),
    (("--moe-runner-backend",), "--moe-runner-backend needs a value"),
    (("--attention-backend", "--tp-size", "8"), "--attention-backend needs a value"),
    (("--cuda-graph-max-bs", "256"), "does not know the argument --cuda-graph-max-bs"),
    (("--expert-parallel-size", "four"), "--expert-parallel-size 'four' is not a whole number"),
])  # fmt: skip
def test_what_the_release_refuses_is_an_error(overrides, words):
    found = problems(overrides)
    assert len(found) == 1 and found[0].severity == "error" and words in found[0].message, found


# Run through the releases' own prepare_server_args with the GPU faked (the conformance environments): v0.5.7-v0.5.11
# declare the algorithm's choices (case-sensitive, argparse exits 2); from v0.5.12 the parser takes any text and
# resolution upper-cases it and refuses an unknown name (SpeculativeAlgorithm.from_string, ValueError).
@pytest.mark.parametrize(("overrides", "version", "words"), [
    (("--speculative-algorithm", "FOO"), "0.5.7", "--speculative-algorithm 'FOO' is not one of its choices"),
    (("--speculative-algorithm", "ngram"), "0.5.7", "--speculative-algorithm 'ngram' is not one of its choices"),
    (("--speculative-algorithm", "FOO"), "0.5.23", "--speculative-algorithm 'FOO' is not a name it knows"),
    (("--speculative-algorithm", "MTP"), "0.5.12", "--speculative-algorithm 'MTP' is not a name it knows"),
    (("--speculative-eagle-topk", "x"), "0.5.23", "--speculative-eagle-topk 'x' is not a whole number"),
    (("--max-running-requests", "many"), "0.5.7", "--max-running-requests 'many' is not a whole number"),
])  # fmt: skip
def test_a_speculative_algorithm_the_release_does_not_know_is_an_error(overrides, version, words):
    found = problems(overrides, version)
    assert len(found) == 1 and words in found[0].message, found


@pytest.mark.parametrize(("overrides", "version"), [
    (("--speculative-algorithm", "NEXTN"), "0.5.7"), (("--speculative-algorithm", "ngram"), "0.5.23"),
    (("--speculative-algorithm", "EAGLE3", "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
      "--speculative-num-draft-tokens", "4"), "0.5.14"),
])  # fmt: skip
def test_a_speculative_algorithm_the_release_knows_is_no_problem(overrides, version):
    assert problems(overrides, version) == []


def test_an_ambiguous_old_name_points_to_the_new_one():
    (problem,) = problems(("--cuda-graph-max-bs", "256"), "0.5.20")
    # v0.5.20 declares --cuda-graph-max-bs-decode and -prefill: argparse takes the old name as an ambiguous prefix
    assert problem.fix == "pass --cuda-graph-max-bs-decode or --cuda-graph-max-bs-prefill instead"
    assert problems(("--cuda-graph-max-bs", "256"), "0.5.19") == []


def test_a_flag_a_release_does_not_have_yet_is_refused_there_only():
    assert problems(("--flashinfer-allreduce-fusion-backend", "trtllm"), "0.5.13")
    assert problems(("--flashinfer-allreduce-fusion-backend", "trtllm"), "0.5.14") == []


def test_a_release_newer_than_the_modelled_ones_is_not_judged():
    assert problems(("--attention-backend", "some_future_backend"), "0.6.1") == []


@pytest.mark.parametrize(("version", "flag"), [("0.5.13", "--cuda-graph-max-bs"), ("0.5.19", "--cuda-graph-max-bs"),
                                               ("0.5.19", "--cuda-graph-max-bs-decode"),
                                               ("0.5.20", "--cuda-graph-max-bs-decode")])  # fmt: skip
def test_the_memory_decision_reads_the_release_s_cuda_graph_flag(version, flag):
    s = Scenario(load_profile("h200-8"), resolve_model("Qwen/Qwen3-30B-A3B"),
                 Intent(engine="sglang", engine_version=version, tp=8, overrides=(flag, "64")))
    decision = memory.memory_decision(s, version)
    assert decision.value["cuda_graph_max_bs"] == 64
    assert arguments.cuda_graph_max_bs_flags(version)[-1] in decision.conditions[0].fix


# mem_fraction_static of Llama 3.1 8B at tp 1 on an H100 (81559 MiB) as the releases resolve it (the spec-* goldens):
# 13440 MiB reserved without speculative decoding, plus the draft reserve above the floor (2 GiB, 4 GiB from v0.5.10,
# 6 GiB for STANDALONE, nothing for NGRAM and nothing at all from v0.5.14).
@pytest.mark.parametrize(("version", "algorithm", "fraction"), [
    ("0.5.7", "EAGLE", 0.81), ("0.5.7", "NEXTN", 0.81), ("0.5.7", "STANDALONE", 0.76), ("0.5.7", "NGRAM", 0.835),
    ("0.5.10", "EAGLE3", 0.785), ("0.5.10", "STANDALONE", 0.76), ("0.5.10", "NGRAM", 0.835),
])  # fmt: skip
def test_speculative_decoding_adds_the_release_s_draft_reserve(version, algorithm, fraction):
    s = Scenario(load_profile("h100-sxm-8"), resolve_model("meta-llama/Llama-3.1-8B-Instruct"),
                 Intent(engine="sglang", engine_version=version, tp=1, overrides=("--speculative-algorithm", algorithm)))
    decision = memory.memory_decision(s, version)
    assert decision.value == {"chunked_prefill_size": 8192, "cuda_graph_max_bs": 256, "mem_fraction_static": fraction}
    reserve = memory.speculative_reserve(memory.SPECULATIVE_ALIASES.get(algorithm, algorithm), version)
    if reserve:
        assert f"+ {reserve} ({algorithm if algorithm != 'NEXTN' else 'EAGLE'} draft model" in decision.notes[0]


def test_from_v0_5_22_the_decode_graph_batch_is_capped_at_the_user_s_request_limit_only():
    # The 48 requests speculative decoding sets come after the memory step (the v0.5.22/v0.5.23 goldens keep 512 here).
    spec = ("--speculative-algorithm", "EAGLE", "--chunked-prefill-size", "4096")
    s = Scenario(load_profile("h200-8"), resolve_model("Qwen/Qwen3-30B-A3B"), Intent(engine="sglang", tp=8, overrides=spec))
    assert memory.memory_decision(s, "0.5.23").value["cuda_graph_max_bs"] == 512
    mine = Scenario(s.facts, s.model, Intent(engine="sglang", tp=8, overrides=(*spec, "--max-running-requests", "100")))
    assert memory.memory_decision(mine, "0.5.21").value["cuda_graph_max_bs"] == 512
    decision = memory.memory_decision(mine, "0.5.23")
    assert decision.value["chunked_prefill_size"] == 4096 and decision.value["cuda_graph_max_bs"] == 100
    assert "capped at max_running_requests 100" in decision.notes[0]
