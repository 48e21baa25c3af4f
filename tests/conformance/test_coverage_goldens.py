"""The coverage goldens (tests/conformance/golden/*-coverage-*.json, written by `python -m conformance sglang-coverage`
and `vllm-coverage`) against docs/coverage.md and the reasons of tests/conformance/coverage_reasons.json; and the
harness's own pieces (which functions are resolution functions, how a coverage.py report becomes a golden) on small
inputs made here. Offline, no release installed."""

from __future__ import annotations

import json
import zipfile

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.coverage import docs
from conformance.coverage.functions import resolution_functions
from conformance.coverage.measure import FileReport, measure

GOLDENS = docs.goldens()
REASONS = docs.load_reasons()


def test_goldens_exist_for_both_engines():
    assert {g["engine"] for g in GOLDENS} == set(docs.ENGINES)


@pytest.mark.parametrize("golden", GOLDENS, ids=lambda g: f"{g['engine']}-{g['release']}")
def test_golden_totals_agree_with_its_functions_and_branches(golden):
    functions = golden["functions"]
    totals = golden["totals"]
    assert totals["functions"] == len(functions)
    assert totals["branches"] == sum(f["branches"] for f in functions)
    assert totals["taken"] == sum(f["taken"] for f in functions)
    assert totals["branches"] - totals["taken"] == len(golden["uncovered"])
    assert totals["percent"] == round(100 * totals["taken"] / totals["branches"], 1)
    names = {(f["file"], f["function"]) for f in functions}
    assert all((b["file"], b["function"]) in names for b in golden["uncovered"])


@pytest.mark.parametrize("golden", GOLDENS, ids=lambda g: f"{g['engine']}-{g['release']}")
def test_every_uncovered_branch_falls_under_a_documented_reason(golden):
    missing = docs.unexplained(golden, REASONS)
    assert not missing, f"{len(missing)} unexplained, first: {missing[0]}"


def test_every_reason_explains_some_branch():
    used = {docs.reason_of(b, REASONS) for g in GOLDENS for b in g["uncovered"]}
    assert [r["id"] for r in REASONS if r["id"] not in used] == []


def test_docs_page_agrees_with_the_goldens():
    text = docs.PAGE.read_text()
    assert text == docs.page_with(text, docs.render(GOLDENS, REASONS)), "run python -m conformance coverage-docs"


def test_detail_pages_agree_with_the_goldens():
    wanted = docs.detail_pages(GOLDENS, REASONS)
    assert sorted(docs.DETAIL.glob("*.md")) == sorted(wanted), "run python -m conformance coverage-docs"
    assert all(path.read_text() == text for path, text in wanted.items()), "run python -m conformance coverage-docs"


def test_every_reason_says_whether_the_advisor_models_its_input():
    assert all(isinstance(r.get("advisor_models"), bool) for r in REASONS)


def test_a_target_matcher_filters_on_the_line_the_branch_goes_to():
    reasons = [{"id": "raise", "title": "t", "why": "w", "match": [{"target": r"^raise\b"}]}]
    assert docs.reason_of({**_branch(), "target": "raise ValueError("}, reasons) == "raise"
    assert docs.reason_of({**_branch(), "target": "return 1"}, reasons) is None


def test_docs_page_names_every_reason():
    text = docs.PAGE.read_text()
    assert all(f"(`{r['id']}`)" in text for r in REASONS)


REASONS_EXAMPLE = [
    {"id": "rocm", "title": "t", "why": "w", "match": [{"text": r"\bis_hip\(\)"}]},
    {"id": "lora", "title": "t", "why": "w", "match": [{"function": "lora", "file": "lora_hook"}]},
]


def _branch(source="if x:", context=(), function="f", file="a.py"):
    return {"file": file, "function": function, "from": 1, "to": 2, "source": source, "context": list(context)}


def test_a_branch_nested_under_a_guard_takes_the_guards_reason():
    assert docs.reason_of(_branch(context=["if is_hip():"]), REASONS_EXAMPLE) == "rocm"
    assert docs.reason_of(_branch(), REASONS_EXAMPLE) is None


def test_a_platform_check_comes_first_then_the_handler_then_the_text():
    reasons = [
        {"id": "platform", "first": True, "title": "t", "why": "w", "match": [{"text": r"\bis_hip\(\)"}]},
        {"id": "text", "title": "t", "why": "w", "match": [{"text": "lora"}]},
        {"id": "place", "title": "t", "why": "w", "match": [{"function": "handle_cache"}]},
    ]
    assert docs.reason_of(_branch("if is_hip():", function="handle_cache"), reasons) == "platform"
    assert docs.reason_of(_branch("if lora:", function="handle_cache"), reasons) == "place"
    assert docs.reason_of(_branch("if lora:", function="other"), reasons) == "text"


def test_a_matcher_needs_all_its_fields():
    assert docs.reason_of(_branch(function="handle_lora", file="arg_groups/lora_hook.py"), REASONS_EXAMPLE) == "lora"
    assert docs.reason_of(_branch(function="handle_lora", file="server_args.py"), REASONS_EXAMPLE) is None


@given(st.lists(st.tuples(st.integers(1, 40), st.integers(-40, 40).filter(bool), st.booleans()), max_size=30))
def test_measure_counts_each_branch_once_in_the_function_holding_its_start(arcs):
    source = "\n".join(f"x{n} = {n}" for n in range(1, 41)) + "\n"
    report = FileReport([(a, b) for a, b, hit in arcs if hit], [(a, b) for a, b, hit in arcs if not hit])
    from conformance.coverage.functions import Function

    functions = [Function("m.py", "low", 1, 20), Function("m.py", "high", 21, 40)]
    result = measure(functions, {"m.py": report}, {"m.py": source})
    assert result["totals"]["branches"] == len(arcs)
    assert result["totals"]["taken"] == sum(hit for *_, hit in arcs)
    assert all((b["from"] <= 20) == (b["function"] == "low") for b in result["uncovered"])
    assert all(b["to"] == "exit" or b["to"] > 0 for b in result["uncovered"])


def test_measure_keeps_the_guards_around_an_uncovered_branch():
    source = "def f(a, b):\n    if is_hip():\n        if b:\n            return 1\n    return 2\n"
    functions = [__import__("conformance.coverage.functions", fromlist=["Function"]).Function("m.py", "f", 1, 5)]
    result = measure(functions, {"m.py": FileReport([(2, 5)], [(2, 3), (3, 4), (3, 5)])}, {"m.py": source})
    nested = [b for b in result["uncovered"] if b["from"] == 3]
    assert nested and all(b["context"] == ["if is_hip():"] for b in nested)
    assert result["totals"] == {"functions": 1, "branches": 4, "taken": 1, "percent": 25.0}


def test_resolution_functions_follow_calls_into_the_resolution_files_only(tmp_path):
    wheel = tmp_path / "pkg.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("pkg/args.py", (
            "from pkg.hooks import handle\nfrom pkg.other import elsewhere\n\n"
            "class Args:\n    def __post_init__(self):\n        self._resolve()\n        handle(self)\n        elsewhere()\n\n"
            "    def _resolve(self):\n        pass\n\n    def unused(self):\n        pass\n"
        ))  # fmt: skip
        zf.writestr("pkg/hooks.py", "from pkg.config import Config\n\ndef handle(a):\n    Config()\n")
        zf.writestr(
            "pkg/config.py",
            "class Config:\n    def __init__(self):\n        self.check()\n\n    def check(self):\n        pass\n",
        )
        zf.writestr("pkg/other.py", "def elsewhere():\n    pass\n")
    with zipfile.ZipFile(wheel) as zf:
        found = resolution_functions(zf, [("pkg/args.py", "Args.__post_init__"), ("pkg/args.py", "Args.gone")],
                                     lambda p: p != "pkg/other.py", "pkg/")  # fmt: skip
    assert [(f.path, f.qualname) for f in found] == [
        ("pkg/args.py", "Args.__post_init__"), ("pkg/args.py", "Args._resolve"), ("pkg/config.py", "Config.__init__"),
        ("pkg/config.py", "Config.check"), ("pkg/hooks.py", "handle"),
    ]  # fmt: skip
    assert json.dumps([f.first for f in found]) == "[5, 10, 2, 5, 3]"


def test_measure_keeps_a_condition_written_over_several_lines_whole():
    from conformance.coverage.functions import Function

    source = "def f(a):\n    if (\n        a\n        and is_hip()\n    ):\n        if (\n            a > 1\n        ):\n            return 1\n    return 2\n"  # fmt: skip
    result = measure([Function("m.py", "f", 1, 10)], {"m.py": FileReport([(2, 10)], [(2, 6), (6, 9), (6, 10)])},
                     {"m.py": source})  # fmt: skip
    first = next(b for b in result["uncovered"] if b["from"] == 2)
    nested = [b for b in result["uncovered"] if b["from"] == 6]
    assert first["source"] == "if (a and is_hip()):"
    assert nested and all(b["source"] == "if (a > 1):" and b["context"] == ["if (a and is_hip()):"] for b in nested)


def test_an_elif_is_not_guarded_by_the_if_before_it():
    from conformance.coverage.functions import Function

    source = "def f(a):\n    if is_hip():\n        return 0\n    elif a:\n        if a > 1:\n            return 1\n    else:\n        if a < 0:\n            return 2\n    return 3\n"  # fmt: skip
    arcs = [(2, 4), (4, 5), (4, 8), (5, 6), (5, 10), (8, 9), (8, 10)]
    result = measure([Function("m.py", "f", 1, 10)], {"m.py": FileReport([], arcs)}, {"m.py": source})
    context = {b["from"]: b["context"] for b in result["uncovered"]}
    assert context[4] == [] and context[5] == ["elif a:"] and context[8] == []


def test_a_negated_or_null_guard_names_no_requirement():
    reasons = [{"id": "rocm", "title": "t", "why": "w", "match": [{"text": r"\bis_hip\(\)"}]}]
    assert docs.reason_of(_branch(context=["if not is_hip():"]), reasons) is None
    assert docs.reason_of(_branch(context=["if is_hip() and x:"]), reasons) == "rocm"
    assert docs.reason_of(_branch("if is_hip() is None:"), reasons) == "rocm"  # the branch's own condition counts whole


def test_a_source_matcher_reads_the_branch_line_only():
    reasons = [{"id": "plumbing", "title": "t", "why": "w", "match": [{"source": r"^if self\.model_config is None:$"}]}]
    assert docs.reason_of(_branch("if self.model_config is None:"), reasons) == "plumbing"
    assert docs.reason_of(_branch("if x:", context=["if self.model_config is None:"]), reasons) is None
