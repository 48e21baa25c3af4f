"""The resolved command line, with Copy and Launch buttons for mouse users (keys: c, l)."""

from __future__ import annotations

import shlex

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Static

from advisor.sanitize import clean


class ActionButton(Static, can_focus=True):
    """A compact one-line button that runs an action (a click, enter or space), styled like Textual's compact Button.
    Textual's Button carries 7 KB of CSS for variants the app does not use, parsed before the first screen."""

    DEFAULT_CSS = """
    ActionButton {
        width: auto;
        min-width: 8;
        height: 1;
        margin-left: 1;
        content-align: center middle;
        text-style: bold;
        background: $surface;
        color: $button-foreground;
        pointer: pointer;
    }
    ActionButton:hover {
        background: $surface-darken-1;
    }
    ActionButton.-primary {
        background: $primary;
        color: $button-color-foreground;
    }
    ActionButton.-primary:hover {
        background: $primary-darken-2;
    }
    ActionButton:focus {
        text-style: $button-focus-text-style;
        background-tint: $foreground 5%;
    }
    """

    BINDINGS = [Binding("enter,space", "press", "Press", show=False)]

    def __init__(self, label: str, action: str, *, id: str, primary: bool = False) -> None:  # noqa: A002
        super().__init__(label, id=id, classes="-primary" if primary else "")
        self.action = action

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.action_press()

    def action_press(self) -> None:
        self.call_later(self.app.run_action, self.action, default_namespace=self._parent)


class CommandBar(Vertical):
    def compose(self) -> ComposeResult:
        with Horizontal(id="command-head"):
            yield Static("Command", id="command-title")
            yield ActionButton("Copy", "screen.copy_command", id="copy")
            yield ActionButton("Launch", "screen.launch", id="launch", primary=True)
        yield Static("", id="argv")

    def show(self, argv: tuple[str, ...] | list[str] | None) -> None:
        text = clean(shlex.join(argv), newlines=False) if argv else "(no command: fix the errors above)"
        self.query_one("#argv", Static).update(Text(f"$ {text}" if argv else text, style="" if argv else "red"))
