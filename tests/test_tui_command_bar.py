"""The command bar (advisor/tui/widgets/command_bar.py): "Command", the Copy and Launch buttons and the resolved command
line. Its buttons answer the mouse (click, hover) and the keyboard (tab, left/right, enter/space)."""

from __future__ import annotations

import shlex

import pytest
from rich.color import Color as RichColor
from textual.widgets import Button
from tui_helpers import command_button, command_text, make_app, settle, shown_text

from advisor.tui.screens.launch import LaunchScreen
from advisor.tui.widgets.command_bar import NO_COMMAND, CommandBar

pytestmark = pytest.mark.anyio  # anyio's pytest plugin runs the async tests


@pytest.fixture
def anyio_backend():
    return "asyncio"


B300 = {"profile": "b300-8", "model": "Qwen/Qwen3-VL-235B-A22B-Instruct", "tp": 8, "engine": "sglang"}


def bar(app) -> CommandBar:
    return app.main.query_one(CommandBar)


def button(app, label: str) -> Button:
    return app.main.query_one(f"#{label.lower()}", Button)


def backgrounds(app, label: str) -> set:
    """The background of each cell of a button, as the screen draws it."""
    region = button(app, label).region
    return {app.screen.get_style_at(x, region.y).bgcolor for x in range(region.x, region.right)}


async def test_a_click_on_each_button_runs_its_action():
    app = make_app(**B300)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        plan = app.main.current_plan
        await pilot.click(*command_button(app, "Copy"))
        await pilot.pause()
        assert app.clipboard == shlex.join(plan.argv)
        assert app.screen is app.main

        await pilot.click(*command_button(app, "Launch"))
        await pilot.pause()
        assert isinstance(app.screen, LaunchScreen) and app.screen.plan is plan
        assert app.screen.run is None  # the launch screen asks before it starts anything, as the l key opens it
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.main


async def test_a_click_beside_the_buttons_runs_nothing_and_keeps_the_focus():
    app = make_app(**B300)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        focused = app.focused
        for selector in ("#command-title", "#argv"):  # the title, the command line
            await pilot.click(selector)
            await pilot.pause()
            assert app.clipboard == "" and app.screen is app.main and app.focused is focused, selector


async def test_the_button_under_the_mouse_is_highlighted():
    app = make_app(**B300)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        copy, launch = backgrounds(app, "Copy"), backgrounds(app, "Launch")
        assert len(copy) == len(launch) == 1 and copy != launch  # Launch is the primary button

        await pilot.hover(*command_button(app, "Copy"))
        await pilot.pause()
        assert backgrounds(app, "Copy") != copy and backgrounds(app, "Launch") == launch

        await pilot.hover(*command_button(app, "Launch"))
        await pilot.pause()
        assert backgrounds(app, "Copy") == copy and backgrounds(app, "Launch") != launch

        await pilot.hover("#command-title")
        await pilot.pause()
        assert backgrounds(app, "Copy") == copy and backgrounds(app, "Launch") == launch


async def test_the_keyboard_reaches_the_buttons_and_moves_between_them():
    app = make_app(**B300)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        plan = app.main.current_plan
        chain = app.main.focus_chain
        position = chain.index(button(app, "Copy"))
        chain[position - 1].focus()  # the form's last control
        await pilot.pause()

        await pilot.press("tab")
        await pilot.pause()
        assert app.focused is button(app, "Copy")
        await pilot.press("enter")
        await pilot.pause()
        assert app.clipboard == shlex.join(plan.argv)

        await pilot.press("right")
        await pilot.pause()
        assert app.focused is button(app, "Launch")
        await pilot.press("space")
        await pilot.pause()
        assert isinstance(app.screen, LaunchScreen) and app.screen.run is None
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.main and app.focused is button(app, "Launch")  # remembered

        await pilot.press("right")  # wraps around to Copy, as left does to Launch
        await pilot.pause()
        assert app.focused is button(app, "Copy")
        await pilot.press("left")
        await pilot.pause()
        assert app.focused is button(app, "Launch")

        await pilot.press("tab")  # past the last button: on to what follows the bar
        await pilot.pause()
        assert app.focused is chain[position + 2]


async def test_a_click_on_a_button_focuses_it():
    app = make_app(**B300)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.click(*command_button(app, "Launch"))
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        assert app.focused is button(app, "Launch")


async def test_a_long_command_wraps_and_stays_copyable():
    app = make_app(**B300)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        command = shlex.join(app.main.current_plan.argv)
        assert command_text(app) == "$ " + command
        head, *body = shown_text(app, bar(app).query_one("#command-head")) + shown_text(app, bar(app).query_one("#argv"))
        assert head.startswith("Command ") and head.rstrip().endswith(" Copy    Launch")
        body = [line.rstrip() for line in body if line.strip()]
        width = bar(app).content_region.width
        assert len(body) >= 3 and all(len(line) <= width for line in body)  # wrapped to the bar's width
        assert "".join("".join(line.split()) for line in body) == "$" + "".join(command.split())  # all of it

        await pilot.click(*command_button(app, "Copy"))
        await pilot.pause()
        assert app.clipboard == command  # one line, without the wrapping


async def test_the_bar_says_when_there_is_no_command(empty_hf_cache):
    app = make_app(profile="nosuch")
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        assert app.main.current_plan is None
        assert command_text(app) == NO_COMMAND
        argv = bar(app).query_one("#argv")
        assert " ".join(line.strip() for line in shown_text(app, argv) if line.strip()) == NO_COMMAND  # wrapped
        assert app.screen.get_style_at(argv.region.x, argv.region.y).color.triplet == RichColor.parse("#ff0000").triplet

        await pilot.click(*command_button(app, "Copy"))
        await pilot.pause()
        assert app.clipboard == ""
        assert "No command to copy: the plan has errors." in [n.message for n in app._notifications]


async def test_show_quotes_the_command_and_escapes_control_characters():
    app = make_app(**B300)
    async with app.run_test(size=(160, 50)) as pilot:  # wide enough for the command on one line
        await settle(pilot)
        bar(app).show(["python", "-c", "print(1)", "x\x1b[31my", "a\nb"])  # an escape sequence, a newline
        await pilot.pause()
        expected = "$ python -c 'print(1)' 'x\\x1b[31my' 'a\\x0ab'"
        assert command_text(app) == expected
        assert shown_text(app, bar(app).query_one("#argv"))[0].rstrip() == expected
