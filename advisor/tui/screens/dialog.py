"""The base of the app's dialogs (decision, diff, export, help, profile picker): centred over the main screen, and the
look of their `.dialog` box. Its DEFAULT_CSS is parsed when the first dialog opens, not before the first screen."""

from __future__ import annotations

from typing import TypeVar

from textual.screen import ModalScreen

ResultType = TypeVar("ResultType")


class Dialog(ModalScreen[ResultType]):
    DEFAULT_CSS = """
    Dialog {
        align: center middle;
    }
    Dialog .dialog {
        width: 76;
        max-width: 100%;
        height: auto;
        max-height: 90%;
        border: round $accent;
        background: $surface;
        padding: 0 1;
    }
    Dialog .dialog OptionList {
        height: auto;
        max-height: 16;
    }
    Dialog .dialog .buttons {
        height: auto;
        align-horizontal: right;
        margin-top: 1;
    }
    Dialog .dialog Button {
        margin-left: 1;
    }
    """
