"""The main screen's tabs (Textual's TabbedContent): clicks, left/right, the keys that open a tab, and focus that brings
its tab to the front."""

from __future__ import annotations

import pytest
from textual.widgets import TabbedContent, Tabs
from tui_helpers import make_app, settle

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


B300 = {"profile": "b300-8", "model": "Qwen/Qwen3-VL-235B-A22B-Instruct", "tp": 8, "engine": "sglang"}


def shown(app) -> list[str]:
    """The ids of the panes on display."""
    return [pane.id for pane in app.main.query("#tabs TabPane") if pane.display]


async def test_a_click_on_a_title_opens_its_tab_and_the_arrows_move_between_tabs(empty_hf_cache):
    app = make_app(**B300)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        tabs = app.main.query_one(TabbedContent).query_one(Tabs)
        assert (app.main.active_tab, shown(app)) == ("plan", ["plan"])
        await pilot.click("#--content-tab-machine")
        await pilot.pause()
        assert (app.main.active_tab, shown(app), app.focused) == ("machine", ["machine"], tabs)
        assert app.main.query("MachinePanel")  # the hidden panels are mounted when a tab needs them
        await pilot.press("left")
        await pilot.pause()
        assert (app.main.active_tab, shown(app)) == ("layouts", ["layouts"])
        await pilot.press("right", "right")  # past the last tab to the first
        await pilot.pause()
        assert app.main.active_tab == "plan"


@pytest.mark.parametrize(("key", "tab", "focused"), [("m", "machine", "MachinePanel"), ("t", "layouts", "#layouts-table"),
                                                     ("d", "plan", "#decisions")])  # fmt: skip
async def test_the_tab_keys_open_their_tab_and_focus_it(empty_hf_cache, key, tab, focused):
    app = make_app(**B300)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.main.set_focus(app.main.query_one("#copy"))
        await pilot.press(key)
        await settle(pilot)
        assert (app.main.active_tab, shown(app)) == (tab, [tab])
        assert app.focused is app.main.query_one(focused)


async def test_focus_in_a_hidden_tab_brings_it_to_the_front(empty_hf_cache):
    app = make_app(**B300)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("t")  # the Layouts tab, its table focused
        await settle(pilot)
        app.main.set_focus(app.main.query_one("#model"))  # a field of the form, in the Plan tab
        await pilot.pause()
        assert (app.main.active_tab, shown(app)) == ("plan", ["plan"])
