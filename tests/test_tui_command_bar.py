"""The command bar (advisor/tui/widgets/command_bar.py): one widget that draws "Command", the Copy and Launch buttons and
the resolved command line. Its buttons answer the mouse (click, hover) and the keyboard (one focus stop, left/right,
enter/space) as the separate buttons it replaces did."""

from __future__ import annotations

import shlex

import pytest
from rich.color import Color as RichColor
from textual.color import Color
from tui_helpers import command_face, command_text, make_app, screen_cells, settle

from advisor.tui.screens.launch import LaunchScreen
from advisor.tui.widgets.command_bar import FACES, NO_COMMAND, CommandBar

pytestmark = pytest.mark.anyio  # anyio's pytest plugin runs the async tests


@pytest.fixture
def anyio_backend():
    return "asyncio"


B300 = {"profile": "b300-8", "model": "Qwen/Qwen3-VL-235B-A22B-Instruct", "tp": 8, "engine": "sglang"}
COPY, LAUNCH = ([face.label for face in FACES].index(label) for label in ("Copy", "Launch"))


def bar(app) -> CommandBar:
    return app.main.query_one(CommandBar)


def face_cells(app, index: int):
    """The rich style of each cell of a face, as the screen draws it."""
    region = bar(app).face_regions()[index]
    return [app.screen.get_style_at(x, region.y) for x in range(region.x, region.right)]


def css_color(app, variable: str) -> RichColor:
    return Color.parse(app.get_css_variables()[variable]).rich_color


def shown_lines(app) -> list[str]:
    """The bar's lines as the screen shows them (its content region, below the top border)."""
    region = bar(app).content_region
    rows = ["".join(cell[0] for cell in row) for row in screen_cells(app)]
    return [rows[y][region.x : region.right] for y in range(region.y, region.bottom)]


async def test_a_click_on_each_button_runs_its_action():
    app = make_app(**B300)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        plan = app.main.current_plan
        await pilot.click(*command_face(app, "Copy"))
        await pilot.pause()
        assert app.clipboard == shlex.join(plan.argv)
        assert app.screen is app.main

        await pilot.click(*command_face(app, "Launch"))
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
        top = bar(app).content_region.y - bar(app).region.y
        x_launch = bar(app).face_regions()[LAUNCH].right - bar(app).region.x
        for offset in ((1, top), (x_launch, top), (2, top + 1)):  # the title, right of Launch, the command line
            await pilot.click("#command", offset=offset)
            await pilot.pause()
            assert app.clipboard == "" and app.screen is app.main and app.focused is focused, offset


async def test_the_button_under_the_mouse_is_highlighted():
    app = make_app(**B300)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        surface, primary = css_color(app, "surface"), css_color(app, "primary")
        assert {s.bgcolor for s in face_cells(app, COPY)} == {surface}
        assert {s.bgcolor for s in face_cells(app, LAUNCH)} == {primary}
        assert bar(app).styles.pointer == "default"

        await pilot.hover(*command_face(app, "Copy"))
        await pilot.pause()
        assert {s.bgcolor for s in face_cells(app, COPY)} == {css_color(app, "surface-darken-1")}
        assert {s.bgcolor for s in face_cells(app, LAUNCH)} == {primary}
        assert bar(app).styles.pointer == "pointer"

        await pilot.hover(*command_face(app, "Launch"))
        await pilot.pause()
        assert {s.bgcolor for s in face_cells(app, COPY)} == {surface}
        assert {s.bgcolor for s in face_cells(app, LAUNCH)} == {css_color(app, "primary-darken-2")}

        await pilot.hover("#command", offset=(1, 1))  # the title: no button under the mouse
        await pilot.pause()
        assert {s.bgcolor for s in face_cells(app, COPY)} == {surface}
        assert {s.bgcolor for s in face_cells(app, LAUNCH)} == {primary}
        assert bar(app).styles.pointer == "default"


def marked(app) -> list[bool]:
    """Which faces show the focus mark (their label reversed)."""
    return [any(style.reverse for style in face_cells(app, index)) for index in range(len(FACES))]


async def test_the_keyboard_reaches_the_buttons_through_one_focus_stop():
    app = make_app(**B300)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        plan = app.main.current_plan
        chain = app.main.focus_chain
        position = chain.index(bar(app))
        chain[position - 1].focus()  # the form's last control
        await pilot.pause()
        assert marked(app) == [False, False]

        await pilot.press("tab")
        await pilot.pause()
        assert app.focused is bar(app) and marked(app) == [True, False]
        await pilot.press("enter")
        await pilot.pause()
        assert app.clipboard == shlex.join(plan.argv)

        await pilot.press("right")
        await pilot.pause()
        assert marked(app) == [False, True]
        await pilot.press("space")
        await pilot.pause()
        assert isinstance(app.screen, LaunchScreen) and app.screen.run is None
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.main and app.focused is bar(app) and marked(app) == [False, True]  # remembered

        await pilot.press("right")  # wraps around to Copy, as left does to Launch
        await pilot.pause()
        assert marked(app) == [True, False]
        await pilot.press("left")
        await pilot.pause()
        assert marked(app) == [False, True]

        await pilot.press("tab")  # one stop: tab leaves the bar
        await pilot.pause()
        assert app.focused is chain[position + 1] and marked(app) == [False, False]


async def test_a_click_on_a_button_focuses_the_bar_on_it():
    app = make_app(**B300)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.click(*command_face(app, "Launch"))
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        assert app.focused is bar(app) and marked(app) == [False, True]


async def test_a_long_command_wraps_and_stays_copyable():
    app = make_app(**B300)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        command = shlex.join(app.main.current_plan.argv)
        assert command_text(app) == "$ " + command
        head, *body = shown_lines(app)
        assert head.startswith("Command ") and head.endswith(" Copy    Launch ")
        body = [line.rstrip() for line in body if line.strip()]
        width = bar(app).content_region.width
        assert len(body) >= 3 and all(len(line) <= width for line in body)  # wrapped to the bar's width
        assert "".join("".join(line.split()) for line in body) == "$" + "".join(command.split())  # all of it

        await pilot.click(*command_face(app, "Copy"))
        await pilot.pause()
        assert app.clipboard == command  # one line, without the wrapping


async def test_the_bar_says_when_there_is_no_command(empty_hf_cache):
    app = make_app(profile="nosuch")
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        assert app.main.current_plan is None
        assert command_text(app) == NO_COMMAND
        region = bar(app).content_region
        assert " ".join(line.strip() for line in shown_lines(app)[1:] if line.strip()) == NO_COMMAND  # wrapped
        assert app.screen.get_style_at(region.x, region.y + 1).color.triplet == RichColor.parse("#ff0000").triplet

        await pilot.click(*command_face(app, "Copy"))
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
        assert shown_lines(app)[1].rstrip() == expected
