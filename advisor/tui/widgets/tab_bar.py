"""The main screen's tabs: their titles on one line and the underline beneath, drawn as Textual's Tabs draws them.

Textual's TabbedContent is thirteen widgets for three tabs (the tabs, their containers, the underline, a switcher and
a pane per tab), each styled when it mounts and again when the screen resumes; they were the largest part of the time
to the first screen (tests/benchmarks/bench_tui.py). A TabBar is one widget; the screen shows the active pane with a
ContentSwitcher.

Keys (when focused): left and right move to the previous or next tab. A click on a title, or on the underline beneath
it, activates it. Setting ``active`` (from code or a key) posts ``TabBar.Activated`` and slides the underline across.
"""

from __future__ import annotations

from rich.console import Group
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.message import Message
from textual.reactive import reactive
from textual.renderables.bar import Bar
from textual.widget import Widget

PADDING = 1  # blank cells either side of a title, as Tab's `padding: 0 1`
SLIDE_S = 0.3  # the underline's slide to a newly activated tab, as Tabs animates it


class TabBar(Widget, can_focus=True):
    COMPONENT_CLASSES = {"tab-bar--tab", "tab-bar--hover", "tab-bar--active", "tab-bar--underline"}

    DEFAULT_CSS = """
    TabBar {
        width: 100%;
        height: 2;
        pointer: pointer;
        & > .tab-bar--tab {
            color: $foreground 50%;
        }
        & > .tab-bar--hover, & > .tab-bar--active {
            color: $foreground;
        }
        & > .tab-bar--underline {
            color: $block-cursor-background;
            background: $foreground 10%;
        }
        &:focus {
            & > .tab-bar--underline {
                background: $foreground 30%;
            }
            & > .tab-bar--active {
                text-style: $block-cursor-text-style;
                color: $block-cursor-foreground;
                background: $block-cursor-background;
            }
        }
        &:ansi {
            & > .tab-bar--tab, & > .tab-bar--hover {
                text-style: dim;
            }
            & > .tab-bar--active {
                text-style: not dim bold;
            }
            & > .tab-bar--underline {
                background: $border-blurred;
            }
        }
    }
    """

    BINDINGS = [
        Binding("left", "previous_tab", "Previous tab", show=False),
        Binding("right", "next_tab", "Next tab", show=False),
    ]

    ALLOW_SELECT = False

    active: reactive[str] = reactive("", init=False)
    """The id of the active tab."""
    highlight_start: reactive[float] = reactive(0.0)
    highlight_end: reactive[float] = reactive(0.0)
    _hover: reactive[int | None] = reactive(None)

    class Activated(Message):
        """A tab became active (``tab`` is its id)."""

        def __init__(self, tab_bar: TabBar, tab: str) -> None:
            super().__init__()
            self.tab_bar = tab_bar
            self.tab = tab

        @property
        def control(self) -> TabBar:
            return self.tab_bar

    def __init__(self, tabs: list[tuple[str, str]], *, active: str, id: str | None = None) -> None:  # noqa: A002
        """``tabs``: (id, title) of each tab, left to right."""
        super().__init__(id=id)
        self._tabs = tabs
        self._spans: list[tuple[int, int]] = []  # the cells each tab takes, its padding included
        x = 0
        for _, title in tabs:
            width = len(title) + 2 * PADDING
            self._spans.append((x, x + width))
            x += width
        self.set_reactive(TabBar.active, active)
        self.set_reactive(TabBar.highlight_start, float(self._title_span(active)[0]))
        self.set_reactive(TabBar.highlight_end, float(self._title_span(active)[1]))

    @property
    def tab_ids(self) -> list[str]:
        return [tab for tab, _ in self._tabs]

    def _title_span(self, tab: str) -> tuple[int, int]:
        start, end = self._spans[self.tab_ids.index(tab)]
        return start + PADDING, end - PADDING

    def validate_active(self, tab: str) -> str:
        if tab not in self.tab_ids:
            raise ValueError(f"no tab {tab!r}; the tabs are {', '.join(self.tab_ids)}")
        return tab

    def watch_active(self, tab: str) -> None:
        start, end = self._title_span(tab)
        if self.app.animation_level == "none":
            self.highlight_start, self.highlight_end = start, end
        else:
            self.animate("highlight_start", start, duration=SLIDE_S, level="basic")
            self.animate("highlight_end", end, duration=SLIDE_S, level="basic")
        self.post_message(self.Activated(self, tab))

    def render(self) -> Group:
        titles = Text(no_wrap=True, overflow="crop")
        for index, (tab, title) in enumerate(self._tabs):
            name = "tab-bar--active" if tab == self.active else "tab-bar--hover" if index == self._hover else "tab-bar--tab"
            titles.append(f"{' ' * PADDING}{title}{' ' * PADDING}", self.get_component_rich_style(name))
        bar = self.get_component_rich_style("tab-bar--underline")
        underline = Bar(
            highlight_range=(self.highlight_start, self.highlight_end),
            highlight_style=Style.from_color(bar.color),
            background_style=Style.from_color(bar.bgcolor),
        )
        return Group(titles, underline)

    def _tab_at(self, x: int) -> int | None:
        return next((i for i, (start, end) in enumerate(self._spans) if start <= x < end), None)

    def on_click(self, event: events.Click) -> None:
        self._track_hover(event)
        index = self._tab_at(event.x)
        if index is not None:
            event.stop()
            self.focus()
            self.active = self.tab_ids[index]

    def on_mouse_move(self, event: events.MouseMove) -> None:
        self._track_hover(event)

    def _track_hover(self, event: events.MouseEvent) -> None:
        """The title under the mouse is lit (a Tab's :hover)."""
        self._hover = self._tab_at(event.x) if event.y == 0 else None

    def on_leave(self, event: events.Leave) -> None:
        self._hover = None

    def action_next_tab(self) -> None:
        self._move(+1)

    def action_previous_tab(self) -> None:
        self._move(-1)

    def _move(self, step: int) -> None:
        ids = self.tab_ids
        self.active = ids[(ids.index(self.active) + step) % len(ids)]
