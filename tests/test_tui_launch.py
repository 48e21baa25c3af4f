"""The launch screen starts the bundled runtime's demo model (CPU, tp 2, gloo) through launcher.spawn, for real."""

from __future__ import annotations

import time

import psutil
import pytest
from tui_helpers import make_app, settle

from advisor.tui.screens.launch import LaunchScreen

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture(autouse=True)
def runs_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TP_ADVISOR_RUNS", str(tmp_path / "runs"))


def demo_app():
    # --port 0: the server picks a free port, so parallel runs never collide
    return make_app(profile="cpu-only", engine="bundled", tp=2, overrides=("--port", "0"))


async def wait_for(pilot, predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.1)


def process_tree(pid: int) -> list[psutil.Process]:
    root = psutil.Process(pid)
    return [root, *root.children(recursive=True)]


def new_children(before: set[int]) -> list[psutil.Process]:
    """Children of this test process that were not there before the launch (an earlier test may leave e.g.
    multiprocessing's resource tracker running for the whole session)."""
    return [p for p in psutil.Process().children(recursive=True) if p.pid not in before]


def existing_children() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


def survivors(procs: list[psutil.Process]) -> list[psutil.Process]:
    alive = []
    for proc in procs:
        try:
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                alive.append(proc)
        except psutil.NoSuchProcess:
            continue
    return alive


async def start_demo(pilot) -> LaunchScreen:
    app = pilot.app
    await settle(pilot)
    await pilot.press("l")
    await pilot.pause()
    screen = app.screen
    assert isinstance(screen, LaunchScreen)
    argv = screen.argv()
    assert argv[argv.index("--nproc-per-node") + 1] == "2" and "--device" in argv and "cpu" in argv
    await pilot.press("enter")
    return screen


async def test_serve_demo_until_ready_then_stop_key_leaves_no_process():
    before = existing_children()
    app = demo_app()
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await start_demo(pilot)
        await wait_for(pilot, lambda: screen.state not in ("not started", "starting"), 120, "the ready state")
        assert screen.state == "ready", f"{screen.state}: {screen.run.failure if screen.run else ''}"
        assert screen.run.url.startswith("http://127.0.0.1:")
        procs = process_tree(screen.run.pid)
        assert len(procs) >= 3, procs  # torchrun and two worker ranks

        await pilot.pause(0.3)
        assert screen.query("#log-rank-0-lines") and screen.query("#log-rank-1-lines")  # a log tab per rank

        await pilot.press("s")
        await wait_for(pilot, lambda: screen.run.done and screen.state == "stopped", 30, "the stopped state")
        assert survivors(procs) == []
        assert new_children(before) == []


async def test_quitting_while_serving_stops_the_engine():
    before = existing_children()
    app = demo_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await start_demo(pilot)
        await wait_for(pilot, lambda: screen.state == "ready" or (screen.run and screen.run.done), 120, "ready")
        assert screen.state == "ready", f"{screen.state}: {screen.run.failure if screen.run else ''}"
        assert screen.run.state == "ready" and screen.run.url.startswith("http://127.0.0.1:")
        procs = process_tree(screen.run.pid)
        assert len(procs) >= 3, procs  # torchrun and two worker ranks, serving
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running, 30, "the app to exit")
    assert survivors(procs) == []
    assert new_children(before) == []


async def test_leaving_the_screen_while_starting_stops_the_engine():
    before = existing_children()
    app = demo_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await start_demo(pilot)
        await wait_for(pilot, lambda: screen.run is not None, 30, "the process to start")
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.main, 30, "the main screen")
        assert screen.run.done and screen.run.state == "stopped"
        assert app.live_runs() == []
    assert new_children(before) == []


async def test_without_the_runtime_extra_enter_names_the_install_and_starts_nothing(monkeypatch):
    # This venv has the runtime; the light install (tests/test_packaging.py) checks the real absence through the CLI.
    from advisor.rules.command import install_command
    from launcher import engines

    monkeypatch.setattr(engines, "missing_runtime_modules", lambda mode=None: ["torch"])
    before = existing_children()
    app = demo_app()
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        screen = await start_demo(pilot)
        await pilot.pause()
        assert screen.run is None and screen.state == "not started"
        messages = [n.message for n in app._notifications]
        assert any(install_command("bundled") in m for m in messages), messages
    assert new_children(before) == []
