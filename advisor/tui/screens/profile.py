"""Pick the machine to explain on: this one (live) or a simulated profile."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from advisor.tui.render import profile_line
from advisor.tui.screens.dialog import Dialog
from advisor.tui.session import LIVE


class ProfileScreen(Dialog[str | None]):
    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel")]

    def __init__(self, profiles: list[tuple[str, str]], current: str | None) -> None:
        super().__init__()
        self._profiles = profiles
        self._current = current

    def compose(self) -> ComposeResult:
        with Vertical(id="profile-box", classes="dialog"):
            yield Label("Explain on which machine? (enter picks, escape cancels)")
            options = [Option("this machine (live probe)", id=LIVE)]
            options.extend(Option(profile_line(name, summary), id=name) for name, summary in self._profiles)
            yield OptionList(*options, id="profile-list")

    def on_mount(self) -> None:
        option_list = self.query_one(OptionList)
        ids = [LIVE] + [name for name, _ in self._profiles]
        if self._current in ids:
            option_list.highlighted = ids.index(self._current)
        option_list.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)
