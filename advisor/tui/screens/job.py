"""Write a multi-node plan's scheduler job (`advisor launch --on TARGET -o FILE`, advisor.schedulers): which scheduler,
and where to."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Input, Label, Select

from advisor.plan import Plan
from advisor.schedulers import TARGETS, JobSettings, job_text
from advisor.schedulers.job import JobError
from advisor.tui.screens.dialog import Dialog
from advisor.tui.widgets.save_path import SavePathForm, Writer
from launcher.files import expand_user, write_text_atomic

SUFFIX = {"slurm": ".sbatch", "kubernetes": ".yaml", "skypilot": ".sky.yaml"}


def default_path(plan: Plan, target: str) -> str:
    return f"{plan.intent.engine}-job{SUFFIX.get(target, '.txt')}"


def write_job_file(plan: Plan, target: str, path: str | Path) -> Path:
    """The job written atomically to ``path``; JobError when the plan cannot become one, OSError when the file
    cannot be written (FileRefused names the path)."""
    text = job_text(plan, target, JobSettings())
    path = expand_user(path)
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
            yield SavePathForm(default_path(self._plan, self._target), write=self._writer(self._target),
                               what=f"{self._target} job", input_id="job-path", action=("Write", "write"),
                               refusals=(JobError,))  # fmt: skip

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def _writer(self, target: str) -> Writer:
        return partial(write_job_file, self._plan, target)

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.value is Select.NULL:
            return
        form = self.query_one(SavePathForm)
        if form.path.value == default_path(self._plan, self._target):  # the user's own name stays
            form.path.value = default_path(self._plan, str(event.value))
        self._target = str(event.value)
        form.write, form.what = self._writer(self._target), f"{self._target} job"

    def on_save_path_form_saved(self, event: SavePathForm.Saved) -> None:
        self.dismiss(event.path)

    def on_save_path_form_cancelled(self) -> None:
        self.dismiss(None)
