"""The app's keys live in advisor/tui/keys.py: the help screen documents them, and no screen binds a key twice."""

from __future__ import annotations

import pytest

pytest.importorskip("textual")

from advisor.tui import keys  # noqa: E402
from advisor.tui.app import AdvisorApp  # noqa: E402
from advisor.tui.screens.help import HELP  # noqa: E402
from advisor.tui.screens.launch import LaunchScreen  # noqa: E402
from advisor.tui.screens.main import MainScreen  # noqa: E402


def _keys(bindings) -> list[str]:
    return [key for binding in bindings for key in binding.key.split(",")]


def test_the_screens_bind_the_keys_module():
    assert AdvisorApp.BINDINGS is keys.APP
    assert MainScreen.BINDINGS is keys.MAIN
    assert LaunchScreen.BINDINGS is keys.LAUNCH


@pytest.mark.parametrize("bindings", [keys.APP + keys.MAIN, keys.APP + keys.LAUNCH], ids=["main", "launch"])
def test_no_key_is_bound_twice(bindings):
    found = _keys(bindings)
    assert len(found) == len(set(found)), found


def test_the_help_documents_every_key_of_the_app_and_the_main_screen():
    for binding in keys.APP + keys.MAIN:
        shown = binding.key_display or binding.key
        assert f"`{shown}`" in HELP, f"{shown} ({binding.action}) is missing from the help screen's table"

