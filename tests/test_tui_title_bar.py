"""The main screen's header (advisor/tui/widgets/title_bar.py) draws what Textual's Header draws, cell for cell: the
title and sub-title centred and cut with an ellipsis, the icon lit under the mouse, three lines tall after a click."""

from __future__ import annotations

import pytest
from textual.app import App
from textual.widgets import Header, Static
from tui_helpers import screen_cells

from advisor.tui.widgets.title_bar import TitleBar

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


class Framed(App):
    TITLE = "tp-advisor"

    def __init__(self, header: type) -> None:
        super().__init__()
        self.header = header

    def compose(self):
        yield self.header()
        yield Static("body")

    def on_mount(self) -> None:
        self.sub_title = "sim-b300-8 · simulated b300-8"


async def screens(header: type, width: int) -> list[list[list[tuple]]]:
    """The screen in each state: as it starts, the icon under the mouse, tall, tall with the icon under the mouse, and
    a sub-title too long for the room."""
    app = Framed(header)
    shots = []
    async with app.run_test(size=(width, 6)) as pilot:
        await pilot.pause()
        shots.append(screen_cells(app))
        await pilot.hover(header, offset=(2, 0))
        shots.append(screen_cells(app))
        await pilot.hover(Static)
        await pilot.click(header, offset=(30, 0))  # not the icon: the bar grows to three lines
        shots.append(screen_cells(app))
        await pilot.hover(header, offset=(2, 1))
        shots.append(screen_cells(app))
        app.sub_title = "a sub-title much longer than the room the header leaves for it between the icon and the clock"
        await pilot.pause()
        shots.append(screen_cells(app))
    return shots


@pytest.mark.parametrize("width", [80, 40])
async def test_the_title_bar_draws_what_textual_header_draws(width):
    expected, drawn = await screens(Header, width), await screens(TitleBar, width)
    for state, (want, got) in enumerate(zip(expected, drawn, strict=True)):
        assert got == want, f"state {state} differs"
    assert "tp-advisor" in "".join(cell[0] for cell in drawn[0][0])


async def test_a_click_on_the_icon_opens_the_command_palette():
    app = Framed(TitleBar)
    async with app.run_test(size=(80, 6)) as pilot:
        await pilot.click(TitleBar, offset=(1, 0))
        await pilot.pause()
        assert app.screen.__class__.__name__ == "CommandPalette"
