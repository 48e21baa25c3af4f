"""The resolved command line, with Copy and Launch buttons for mouse users (keys: c, l)."""

from __future__ import annotations

import shlex

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Label, Static

from advisor.sanitize import clean

NO_COMMAND = "(no command: fix the errors above)"


class CommandBar(Vertical):
    """"Command" and the Copy and Launch buttons on the first line, the command line below it, wrapped.

    The buttons run the screen's copy_command and launch actions (c and l anywhere on the main screen); left and right
    move between them, as along a toolbar, and space presses one as enter does."""

    DEFAULT_CSS = """
    CommandBar {
        & > #command-head {
            height: 1;
        }
        & #command-title {
            width: 1fr;
            text-style: bold;
        }
        & Button {
            margin-left: 1;
            min-width: 8;
        }
        & > #argv {
            height: 1fr;
        }
    }
    """

    BINDINGS = [
        Binding("left", "move(-1)", "Previous button", show=False),
        Binding("right", "move(1)", "Next button", show=False),
        Binding("space", "press", "Press", show=False),
    ]

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id)
        self.argv = Text("")  # what the line below the buttons shows (show())

    def compose(self) -> ComposeResult:
        with Horizontal(id="command-head"):
            yield Label("Command", id="command-title")
            yield Button("Copy", id="copy", action="screen.copy_command", compact=True)
            yield Button("Launch", id="launch", variant="primary", action="screen.launch", compact=True)
        yield Static("", id="argv")

    def show(self, argv: tuple[str, ...] | list[str] | None) -> None:
        text = clean(shlex.join(argv), newlines=False) if argv else NO_COMMAND
        self.argv = Text(f"$ {text}" if argv else text, style="" if argv else "red")
        self.query_one("#argv", Static).update(self.argv)

    def action_move(self, step: int) -> None:
        buttons = list(self.query(Button))
        focused = self.screen.focused
        if focused in buttons:
            buttons[(buttons.index(focused) + step) % len(buttons)].focus()

    def action_press(self) -> None:
        focused = self.screen.focused
        if isinstance(focused, Button) and focused in self.query(Button):
            focused.press()
