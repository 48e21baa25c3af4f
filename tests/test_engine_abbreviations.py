"""Engine arguments after -- are read as the engine's argparse parser reads them: an unambiguous prefix of a long option
(allow_abbrev) is that option, so every rule sees its value (``--mem-frac 0.8`` is SGLang's --mem-fraction-static)."""

from __future__ import annotations

import argparse

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from advisor.context import Options, resolve
from advisor.models import resolve_model
from advisor.plan import Intent, build_plan
from advisor.probe.profiles import load_profile
from advisor.rules.engine import spell_out_abbreviations
from advisor.rules.sglang import flags as sglang_flags

SGLANG = "0.5.23"
OPTIONS = sglang_flags.known_flags(SGLANG)
LONG = sorted(o for o in OPTIONS if o.startswith("--"))


def argparse_reading(options: frozenset[str], token: str) -> str | None:
    """The option a real argparse parser declaring ``options`` reads ``token`` as; None when it refuses it."""
    parser = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    for option in options:
        parser.add_argument(option, dest=option, nargs="?", const="")
    parser.error = lambda message: (_ for _ in ()).throw(argparse.ArgumentError(None, message))
    try:
        namespace, rest = parser.parse_known_args([token])
    except argparse.ArgumentError:
        return None  # ambiguous
    if rest:
        return None
    return next((dest for dest, value in vars(namespace).items() if value is not None), None)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(option=st.sampled_from(LONG), cut=st.integers(min_value=3, max_value=60), value=st.sampled_from(["", "=0.8"]))
def test_every_prefix_reads_as_argparse_reads_it(option, cut, value):
    token = option[:cut] + value
    expected = argparse_reading(OPTIONS, token)
    (spelled,) = spell_out_abbreviations((token,), OPTIONS)
    if expected is None:
        assert spelled == token  # refused by argparse: left as given, for the argument check to report
    else:
        assert spelled == expected + value


def test_tokens_after_a_bare_double_dash_and_values_stay():
    tokens = ("--mem-frac", "0.8", "--", "--mem-frac")
    assert spell_out_abbreviations(tokens, OPTIONS) == ("--mem-fraction-static", "0.8", "--", "--mem-frac")
    assert spell_out_abbreviations(tokens, None) == tokens


def plan(overrides: tuple[str, ...], version: str = SGLANG, tp: int = 8):
    intent = Intent(engine="sglang", engine_version=version, tp=tp, overrides=overrides)
    return build_plan(load_profile("h200-8"), resolve_model("Qwen/Qwen3-30B-A3B"), intent)


@pytest.mark.parametrize("abbreviated", [("--mem-frac", "0.8"), ("--mem-frac=0.8",), ("--mem-fraction-stat", "0.8")])
def test_an_abbreviation_sets_what_its_option_sets_in_every_rule(abbreviated):
    full = plan(("--mem-fraction-static", "0.8"))
    short = plan(abbreviated)
    assert short.decision("memory_defaults").value["mem_fraction_static"] == 0.8
    assert [(d.id, d.state, d.value) for d in short.decisions] == [(d.id, d.state, d.value) for d in full.decisions]
    assert [t.split("=")[0] for t in short.argv if t.startswith("--mem")] == ["--mem-fraction-static"]
    assert not [p for p in short.problems if p.id.startswith("sglang_argument")]


def test_an_abbreviated_tp_is_adopted_or_contradicts_the_plan():
    options = Options(profile="h200-8", model="Qwen/Qwen3-30B-A3B", engine="sglang", engine_version=SGLANG,
                      overrides=("--tp-si", "4"))  # fmt: skip
    _, _, intent = resolve(options)
    assert intent.tp == 4 and intent.overrides == ("--tp-size", "4")
    conflict = plan(("--tp-si", "4"), tp=8)
    assert [p.id for p in conflict.problems if p.id.startswith("sglang_argument")] == ["sglang_argument_conflicts_plan"]
    assert conflict.argv.count("--tp-size") == 1


def test_an_ambiguous_prefix_is_still_refused():
    found = plan(("--enable-m", "0.8"))  # --enable-metrics, --enable-mixed-chunk, ...
    assert "sglang_argument_rejected" in [p.id for p in found.problems]


# -- vLLM: cli_flags.json (python -m conformance vllm-flags), FlexibleArgumentParser's renaming, vllm_argument_rejected --
from advisor.rules.engine import Release  # noqa: E402
from advisor.rules.vllm import flags as vllm_flags  # noqa: E402

VLLM = "0.33.0"
VLLM_OPTIONS = vllm_flags.known_flags(VLLM)
VLLM_LONG = sorted(o for o in VLLM_OPTIONS if o.startswith("--"))
NUMBER_FLAGS = {flag for flag, _, _ in vllm_flags.NUMBERS}


def vllm_plan(overrides: tuple[str, ...]):
    intent = Intent(engine="vllm", engine_version=VLLM, tp=8, overrides=overrides)
    return build_plan(load_profile("h200-8"), resolve_model("Qwen/Qwen3-30B-A3B"), intent)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(option=st.sampled_from(VLLM_LONG), cut=st.integers(min_value=3, max_value=60), underscores=st.booleans())
@example(option="--block-size", cut=12, underscores=False)  # a number flag spelt in full (CI's failing draw)
def test_vllm_reads_every_prefix_and_underscore_spelling_as_its_parser_does(option, cut, underscores):
    token = option[:cut]
    given_token = "--" + token[2:].replace("-", "_") if underscores else token
    expected = argparse_reading(VLLM_OPTIONS, token)
    (spelled,) = vllm_flags.spell_out((given_token,), Release(VLLM, VLLM))
    assert spelled == (expected or token)
    # A number flag gets a value vLLM takes, so only the spelling is under test (without one, argparse refuses it too)
    value = {"--gpu-memory-utilization": ("0.9",)}.get(expected, ("16",)) if expected in NUMBER_FLAGS else ()
    found = vllm_flags.rejected(type("S", (), {"overrides": (given_token, *value)})(), Release(VLLM, VLLM))
    assert bool(found) == (expected is None)


def test_a_number_flag_without_its_value_is_refused_as_vllm_refuses_it():
    found = vllm_flags.rejected(type("S", (), {"overrides": ("--block-size",)})(), Release(VLLM, VLLM))
    assert [p.id for p in found] == [vllm_flags.ERROR_ID] and "--block-size needs a value" in found[0].message


def test_a_misspelt_vllm_flag_is_rejected_with_the_flag_it_looks_like():
    found = [p for p in vllm_plan(("--max-model-lne", "4096")).problems if p.id == vllm_flags.ERROR_ID]
    assert len(found) == 1 and found[0].severity == "error" and "--max-model-len" in found[0].fix
    ok = vllm_plan(("--max_model_len", "4096", "--gpu-memory-util", "0.8", "--compilation-config.level=3"))
    assert not [p for p in ok.problems if p.id == vllm_flags.ERROR_ID]
    assert ok.intent.overrides[:4] == ("--max-model-len", "4096", "--gpu-memory-utilization", "0.8")


def test_every_modelled_vllm_release_has_a_list_from_a_parser_that_takes_abbreviations():
    from advisor.rules.vllm import RELEASES

    assert set(vllm_flags._releases()) == set(RELEASES)
    for release, entry in vllm_flags._releases().items():
        assert entry["allow_abbrev"] is True and "--tensor-parallel-size" in entry["options"], release
