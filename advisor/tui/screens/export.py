"""Export the plan as the `advisor check --json` object (advisor.report builds it; this only asks where)."""

from __future__ import annotations

from pathlib import Path

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Input, Label

from advisor.plan import Plan
from advisor.report import dumps, plan_to_dict
from advisor.tui.screens.dialog import Dialog
from launcher.files import FileRefused, write_text_atomic

DEFAULT_NAME = "advisor-plan.json"


def write_plan_json(plan: Plan, path: str | Path) -> Path:
    """Write atomically (a temporary file renamed into place), so a failed write leaves no half file; a path that is
    not a regular file is refused (launcher.files.FileRefused, an OSError), a symlink written through to its target."""
    path = Path(path).expanduser()
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
            yield Input(self._default, id="export-path")
            with Horizontal(classes="buttons"):
                yield Button("Save", id="save", variant="primary", compact=True)
                yield Button("Cancel", id="cancel", compact=True)

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self._save(event.value)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "save":
            self._save(self.query_one(Input).value)
        else:
            self.dismiss(None)

    def _save(self, raw: str) -> None:
        if not raw.strip():
            self.notify("Give a file name.", severity="warning")
            return
        self._write(raw.strip())

    @work(thread=True, exclusive=True)
    def _write(self, raw: str) -> None:
        try:
            path = write_plan_json(self._plan, raw)
        except OSError as exc:
            reason = str(exc) if isinstance(exc, FileRefused) else f"{raw}: {exc.strerror or exc}"  # FileRefused names the path
            self.app.call_from_thread(self.notify, f"Cannot write {reason}", severity="error")
            return
        self.app.call_from_thread(self.notify, f"Plan written to {path}", timeout=4)
        self.app.call_from_thread(self.dismiss, path)
