"""Export the plan as the `advisor check --json` object (advisor.report builds it; this only asks where)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Input, Label

from advisor.plan import Plan
from advisor.report import dumps, plan_to_dict
from advisor.tui.screens.dialog import Dialog
from advisor.tui.widgets.save_path import SavePathForm
from launcher.files import expand_user, write_text_atomic

DEFAULT_NAME = "advisor-plan.json"


def write_plan_json(plan: Plan, path: str | Path) -> Path:
    """Write atomically (a temporary file renamed into place), so a failed write leaves no half file; a path that is
    not a regular file is refused (launcher.files.FileRefused, an OSError), a symlink written through to its target."""
    path = expand_user(path)
    write_text_atomic(path, dumps(plan_to_dict(plan)) + "\n", "plan")
    return path


class ExportScreen(Dialog[Path | None]):
    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel")]

    def __init__(self, plan: Plan, default: str = DEFAULT_NAME) -> None:
        super().__init__()
        self._plan = plan
        self._default = default

    def compose(self) -> ComposeResult:
        with Vertical(id="export-box", classes="dialog"):
            yield Label("Write the plan as JSON (the `advisor check --json` object) to:")
            yield SavePathForm(self._default, write=partial(write_plan_json, self._plan), what="Plan",
                               input_id="export-path", action=("Save", "save"))  # fmt: skip

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_save_path_form_saved(self, event: SavePathForm.Saved) -> None:
        self.dismiss(event.path)

    def on_save_path_form_cancelled(self) -> None:
        self.dismiss(None)
