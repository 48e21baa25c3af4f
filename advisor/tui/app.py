"""The `advisor` Textual app: `run_app(options)` is what bare `advisor [common options]` calls.

Layout: advisor.tcss (the main screen's layout; widgets and the other screens carry their own look in DEFAULT_CSS);
screens in screens/, widgets in widgets/, the non-UI logic (options -> facts -> plan) in session.py. Blocking work
(probing, rules, starting and stopping processes, writing files) runs in thread workers.
"""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from functools import cached_property
from typing import Any

from textual import events
from textual.app import App
from textual.screen import Screen

from advisor.context import AdvisorError
from advisor.probe.profiles import list_profiles
from advisor.tui import keys
from advisor.tui.commands import AdvisorCommands
from advisor.tui.screens.help import HelpScreen
from advisor.tui.screens.main import MainScreen
from advisor.tui.screens.too_small import TooSmallScreen, too_small
from advisor.tui.session import Evaluation, Session, model_suggestions, probes, profile_names

TOO_SMALL = "too-small"  # the mode shown while the terminal is too small (screens/too_small.py)


class AdvisorApp(App[None]):
    CSS_PATH = "advisor.tcss"
    TITLE = "tp-advisor"
    COMMANDS = App.COMMANDS | {AdvisorCommands}
    BINDINGS = keys.APP
    DEFAULT_MODE = "app"  # the app's screens; MODES adds the one shown while the terminal is too small
    MODES = {TOO_SMALL: TooSmallScreen}

    def __init__(self, options: Any, *, on_ready: Callable[[AdvisorApp], None] | None = None) -> None:
        super().__init__()
        self.add_mode(self.DEFAULT_MODE, self.get_default_screen)  # so that the app can switch back to it
        self.options = options
        self.session = Session()
        self.models = model_suggestions()
        self.runs: list[Any] = []  # launcher.spawn.Run objects started from the launch screen
        self._runs_lock = threading.Lock()
        self._closing = False
        self._on_ready = on_ready
        self.first_plan_at: float | None = None  # time.perf_counter() when the first plan was on screen
        # The first paint shows the first plan. One that probes (session.probes) is computed in a thread while Textual
        # starts (the first paint waits for it at most screens.main.FIRST_PLAN_WAIT_S); one read from a simulated
        # machine or a facts file is computed here, at once: in a thread it took longer, competing with Textual's
        # start-up for the interpreter (tests/benchmarks/bench_tui.py).
        self.first_evaluation: Future[Evaluation] = Future()
        if probes(options):
            threading.Thread(target=self._evaluate_first, name="advisor-first-plan", daemon=True).start()
        else:
            self._evaluate_first()

    def _evaluate_first(self) -> None:
        try:
            evaluation = self.session.evaluate(self.options, generation=1)  # never raises for bad input
        except BaseException as exc:
            if threading.current_thread() is threading.main_thread():
                raise  # computed before the app starts: ctrl+c ends the start-up, as anywhere else before the app
            evaluation = Evaluation(self.options, None, None, f"{type(exc).__name__}: {exc}", 1)  # the screen must not wait
        self.first_evaluation.set_result(evaluation)

    @cached_property
    def profiles(self) -> list[tuple[str, str]]:
        """(name, one-line summary) of every simulated machine. Loading them all takes a while: done when first needed
        (the Machine tab, the profile picker, the command palette), not before the first screen."""
        return profile_names()

    def get_default_screen(self) -> Screen:
        # The form lists the names only; the summaries follow with self.profiles.
        self.main = MainScreen(self.options, self.models, [(name, "") for name in list_profiles()])
        return self.main

    # -- signals from screens --------------------------------------------------------------------------------------------
    def plan_shown(self, evaluation: Evaluation) -> None:
        if self.first_plan_at is None:
            self.call_after_refresh(self._first_plan_painted)

    def _first_plan_painted(self) -> None:
        if self.first_plan_at is None:
            self.first_plan_at = time.perf_counter()
            if self._on_ready is not None:
                self._on_ready(self)
            self.call_later(self.main.mount_hidden_tabs)  # the tabs not shown yet follow the first screen

    # -- processes ---------------------------------------------------------------------------------------------------
    def track_run(self, run: Any) -> bool:
        """Called (from any thread) for every engine started, so quitting can stop it. False when the app is already
        closing: the caller must stop the run itself (it was started while the app was going away)."""
        with self._runs_lock:
            self.runs.append(run)
            return not self._closing

    def live_runs(self) -> list[Any]:
        with self._runs_lock:
            return [r for r in self.runs if not r.done]

    def stop_all_runs(self) -> None:
        """Blocking: stop every engine this app started (spawn kills the whole process tree)."""
        for run in self.live_runs():
            run.stop()

    def on_mount(self) -> None:
        # A closed terminal (SIGHUP) or a kill (SIGTERM) must end the app through unmount, which stops the engines:
        # they run in their own sessions, so the terminal's hangup never reaches them.
        self._signals: list[int] = []
        try:
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGHUP):
                loop.add_signal_handler(sig, self.exit)
                self._signals.append(sig)
        except (NotImplementedError, RuntimeError, ValueError, AttributeError):
            pass  # not the main thread, or no such signal on this platform
        self._fit_screen(*self.size)  # started in a terminal already too small

    # -- the terminal's size ---------------------------------------------------------------------------------------------
    def on_resize(self, event: events.Resize) -> None:
        # Runs before Textual passes the new size on to the screens (App._on_resize defers that): a screen too small to
        # lay out is covered by then, and is not laid out at that size. It also runs before App._on_resize has taken
        # the new size (a subclass's handler comes first), and switch_mode lays the screen it shows out at self.size:
        # so the way back waits until the app has the new size, or a dialog would be laid out at the old, tiny one.
        if too_small(event.size.width, event.size.height):
            self._fit_screen(event.size.width, event.size.height)
        else:
            self.call_next(lambda: self._fit_screen(*self.size))

    def _fit_screen(self, width: int, height: int) -> None:
        """While the terminal is too small, show TooSmallScreen in a mode of its own: the app's screens (a dialog and
        the screen beneath it alike) are not laid out at that size, and come back as they were once it is not."""
        if too_small(width, height):
            if self.current_mode != TOO_SMALL:
                self.switch_mode(TOO_SMALL)
        elif self.current_mode == TOO_SMALL:
            self.switch_mode(self.DEFAULT_MODE)  # lays out the screen on top at the new size

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # While the terminal is too small only quitting works: a dialog or the palette opened now would be laid out at
        # that size, above the screen that says so.
        return self.current_mode != TOO_SMALL or action == "quit"

    def on_unmount(self) -> None:
        # However the app ends (quit, ctrl+c, a signal, an exception, a test harness), no engine outlives it.
        with self._runs_lock:
            self._closing = True
        self.stop_all_runs()
        try:
            loop = asyncio.get_running_loop()
            for sig in self._signals:
                loop.remove_signal_handler(sig)
        except RuntimeError:
            pass

    async def action_quit(self) -> None:
        if self.live_runs():
            self.notify("Stopping the engine before quitting…", timeout=3)
            self.run_worker(self._stop_then_exit, thread=True, exclusive=True, group="quit")
        else:
            self.exit()

    def _stop_then_exit(self) -> None:
        self.stop_all_runs()
        self.call_from_thread(self.exit)

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())


# The exit code of an app that Textual ended after an error in it (Textual prints the error; README, "Exit codes").
APP_CRASHED = 3


def run_app(options: Any) -> None:
    """Open the app with the common options filled in; whatever happens, no engine it started outlives it. An error
    inside the app (Textual prints it as it closes) is an AdvisorError with exit code APP_CRASHED."""
    app = AdvisorApp(options)
    try:
        app.run()
    finally:
        app.stop_all_runs()
    if app.return_code:
        raise AdvisorError(
            "the interactive app stopped after an internal error (shown above); `advisor check` prints the same plan",
            exit_code=APP_CRASHED,
        )
