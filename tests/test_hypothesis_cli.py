"""Property tests over the CLI options and facts files: whatever a user types or a file holds, `advisor` ends
with a documented exit code, at most one `error:` line and no traceback, prints no escape sequence, and writes nothing
it was not asked to write. In-process through click's CliRunner, bounded (a few seconds per property here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.cli import main
from advisor.probe.profiles import list_profiles, load_profile
from advisor.report import facts_to_dict

SETTINGS = settings(max_examples=40, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
UNSAFE = ("\x1b", "\x07", "\x9b", "\u202e")

# Text a user or a file might hold: mostly printable, with control characters and escapes mixed in.
hostile_text = st.lists(
    st.one_of(st.characters(codec="utf-8"), st.sampled_from(["\x1b[2J", "\x1b]0;x\x07", "\x9b", "\u202e", "..", "/", "="])),
    max_size=12,
).map("".join)
numberish = st.one_of(st.integers(min_value=-(2**70), max_value=2**70).map(str), hostile_text)


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """An empty current directory and an empty Hugging Face cache; nothing may appear in either."""
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for name in ("HF_HUB_CACHE", "CUDA_VISIBLE_DEVICES", "COLUMNS", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return tmp_path


def snapshot(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*")}


def invoke(args: list[str]):
    return CliRunner().invoke(main, args, catch_exceptions=True)


def assert_clean_ending(result, args) -> None:
    """A documented exit code, no exception but SystemExit, at most one `error:` line, no escape sequence."""
    assert result.exit_code in (0, 1, 2), (args, result.exit_code, result.output, result.exception)
    assert result.exception is None or isinstance(result.exception, SystemExit), (args, repr(result.exception))
    errors = result.stderr.splitlines()
    assert len(errors) <= 1 and all(line.startswith("error: ") for line in errors), (args, result.stderr)
    if result.exit_code == 2:
        assert errors, (args, result.output)
    assert "Traceback" not in result.stdout + result.stderr
    for text in (result.stdout, result.stderr):
        assert not any(c in text for c in UNSAFE), (args, text[:400])
    if "--json" not in args:
        assert result.stdout.isascii(), (args, [c for c in result.stdout if not c.isascii()][:5])  # piped: plain ASCII


option_values = {
    "--tp": st.one_of(st.integers(-3, 20).map(str), numberish),
    "--nnodes": st.one_of(st.integers(-1, 4).map(str), numberish),
    "--dp-size": st.one_of(st.integers(-1, 8).map(str), numberish),
    "--engine": st.one_of(st.sampled_from(["bundled", "sglang", "vllm"]), hostile_text),
    "--engine-version": st.one_of(st.sampled_from(["0.5.14", "0.5.4.post2", "0.11.0", "9.9.9"]), hostile_text),
    "--dtype": st.one_of(st.sampled_from(["auto", "bfloat16", "half", "float32", "fp7"]), hostile_text),
    "--moe-a2a-backend": st.one_of(st.sampled_from(["none", "deepep", "../../x"]), hostile_text),
    "--with-package": st.one_of(st.sampled_from(["flashinfer-python==0.6.12", "torch==2.9.1+cu128", "x==bar"]), hostile_text),
    "--model": st.one_of(st.sampled_from(["demo", "Qwen/Qwen3-30B-A3B", "deepseek-ai/DeepSeek-V3", "nobody/x"]), hostile_text),
}


@st.composite
def command_lines(draw):
    command = draw(st.sampled_from(["check", "check --json", "explain", "probe", "probe --json"]))
    args = command.split()
    if args[0] == "explain":
        args.append(draw(st.sampled_from(["flashinfer_allreduce_fusion", "custom_allreduce", "device", "x\x1b[2J"])))
    args += ["--profile", draw(st.one_of(st.sampled_from(list_profiles()), hostile_text.filter(bool)))]
    usable = ["--with-package"] if args[0] == "probe" else list(option_values)
    for option in draw(st.lists(st.sampled_from(usable), max_size=4, unique=True)):
        args += [option, draw(option_values[option])]
    if args[0] != "probe" and draw(st.booleans()):
        args.append(draw(st.sampled_from(["--strict", "--dp-attention"])))
    return args


@SETTINGS
@given(args=command_lines())
def test_any_command_line_ends_cleanly_and_writes_nothing(workdir, args):
    before = snapshot(workdir)
    result = invoke(args)
    assert_clean_ending(result, args)
    assert snapshot(workdir) == before, args


# -- facts files ----------------------------------------------------------------------------------------------------------

BASE_FACTS = facts_to_dict(load_profile("h100-pcie-2-bridge"))
json_leaves = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True), hostile_text,
)  # fmt: skip
json_values = st.recursive(json_leaves, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(hostile_text, inner, max_size=3),
                           max_leaves=6)  # fmt: skip


def _paths(value, prefix=()):
    """Every place in the facts object a value sits (dict keys and list indices)."""
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _paths(child, (*prefix, index))


FACT_PATHS = [p for p in _paths(BASE_FACTS) if p and p != ("schema_version",)]


def _replace(data, path, value):
    data = json.loads(json.dumps(data))
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return data


@st.composite
def facts_texts(draw):
    data = BASE_FACTS
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(data) if p and p != ("schema_version",)]
        data = _replace(data, draw(st.sampled_from(paths)), draw(json_values))
    text = json.dumps(data, allow_nan=True, ensure_ascii=draw(st.booleans()))
    if draw(st.integers(0, 9)) == 0:  # sometimes not even JSON
        text = text[: draw(st.integers(0, len(text)))]
    return text


@SETTINGS
@given(text=facts_texts(), as_json=st.booleans())
def test_any_facts_file_ends_cleanly(workdir, text, as_json):
    path = workdir / "facts.json"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    before = snapshot(workdir)
    args = ["check", "--engine", "bundled", "--facts", str(path), *(["--json"] if as_json else [])]
    result = invoke(args)
    assert_clean_ending(result, args)
    assert result.exit_code in (0, 1), (result.exit_code, result.stderr)
    if result.exit_code == 0 and as_json:
        json.loads(result.stdout)  # the output is one JSON object
    assert snapshot(workdir) == before


def test_the_base_facts_are_valid_so_the_mutations_test_something(workdir):
    path = workdir / "facts.json"
    path.write_text(json.dumps(BASE_FACTS), encoding="utf-8")
    assert invoke(["check", "--engine", "bundled", "--facts", str(path)]).exit_code == 0
    assert len(FACT_PATHS) > 50  # gpus, links, packages, environment: every field is a target
