"""Messages that cross widgets and threads."""

from __future__ import annotations

from textual.message import Message

from advisor.tui.session import Evaluation


class PlanEvaluated(Message):
    """Posted from the evaluation worker thread when a plan (or an error) is ready."""

    def __init__(self, evaluation: Evaluation) -> None:
        super().__init__()
        self.evaluation = evaluation
