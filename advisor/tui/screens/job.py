"""Write a multi-node plan's scheduler job (`advisor launch --on TARGET -o FILE`, advisor.schedulers): which scheduler,
and where to."""

from __future__ import annotations

from pathlib import Path

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Input, Label, Select

from advisor.plan import Plan
from advisor.schedulers import TARGETS, JobSettings, job_text
from advisor.schedulers.job import JobError
from advisor.tui.screens.dialog import Dialog
from launcher.files import FileRefused, write_text_atomic

SUFFIX = {"slurm": ".sbatch", "kubernetes": ".yaml", "skypilot": ".sky.yaml"}


def default_path(plan: Plan, target: str) -> str:
    return f"{plan.intent.engine}-job{SUFFIX.get(target, '.txt')}"


def write_job_file(plan: Plan, target: str, path: str | Path) -> Path:
    """The job written atomically to ``path``; JobError when the plan cannot become one, OSError when the file
    cannot be written (FileRefused names the path)."""
    text = job_text(plan, target, JobSettings())
    path = Path(path).expanduser()
    write_text_atomic(path, text, "job file")
    return path


class JobScreen(Dialog[Path | None]):
    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel")]

    def __init__(self, plan: Plan, target: str = "slurm") -> None:
        super().__init__()
        self._plan = plan
        self._target = target

    def compose(self) -> ComposeResult:
        with Vertical(id="job-box", classes="dialog"):
            yield Label("Write the scheduler's job for this multi-node plan (advisor launch --on):")
            yield Select(
                [(t, t) for t in TARGETS], value=self._target, allow_blank=False, id="job-target", compact=True
            )
            yield Input(default_path(self._plan, self._target), id="job-path")
            with Horizontal(classes="buttons"):
                yield Button("Write", id="write", variant="primary", compact=True)
                yield Button("Cancel", id="cancel", compact=True)

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.value is Select.NULL:
            return
        path = self.query_one(Input)
        if path.value == default_path(self._plan, self._target):  # the user's own name stays
            path.value = default_path(self._plan, str(event.value))
        self._target = str(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self._save(event.value)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "write":
            self._save(self.query_one(Input).value)
        else:
            self.dismiss(None)

    def _save(self, raw: str) -> None:
        if not raw.strip():
            self.notify("Give a file name.", severity="warning")
            return
        self._write(self._target, raw.strip())

    @work(thread=True, exclusive=True)
    def _write(self, target: str, raw: str) -> None:
        try:
            path = write_job_file(self._plan, target, raw)
        except JobError as exc:
            self.app.call_from_thread(self.notify, str(exc), severity="error")
            return
        except OSError as exc:
            reason = str(exc) if isinstance(exc, FileRefused) else f"{raw}: {exc.strerror or exc}"
            self.app.call_from_thread(self.notify, f"Cannot write {reason}", severity="error")
            return
        self.app.call_from_thread(self.notify, f"{target} job written to {path}", timeout=4)
        self.app.call_from_thread(self.dismiss, path)
