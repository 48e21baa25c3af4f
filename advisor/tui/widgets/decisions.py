"""The decision list: one row per decision, then one per problem; the highlighted row drives the detail pane.

Drawn line by line on a ScrollView, in the look and with the keys of Textual's DataTable in row-cursor mode (a header
line that stays put, the row cursor, the hover row, the same colours): DataTable's general machinery (cell caches,
measured columns, per-cell rich rendering, its stylesheet) cost about 4% of the instructions to the first screen, for
six rows (tests/benchmarks/bench_tui.py).
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Region, Size, Spacing
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from advisor.plan import Plan
from advisor.rules.engine import Decision, Problem
from advisor.sanitize import clean
from advisor.tui.render import SEVERITY_ICON, short_value, state_icon

VALUE_WIDTH = 16
CELL_PADDING = 1  # a space each side of every cell, as DataTable draws them
HEADER = -1  # the row index of the header line


class DecisionTable(ScrollView, can_focus=True):
    # DataTable's keys in row-cursor mode: home/end and left/right scroll sideways, ctrl+home/end go to the ends.
    BINDINGS = [
        Binding("enter", "select_cursor", "Select", show=False),
        Binding("up", "cursor_up", "Cursor up", show=False),
        Binding("down", "cursor_down", "Cursor down", show=False),
        Binding("right", "scroll_right", "Scroll right", show=False),
        Binding("left", "scroll_left", "Scroll left", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("ctrl+home", "scroll_top", "Top", show=False),
        Binding("ctrl+end", "scroll_bottom", "Bottom", show=False),
        Binding("home", "scroll_home", "Home", show=False),
        Binding("end", "scroll_end", "End", show=False),
    ]
    COMPONENT_CLASSES = {"decision-table--header", "decision-table--cursor", "decision-table--hover"}
    # DataTable's rules for what this table shows.
    DEFAULT_CSS = """
    DecisionTable {
        background: $surface;
        color: $foreground;
        height: auto;
        max-height: 100%;
        &:focus {
            background-tint: $foreground 5%;
            & > .decision-table--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
            & > .decision-table--header {
                background-tint: $foreground 5%;
            }
        }
        & > .decision-table--header {
            text-style: bold;
            background: $panel;
            color: $foreground;
        }
        &:ansi > .decision-table--header {
            background: ansi_bright_blue;
            color: ansi_default;
        }
        & > .decision-table--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        & > .decision-table--hover {
            background: $block-hover-background;
        }
    }
    """

    cursor_row: reactive[int] = reactive(0, always_update=False)
    hover_row: reactive[int] = reactive(0, always_update=False)  # shown only while the mouse is over the table

    class Highlighted(Message):
        """The user moved to a decision or a problem (``item`` is the Decision or Problem)."""

        def __init__(self, item: Decision | Problem | None) -> None:
            super().__init__()
            self.item = item

    class Opened(Message):
        """Enter (or a click on the highlighted row): show the item on its own screen."""

        def __init__(self, item: Decision | Problem) -> None:
            super().__init__()
            self.item = item

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._keys: list[str] = []
        self._cells: list[tuple[Text, Text, Text]] = []
        self._items: dict[str, Decision | Problem] = {}
        # Cells and labels are Text, never str: nothing is read as rich markup (a title with brackets stays as it is).
        self._header = (_cell(" "), _cell("decision"), _cell("value"))
        self._widths = [1, 30, VALUE_WIDTH]
        self._show_hover = False
        # The column of the last click: as in DataTable, a click opens the highlighted row when it lands in the same
        # cell as the click before (or column 0 when there was none); elsewhere in the row, it only remembers the cell.
        self._cursor_column = 0

    def on_mount(self) -> None:
        self._update_size()

    # -- content -----------------------------------------------------------------------------------------------------
    @property
    def row_count(self) -> int:
        return len(self._keys)

    def on_resize(self) -> None:
        if self._fit_columns():
            self._update_size()
            self.refresh()

    def _fit_columns(self) -> bool:
        """Give the title what the value column leaves, so the value stays visible in narrow terminals."""
        spare = self.size.width - 1 - VALUE_WIDTH - 3 * 2 * CELL_PADDING
        if spare <= 10 or self._widths[1] == spare:
            return False
        self._widths[1] = spare
        return True

    def _update_size(self) -> None:
        self.virtual_size = self._table_size()

    def _table_size(self) -> Size:
        return Size(sum(w + 2 * CELL_PADDING for w in self._widths), len(self._keys) + 1)

    def clear(self) -> None:
        self._keys, self._cells, self._items = [], [], {}
        self._reset_cursor()
        self._update_size()
        self.refresh()

    def show_plan(self, plan: Plan) -> None:
        """Replace the rows, keeping the cursor on the same decision when it is still there."""
        self._fit_columns()
        current = self.current_key
        keys: list[str] = []
        cells: list[tuple[Text, Text, Text]] = []
        items: dict[str, Decision | Problem] = {}
        for d in plan.decisions:
            key = f"d:{d.id}"
            items[key] = d
            keys.append(key)
            cells.append((state_icon(d.state), _cell(d.title), _cell(clean(short_value(d.value), newlines=False))))
        for p in plan.problems:
            key = f"p:{p.id}"
            if key in items:
                continue
            items[key] = p
            icon, style = SEVERITY_ICON.get(p.severity, ("·", ""))
            keys.append(key)
            cells.append((Text(icon, style=style), _cell(clean(p.message, newlines=False), style), _cell(p.severity)))
        self._keys, self._cells, self._items = keys, cells, items
        self._update_size()
        self._reset_cursor()
        self.set_reactive(DecisionTable.cursor_row, keys.index(current) if current in items else 0)
        self.call_after_refresh(self._scroll_cursor_into_view)  # once the new size is laid out
        self.refresh()
        self.post_message(self.Highlighted(self.current_item))

    def _reset_cursor(self) -> None:
        """New rows: the cursor and the hover start again at the first row and column, as DataTable's clear() does."""
        self.set_reactive(DecisionTable.cursor_row, 0)
        self.set_reactive(DecisionTable.hover_row, 0)
        self._cursor_column = 0

    @property
    def current_key(self) -> str | None:
        return self._keys[self.cursor_row] if 0 <= self.cursor_row < len(self._keys) else None

    @property
    def current_item(self) -> Decision | Problem | None:
        key = self.current_key
        return self._items.get(key) if key else None

    def select_id(self, decision_id: str) -> None:
        key = f"d:{decision_id}"
        if key in self._items:
            self.cursor_row = self._keys.index(key)

    def get_row_at(self, row: int) -> tuple[Text, Text, Text]:
        """The cells of a row, as drawn (before cropping)."""
        return self._cells[row]

    # -- cursor ------------------------------------------------------------------------------------------------------
    def validate_cursor_row(self, row: int) -> int:
        return max(0, min(row, len(self._keys) - 1))

    def watch_cursor_row(self, old: int, new: int) -> None:
        if old != new:
            self.refresh()
            self._scroll_cursor_into_view()
            if self._keys:
                self.post_message(self.Highlighted(self.current_item))

    def watch_hover_row(self) -> None:
        self.refresh()

    def _scroll_cursor_into_view(self, animate: bool = False) -> None:
        region = Region(int(self.scroll_x), self.cursor_row + 1, self.virtual_size.width, 1)
        self.scroll_to_region(region, animate=animate, spacing=Spacing(1, 0, 0, 0), force=True)

    def _set_hover(self, active: bool) -> None:
        if self._show_hover != active:
            self._show_hover = active
            self.refresh()

    def _page_height(self) -> int:
        return self.scrollable_content_region.height - 1

    def action_cursor_up(self) -> None:
        self._set_hover(False)
        self.cursor_row -= 1

    def action_cursor_down(self) -> None:
        self._set_hover(False)
        self.cursor_row += 1

    def action_page_down(self) -> None:
        self._set_hover(False)
        height = self._page_height()
        self.scroll_relative(y=height, animate=False, force=True)
        self.cursor_row += max(height, 1)

    def action_page_up(self) -> None:
        self._set_hover(False)
        height = self._page_height()
        self.scroll_relative(y=-height, animate=False)
        self.cursor_row -= max(height, 1)

    def action_scroll_top(self) -> None:
        self._set_hover(False)
        self.cursor_row = 0

    def action_scroll_bottom(self) -> None:
        self._set_hover(False)
        self.cursor_row = len(self._keys) - 1

    def action_scroll_home(self) -> None:
        self._set_hover(False)
        self.scroll_x = 0

    def action_scroll_end(self) -> None:
        self._set_hover(False)
        self.scroll_x = self.max_scroll_x

    def action_select_cursor(self) -> None:
        self._set_hover(False)
        item = self.current_item
        if item is not None:
            self.post_message(self.Opened(item))

    def on_mouse_move(self, event: events.MouseMove) -> None:
        row = event.style.meta.get("row")
        self._set_hover(row is not None)
        if row is not None:
            self.hover_row = row

    def on_leave(self, _: events.Leave) -> None:
        self._set_hover(False)

    def on_click(self, event: events.Click) -> None:
        """A click moves the cursor to the row; a second click on the same cell of the highlighted row opens it."""
        self._set_hover(True)
        meta = event.style.meta
        row, column = meta.get("row"), meta.get("column")
        if row is None or column is None or row == HEADER or not self._keys:
            return
        event.stop()
        same_cell = (row, column) == (self.cursor_row, self._cursor_column)
        self._cursor_column = column
        if same_cell:
            self.action_select_cursor()
            self._set_hover(True)
        else:
            self.cursor_row = row

    # -- drawing -----------------------------------------------------------------------------------------------------
    def render_lines(self, crop: Region) -> list[Strip]:
        # The title column is fitted to the width the table is drawn at. The first paint comes before the table's
        # first Resize event is handled: fitting only then would lay out and draw the screen a second time. Only the
        # table's width changes (the rows are the same), so there is nothing to lay out again.
        if self._fit_columns():
            self.set_reactive(DecisionTable.virtual_size, self._table_size())
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        scroll_x, scroll_y = self.scroll_offset
        base = self.rich_style
        row = HEADER if y == 0 else y - 1 + scroll_y
        if row >= len(self._keys):
            return Strip.blank(width, base)
        header = row == HEADER
        cells = self._header if header else self._cells[row]
        row_style = self.get_component_rich_style("decision-table--header") if header else base
        component = Style()
        if not header and self._show_hover and row == self.hover_row:
            component += self.get_component_rich_style("decision-table--hover")
        if not header and row == self.cursor_row:
            component += self.get_component_rich_style("decision-table--cursor")
        # The cursor's colours win over the cells' own (DataTable's cursor_*_priority "css").
        post = Style.from_color(component.color, component.bgcolor)
        console = self.app.console
        segments: list[Segment] = []
        for column, (cell, cell_width) in enumerate(zip(cells, self._widths, strict=True)):
            pre = row_style + Style.from_meta({"row": row, "column": column}) + component
            text = cell.copy()
            text.truncate(cell_width, overflow="crop")
            own = console.get_style(text.style, default=Style.null()) if text.style else None
            line = [Segment(" " * CELL_PADDING), *Segment.apply_style(text.render(console), own)]
            line.append(Segment(" " * (cell_width - text.cell_len + CELL_PADDING)))
            segments.extend(Segment.apply_style(line, pre, post))
        table_width = self.virtual_size.width
        extend = row_style + component + Style.from_meta({"row": row, "column": 0, "out_of_bounds": True})
        segments.append(Segment(" " * max(0, width - table_width), extend))
        return Strip(segments).crop(scroll_x, scroll_x + width).adjust_cell_length(width, base).simplify()


def _cell(text: str, style: str = "") -> Text:
    """A cell: one line, cropped to the column."""
    return Text(text, style=style, no_wrap=True, end="")
