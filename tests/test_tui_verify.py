"""The app's verify screen (`g`): a start-up log rendered from SGLang v0.5.9's format strings against the plan for the
same launch, on the app's machine (the h100-sxm-8 profile)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from tui_helpers import make_app, settle

from advisor.tui.screens.verify import VerifyScreen

pytestmark = pytest.mark.anyio
LOG = Path(__file__).resolve().parent / "fixtures" / "logs" / "sglang-0.5.9-llama-3.1-8b-tp8.log"


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture(autouse=True)
def offline(empty_hf_cache):
    pass


async def _lines(pilot, screen: VerifyScreen) -> str:
    deadline = time.monotonic() + 30
    while not screen.lines:
        if time.monotonic() > deadline:
            raise AssertionError("the verification did not finish")
        await pilot.pause(0.05)
    return "\n".join(screen.lines)


async def test_verify_screen_compares_a_log_and_reports_a_bad_path():
    app = make_app(profile="h100-sxm-8")
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await pilot.press("g")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, VerifyScreen)
        screen.query_one("#verify-path").value = str(LOG)
        await pilot.press("enter")
        text = await _lines(pilot, screen)
        assert text.startswith("sglang (release not logged)")
        assert "mem_fraction_static" in text and "agree" in text and "kv_cache_tokens = 4093636" in text
        screen.query_one("#verify-path").value = "/nonexistent/server.log"
        await pilot.press("enter")
        assert (await _lines(pilot, screen)).startswith("error: cannot read /nonexistent/server.log")
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.main
