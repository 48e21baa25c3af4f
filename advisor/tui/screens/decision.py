"""One decision (or problem) on the whole screen: every condition, the notes, the source and the release matrix.

Opened with enter (or a click on the highlighted row) in the decision list; at 80x24 the detail pane beside the list
is small, this is the readable view.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Footer, Static

from advisor.plan import Plan
from advisor.rules.engine import Decision, Problem
from advisor.tui.render import decision_detail, problem_detail
from advisor.tui.screens.dialog import Dialog


class DecisionScreen(Dialog[None]):
    DEFAULT_CSS = """
    #decision-box {
        width: 100;
        max-width: 100%;
        height: 1fr;
        max-height: 100%;
    }
    """

    BINDINGS = [Binding("escape,enter,q", "dismiss", "Close")]

    def __init__(self, item: Decision | Problem, plan: Plan) -> None:
        super().__init__()
        self._item = item
        self._plan = plan

    def compose(self) -> ComposeResult:
        body = decision_detail(self._item, self._plan) if isinstance(self._item, Decision) else problem_detail(self._item)
        with VerticalScroll(id="decision-box", classes="dialog"):
            yield Static(body, id="decision-body")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#decision-box").focus()
