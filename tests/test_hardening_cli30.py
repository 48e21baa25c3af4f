"""Issue 30's smaller CLI cases: `probe -o -` and `-o ""`."""

from __future__ import annotations

import json

import pytest

from advisor import cli


def run(argv, capsys) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        cli.main(argv, prog_name="advisor")
    out, err = capsys.readouterr()
    return (exited.value.code or 0), out, err


def test_probe_output_dash_is_stdout_and_writes_no_file(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(["probe", "--profile", "h100-sxm-8", "-o", "-"], capsys)
    assert (code, err) == (0, "")
    assert json.loads(out)["source"] == "simulated:h100-sxm-8"
    assert list(tmp_path.iterdir()) == []


def test_probe_output_empty_is_a_usage_error(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(["probe", "--profile", "h100-sxm-8", "-o", ""], capsys)
    assert (code, out) == (2, "")
    assert err.startswith("error: ") and err.count("\n") == 1 and "--output" in err
    assert list(tmp_path.iterdir()) == []
