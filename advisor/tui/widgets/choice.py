"""A one-line choice among fixed options, for the plan form.

Textual's Select is six widgets (the current value, its label, two arrows and a hidden OptionList with its options),
restyled several times while the screen starts; the form has five of them, and they were the largest part of the
time to the first screen (tests/benchmarks/bench_tui.py). A Choice is one widget that draws its current option; its
list is an OptionList in a small pop-up screen built when it is opened.

Keys: enter, space, up or down open the list; enter picks, escape closes it. A click opens it too. Setting ``value``
(from code or the list) posts ``Choice.Changed``; ``with choice.prevent(Choice.Changed)`` silences it.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any

from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Region
from textual.message import Message
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import OptionList


class InvalidChoiceError(ValueError):
    """The value is not one of the Choice's options."""


class Choice(Widget, can_focus=True):
    """One of ``options`` ((label, value) pairs); with a ``prompt`` it may also be blank (value None)."""

    DEFAULT_CSS = """
    Choice {
        width: 1fr;
        height: 1;
        background: $surface;
        color: $foreground;
        pointer: pointer;
    }
    Choice:focus {
        background: $primary 40%;
    }
    """

    BINDINGS = [Binding("enter,space,up,down", "open", "Show menu", show=False)]

    class Changed(Message):
        """The value changed (from the list or from code)."""

        def __init__(self, choice: Choice, value: Any) -> None:
            super().__init__()
            self.choice = choice
            self.value = value

        @property
        def control(self) -> Choice:
            return self.choice

    def __init__(
        self,
        options: Iterable[tuple[str, Hashable]],
        *,
        value: Any = None,
        prompt: str | None = None,
        id: str | None = None,  # noqa: A002  (Textual's name)
        tooltip: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.prompt = prompt
        self._options: list[tuple[str, Any]] = []
        self._value: Any = None
        self._set_options(options)
        if value is not None:
            self._check(value)
            self._value = value
        if tooltip is not None:
            self.tooltip = tooltip

    # -- options and value ---------------------------------------------------------------------------------------------
    @property
    def allow_blank(self) -> bool:
        return self.prompt is not None

    @property
    def options(self) -> list[tuple[str, Any]]:
        return list(self._options)

    def _set_options(self, options: Iterable[tuple[str, Hashable]]) -> None:
        self._options = list(options)
        if not self._options and not self.allow_blank:
            raise InvalidChoiceError("a Choice without a prompt needs at least one option")
        self._value = None if self.allow_blank else self._options[0][1]

    def set_options(self, options: Iterable[tuple[str, Hashable]]) -> None:
        """New options; the value becomes blank (or the first option when blank is not allowed)."""
        self._set_options(options)
        self.refresh()

    def _check(self, value: Any) -> None:
        if value is None and self.allow_blank:
            return
        if not any(v == value for _, v in self._options):
            raise InvalidChoiceError(f"{value!r} is not one of the options of {self.id or 'this choice'}")

    @property
    def value(self) -> Any:
        return self._value

    @value.setter
    def value(self, value: Any) -> None:
        self._check(value)
        if value == self._value and type(value) is type(self._value):
            return
        self._value = value
        self.refresh()
        self.post_message(self.Changed(self, value))

    def clear(self) -> None:
        if not self.allow_blank:
            raise InvalidChoiceError("this choice cannot be blank")
        self.value = None

    def is_blank(self) -> bool:
        return self._value is None

    @property
    def label(self) -> str:
        """The text shown for the current value."""
        for label, value in self._options:
            if value == self._value and (self._value is not None or not self.allow_blank):
                return label
        return self.prompt or ""

    # -- drawing and opening -------------------------------------------------------------------------------------------
    def render(self) -> Text:
        width = max(self.size.width - 3, 1)  # the label, then " ▼ " as Textual's compact Select draws it
        dim = "" if self._value is not None or not self.allow_blank else "dim"
        text = Text(self.label[:width].ljust(width), style=dim, no_wrap=True, overflow="ellipsis")
        text.append(" ▼ ", style="dim")
        return text

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.action_open()

    def action_open(self) -> None:
        labels = [(self.prompt, True) if value is None else (label, False) for label, value in self._all_choices()]
        current = next((i for i, (_, v) in enumerate(self._all_choices()) if v == self._value), 0)

        def picked(index: int | None) -> None:
            if index is not None:
                self.value = self._all_choices()[index][1]
            self.focus()

        self.app.push_screen(ChoiceMenu(labels, current, self.region), picked)

    def _all_choices(self) -> list[tuple[str, Any]]:
        blank = [(self.prompt or "", None)] if self.allow_blank else []
        return blank + self._options


class ChoiceList(OptionList):
    """The pop-up's list: a typed letter moves to the next option starting with it (as Select's list does), so
    letters never reach the screen's single-key bindings (q quits) while the list is open."""

    def check_consume_key(self, key: str, character: str | None = None) -> bool:
        return character is not None and character.isprintable()

    def on_key(self, event: events.Key) -> None:
        if event.character is None or not event.is_printable:
            return
        event.stop()
        event.prevent_default()
        letter, count = event.character.lower(), self.option_count
        start = (self.highlighted or 0) + 1
        for step in range(count):
            index = (start + step) % count
            if str(self.get_option_at_index(index).prompt).lower().startswith(letter):
                self.highlighted = index
                return


class ChoiceMenu(ModalScreen[int | None]):
    """The opened list, just below its Choice (above it when there is no room below); dismissed with the index
    picked, or None (escape, a click elsewhere)."""

    DEFAULT_CSS = """
    ChoiceMenu {
        background: transparent;
    }
    ChoiceMenu > OptionList {
        width: auto;
        height: auto;
        border: round $accent;
        background: $surface;
    }
    """

    BINDINGS = [Binding("escape", "dismiss_menu", "Close", show=False)]

    MAX_ROWS = 10

    def __init__(self, labels: list[tuple[str, bool]], current: int, field: Region) -> None:
        super().__init__()
        self._labels = labels
        self._current = current
        self._field = field

    def compose(self):
        menu = ChoiceList(*(Text(label, style="dim") if dim else label for label, dim in self._labels))
        field, screen_height = self._field, self.app.size.height
        height = min(len(self._labels), self.MAX_ROWS) + 2  # with the border
        below, above = field.bottom, field.y - height
        y = below if below + height <= screen_height or above < 0 else above
        menu.styles.max_height = height
        menu.styles.min_width = field.width + 2
        menu.styles.offset = (max(field.x - 1, 0), max(y, 0))  # the list's text starts under the field's text
        yield menu
    def on_mount(self) -> None:
        menu = self.query_one(OptionList)
        menu.highlighted = self._current
        menu.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option_index)

    def action_dismiss_menu(self) -> None:
        self.dismiss(None)

    def on_click(self, event: events.Click) -> None:
        if self.get_widget_at(event.screen_x, event.screen_y)[0] is self:
            self.dismiss(None)  # a click outside the list
