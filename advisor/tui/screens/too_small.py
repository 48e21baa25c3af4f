"""What the app shows while the terminal is smaller than it can lay out (`MIN_WIDTH` x `MIN_HEIGHT`).

Below a few columns Textual's own widgets fail (an OptionList squeezed to zero width raises in rich's line wrapping, and
the app would end with a traceback), and nothing is readable long before that. So the app (app.py) switches to this
screen, in a mode of its own, while the terminal is too small, and back when it is large enough again: the screens
beneath are not laid out meanwhile and come back as they were. Its text is drawn line by line, cropped to the width, so
that no size, zero included, can make it fail.
"""

from __future__ import annotations

import textwrap

from rich.segment import Segment
from rich.style import Style
from textual.app import ComposeResult
from textual.screen import Screen
from textual.strip import Strip
from textual.widget import Widget

MIN_WIDTH = 40
MIN_HEIGHT = 10


def too_small(width: int, height: int) -> bool:
    return width < MIN_WIDTH or height < MIN_HEIGHT


class TooSmallMessage(Widget):
    """The message, wrapped to the width; drawn without Textual's text wrapping (which is what fails at width 0)."""

    def text(self) -> str:
        width, height = self.app.size
        return (
            f"The terminal is too small ({width}x{height}): the app needs at least {MIN_WIDTH}x{MIN_HEIGHT}. "
            "Enlarge it, or press q to quit."
        )

    def lines(self) -> list[str]:
        return textwrap.wrap(self.text(), width=max(self.size.width, 1), break_long_words=True)

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        lines = self.lines()
        text = lines[y] if y < len(lines) else ""
        return Strip([Segment(text[:width].ljust(width), Style(bold=y < len(lines)))], width)


class TooSmallScreen(Screen[None]):
    DEFAULT_CSS = """
    TooSmallScreen > TooSmallMessage {
        width: 100%;
        height: 100%;
    }
    """

    def compose(self) -> ComposeResult:
        yield TooSmallMessage()
