"""The save-path form the app's file dialogs share (export the plan, write a scheduler job): a path field, the action
button and Cancel. On Enter or the button it writes the file in a worker thread with the writer it holds, says where it
went (or why not, the dialog staying open for another name) and posts :class:`SavePathForm.Saved`; Cancel posts
:class:`SavePathForm.Cancelled`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Button, Input

from launcher.files import FileRefused

# Writes the file at the path typed; OSError (FileRefused, naming the path) when it cannot.
Writer = Callable[[str], Path]


class SavePathForm(Vertical):
    DEFAULT_CSS = """
    SavePathForm {
        height: auto;
    }
    """

    class Saved(Message):
        def __init__(self, path: Path) -> None:
            super().__init__()
            self.path = path

    class Cancelled(Message):
        pass

    def __init__(self, default: str, *, write: Writer, what: str, input_id: str, action: tuple[str, str],
                 refusals: tuple[type[Exception], ...] = ()) -> None:  # fmt: skip
        """``write`` writes ``what`` ("Plan", "slurm job"); ``action`` is the button's (label, id); ``refusals`` are the
        writer's own errors, shown as their message."""
        super().__init__()
        self.write = write
        self.what = what
        self._default = default
        self._input_id = input_id
        self._action = action
        self._refusals = refusals

    def compose(self) -> ComposeResult:
        label, button_id = self._action
        yield Input(self._default, id=self._input_id)
        with Horizontal(classes="buttons"):
            yield Button(label, id=button_id, variant="primary", compact=True)
            yield Button("Cancel", id="cancel", compact=True)

    @property
    def path(self) -> Input:
        return self.query_one(Input)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._save(event.value)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == self._action[1]:
            self._save(self.path.value)
        else:
            self.post_message(self.Cancelled())

    def _save(self, raw: str) -> None:
        if not raw.strip():
            self.notify("Give a file name.", severity="warning")
            return
        self._write(self.write, self.what, raw.strip())  # the writer and its name as they are now, not when it runs

    @work(thread=True, exclusive=True)
    def _write(self, write: Writer, what: str, raw: str) -> None:
        try:
            path = write(raw)
        except self._refusals as exc:
            self.app.call_from_thread(self.notify, str(exc), severity="error")
            return
        except OSError as exc:
            # FileRefused names the path
            reason = str(exc) if isinstance(exc, FileRefused) else f"{raw}: {exc.strerror or exc}"
            self.app.call_from_thread(self.notify, f"Cannot write {reason}", severity="error")
            return
        self.app.call_from_thread(self.notify, f"{what} written to {path}", timeout=4)
        self.app.call_from_thread(self.post_message, self.Saved(path))
