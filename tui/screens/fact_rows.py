"""What the layer-4 screens (facts, candidates, hypotheses) share: `RecordScreen`, a table of
records over a detail pane with a one-line editor that opens on demand, whose database work
runs in worker threads; and `EditInput`, that editor (Enter submits, Esc cancels the edit).

A subclass names its columns, reads its records in a thread (`read_records`), turns one
record into cells (`cells`) and into the detail pane's text (`detail`), and says what an
empty table means (`empty_text`). Widgets are touched on the event loop only: a thread's
result comes back as a `ThreadDone` message, handled by the screen.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import ClassVar, Generic, TypeVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Input, Label, Static
from textual.worker import get_current_worker

from tui.display_text import ellipsize, first_line
from tui.screens.memory_screen import MemoryScreen
from tui.widgets.edit_input import EditInput

log = logging.getLogger("straylight.tui")

RecordT = TypeVar("RecordT")
ResultT = TypeVar("ResultT")

CELL_PADDING = 1  # DataTable's default, on each side of every cell
SCROLLBAR_ROOM = 2  # the table's vertical scrollbar, when the rows overflow
MIN_FLEX_WIDTH = 12


@dataclass(frozen=True, slots=True)
class Column:
    """A table column: its label and width in cells; width 0 takes the room that is left."""

    label: str
    width: int = 0


def clip(text: str, width: int) -> str:
    """The first line of `text`, cut to `width` cells with an ellipsis."""
    return ellipsize(first_line(text), width)


def day(value: datetime | None) -> str:
    """`2026-11-29`, or an em dash for no date."""
    return f"{value:%Y-%m-%d}" if value is not None else "—"


@dataclass
class ThreadDone(Message):
    """A worker thread of a record screen finished: `callback(*args)` on the event loop."""

    callback: Callable[..., None]
    args: tuple[object, ...]


class RecordScreen(MemoryScreen[None], Generic[RecordT]):
    """A table of records, the highlighted one in full below it, and a hidden editor."""

    COLUMNS: ClassVar[tuple[Column, ...]] = ()
    DEFAULT_CSS = """
    RecordScreen #records {
        height: 1fr;
        overflow-x: hidden;
    }
    RecordScreen #filters {
        height: 1;
        padding: 0 1;
        background: $boost;
    }
    RecordScreen #detail {
        height: 10;
        padding: 0 1;
        border-top: solid $primary 40%;
    }
    RecordScreen #editor {
        height: 1;
        display: none;
        padding: 0 1;
        background: $boost;
    }
    RecordScreen #editor.-open {
        display: block;
    }
    RecordScreen #editor Label {
        width: auto;
        padding: 0 1 0 0;
        text-style: bold;
    }
    RecordScreen #editor EditInput {
        width: 1fr;
    }
    """

    def __init__(self) -> None:
        super().__init__()
        self.records: list[RecordT] = []
        self.loaded = False  # the first read came back
        self._editing: RecordT | None = None

    # ---- what a subclass says --------------------------------------------------------------
    def read_records(self) -> list[RecordT]:
        """The records to show (runs in a worker thread)."""
        raise NotImplementedError

    def record_id(self, record: RecordT) -> int:
        """The record's unique id (the table's row key)."""
        raise NotImplementedError

    def cells(self, record: RecordT, flex: int) -> Sequence[str | Text]:
        """One row; the column of width 0 gets `flex` cells."""
        raise NotImplementedError

    def detail(self, record: RecordT) -> Text:
        """The record in full, for the pane under the table."""
        raise NotImplementedError

    def empty_text(self) -> str:
        """What the detail pane says when there are no records."""
        return "Nothing here."

    def filters_text(self) -> Text | None:
        """The line over the table (filters, hints); None: no such line."""
        return None

    def edit_submitted(self, record: RecordT, text: str) -> None:
        """The editor's Enter on `record` (the subclass saves `text`)."""

    # ---- layout --------------------------------------------------------------------------
    def compose_body(self) -> ComposeResult:
        line = self.filters_text()
        if line is not None:
            yield Static(line, id="filters")
        table: DataTable[str | Text] = DataTable(
            id="records", cursor_type="row", zebra_stripes=True
        )
        yield table
        with VerticalScroll(id="detail"):
            yield Static(Text("Loading…", style="italic"), id="detail-text")
        with Horizontal(id="editor"):
            yield Label("", id="editor-label")
            yield EditInput(id="editor-input", compact=True, select_on_focus=False)

    def on_mount(self) -> None:
        self.reload()

    @property
    def table(self) -> DataTable[str | Text]:
        return self.query_one("#records", DataTable)

    # ---- reading -------------------------------------------------------------------------
    def reload(self, then: Callable[[], None] | None = None) -> None:
        """Read the records again in a thread and show them (the cursor stays on its record);
        `then` runs once they are shown."""

        def shown(records: list[RecordT]) -> None:
            self.show_records(records)
            if then is not None:
                then()

        self.in_thread(self.read_records, shown, group="records-read", exclusive=True)

    def show_records(self, records: list[RecordT]) -> None:
        """Fill the table with `records`, keeping the cursor on the same record if it is still
        there (else on the same row number)."""
        current = self.current()
        keep_id = self.record_id(current) if current is not None else None
        row = self.table.cursor_row
        self.records = list(records)
        self.loaded = True
        self._fill()
        ids = [self.record_id(r) for r in self.records]
        if keep_id in ids:
            row = ids.index(keep_id)
        if self.records:
            self.table.move_cursor(row=min(row, len(self.records) - 1), animate=False)
        self.refresh_filters()
        self.show_detail()

    def _fill(self) -> None:
        table = self.table
        table.clear(columns=True)
        flex = self._flex_width()
        for column in self.COLUMNS:
            table.add_column(column.label, width=column.width or flex)
        for record in self.records:
            table.add_row(*self.cells(record, flex), key=str(self.record_id(record)))

    def _flex_width(self) -> int:
        """The room left for the column of width 0 (a scrollbar's room when rows overflow)."""
        table = self.table
        width = table.size.width or self.size.width or self.app.size.width
        overflow = len(self.records) > max(table.size.height - 1, 0)  # one row for the header
        fixed = sum(c.width for c in self.COLUMNS)
        padding = 2 * CELL_PADDING * len(self.COLUMNS)
        scrollbar = SCROLLBAR_ROOM if overflow else 0
        return max(width - fixed - padding - scrollbar, MIN_FLEX_WIDTH)

    def on_resize(self) -> None:
        if self.loaded:
            self.show_records(self.records)

    def refresh_filters(self) -> None:
        line = self.filters_text()
        if line is not None:
            self.query_one("#filters", Static).update(line)

    def current(self) -> RecordT | None:
        """The highlighted record (None when the table is empty)."""
        if not self.records or not self.table.row_count:
            return None
        row = self.table.cursor_row
        return self.records[row] if 0 <= row < len(self.records) else None

    @on(DataTable.RowHighlighted, "#records")
    def _highlighted(self) -> None:
        self.show_detail()

    def show_detail(self) -> None:
        """Show the highlighted record in the pane (or what an empty table means)."""
        record = self.current()
        text = self.detail(record) if record is not None else Text(self.empty_text())
        self.query_one("#detail-text", Static).update(text)

    # ---- the editor ----------------------------------------------------------------------
    def open_editor(self, record: RecordT, label: str, value: str) -> None:
        """Show the editor for `record` with `value`; Enter calls `edit_submitted`."""
        self._editing = record
        self.set_editor_label(label)
        editor = self.query_one("#editor-input", EditInput)
        editor.value = value
        self.query_one("#editor").add_class("-open")
        editor.focus()
        editor.cursor_position = len(value)
        self.refresh_bindings()

    def set_editor_label(self, label: str) -> None:
        self.query_one("#editor-label", Label).update(Text(label))

    @property
    def editing(self) -> RecordT | None:
        """The record under edit, or None."""
        return self._editing

    def close_editor(self) -> None:
        """Hide the editor (if open) and go back to the table."""
        self._editing = None
        self.query_one("#editor").remove_class("-open")
        self.table.focus()
        self.refresh_bindings()

    @on(Input.Submitted, "#editor-input")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        record = self._editing
        text = event.value.strip()
        if record is None:
            return
        if not text:
            self.say("The text is empty: type something, or Esc to cancel.", error=True)
            return
        self.edit_submitted(record, text)  # the subclass closes the editor once it is saved:
        # a refused text (too long, a credential-shaped key…) stays in the box to be fixed

    @on(EditInput.Cancelled)
    def _cancelled(self, event: EditInput.Cancelled) -> None:
        event.stop()
        if self._editing is not None:
            self.close_editor()
            self.say("Edit cancelled.")

    # ---- threads -------------------------------------------------------------------------
    def in_thread(
        self,
        job: Callable[[], ResultT],
        done: Callable[[ResultT], None],
        *,
        group: str = "record-actions",
        exclusive: bool = False,
    ) -> None:
        """Run `job` (database work) in a worker thread, then `done(result)` on the event
        loop. A refused change (`ValueError`, `LookupError`: one line for the user) or any
        other error is said on the status line instead."""

        def run() -> None:
            try:
                result = job()
            except (ValueError, LookupError) as error:
                self.post_message(ThreadDone(self._refused, (str(error),)))
                return
            except Exception as error:
                log.exception("%s: a database call failed", type(self).__name__)
                self.post_message(ThreadDone(self._refused, (f"⚠ failed: {error}",)))
                return
            if not get_current_worker().is_cancelled:
                self.post_message(ThreadDone(done, (result,)))

        self.run_worker(run, thread=True, group=group, exclusive=exclusive, exit_on_error=False)

    def _refused(self, text: str) -> None:
        self.say(text, error=True)

    def on_thread_done(self, message: ThreadDone) -> None:
        """Run the callback unless the screen was closed meanwhile."""
        if self.is_attached and self in self.app.screen_stack:
            message.callback(*message.args)
