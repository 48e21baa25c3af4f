"""The detail pane: the highlighted decision's conditions, source and release matrix, or a problem and its fix."""

from __future__ import annotations

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from advisor.plan import Plan
from advisor.rules.engine import Decision, Problem
from advisor.sanitize import clean
from advisor.tui.render import DrawnOnce, decision_detail, problem_detail


class DetailPane(VerticalScroll, can_focus=True):
    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._shown: tuple[object, object] | None = None  # the (item, plan) on show, to skip drawing it again

    def compose(self):
        yield Static("", id="detail-body")

    def show(self, item: Decision | Problem | None, plan: Plan | None) -> None:
        if self._shown is not None and self._shown[0] is item and self._shown[1] is plan:
            return  # already shown: a new plan shows its first row at once, and its Highlighted message follows
        self._shown = (item, plan)
        body = self.query_one("#detail-body", Static)
        if item is None or plan is None:
            body.update("Select a decision to see why.")
        elif isinstance(item, Decision):
            body.update(DrawnOnce(decision_detail(item, plan)))  # measured, then painted: drawn once
        else:
            body.update(problem_detail(item))

    def show_error(self, message: str) -> None:
        self._shown = None
        self.query_one("#detail-body", Static).update(Text.assemble(("✗", "bold red"), " ", clean(message)))
