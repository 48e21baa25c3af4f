"""The plan against another release of its engine (`v` on the main screen): what `advisor diff` prints, live."""

from __future__ import annotations

from typing import Any

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Footer, Select, Static

from advisor.tui.screens.dialog import Dialog


class DiffScreen(Dialog[None]):
    DEFAULT_CSS = """
    #diff-box {
        width: 90%;
        height: 90%;
        border: round $primary;
        background: $surface;
        padding: 0 1;
    }
    #diff-release {
        width: 20;
    }
    #diff-scroll {
        height: 1fr;
    }
    """

    BINDINGS = [Binding("escape,q", "dismiss", "Close")]

    def __init__(self, options: Any, release: str, releases: list[str], other: str) -> None:
        super().__init__()
        self._options = options
        self._release = release  # the plan's release
        self._releases = releases
        self.other = other
        self.lines: list[str] = []

    def compose(self) -> ComposeResult:
        with Vertical(id="diff-box", classes="dialog"):
            yield Static(f"Compare {self._options.engine} {self._release} with:", id="diff-head")
            yield Select([(r, r) for r in reversed(self._releases)], value=self.other, allow_blank=False,
                         id="diff-release", compact=True)  # fmt: skip
            with VerticalScroll(id="diff-scroll"):
                yield Static("comparing…", id="diff-body")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#diff-release", Select).focus()
        self._compare(self.other)

    def on_select_changed(self, event: Select.Changed) -> None:
        event.stop()
        if event.value is not Select.NULL and event.value != self.other:
            self.other = str(event.value)
            self.query_one("#diff-body", Static).update("comparing…")
            self._compare(self.other)

    @work(thread=True, exclusive=True, group="diff")
    def _compare(self, other: str) -> None:
        lines = self.app.session.diff_lines(self._options, self._release, other)
        self.app.call_from_thread(self._show, other, lines)

    def _show(self, other: str, lines: list[str]) -> None:
        if other != self.other:
            return  # a newer choice is being compared
        self.lines = lines
        self.query_one("#diff-body", Static).update("\n".join(lines))
