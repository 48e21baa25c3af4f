"""The main screen's header: the command palette's icon, the title and sub-title, drawn as Textual's Header draws them.

Textual's Header is four widgets (the bar, its icon, its title and the space its clock would take), each styled before
the first screen (tests/benchmarks/bench_tui.py). A TitleBar is one widget that draws the same line. As in Header, a
click on the icon opens the command palette and a click elsewhere makes the bar three lines tall, or one again.
"""

from __future__ import annotations

from textual import events
from textual.content import Content
from textual.style import Style
from textual.widget import Widget

ICON = "⭘"
ICON_WIDTH = 8  # HeaderIcon: `width: 8; padding: 0 1`
CLOCK_WIDTH = 10  # HeaderClockSpace: the room a clock would take on the right


class TitleBar(Widget):
    COMPONENT_CLASSES = {"title-bar--icon-hover"}

    DEFAULT_CSS = """
    TitleBar {
        dock: top;
        width: 100%;
        height: 1;
        background: $panel;
        color: $foreground;
        text-wrap: nowrap;
        & > .title-bar--icon-hover {
            background: $foreground 10%;
        }
        &.-tall {
            height: 3;
        }
    }
    """

    ALLOW_SELECT = False

    def __init__(self) -> None:
        super().__init__()
        self._icon_hover = False

    def on_mount(self) -> None:
        for obj in (self.app, self.screen):
            self.watch(obj, "title", self._title_changed, init=False)
            self.watch(obj, "sub_title", self._title_changed, init=False)

    def _title_changed(self) -> None:
        self.refresh()

    def render(self) -> Content:
        screen, app = self.screen, self.app
        title = screen.title if screen.title is not None else app.title
        sub_title = screen.sub_title if screen.sub_title is not None else app.sub_title
        room = max(self.size.width - ICON_WIDTH - CLOCK_WIDTH, 0)
        text = app.format_title(title, sub_title).truncate(room, ellipsis=True)
        left = (room - text.cell_length) // 2
        text = text.pad(left, room - left - text.cell_length)
        icon, blank_icon = Content(f" {ICON}".ljust(ICON_WIDTH)), Content.blank(ICON_WIDTH)
        if self._icon_hover:
            hover = self.styles.background + self.get_component_styles("title-bar--icon-hover").background
            icon, blank_icon = icon.stylize(Style(background=hover)), blank_icon.stylize(Style(background=hover))
        clock = Content.blank(CLOCK_WIDTH)
        if not self.has_class("-tall"):
            return Content.assemble(icon, text, clock)
        # Tall: the title stays on the top line and the icon is centred in its column, as in Header.
        return Content("\n").join([
            Content.assemble(blank_icon, text, clock),
            Content.assemble(icon, Content.blank(room), clock),
            Content.assemble(blank_icon, Content.blank(room), clock),
        ])

    async def on_click(self, event: events.Click) -> None:
        event.stop()
        if event.x < ICON_WIDTH:
            await self.run_action("app.command_palette")
        else:
            self.toggle_class("-tall")

    def on_mouse_move(self, event: events.MouseMove) -> None:
        over = event.x < ICON_WIDTH
        if over != self._icon_hover:
            self._icon_hover = over
            self.tooltip = "Open the command palette" if over else None
            self.refresh()

    def on_leave(self, event: events.Leave) -> None:
        if self._icon_hover:
            self._icon_hover = False
            self.tooltip = None
            self.refresh()
