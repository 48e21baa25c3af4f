"""The resolved command line, with Copy and Launch buttons for mouse users (keys: c, l)."""

from __future__ import annotations

import shlex

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Label, Static

from advisor.sanitize import clean


class CommandBar(Vertical):
    def compose(self) -> ComposeResult:
        with Horizontal(id="command-head"):
            yield Label("Command", id="command-title")
            yield Button("Copy", id="copy", action="screen.copy_command", compact=True)
            yield Button("Launch", id="launch", variant="primary", action="screen.launch", compact=True)
        yield Static("", id="argv")

    def show(self, argv: tuple[str, ...] | list[str] | None) -> None:
        text = clean(shlex.join(argv), newlines=False) if argv else "(no command: fix the errors above)"
        self.query_one("#argv", Static).update(Text(f"$ {text}" if argv else text, style="" if argv else "red"))
