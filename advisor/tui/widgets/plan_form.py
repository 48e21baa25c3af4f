"""The plan form: model, tp, nodes, DP attention, dp size, MoE a2a backend, engine, release, the engine's own arguments
and the machine.

It only reports what the user changed (a `PlanForm.Changed` message with option names and values); the screen owns the
options and decides when to re-evaluate.
"""

from __future__ import annotations

import shlex
from typing import Any

from textual.app import ComposeResult
from textual.containers import Grid
from textual.message import Message
from textual.suggester import SuggestFromList
from textual.widget import Widget
from textual.widgets import Input, Label, Select, Static

from advisor.rules import registry
from advisor.rules.registry import names as engine_names
from advisor.rules.sglang.common import MOE_A2A_BACKENDS
from advisor.tui.session import FILE, LIVE, profile_choice, releases_for


def model_placeholder(engine: str | None) -> str:
    """What the empty model field stands for under ``engine`` (None: not resolved yet): the demo model only where the
    engine runs one, so the field never offers a model the plan then says is missing."""
    if engine is None or engine not in registry.names():
        return "model id or directory"
    if registry.get(engine).demo_tp is not None:
        return "demo model"
    return f"required by {engine}: an id or a directory"


DIGITS = r"\d*"  # the numeric fields take digits only (no validator: its -valid/-invalid classes restyle on mount)


def _field(value: str, **kwargs: Any) -> Input:
    """A compact Input that never validates: the form has no validators, and Input's own validation (on every change
    and on blur) would restyle the field each time and take away the -invalid class the engine arguments set."""
    return Input(value, compact=True, validate_on=(), **kwargs)


# Each control's name in the first column, by the control's id, top to bottom.
LABELS = {
    "model": "Model",
    "tp": "TP",
    "nnodes": "Nodes",
    "dp_attention": "DP attn",
    "dp_size": "DP size",
    "moe_a2a_backend": "MoE a2a",
    "engine": "Engine",
    "engine_version": "Release",
    "engine_args": "Args",
    "profile": "Machine",
}


class PlanForm(Grid):
    """Two columns: each control's name (a Label, highlighted while its control has focus) and the compact control."""

    # The error line under the engine arguments spans both columns: mounted the first time a quote is left open,
    # shown while one is.
    DEFAULT_CSS = """
    PlanForm {
        grid-size: 2;
        grid-columns: 8 1fr;
        grid-rows: 1;
        grid-gutter: 0 1;
        height: auto;
        & > Label {
            color: $text-muted;
            &.-focused {
                color: $accent;
                text-style: bold;
            }
        }
        & > Input, & > Select {
            width: 1fr;
        }
        /* Compact controls have no border, so mark the focused one clearly (single-letter keys act when no field
           has focus). */
        & > Input:focus, & > Select:focus > SelectCurrent {
            background: $primary 40%;
        }
        & > #engine_args_error {
            column-span: 2;
            color: $error;
            display: none;
            &.-shown {
                display: block;
            }
        }
    }
    """

    class Changed(Message):
        def __init__(self, changes: dict[str, Any]) -> None:
            super().__init__()
            self.changes = changes

    class ProfileChanged(Message):
        def __init__(self, choice: str) -> None:
            super().__init__()
            self.choice = choice

    def __init__(self, options: Any, models: list[str], profiles: list[tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._options = options
        self._models = models
        self._profiles = profiles
        self._facts_file = options.facts_file
        # What the controls show, to drop the Changed events Textual posts when the controls mount (and echoes).
        self._values: dict[str, Any] = {
            "model": options.model,
            "tp": options.tp,
            "nnodes": options.nnodes,
            "dp_attention": bool(options.dp_attention),
            "dp_size": options.dp_size,
            "moe_a2a_backend": options.moe_a2a_backend or "none",
            "engine": options.engine,
            "engine_version": options.engine_version,
            "overrides": tuple(options.overrides),
            "profile": profile_choice(options),
        }

    def _report(self, changes: dict[str, Any]) -> None:
        """Post only what differs from what the form last reported."""
        fresh = {k: v for k, v in changes.items() if self._values.get(k, object()) != v}
        if fresh:
            self._values.update(fresh)
            self.post_message(self.Changed(fresh))

    def compose(self) -> ComposeResult:
        for control in self._controls(self._options):
            yield Label(LABELS[control.id or ""], id=f"{control.id}-label")
            yield control

    def _controls(self, o: Any) -> list[Widget]:
        return [
            _field(
                o.model or "",
                placeholder=model_placeholder(o.engine),
                suggester=SuggestFromList(self._models, case_sensitive=False),
                id="model",
                tooltip="Model id (catalog or HF cache) or a directory; → accepts a suggestion",
            ),
            _field(_int_text(o.tp), placeholder="auto", restrict=DIGITS, id="tp"),
            _field(_int_text(o.nnodes), placeholder="1", restrict=DIGITS, id="nnodes"),
            _select([("off", False), ("on", True)], bool(o.dp_attention), "dp_attention"),
            _field(_int_text(o.dp_size), placeholder="1", restrict=DIGITS, id="dp_size"),
            _select(
                _with_current([(b, b) for b in MOE_A2A_BACKENDS], o.moe_a2a_backend),
                o.moe_a2a_backend or "none",
                "moe_a2a_backend",
            ),
            _select(_with_current([(e, e) for e in engine_names()], o.engine), o.engine, "engine", blank="default"),
            _select(
                self._release_options(o.engine, o.engine_version),
                o.engine_version,
                "engine_version",
                blank="installed/newest",
            ),
            _field(
                shlex.join(o.overrides),
                placeholder="engine args, e.g. -O0",
                id="engine_args",
                tooltip="The engine's own arguments, as after `--` on the command line (quoted like a shell line)",
            ),
            _select(
                _with_current(self._machine_options(), profile_choice(o)),
                profile_choice(o),
                "profile",
                tooltip="Probe this machine, or explain on a simulated one (what-if)",
            ),
        ]

    def _release_options(self, engine: str | None, current: str | None) -> list[tuple[str, str]]:
        releases = releases_for(engine or "")
        if current and current not in releases:
            releases = [*releases, current]
        return [(r, r) for r in reversed(releases)]  # newest first

    def _machine_options(self) -> list[tuple[str, str]]:
        options = [("this machine (live)", LIVE)]
        if self._facts_file:
            options.append((f"file {self._facts_file}", FILE))
        options.extend((f"{name} (simulated)", name) for name, _ in self._profiles)
        return options

    def _control_of(self, widget: Widget) -> Widget | None:
        """The form's control that holds a widget (a Select's list is a widget inside the Select)."""
        for node in (widget, *widget.ancestors):
            if node.parent is self:
                return node
        return None

    def on_descendant_focus(self, event) -> None:
        control = self._control_of(event.widget)
        for label in self.query(Label):
            label.set_class(control is not None and label.id == f"{control.id}-label", "-focused")

    def on_descendant_blur(self, event) -> None:
        self.query(Label).remove_class("-focused")

    @property
    def model_input(self) -> Input:
        return self.query_one("#model", Input)

    def show_engine(self, engine: str | None) -> None:
        """The engine the plan resolved (the form's "default" picks it from the machine): the model field says what an
        empty entry means under it."""
        self.model_input.placeholder = model_placeholder(engine)

    # -- reading the controls ------------------------------------------------------------------------------------------
    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        key = event.input.id
        value: Any = event.value.strip()
        if key == "model":
            self._report({"model": value or None})
            return
        if key == "engine_args":
            self._engine_args(event.input, value)
            return
        try:
            number = int(value) if value else None
        except ValueError:
            return  # a lone "-" while typing
        if key == "nnodes" and number is None:
            number = 1
        self._report({key: number})

    def _engine_args(self, field: Input, text: str) -> None:
        """Split as a shell would (as the CLI receives the words after `--`); a quote left open is shown below the
        field and the plan keeps the last arguments that could be read."""
        # The error line under the field is mounted the first time it is needed (not on the first screen).
        error = next(iter(self.query("#engine_args_error").results(Static)), None)
        try:
            words = tuple(shlex.split(text))
        except ValueError as exc:  # shlex: "No closing quotation", "No escaped character"
            message = f"engine args: {str(exc).lower()}; close the quote or escape it with \\"
            field.add_class("-invalid")
            if error is None:
                error = Static(id="engine_args_error")
                self.mount(error, after=field)
            error.update(f"✗ {str(exc).lower()}")
            error.tooltip = message
            error.add_class("-shown")
            return
        field.remove_class("-invalid")
        if error is not None:
            error.remove_class("-shown")
        self._report({"overrides": words})

    def on_select_changed(self, event: Select.Changed) -> None:
        event.stop()
        key = event.select.id
        value = event.select.selection  # None for the blank choice (the advisor's default)
        if key == "profile":
            choice = value or LIVE
            if choice != self._values["profile"]:
                self._values["profile"] = choice
                self.post_message(self.ProfileChanged(choice))
            return
        if key == "engine":
            if value == self._values["engine"]:
                return
            releases = self.query_one("#engine_version", Select)
            with releases.prevent(Select.Changed):
                releases.set_options(self._release_options(value, None))
            self._report({"engine": value, "engine_version": None})  # a release belongs to one engine
            return
        self._report({key: value})

    # -- writing the controls (from the palette or the profile picker), without echoing Changed -------------------------
    def set_profile(self, choice: str) -> None:
        select = self.query_one("#profile", Select)
        self._values["profile"] = choice
        with select.prevent(Select.Changed):
            select.value = choice

    def set_engine(self, engine: str, release: str | None) -> None:
        engine_select = self.query_one("#engine", Select)
        release_select = self.query_one("#engine_version", Select)
        self._values.update(engine=engine, engine_version=release)
        with engine_select.prevent(Select.Changed), release_select.prevent(Select.Changed):
            engine_select.value = engine
            release_select.set_options(self._release_options(engine, release))  # blank: installed/newest
            if release:
                release_select.value = release

    def set_layout(self, tp: int, nnodes: int, dp_attention: bool, dp_size: int) -> None:
        """Show a layout chosen in the Layouts tab (the screen updates its options itself)."""
        self._values.update(tp=tp, nnodes=nnodes, dp_attention=dp_attention, dp_size=dp_size)
        for key, number in (("tp", tp), ("nnodes", nnodes), ("dp_size", dp_size)):
            field = self.query_one(f"#{key}", Input)
            with field.prevent(Input.Changed):
                field.value = str(number)
        select = self.query_one("#dp_attention", Select)
        with select.prevent(Select.Changed):
            select.value = dp_attention


def _select(
    options: list[tuple[str, Any]], value: Any, select_id: str, *, blank: str | None = None, tooltip: str | None = None
) -> Select:
    """A compact Select; with ``blank`` it may stay blank (shown as ``blank``, selection None), which leaves the option
    to the advisor's default."""
    return Select(
        options,
        value=Select.NULL if value is None else value,
        prompt=blank or "",
        allow_blank=blank is not None,
        compact=True,
        id=select_id,
        tooltip=tooltip,
    )


def _with_current(options: list[tuple[str, Any]], current: Any) -> list[tuple[str, Any]]:
    """Keep a value the command line gave even when it is not a known choice (the plan then shows why it is wrong):
    a Select refuses a value that is not among its options."""
    if current is None or any(value == current for _, value in options):
        return options
    return [*options, (f"{current} (unknown)", current)]


def _int_text(value: int | None) -> str:
    return "" if value is None else str(value)
