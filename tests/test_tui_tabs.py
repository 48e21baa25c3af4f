"""The main screen's tab bar (advisor/tui/widgets/tab_bar.py): clicks, left/right, the underline, and focus that brings
its tab to the front, as Textual's TabbedContent behaved."""

from __future__ import annotations

import pytest
from textual.app import App
from textual.widgets import Input, Tab, Tabs
from tui_helpers import make_app, screen_cells, settle

from advisor.tui.widgets.tab_bar import TabBar

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


def shown(app) -> list[str]:
    """The ids of the panes on display."""
    return [pane.id for pane in app.main.query_one("#panes").children if pane.display]


async def test_a_click_on_a_title_or_under_it_opens_its_tab_and_the_arrows_move_between_tabs(empty_hf_cache):
    app = make_app(profile="b300-8", model="Qwen/Qwen3-VL-235B-A22B-Instruct", tp=8, engine="sglang")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        bar = app.main.query_one(TabBar)
        assert (app.main.active_tab, shown(app)) == ("plan", ["plan"])
        assert (bar.highlight_start, bar.highlight_end) == (1, 5)  # under "Plan", the title without its padding
        await pilot.click(TabBar, offset=(18, 0))  # " Plan  Layouts  Machine ": on "Machine"
        await pilot.wait_for_animation()
        assert (app.main.active_tab, shown(app), app.focused) == ("machine", ["machine"], bar)
        assert (bar.highlight_start, bar.highlight_end) == (16, 23)
        assert app.main.query("MachinePanel")  # the hidden panels are mounted when a tab needs them
        await pilot.press("left")
        assert (app.main.active_tab, shown(app)) == ("layouts", ["layouts"])
        await pilot.press("right", "right")  # past the last tab to the first
        assert app.main.active_tab == "plan"
        await pilot.click(TabBar, offset=(9, 1))  # the underline beneath "Layouts"
        assert app.main.active_tab == "layouts"
        await pilot.click(TabBar, offset=(40, 0))  # beside the titles: nothing
        assert app.main.active_tab == "layouts"


async def test_focus_in_a_hidden_tab_brings_it_to_the_front(empty_hf_cache):
    app = make_app(profile="b300-8", model="Qwen/Qwen3-VL-235B-A22B-Instruct", tp=8, engine="sglang")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("t")  # the Layouts tab, its table focused
        await settle(pilot)
        app.main.set_focus(app.main.query_one("#model"))  # a field of the form, in the Plan tab
        await pilot.pause()
        assert (app.main.active_tab, shown(app)) == ("plan", ["plan"])


def test_an_unknown_tab_is_refused():
    bar = TabBar([("plan", "Plan"), ("machine", "Machine")], active="plan")
    with pytest.raises(ValueError, match="no tab 'layout'; the tabs are plan, machine"):
        bar.active = "layout"


class Framed(App):
    def __init__(self, tabs: type) -> None:
        super().__init__()
        self.tabs = tabs

    def compose(self):
        if self.tabs is Tabs:
            yield Tabs(Tab("Plan", id="plan"), Tab("Layouts", id="layouts"), Tab("Machine", id="machine"), active="plan")
        else:
            yield TabBar([("plan", "Plan"), ("layouts", "Layouts"), ("machine", "Machine")], active="plan")
        yield Input()


async def screens(tabs: type) -> list[list[list[tuple]]]:
    """The screen in each state: another widget focused, a title under the mouse, a tab clicked (focused, the
    underline slid under it), the mouse gone, left pressed, the focus elsewhere again."""
    app = Framed(tabs)
    shots = []
    async with app.run_test(size=(40, 5)) as pilot:
        app.query_one(Input).focus()
        await pilot.pause()
        shots.append(screen_cells(app))
        await pilot.hover(tabs, offset=(9, 0))
        shots.append(screen_cells(app))
        await pilot.click(tabs, offset=(18, 0))
        await pilot.pause(0.5)
        await pilot.wait_for_animation()
        shots.append(screen_cells(app))
        await pilot.hover(Input)
        shots.append(screen_cells(app))
        await pilot.press("left")
        await pilot.pause(0.5)
        await pilot.wait_for_animation()
        shots.append(screen_cells(app))
        app.query_one(Input).focus()
        await pilot.pause()
        shots.append(screen_cells(app))
    return shots


async def test_the_tab_bar_draws_what_textual_tabs_draw():
    expected, drawn = await screens(Tabs), await screens(TabBar)
    for state, (want, got) in enumerate(zip(expected, drawn, strict=True)):
        assert got == want, f"state {state} differs"
