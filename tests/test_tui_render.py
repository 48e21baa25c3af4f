"""advisor/tui/render.py's DrawnOnce: the decision detail drawn once per width, the same lines as drawn directly."""

from __future__ import annotations

import io

from rich.console import Console

from advisor.context import Options, make_plan
from advisor.tui.render import DrawnOnce, decision_detail

B300 = Options(profile="b300-8", model="Qwen/Qwen3-VL-235B-A22B-Instruct", tp=8, engine="sglang")


class Counting:
    def __init__(self, renderable) -> None:
        self.renderable, self.drawn = renderable, 0

    def __rich_console__(self, console, options):
        self.drawn += 1
        yield self.renderable


def lines(console: Console, renderable, width: int, **update) -> list[str]:
    options = console.options.update_width(width).update(highlight=False, **update)
    return ["".join(segment.text for segment in line) for line in console.render_lines(renderable, options)]


def test_the_detail_is_drawn_once_per_width_and_as_it_would_be_directly():
    console = Console(width=120, color_system=None, file=io.StringIO())
    plan = make_plan(B300)
    for decision in plan.decisions:
        inner = Counting(decision_detail(decision, plan))
        once = DrawnOnce(inner)
        direct = lines(console, decision_detail(decision, plan), 42)
        assert lines(console, once, 42) == direct  # measured (no height) ...
        assert lines(console, once, 42, height=len(direct)) == direct  # ... then painted at the measured height
        assert inner.drawn == 1, decision.id
        assert lines(console, once, 60) == lines(console, decision_detail(decision, plan), 60)
        assert inner.drawn == 2, decision.id
