"""`advisor verify` in the app (`g` on the main screen): an engine start-up log against the plan for the same launch,
on the machine the app plans for (this one or the chosen profile)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Footer, Input, Static

from advisor.tui.screens.dialog import Dialog


class VerifyScreen(Dialog[None]):
    DEFAULT_CSS = """
    #verify-box {
        width: 90%;
        height: 90%;
        border: round $primary;
        background: $surface;
        padding: 0 1;
    }
    #verify-scroll {
        height: 1fr;
    }
    """

    BINDINGS = [Binding("escape", "dismiss", "Close")]

    def __init__(self, options: Any) -> None:
        super().__init__()
        self._options = options  # the machine (profile / facts / live) comes from here; the launch from the log
        self.lines: list[str] = []

    def compose(self) -> ComposeResult:
        with Vertical(id="verify-box", classes="dialog"):
            yield Static("Compare an engine's start-up log (SGLang or vLLM) with the plan for the same launch:")
            yield Input(placeholder="path of the log file, then enter", id="verify-path")
            with VerticalScroll(id="verify-scroll"):
                yield Static("", id="verify-body")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#verify-path", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        path = event.value.strip()
        if path:
            self.lines = []
            self.query_one("#verify-body", Static).update("reading…")
            self._verify(path)

    @work(thread=True, exclusive=True, group="verify")
    def _verify(self, path: str) -> None:
        from advisor.context import AdvisorError
        from advisor.verify.compare import verify
        from advisor.verify.report import read_logs, verification_lines

        # The launch is the log's: only the machine options carry over from the form.
        machine = replace(type(self._options)(), profile=self._options.profile, facts_file=self._options.facts_file,
                          python=self._options.python, with_package=self._options.with_package)  # fmt: skip
        try:
            lines = verification_lines(verify(read_logs((path,)), machine))
        except AdvisorError as exc:
            lines = [f"error: {exc.message}"]
        self.app.call_from_thread(self._show, lines)

    def _show(self, lines: list[str]) -> None:
        self.lines = lines
        self.query_one("#verify-body", Static).update("\n".join(lines))
