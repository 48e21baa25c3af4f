"""The resolved command line, with Copy and Launch buttons for mouse users (keys: c, l)."""

from __future__ import annotations

import shlex
from typing import NamedTuple

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style as RichStyle
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.content import Content
from textual.geometry import Offset, Region
from textual.reactive import reactive
from textual.strip import Strip
from textual.style import Style
from textual.widget import Widget

from advisor.sanitize import clean


class Face(NamedTuple):
    """A button drawn on the bar's first line: its label, the action it runs, its component class."""

    label: str
    action: str
    component: str


# Left to right, as drawn and as the arrow keys move between them.
FACES = (
    Face("Copy", "screen.copy_command", "command-bar--button"),
    Face("Launch", "screen.launch", "command-bar--primary"),
)
FACE_MIN_WIDTH = 8  # a face is as wide as its label, at least this, the label centred
FACE_MARGIN = 1  # blank cells before each face
NO_COMMAND = "(no command: fix the errors above)"
TITLE = "Command"


class CommandBar(Widget, can_focus=True):
    """The command bar, drawn by one widget (each widget on the first screen costs a few milliseconds to start):
    "Command" and the Copy and Launch buttons on the first line, the resolved command line below it, wrapped.

    Mouse: a click on a button runs its action (the screen's copy_command, launch); the button under the mouse is
    highlighted. Keyboard: the bar is one focus stop (tab reaches it and leaves it, as a toolbar); left/right choose the
    button, enter/space press it, and the chosen one is marked while the bar has focus (it starts on Copy and is
    remembered). Anywhere on the main screen, c and l run the same actions (advisor/tui/keys.py).

    The buttons look like Textual's compact Button: as wide as the label (at least 8 cells), bold, Launch in the
    primary colour; the component classes below give their colours.
    """

    DEFAULT_CSS = """
    CommandBar > .command-bar--title {
        text-style: bold;
    }
    CommandBar > .command-bar--button {
        background: $surface;
        color: $button-foreground;
        text-style: bold;
    }
    CommandBar > .command-bar--button-hover {
        background: $surface-darken-1;
    }
    CommandBar > .command-bar--primary {
        background: $primary;
        color: $button-color-foreground;
        text-style: bold;
    }
    CommandBar > .command-bar--primary-hover {
        background: $primary-darken-2;
    }
    CommandBar > .command-bar--focused {
        text-style: $button-focus-text-style;
        background-tint: $foreground 5%;
    }
    """

    COMPONENT_CLASSES = {
        "command-bar--title",
        "command-bar--button",
        "command-bar--button-hover",
        "command-bar--primary",
        "command-bar--primary-hover",
        "command-bar--focused",
    }

    BINDINGS = [
        Binding("left", "choose(-1)", "Previous button", show=False),
        Binding("right", "choose(1)", "Next button", show=False),
        Binding("enter,space", "press", "Press", show=False),
    ]

    chosen: reactive[int] = reactive(0)  # the face that enter/space press (FACES' index)
    hovered: reactive[int | None] = reactive(None)  # the face under the mouse

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id)
        self.argv = Text("")  # what the second line shows (show())

    def show(self, argv: tuple[str, ...] | list[str] | None) -> None:
        text = clean(shlex.join(argv), newlines=False) if argv else NO_COMMAND
        self.argv = Text(f"$ {text}" if argv else text, style="" if argv else "red")
        self.refresh()

    # -- where the faces are ------------------------------------------------------------------------------------------

    def face_columns(self) -> list[tuple[int, int]]:
        """Each face's first column and width on the first line, right-aligned in the bar's content width."""
        widths = [max(FACE_MIN_WIDTH, cell_len(face.label)) for face in FACES]
        x = self.size.width - sum(FACE_MARGIN + width for width in widths)
        columns = []
        for width in widths:
            x += FACE_MARGIN
            columns.append((x, width))
            x += width
        return columns

    def face_regions(self) -> list[Region]:
        """Where each face is on the screen (FACES' order)."""
        x0, y0 = self.content_region.offset
        return [Region(x0 + x, y0, width, 1) for x, width in self.face_columns()]

    def face_at(self, offset: Offset | None) -> int | None:
        """The face at an offset in the content region (line 0), or None."""
        if offset is None or offset.y != 0:
            return None
        for index, (x, width) in enumerate(self.face_columns()):
            if x <= offset.x < x + width:
                return index
        return None

    # -- drawing ------------------------------------------------------------------------------------------------------

    def face_style(self, index: int) -> Style:
        """A face's style, as CSS would cascade its rules on a button of its own (hovered, focused)."""
        names = [FACES[index].component]
        if self.hovered == index:
            names.append(f"{FACES[index].component}-hover")
        if self.has_focus and self.chosen == index:
            names.append("command-bar--focused")
        styles = self.get_component_styles(*names)
        text_style = styles.text_style
        face = Style(
            background=styles.background.tint(styles.background_tint),
            foreground=styles.color,
            bold=text_style.bold,
            reverse=text_style.reverse,
        )
        return self.visual_style + face

    def head(self) -> Strip:
        """The first line: the title on the left, the faces on the right. Drawn cell for cell as Textual draws the
        separate widgets it replaces: blank cells carry only the background, a face's label is centred with blanks
        in its own colours (never reversed, like content-align), the focused label alone is reversed."""
        width = self.size.width
        blank = RichStyle(bgcolor=self.visual_style.background.rich_color)
        title = self.visual_style + self.get_visual_style("command-bar--title", partial=True)
        columns = self.face_columns()
        segments = [
            Segment(TITLE, title.rich_style),
            Segment(" " * max(0, columns[0][0] - FACE_MARGIN - len(TITLE)), blank),
        ]
        for index, (face, (_x, face_width)) in enumerate(zip(FACES, columns, strict=True)):
            style = self.face_style(index)
            pad = (style + Style(reverse=False)).rich_style
            left = (face_width - cell_len(face.label)) // 2
            right = face_width - cell_len(face.label) - left
            segments += [Segment(" " * FACE_MARGIN, blank), Segment(" " * left, pad),
                         Segment(face.label, style.rich_style), Segment(" " * right, pad)]  # fmt: skip
        return Strip(segments).crop_extend(0, width, blank)

    def render(self) -> Content:
        """Below an empty first line (render_line draws the head there), the command line, wrapped to the width."""
        return Content.assemble("\n", Content.from_rich_text(self.argv, console=self.app.console))

    def render_line(self, y: int) -> Strip:
        return self.head() if y == 0 else super().render_line(y)

    def watch_hovered(self) -> None:  # chosen and hovered repaint the bar (reactive)
        self.styles.pointer = "default" if self.hovered is None else "pointer"
        self.screen.update_pointer_shape()

    def on_focus(self) -> None:  # the chosen face is marked only while the bar has focus
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()

    # -- input --------------------------------------------------------------------------------------------------------

    def on_mouse_move(self, event: events.MouseMove) -> None:
        self.hovered = self.face_at(event.get_content_offset(self))

    def on_leave(self) -> None:
        self.hovered = None

    def focus_on_click(self) -> bool:
        """A click on a face focuses the bar, as it focused that button; a click on the title or the command line
        leaves the focus where it is (e.g. in a form field), as it did on those texts."""
        return self.face_at(self.app.mouse_position - self.content_region.offset) is not None

    def on_mouse_down(self, event: events.MouseDown) -> None:
        face = self.face_at(event.get_content_offset(self))
        if face is not None:
            self.chosen = face  # the clicked button is the one marked, as focus follows the click

    def on_click(self, event: events.Click) -> None:
        face = self.face_at(event.get_content_offset(self))
        if face is not None:
            event.stop()
            self.press(face)

    def action_choose(self, step: int) -> None:
        self.chosen = (self.chosen + step) % len(FACES)

    def action_press(self) -> None:
        self.press(self.chosen)

    def press(self, index: int) -> None:
        self.call_later(self.app.run_action, FACES[index].action, default_namespace=self)
