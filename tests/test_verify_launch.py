"""`advisor launch` compares the engine's own start-up log with the launched plan once it is ready or has failed: a real
child process prints a start-up log rendered from SGLang v0.5.9's format strings (tests/fixtures/logs), then uvicorn's
ready line; the verdict is printed from the run directory's launcher.log."""

from __future__ import annotations

import sys
from functools import partial
from pathlib import Path

from advisor.launch import _print_verdict, run_engine
from advisor.models import load_config_dir
from advisor.plan import Intent, build_plan
from advisor.probe.profiles import load_profile
from launcher.engines import UVICORN_READY

HERE = Path(__file__).resolve().parent
LOG = HERE / "fixtures" / "logs" / "sglang-0.5.9-llama-3.1-8b-tp8.log"


def _plan():
    model = load_config_dir(HERE / "conformance" / "configs" / "llama-3.1-8b", model_id="llama-3.1-8b")
    intent = Intent(model="llama-3.1-8b", tp=8, engine="sglang", engine_version="0.5.9")
    return build_plan(load_profile("h100-sxm-8"), model, intent)


def _engine(tmp_path: Path, text: str, ready: bool) -> list[str]:
    """A child that prints ``text``, then uvicorn's ready line (``ready``) or exits 1."""
    script = tmp_path / "engine.py"
    tail = (
        "print('INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)')"
        if ready
        else "sys.exit(1)"
    )
    script.write_text(f"import sys\nsys.stdout.write({text!r})\nsys.stdout.flush()\n{tail}\n")
    return [sys.executable, str(script)]


def test_a_ready_engine_gets_the_verdict_of_its_own_log(tmp_path, capsys):
    argv = _engine(tmp_path, LOG.read_text(), ready=True)
    code = run_engine(
        argv, run_dir=str(tmp_path / "run"), ready=(UVICORN_READY,), settled=partial(_print_verdict, _plan())
    )
    err = capsys.readouterr().err
    assert code == 0
    assert "verify: " in err, err
    # Every logged argument agrees; a difference may only be a start-up estimate (the fixture's measured figures are
    # illustrative).
    differing = [line for line in err.splitlines() if line.startswith("  ") and ": predicted " in line]
    assert all("start-up model" in line for line in differing), differing


def test_a_failed_start_names_the_error_and_a_difference(tmp_path, capsys):
    text = LOG.read_text().replace("mem_fraction_static=0.818", "mem_fraction_static=0.7")
    text = (
        text.split("[2026-11-02 09:00:30]")[0]
        + "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.\n"
    )
    argv = _engine(tmp_path, text, ready=False)
    code = run_engine(
        argv, run_dir=str(tmp_path / "run"), ready=(UVICORN_READY,), settled=partial(_print_verdict, _plan())
    )
    err = capsys.readouterr().err
    assert code == 1
    assert "mem_fraction_static: predicted 0.818, logged 0.7" in err, err
    assert "start-up error: RuntimeError: Not enough memory" in err
