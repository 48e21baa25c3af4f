"""The decision list: one row per decision, then one per problem; the highlighted row drives the detail pane."""

from __future__ import annotations

from rich.text import Text
from textual.message import Message
from textual.widgets import DataTable

from advisor.plan import Plan
from advisor.rules.engine import Decision, Problem
from advisor.sanitize import clean
from advisor.tui.render import SEVERITY_ICON, short_value, state_icon

VALUE_WIDTH = 16
MIN_TITLE_WIDTH = 10


class DecisionTable(DataTable):
    """A row-cursor DataTable that speaks in decisions and problems: ``Highlighted`` when the cursor moves to one,
    ``Opened`` on enter (or a click on the highlighted row)."""

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
        super().__init__(cursor_type="row", zebra_stripes=False, **kwargs)
        self._items: dict[str, Decision | Problem] = {}
        self._plan: Plan | None = None
        # Cells and labels are Text, never str: DataTable reads a str as rich markup (a title with brackets would be
        # mangled).
        self.add_column(_cell(" "), key="state", width=1)
        self.add_column(_cell("decision"), key="decision", width=30)
        self.add_column(_cell("value"), key="value", width=VALUE_WIDTH)

    def on_resize(self) -> None:
        if self._fit_columns() and self._plan is not None:
            self.show_plan(self._plan)  # the rows were laid out for the old width

    def _fit_columns(self) -> bool:
        """Give the title what the value column leaves, so the value stays visible in narrow terminals."""
        spare = self.size.width - 1 - VALUE_WIDTH - 3 * 2 * self.cell_padding
        column = self.columns["decision"]
        if spare < MIN_TITLE_WIDTH or column.width == spare:
            return False
        column.width = spare
        return True

    def clear(self, columns: bool = False) -> DecisionTable:
        self._items = {}
        self._plan = None
        return super().clear(columns)

    def show_plan(self, plan: Plan) -> None:
        """Replace the rows, keeping the cursor on the same decision when it is still there."""
        self._fit_columns()
        current = self.current_key
        self.clear()
        self._plan = plan
        for d in plan.decisions:
            key = f"d:{d.id}"
            self._items[key] = d
            self.add_row(state_icon(d.state), _cell(d.title), _cell(clean(short_value(d.value), newlines=False)), key=key)
        for p in plan.problems:
            key = f"p:{p.id}"
            if key in self._items:
                continue
            self._items[key] = p
            icon, style = SEVERITY_ICON.get(p.severity, ("·", ""))
            self.add_row(Text(icon, style=style), _cell(clean(p.message, newlines=False), style), _cell(p.severity), key=key)
        if current in self._items:
            self.move_cursor(row=self.get_row_index(current), animate=False)
        self.post_message(self.Highlighted(self.current_item))

    @property
    def current_key(self) -> str | None:
        if not self.is_valid_row_index(self.cursor_row):
            return None
        return self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value

    @property
    def current_item(self) -> Decision | Problem | None:
        key = self.current_key
        return self._items.get(key) if key else None

    def select_id(self, decision_id: str) -> None:
        key = f"d:{decision_id}"
        if key in self._items:
            self.move_cursor(row=self.get_row_index(key), animate=False)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        item = self._items.get(event.row_key.value or "")
        if item is not None:
            self.post_message(self.Opened(item))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self.post_message(self.Highlighted(self._items.get(event.row_key.value or "")))


def _cell(text: str, style: str = "") -> Text:
    """A cell as DataTable lays out a plain string: one line, cropped to the column."""
    return Text(text, style=style, no_wrap=True, end="")
