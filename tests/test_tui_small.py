"""A terminal too small for the app: it says so instead of laying its screens out at that size (a dialog's OptionList
at width 0 made Textual raise), comes back as it was, and an app that Textual ends after an error exits non-zero."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from tui_helpers import make_app, settle

from advisor import cli, interactive
from advisor.tui import app as app_module
from advisor.tui.screens.too_small import MIN_HEIGHT, MIN_WIDTH, TooSmallMessage, TooSmallScreen

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


H100 = {"profile": "h100-sxm-8", "model": "Qwen/Qwen3-30B-A3B"}
TINY = [(1, 1), (2, 1), (1, 2), (0, 0), (0, 1), (3, 3), (10, 2), (MIN_WIDTH - 1, 24), (80, MIN_HEIGHT - 1)]


def message(app) -> str:
    widget = app.screen.query_one(TooSmallMessage)
    return " ".join(widget.lines())


async def test_a_resize_storm_at_1x1_shows_the_message_and_comes_back():
    app = make_app(**H100)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        rng = random.Random(30)
        for size in [(1, 1), *(rng.choice(TINY) for _ in range(40)), (1, 1)]:
            await pilot.resize_terminal(*size)
            await pilot.pause(0.005)
        await pilot.pause()
        assert isinstance(app.screen, TooSmallScreen)
        await pilot.resize_terminal(30, 8)
        await pilot.pause()
        assert "too small (30x8)" in message(app) and f"{MIN_WIDTH}x{MIN_HEIGHT}" in message(app)
        await pilot.press("question_mark", "p", "ctrl+p")  # nothing opens over the message
        await pilot.pause()
        assert isinstance(app.screen, TooSmallScreen)
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        assert app.screen is app.main
    assert app.return_code in (None, 0)


async def test_an_app_started_at_1x1_says_so_and_quits_with_q():
    app = make_app(**H100)
    async with app.run_test(size=(1, 1)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, TooSmallScreen)
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        assert app.screen is app.main
        await pilot.resize_terminal(1, 1)
        await pilot.pause()
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0


def test_an_app_textual_ends_after_an_error_exits_3_with_one_error_line(monkeypatch, capsys, empty_hf_cache):
    class Crashing(app_module.AdvisorApp):
        CSS_PATH = str(Path(app_module.__file__).with_name("advisor.tcss"))

        def on_ready(self) -> None:
            raise RuntimeError("boom")

        def run(self, **kwargs):
            return super().run(headless=True, size=(80, 24))

    monkeypatch.setattr(app_module, "AdvisorApp", Crashing)
    monkeypatch.setattr(interactive, "interactive_terminal", lambda: True)
    with pytest.raises(SystemExit) as exited:
        cli.main(["--profile", "h100-sxm-8", "--model", "Qwen/Qwen3-30B-A3B"], prog_name="advisor")
    assert exited.value.code == app_module.APP_CRASHED == 3
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert lines == [
        "error: the interactive app stopped after an internal error (shown above); `advisor check` prints the same plan"
    ], err
    assert err.endswith(lines[0] + "\n")


# Every dialog the app opens over the main screen, by the key that opens it.
DIALOGS = {"question_mark": "HelpScreen", "p": "ProfileScreen", "e": "ExportScreen", "v": "DiffScreen",
           "l": "LaunchScreen", "ctrl+p": "CommandPalette"}  # fmt: skip


@pytest.mark.parametrize("key", DIALOGS)
async def test_a_dialog_open_while_the_terminal_shrinks_to_1x1_and_grows_comes_back_as_it_was(key):
    """The app handles a resize before Textual has taken the new size: going back from the too-small screen laid the
    dialog out at the old size (1x1), where its OptionList raised (exit 3)."""
    app = make_app(**H100)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press(key)
        await pilot.pause(0.2)
        dialog = app.screen
        assert type(dialog).__name__ == DIALOGS[key]
        rng = random.Random(key)
        for _ in range(3):
            for size in [(1, 1), *(rng.choice(TINY) for _ in range(4))]:
                await pilot.resize_terminal(*size)
                await pilot.pause(0.005)
            assert isinstance(app.screen, TooSmallScreen)
            await pilot.resize_terminal(rng.randint(MIN_WIDTH, 120), rng.randint(MIN_HEIGHT, 40))
            await pilot.pause(0.05)
            assert app.screen is dialog
    assert app.return_code in (None, 0)
