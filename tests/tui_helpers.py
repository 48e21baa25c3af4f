"""Helpers shared by the TUI tests: build the app, wait for the plan, read what is on screen."""

from __future__ import annotations

import os
import time

from advisor.context import Options
from advisor.tui.app import AdvisorApp


def make_app(**options) -> AdvisorApp:
    return AdvisorApp(Options(**options))


async def settle(pilot, timeout: float = 30.0) -> None:
    """Wait until the main screen has no pending debounce or evaluation worker, and the result is painted."""
    app = pilot.app
    deadline = time.monotonic() + timeout
    await pilot.pause()
    while app.main.busy or app.main.evaluation is None:
        if time.monotonic() > deadline:
            raise AssertionError("the plan was not re-evaluated in time")
        await pilot.pause(0.05)
    await pilot.pause()


def fusion(app: AdvisorApp):
    plan = app.main.evaluation.plan
    assert plan is not None, app.main.evaluation.error
    return plan.decision("flashinfer_allreduce_fusion")


def static_text(app: AdvisorApp, selector: str, width: int = 200) -> str:
    """The plain text a Static shows (its content rendered by rich, without styles)."""
    from rich.console import Console
    from textual.widgets import Static

    console = Console(width=width, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    console.print(app.main.query_one(selector, Static).content)
    return console.export_text()


def command_text(app: AdvisorApp) -> str:
    """The command bar's text below its buttons: "$ <command line>" or the error (widgets/command_bar.py)."""
    from advisor.tui.widgets.command_bar import CommandBar

    return app.main.query_one(CommandBar).argv.plain


def command_button(app: AdvisorApp, label: str) -> tuple[str, tuple[int, int]]:
    """Where pilot.click / pilot.hover aim to hit a button of the command bar ("Copy", "Launch"): its selector and the
    middle of its label."""
    selector = f"#{label.lower()}"
    return selector, (app.main.query_one(selector).region.width // 2, 0)


def shown_text(app, widget) -> list[str]:
    """The lines the screen shows where a widget is (its region), as plain text."""
    region = widget.region
    rows = ["".join(cell[0] for cell in row) for row in screen_cells(app)]
    return [rows[y][region.x : region.right] for y in range(region.y, region.bottom)]


def detail_text(app: AdvisorApp) -> str:
    return static_text(app, "#detail-body")


def screen_cells(app) -> list[list[tuple]]:
    """What each cell of the screen shows: (character, colour, background, bold), the colour and boldness only where
    there is a character to see. Two widgets that draw the same screen give the same cells, however their segments
    are split (a snapshot's SVG groups the text by segment)."""
    rows = []
    for chops in app.screen._compositor.render_full_update().strips:
        row = []
        for strip in chops:
            for text, style, _control in strip:
                for char in text:
                    visible = char != " " or bool(style and style.underline)
                    color = style.color if style and visible else None
                    bold = bool(style and style.bold) if visible else None
                    row.append((char, color, style.bgcolor if style else None, bold))
        rows.append(row)
    return rows
