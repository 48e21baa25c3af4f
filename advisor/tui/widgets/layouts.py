"""The Layouts tab: the `advisor layouts` table for the form's model, engine and machine; enter puts a row in the form."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Static

from advisor.layouts import COLUMNS, Layout, LayoutsReport, table_rows


class LayoutsPanel(Vertical):
    # Parsed when the panel is first mounted (after the first screen), not with the app's stylesheet.
    DEFAULT_CSS = """
    LayoutsPanel {
        padding: 0 1;
    }
    LayoutsPanel #layouts-status {
        height: auto;
    }
    LayoutsPanel #layouts-table {
        height: auto;
        max-height: 12;
    }
    LayoutsPanel #layouts-reason {
        height: auto;
        color: $text-muted;
    }
    """

    class Chosen(Message):
        """Enter on a row: put this layout (tp, nodes, DP attention, dp size) into the form."""

        def __init__(self, layout: Layout) -> None:
            super().__init__()
            self.layout = layout

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.report: LayoutsReport | None = None

    def compose(self) -> ComposeResult:
        yield Static("layouts: evaluating…", id="layouts-status")
        yield DataTable(cursor_type="row", zebra_stripes=False, id="layouts-table")
        yield Static("", id="layouts-reason")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for name in COLUMNS:
            table.add_column(name or "★", key=name or "mark")

    @property
    def table(self) -> DataTable:
        return self.query_one(DataTable)

    def show(self, report: LayoutsReport | None, error: str | None) -> None:
        """Replace the rows; the cursor starts on the recommended layout."""
        self.report = report
        table, status = self.table, self.query_one("#layouts-status", Static)
        table.clear()
        if report is None:
            status.update(Text(f"✗ {error or 'no layouts'}", style="bold red"))
            self.query_one("#layouts-reason", Static).update("")
            return
        engine = report.engine.get("name", "?")
        version = report.engine.get("version")
        status.update(Text(f"{report.model} · {engine}" + (f" {version}" if version else "")
                           + f" · sequences of {report.context_len} tokens · enter: use this layout"))  # fmt: skip
        for i, cells in enumerate(table_rows(report)):
            style = "bold green" if i == report.recommended else ("dim" if report.layouts[i].fits is False else "")
            row = [Text("★" if i == report.recommended else "", style=style), *(Text(c, style=style) for c in cells[1:])]
            table.add_row(*row, key=str(i))
        if report.recommended is not None:
            table.move_cursor(row=report.recommended)
        lines = [("recommended: " if report.recommended is not None else "") + report.reason]
        lines += [f"{lay.label}: {lay.why_not}" for lay in report.layouts if lay.why_not]
        lines += [f"note: {note}" for note in report.notes]
        self.query_one("#layouts-reason", Static).update("\n".join(lines))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if self.report is not None and event.row_key.value is not None:
            self.post_message(self.Chosen(self.report.layouts[int(event.row_key.value)]))
