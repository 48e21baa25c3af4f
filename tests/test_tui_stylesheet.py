"""Where the TUI's styles live. Textual parses the app's stylesheet (advisor/tui/advisor.tcss) before the first screen,
and a widget's or screen's DEFAULT_CSS only when it is first used: the app's stylesheet holds only what the first screen
(the main screen's Plan tab) uses; the other panels and screens carry their own rules."""

from __future__ import annotations

import pytest
from textual.css.model import SelectorType
from textual.css.stylesheet import Stylesheet
from textual.dom import DOMNode
from tui_helpers import make_app, settle

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


def plan_tab_nodes(screen) -> list[DOMNode]:
    """The main screen and what its Plan tab shows: the other tabs' containers, not the panels mounted in them."""
    hidden = [screen.query_one(f"#{tab}") for tab in ("layouts", "machine")]
    return [node for node in screen.walk_children(with_self=True)
            if not any(node in tab.walk_children() for tab in hidden)]  # fmt: skip


def names_on(nodes: list[DOMNode]) -> set[str]:
    """What a selector can name on these nodes: their types (with their bases), ids, classes, component classes."""
    names: set[str] = set()
    for node in nodes:
        names |= node._css_type_names
        names |= {f".{name}" for name in node.classes | node._get_component_classes()}
        if node.id:
            names.add(f"#{node.id}")
    return names


def selector_names(rule) -> list[str]:
    """The types, ids and classes a rule's selectors name; a state class (`-shown`, set while it applies) excepted."""
    names = []
    for selector_set in rule.selector_set:
        for selector in selector_set.selectors:
            if selector.type == SelectorType.TYPE:
                names.append(selector.name)
            elif selector.type == SelectorType.ID:
                names.append(f"#{selector.name}")
            elif selector.type == SelectorType.CLASS and not selector.name.startswith("-"):
                names.append(f".{selector.name}")
    return names


async def test_the_app_stylesheet_only_styles_the_first_screen():
    app = make_app(profile="b300-8", model="Qwen/Qwen3-VL-235B-A22B-Instruct", tp=8, engine="sglang")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        on_screen = names_on(plan_tab_nodes(app.main))
        stylesheet = Stylesheet(variables=app.get_css_variables())
        for path in app.css_path:
            stylesheet.read(path)
        assert stylesheet.rules, app.css_path
        for rule in stylesheet.rules:
            missing = [name for name in selector_names(rule) if name not in on_screen]
            assert not missing, f"{rule.css.splitlines()[0]} styles {missing}, not on the first screen: move it there"


async def test_the_dialogs_carry_their_own_look():
    """The dialogs' rules (screens/dialog.py and each dialog's DEFAULT_CSS) apply: centred, framed, sized."""
    app = make_app(profile="b300-8", model="Qwen/Qwen3-VL-235B-A22B-Instruct", tp=8, engine="sglang")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        for key, box, width in (("question_mark", "#help-box", 80), ("e", "#export-box", 76), ("p", "#profile-box", 76)):
            await pilot.press(key)
            await pilot.pause()
            region = app.screen.query_one(box).region
            assert app.screen is not app.main and region.width == width, (box, region)
            assert app.screen.query_one(box).styles.border_top[0] == "round", box
            assert abs(region.x - (80 - region.right)) <= 1 and abs(region.y - (24 - region.bottom)) <= 1, (box, region)
            await pilot.press("escape")
            await pilot.pause()
            assert app.screen is app.main
