"""The launch screen: confirm the command, start it through launcher.spawn, stream per-rank logs, stop it.

Processes are only ever started and stopped by `launcher.spawn` (the one place that owns them). Its reader threads
hand lines to a queue that a UI timer drains in batches, so a chatty engine never floods the message loop and a
thread never blocks on the UI.
"""

from __future__ import annotations

import shlex
import threading
from collections import deque
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Header, Label, Log, Select, Static, TabbedContent, TabPane

from advisor.launch_prep import NO_COMMAND, OTHER_MACHINE, PLAN_ERRORS, prepare_launch
from advisor.plan import Plan
from advisor.rules import registry
from advisor.sanitize import clean
from advisor.tui import keys
from launcher import spawn

FLUSH_S = 0.1
MAX_LOG_LINES = 5000


class LaunchScreen(Screen):
    DEFAULT_CSS = """
    #launch-top {
        height: auto;
        padding: 0 1;
    }
    #mode-row {
        height: 1;
    }
    #mode-row Select {
        width: 20;
    }
    #launch-command {
        margin-top: 1;
    }
    #launch-state {
        margin-top: 1;
        height: auto;
    }
    #logs {
        height: 1fr;
    }
    """

    BINDINGS = keys.LAUNCH

    def __init__(self, plan: Plan) -> None:
        super().__init__()
        self.plan = plan
        self.engine = registry.get(plan.intent.engine)
        self.mode = plan.intent.mode if plan.intent.mode in self.engine.modes else "serve"
        self.run: Any = None  # launcher.spawn.Run once started
        self.state = "not started"
        self._lines: deque = deque()
        self._ranks: set[int] = set()
        self._confirmed_errors = False
        self._leaving = False
        self._lock = threading.Lock()

    # -- layout ----------------------------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical(id="launch-top"):
            if self.engine.modes:
                with Horizontal(id="mode-row"):
                    yield Label("Mode ")
                    yield Select([(m, m) for m in self.engine.modes], value=self.mode, allow_blank=False, id="mode", compact=True)
            yield Static("", id="launch-command")
            yield Static("", id="launch-state")
        with TabbedContent(id="logs"), TabPane("all", id="log-all"):
            yield Log(max_lines=MAX_LOG_LINES, id="log-all-lines")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = f"launch {self.engine.name}"
        if self.engine.ranks_known_up_front:  # one log tab per rank now; an engine's own ranks appear as they log
            for rank in range(self.plan.intent.gpus_per_node):
                self._rank_log(rank)
        self._show_command()
        self._show_state()
        self.set_interval(FLUSH_S, self._flush)
        self.query_one("#log-all-lines", Log).focus()

    def prepared(self) -> tuple[list[list[str]], list[Any]]:
        """The commands (one per node) and the refusals, exactly as `advisor launch` prepares them."""
        return prepare_launch(self.plan, mode=self.mode)

    def argv(self) -> list[str]:
        """Node 0's command (the one started here); ValueError with the reason when there is none."""
        commands, refusals = self.prepared()
        if not commands:
            raise ValueError(next(r.message for r in refusals if r.kind == NO_COMMAND))
        return commands[0]

    def _show_command(self) -> None:
        commands, refusals = self.prepared()
        if commands:
            text = Text(f"$ {clean(shlex.join(commands[0]), newlines=False)}")
            for rank, argv in enumerate(commands[1:], start=1):  # started here: node 0 only
                text.append(f"\non node {rank}, run yourself: {shlex.join(argv)}", style="dim")
            if len(commands) > 1:
                text.append("\nj writes a SLURM, Kubernetes or SkyPilot job that starts every node", style="dim")
        else:  # the plan cannot become a command
            text = Text(f"✗ {next(r.message for r in refusals if r.kind == NO_COMMAND)}", style="bold red")
        self.query_one("#launch-command", Static).update(text)

    def _show_state(self) -> None:
        run, state = self.run, self.state
        text = Text()
        if state == "not started":
            text.append("○ not started", style="bold")
            text.append(" · enter starts it, escape goes back")
            if self.plan.facts.is_simulated:
                machine = self.plan.facts.source.split(":", 1)[1]
                text.append(
                    f"\n! the plan was made for a simulated machine ({machine}); it would start here, on this one",
                    style="yellow",
                )
            errors = [p for p in self.plan.problems if p.severity == "error"]
            if errors:
                text.append(f"\n✗ the plan has {len(errors)} error(s): {clean(errors[0].message)}", style="red")
                text.append("\n  press enter twice to start anyway", style="dim")
        elif state == "starting":
            text.append("◌ starting…", style="bold yellow")
        elif state == "ready":
            text.append("● ready", style="bold green")
            text.append(f" at {run.url}" if run.url else "")
        elif state == "exited":
            text.append(f"✓ finished (exit {run.returncode})", style="bold green")
        elif state == "failed":
            text.append(f"✗ {clean(str(run.failure or 'failed'))}", style="bold red")
        elif state == "stopped":
            text.append("■ stopped", style="bold")
        else:
            text.append(state)
        if run is not None:
            text.append(f"\nlogs: {run.run_dir}", style="dim")
            if state in ("starting", "ready"):
                text.append(" · s stops it", style="dim")
        self.query_one("#launch-state", Static).update(text)

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id == "mode" and event.value is not Select.NULL:
            self.mode = str(event.value)
            self._show_command()

    # -- starting and stopping -------------------------------------------------------------------------------------------
    def action_start(self) -> None:
        if self.run is not None and not self.run.done:
            self.notify("Already running; s stops it.")
            return
        commands, refusals = self.prepared()
        # The plan's errors need a second enter (as --force); a simulated machine's plan starts here, as the state
        # line says; every other refusal of `advisor launch` stops it here too.
        if any(r.kind == PLAN_ERRORS for r in refusals) and not self._confirmed_errors:
            self._confirmed_errors = True
            self.notify("The plan has errors. Press enter again to start anyway.", severity="warning")
            return
        blocking = [r for r in refusals if r.kind not in (PLAN_ERRORS, OTHER_MACHINE)]
        if blocking:
            self.notify(clean(blocking[0].message), severity="error")
            return
        argv = commands[0]
        self.state = "starting"
        self._show_state()
        if self.query("#mode"):
            self.query_one("#mode", Select).disabled = True
        self._start(argv)

    @work(thread=True, exclusive=True, group="launch")
    def _start(self, argv: list[str]) -> None:
        try:
            run = spawn.start(argv, on_line=self._on_line, ready=self.engine.ready or None)
        except (OSError, ValueError) as exc:
            self.app.call_from_thread(self._start_failed, str(exc))
            return
        accepted = self.app.track_run(run)
        with self._lock:
            self.run = run
        if self._leaving or not accepted:  # escape or quit came while the process was being created
            run.stop()

    def _start_failed(self, message: str) -> None:
        self.state = "not started"
        self._show_state()
        self.notify(f"Could not start: {message}", severity="error")

    def _on_line(self, line: Any) -> None:
        """Called from spawn's reader thread: only queue it."""
        self._lines.append(line)

    def _flush(self) -> None:
        """UI thread, every FLUSH_S: move queued lines to the logs and follow the run's state."""
        if self._lines:
            batch = []
            while self._lines:
                batch.append(self._lines.popleft())
            self.query_one("#log-all-lines", Log).write_lines([clean(str(line), newlines=False) for line in batch])
            by_rank: dict[int, list[str]] = {}
            for line in batch:
                if line.rank is not None:
                    by_rank.setdefault(line.rank, []).append(clean(line.text, newlines=False))
            for rank, texts in sorted(by_rank.items()):
                self._rank_log(rank).write_lines(texts)
        run = self.run
        if run is not None and run.state != self.state:
            self.state = run.state
            self._show_state()
            self.refresh_bindings()

    def _rank_log(self, rank: int) -> Log:
        if rank not in self._ranks:
            self._ranks.add(rank)
            log = Log(max_lines=MAX_LOG_LINES, id=f"log-rank-{rank}-lines")
            self.query_one("#logs", TabbedContent).add_pane(TabPane(f"rank {rank}", log, id=f"log-rank-{rank}"))
            return log
        return self.query_one(f"#log-rank-{rank}-lines", Log)

    def action_stop(self) -> None:
        if self.run is None or self.run.done:
            self.notify("Nothing running.")
            return
        self.notify("Stopping…", timeout=2)
        self._stop(leave=False)

    def action_leave(self) -> None:
        """Going back stops the engine: nothing started here outlives the screen."""
        self._leaving = True
        if self.run is not None and not self.run.done:
            self.notify("Stopping the engine…", timeout=2)
            self._stop(leave=True)
        else:
            self.dismiss()

    @work(thread=True, exclusive=True, group="stop")
    def _stop(self, leave: bool) -> None:
        run = self.run
        if run is not None:
            run.stop()
        self.app.call_from_thread(self._flush)
        if leave:
            self.app.call_from_thread(self.dismiss)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        running = self.run is not None and not self.run.done
        if action == "start":
            return not running
        if action == "stop":
            return running
        if action == "write_job":  # a scheduler job is for a plan over several nodes; hidden otherwise
            return self.plan.intent.nnodes > 1
        return True

    def action_write_job(self) -> None:
        """The scheduler's job file for this plan (`advisor launch --on TARGET -o FILE`), written from a dialog."""
        from advisor.tui.screens.job import JobScreen

        self.app.push_screen(JobScreen(self.plan))
