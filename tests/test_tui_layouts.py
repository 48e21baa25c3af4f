"""The Layouts tab and the release comparison of the TUI, driven through Textual's Pilot with real profiles and rules."""

from __future__ import annotations

import time

import pytest
from textual.widgets import DataTable, Select
from tui_helpers import fusion, make_app, settle

from advisor.tui.screens.diff import DiffScreen
from advisor.tui.widgets.layouts import LayoutsPanel

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture(autouse=True)
def offline(empty_hf_cache):
    pass


async def layouts_settled(pilot, timeout: float = 30.0) -> LayoutsPanel:
    await settle(pilot)
    deadline = time.monotonic() + timeout
    while pilot.app.main.layouts_busy:
        if time.monotonic() > deadline:
            raise AssertionError("the layouts were not computed in time")
        await pilot.pause(0.05)
    await pilot.pause()
    return pilot.app.main.query_one(LayoutsPanel)


async def open_layouts(pilot) -> LayoutsPanel:
    """Wait for the first plan, open the layouts tab (`t`) and wait for its table."""
    await settle(pilot)
    await pilot.press("t")
    return await layouts_settled(pilot)


async def test_layouts_tab_follows_the_form_and_enter_puts_a_layout_in_the_form():
    app = make_app(profile="h100-sxm-8", model="Qwen/Qwen3-30B-A3B", tp=2, engine="sglang")
    async with app.run_test(size=(120, 34)) as pilot:
        panel = await open_layouts(pilot)
        assert app.main.active_tab == "layouts"
        report = panel.report
        assert report.model == "Qwen/Qwen3-30B-A3B"
        table = panel.query_one(DataTable)
        assert table.row_count == len(report.layouts) == 7
        assert table.cursor_row == report.recommended  # the cursor starts on the recommended layout
        assert str(table.get_row_at(report.recommended)[0]) == "★"

        # live with the form: another model re-computes the table
        app.main.query_one("#model").value = "Qwen/Qwen3-235B-A22B"
        await pilot.pause(0.3)
        panel = await layouts_settled(pilot)
        assert panel.report.model == "Qwen/Qwen3-235B-A22B"
        assert [lay.tp for lay in panel.report.layouts if lay.fits] == [8]

        # enter on the tp 8 row (no DP attention): the form and the plan take it
        app.main.set_focus(table)
        row = next(i for i, lay in enumerate(panel.report.layouts) if lay.tp == 8 and not lay.dp_attention)
        table.move_cursor(row=row)
        assert app.main.query_one("#tp").value == "2"
        await pilot.press("enter")
        await settle(pilot)
        assert app.main.active_tab == "plan"
        assert app.main.query_one("#tp").value == "8"
        assert app.main.evaluation.plan.intent.tp == 8 and not app.main.evaluation.plan.intent.dp_attention


async def test_choosing_a_dp_attention_layout_sets_the_form():
    app = make_app(profile="h100-sxm-8", model="Qwen/Qwen3-30B-A3B", tp=8, engine="sglang")
    async with app.run_test(size=(120, 34)) as pilot:
        panel = await open_layouts(pilot)
        table = panel.query_one(DataTable)
        row = next(i for i, lay in enumerate(panel.report.layouts) if lay.tp == 4 and lay.dp_attention)
        app.main.set_focus(table)
        table.move_cursor(row=row)
        await pilot.press("enter")
        await settle(pilot)
        intent = app.main.evaluation.plan.intent
        assert (intent.tp, intent.dp_attention, intent.dp_size) == (4, True, 4)
        assert app.main.query_one("#dp_attention", Select).value is True
        assert app.main.query_one("#dp_size").value == "4"
        assert not fusion(app).enabled  # DP attention blocks the fusion


async def test_diff_against_another_release_from_the_plan_view():
    app = make_app(profile="b300-8", model="Qwen/Qwen3-VL-235B-A22B-Instruct", tp=8, engine="sglang",
                   engine_version="0.5.13")  # fmt: skip
    async with app.run_test(size=(120, 34)) as pilot:
        await settle(pilot)
        assert not fusion(app).enabled
        await pilot.press("v")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, DiffScreen)

        async def body() -> str:
            deadline = time.monotonic() + 30
            while not screen.lines or screen.lines[0].startswith("comparing"):
                if time.monotonic() > deadline:
                    raise AssertionError("the comparison did not finish")
                await pilot.pause(0.05)
            return "\n".join(screen.lines)

        text = await body()  # against the newest release by default
        assert text.startswith("sglang 0.5.13 -> 0.5.23")
        assert "state: not-enabled -> auto-enabled" in text
        screen.lines = []
        screen.query_one("#diff-release", Select).value = "0.5.14"
        text = await body()
        assert text.startswith("sglang 0.5.13 -> 0.5.14")
        assert "flags: (none) -> --flashinfer-allreduce-fusion-backend auto" in text
        assert "PR #28786" in text
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.main


async def test_diff_key_on_the_bundled_engine_says_there_are_no_releases():
    app = make_app(profile="b300-8", engine="bundled")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("v")
        await pilot.pause()
        assert app.screen is app.main
        assert any("no releases" in str(n.message) for n in app._notifications)
