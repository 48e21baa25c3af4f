"""The plan form: model, tp, nodes, DP attention, dp size, MoE a2a backend, engine, release, the engine's own arguments
and the machine.

It only reports what the user changed (a `PlanForm.Changed` message with option names and values); the screen owns the
options and decides when to re-evaluate.
"""

from __future__ import annotations

import shlex
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.suggester import SuggestFromList
from textual.widgets import Input, Static

from advisor.rules.registry import names as engine_names
from advisor.tui.session import FILE, LIVE, MOE_A2A_BACKENDS, profile_choice, releases_for
from advisor.tui.widgets.choice import Choice

DIGITS = r"\d*"  # the numeric fields take digits only (no validator: its -valid/-invalid classes restyle on mount)


def _field(value: str, **kwargs: Any) -> Input:
    """A compact Input that never validates: the form has no validators, and Input's own validation (on every change
    and on blur) would restyle the field each time and take away the -invalid class the engine arguments set."""
    return Input(value, compact=True, validate_on=(), **kwargs)


# Each control's name in the first column, by the control's id, top to bottom (the error line has no name).
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
    "engine_args_error": "",
    "profile": "Machine",
}


class PlanForm(Vertical):
    """Two columns: the names, drawn by the form itself beneath its children (a widget per name, then one Static and
    a container for the controls, made the first screen slower), and a compact control per option, one per line,
    indented past the names (advisor.tcss); the focused control's name is highlighted."""

    COMPONENT_CLASSES = {"plan-form--label", "plan-form--focused"}

    # The error line under the engine arguments: mounted the first time a quote is left open (so not styled by the
    # app's stylesheet, which holds the first screen's rules), shown while one is.
    DEFAULT_CSS = """
    #engine_args_error {
        color: $error;
        display: none;
        &.-shown {
            display: block;
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
        self._focused: str | None = None  # the id of the focused control, its name highlighted
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
        yield from self._controls(self._options)

    def _controls(self, o: Any) -> ComposeResult:
        yield _field(
            o.model or "",
            placeholder="demo model",
            suggester=SuggestFromList(self._models, case_sensitive=False),
            id="model",
            tooltip="Model id (catalog or HF cache) or a directory; → accepts a suggestion",
        )
        yield _field(_int_text(o.tp), placeholder="auto", restrict=DIGITS, id="tp")
        yield _field(_int_text(o.nnodes), placeholder="1", restrict=DIGITS, id="nnodes")
        yield Choice([("off", False), ("on", True)], value=bool(o.dp_attention), id="dp_attention")
        yield _field(_int_text(o.dp_size), placeholder="1", restrict=DIGITS, id="dp_size")
        yield Choice(
            _with_current([(b, b) for b in MOE_A2A_BACKENDS], o.moe_a2a_backend),
            value=o.moe_a2a_backend or "none",
            id="moe_a2a_backend",
        )
        yield _optional_select(_with_current([(e, e) for e in engine_names()], o.engine), o.engine, "default", "engine")
        yield _optional_select(
            self._release_options(o.engine, o.engine_version), o.engine_version, "installed/newest", "engine_version"
        )
        yield _field(
            shlex.join(o.overrides),
            placeholder="engine args, e.g. -O0",
            id="engine_args",
            tooltip="The engine's own arguments, as after `--` on the command line (quoted like a shell line)",
        )
        yield Choice(
            _with_current(self._machine_options(), profile_choice(o)),
            value=profile_choice(o),
            id="profile",
            tooltip="Probe this machine, or explain on a simulated one (what-if)",
        )

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

    def on_descendant_focus(self, event) -> None:
        self._focused = event.widget.id
        self.refresh()

    def on_descendant_blur(self, event) -> None:
        if self._focused == event.widget.id:
            self._focused = None
            self.refresh()

    def render(self) -> Text:
        """The names, one per control's line (the controls are drawn over the rest of each line)."""
        label_style = self.get_component_rich_style("plan-form--label")
        focused_style = self.get_component_rich_style("plan-form--focused")
        error_shown = bool(self.query("#engine_args_error.-shown"))
        text = Text(no_wrap=True, overflow="crop")
        for control, name in LABELS.items():
            if control == "engine_args_error" and not error_shown:
                continue
            if len(text):
                text.append("\n")
            text.append(name, focused_style if control == self._focused else label_style)
        return text

    @property
    def model_input(self) -> Input:
        return self.query_one("#model", Input)

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
        if key in ("nnodes", "dp_size") and number is None:
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
            self.refresh()
            return
        field.remove_class("-invalid")
        if error is not None and error.has_class("-shown"):
            error.remove_class("-shown")
            self.refresh()
        self._report({"overrides": words})

    def on_choice_changed(self, event: Choice.Changed) -> None:
        event.stop()
        key = event.choice.id
        value = event.value
        if key == "profile":
            choice = value or LIVE
            if choice != self._values["profile"]:
                self._values["profile"] = choice
                self.post_message(self.ProfileChanged(choice))
            return
        if key == "engine":
            if value == self._values["engine"]:
                return
            releases = self.query_one("#engine_version", Choice)
            with releases.prevent(Choice.Changed):
                releases.set_options(self._release_options(value, None))
            self._report({"engine": value, "engine_version": None})  # a release belongs to one engine
            return
        self._report({key: value})

    # -- writing the controls (from the palette or the profile picker), without echoing Changed -------------------------
    def set_profile(self, choice: str) -> None:
        select = self.query_one("#profile", Choice)
        self._values["profile"] = choice
        with select.prevent(Choice.Changed):
            select.value = choice

    def set_engine(self, engine: str, release: str | None) -> None:
        engine_select = self.query_one("#engine", Choice)
        release_select = self.query_one("#engine_version", Choice)
        self._values.update(engine=engine, engine_version=release)
        with engine_select.prevent(Choice.Changed), release_select.prevent(Choice.Changed):
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
        select = self.query_one("#dp_attention", Choice)
        with select.prevent(Choice.Changed):
            select.value = dp_attention


def _optional_select(options: list[tuple[str, str]], value: str | None, default_text: str, select_id: str) -> Choice:
    """A choice that may stay blank (shown as ``default_text``, value None): blank leaves it to the advisor's default."""
    return Choice(options, value=value or None, prompt=default_text, id=select_id)


def _with_current(options: list[tuple[str, Any]], current: Any) -> list[tuple[str, Any]]:
    """Keep a value the command line gave even when it is not a known choice (the plan then shows why it is wrong):
    a Choice refuses a value that is not among its options."""
    if current is None or any(value == current for _, value in options):
        return options
    return [*options, (f"{current} (unknown)", current)]


def _int_text(value: int | None) -> str:
    return "" if value is None else str(value)
