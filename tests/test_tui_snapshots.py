"""Snapshots of the main screen (pytest-textual-snapshot). Deterministic: simulated profiles (fixed hostnames and
packages), a fixed terminal size, no clock, and a fixed interpreter path in the command line.

Update after an intended change: pytest tests/test_tui_snapshots.py --snapshot-update
"""

from __future__ import annotations

import sys

import pytest
from tui_helpers import make_app, settle

QWEN3_VL = "Qwen/Qwen3-VL-235B-A22B-Instruct"


@pytest.fixture(autouse=True)
def fixed_interpreter(monkeypatch):
    # The resolved command starts with sys.executable, which differs between checkouts.
    monkeypatch.setattr(sys, "executable", "/usr/bin/python3")


def test_main_screen_b300_8(snap_compare):
    app = make_app(profile="b300-8", model=QWEN3_VL, tp=8, engine="sglang", engine_version="0.5.14")
    assert snap_compare(app, terminal_size=(80, 24), run_before=settle)


def test_machine_tab_b300_8_wide(snap_compare):
    app = make_app(profile="b300-8", model=QWEN3_VL, tp=8, engine="sglang", engine_version="0.5.14")

    async def run_before(pilot):
        await settle(pilot)
        await pilot.press("m")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


def test_main_screen_without_gpus(snap_compare):
    app = make_app(profile="cpu-only")
    assert snap_compare(app, terminal_size=(80, 24), run_before=settle)


def test_machine_tab_without_gpus(snap_compare):
    app = make_app(profile="cpu-only")

    async def run_before(pilot):
        await settle(pilot)
        await pilot.press("m")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)
