"""Bare `advisor` opens the interactive app when it runs on a terminal: the check for that, and starting the app."""

from __future__ import annotations

import os
import sys

from advisor.context import AdvisorError, Options


def interactive_terminal() -> bool:
    """The app needs a terminal to draw on and one to read keys from, and one that understands its escape codes:
    TERM=dumb (an editor's shell buffer, a serial console) says it does not."""
    return sys.stdout.isatty() and sys.stdin.isatty() and os.environ.get("TERM") != "dumb"


def open_app(options: Options) -> None:
    """Run the app until it ends. A build without the app, or without textual, is an AdvisorError (exit 1)."""
    try:
        from advisor.tui.app import run_app  # textual: only when the app opens
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith("advisor.tui"):
            raise AdvisorError(
                "the interactive app is not available in this build; use `advisor check` (or `advisor --help`)"
            ) from None
        if exc.name == "textual":
            raise AdvisorError("the interactive app needs textual: pip install textual") from None
        raise
    run_app(options)
