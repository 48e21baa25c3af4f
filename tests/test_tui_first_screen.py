"""The first screen shows the plan without waiting for the hidden tabs: their panels (and the profile summaries, which
load every simulated machine) come after it is painted, or as soon as a tab asks for them (tests/benchmarks/bench_tui.py)."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest
from tui_helpers import command_text, settle, static_text

from advisor.context import Options
from advisor.tui.app import AdvisorApp

pytestmark = pytest.mark.anyio  # anyio's pytest plugin runs the async tests


@pytest.fixture
def anyio_backend():
    return "asyncio"


B300 = {"profile": "b300-8", "model": "Qwen/Qwen3-VL-235B-A22B-Instruct", "tp": 8, "engine": "sglang"}


async def test_hidden_tabs_follow_the_first_screen(empty_hf_cache):
    seen: dict = {}

    def ready(app: AdvisorApp) -> None:  # the first plan is painted
        seen["panels"] = [w.id for w in app.main.query("LayoutsPanel, MachinePanel")]
        seen["summaries loaded"] = "profiles" in app.__dict__
        seen["decisions"] = app.main.query_one("#decisions").row_count
        # what bench_tui.py counts as the first complete screen: the plan's status, rows, detail and command
        seen["detail"] = static_text(app, "#detail-body")
        seen["status"] = static_text(app, "#status")
        seen["command"] = command_text(app)

    app = AdvisorApp(Options(**B300), on_ready=ready)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert {k: seen[k] for k in ("panels", "summaries loaded")} == {"panels": [], "summaries loaded": False}
        plan = app.main.evaluation.plan
        assert seen["decisions"] == len(plan.decisions) + len({p.id for p in plan.problems})
        assert plan.decisions[0].title in " ".join(seen["detail"].split())
        assert "Qwen/Qwen3-VL-235B-A22B-Instruct" in seen["status"] and "sglang.launch_server" in seen["command"]
        assert {w.id for w in app.main.query("LayoutsPanel, MachinePanel")} == {"layouts-panel", "machine-panel"}
        assert "source: simulated b300-8" in static_text(app, "#machine-summary")  # caught up with the plan shown
        assert any(summary for _, summary in app.profiles)


async def test_a_tab_opened_at_once_mounts_its_panel(empty_hf_cache):
    app = AdvisorApp(Options(**B300))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("m")  # before anything else has happened
        await settle(pilot)
        assert app.main.active_tab == "machine"
        assert "source: simulated b300-8" in static_text(app, "#machine-summary")


async def test_a_slow_first_plan_does_not_keep_the_screen_blank(empty_hf_cache, monkeypatch):
    # A live probe can take seconds (NVML on a driver without persistence mode): the first paint waits for the plan
    # at most FIRST_PLAN_WAIT_S, shows "evaluating…", and the plan follows when it comes.
    from advisor.tui import session
    from advisor.tui.screens import main

    release = threading.Event()
    evaluate = session.Session.evaluate

    def slow_evaluate(self, options, generation):
        release.wait(30)
        return evaluate(self, options, generation)

    monkeypatch.setattr(session.Session, "evaluate", slow_evaluate)
    monkeypatch.setattr(main, "FIRST_PLAN_WAIT_S", 0.05)
    live = {k: v for k, v in B300.items() if k != "profile"}  # probes this machine: computed in a thread
    app = AdvisorApp(Options(**live))
    assert not app.first_evaluation.done()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert app.main.evaluation is None and "evaluating" in static_text(app, "#status")
        assert app.main.busy
        release.set()
        await settle(pilot)
        assert "Qwen/Qwen3-VL-235B-A22B-Instruct" in static_text(app, "#status")
        assert app.main.query_one("#decisions").row_count > 0


def test_open_app_says_so_when_the_app_cannot_start():
    # In a fresh interpreter: the app's module is made unimportable, as in a build without it.
    code = """
import sys
from advisor import interactive
from advisor.context import AdvisorError, Options
class Probe:
    def find_spec(self, name, path=None, target=None):
        if name == "advisor.tui.app":
            raise ModuleNotFoundError("no app in this build", name=name)
sys.meta_path.insert(0, Probe())
try:
    interactive.open_app(Options())
except AdvisorError as exc:
    print(exc.message)
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("the interactive app is not available in this build"), result.stdout


def test_a_plan_that_probes_is_computed_in_a_thread_one_that_reads_is_computed_at_once(empty_hf_cache, tmp_path):
    from advisor.tui.session import probes

    facts = tmp_path / "facts.json"
    assert not probes(Options(profile="b300-8")) and not probes(Options(facts_file=str(facts)))
    assert probes(Options()) and probes(Options(profile="b300-8", python="/usr/bin/python3"))
    app = AdvisorApp(Options(**B300))
    assert app.first_evaluation.done() and app.first_evaluation.result().plan is not None
    assert not [t for t in threading.enumerate() if t.name == "advisor-first-plan"]


def test_ctrl_c_while_the_first_plan_is_computed_before_the_app_starts_ends_the_start_up(empty_hf_cache, monkeypatch):
    from advisor.tui import session

    def interrupted(self, options, generation):
        raise KeyboardInterrupt

    monkeypatch.setattr(session.Session, "evaluate", interrupted)
    with pytest.raises(KeyboardInterrupt):
        AdvisorApp(Options(**B300))


async def test_the_first_screens_verdict_matches_its_model_field(empty_hf_cache):
    """No --model on a machine where SGLang is the default engine: the model field does not offer the demo model that
    SGLang cannot run while the status says SGLang needs a model; the bundled runtime's demo model is offered there."""
    app = AdvisorApp(Options(profile="b300-8"))  # SGLang installed there: the default engine
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        placeholder = app.main.query_one("#model").placeholder
        assert "needs a model" in static_text(app, "#status")
        assert "demo" not in placeholder and "sglang" in placeholder
    app = AdvisorApp(Options(profile="b300-8", engine="bundled"))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert app.main.query_one("#model").placeholder == "demo model"
        assert app.main.evaluation.plan is not None and app.main.evaluation.plan.model.id == "demo"
