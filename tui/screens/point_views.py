"""How the memory browser draws points: the list widget, a row's cells, the preview text."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.widgets import DataTable

from tui.display_text import point_line, printable

if TYPE_CHECKING:
    from store.point_records import Point, PointRow

ROLE_SHORT = {"user": "user", "assistant": "asst", "doc": "doc"}
PIN_MARK = "●"
# (key, label, width) of the fixed columns; the first-line column takes the rest
FIXED_COLUMNS: tuple[tuple[str, str, int], ...] = (
    ("id", "id", 6),
    ("score", "score", 5),
    ("date", "date", 16),
    ("pin", PIN_MARK, 1),
    ("role", "role", 4),
)
LINE_COLUMN = "line"
MIN_LINE_WIDTH = 12


def local_stamp(when: datetime) -> str:
    """A time as the app shows it: local, to the minute."""
    return f"{when.astimezone():%Y-%m-%d %H:%M}"


@dataclass(frozen=True, slots=True)
class ListedRow:
    """A row of the list: the point's summary and its recall score (None when browsing)."""

    row: PointRow
    score: float | None = None


class PointTable(DataTable[Text | str]):
    """The point list: fixed columns plus a first-line column that fills the width."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("home", "scroll_top", "First", show=False),
        Binding("end", "scroll_bottom", "Last", show=False),
    ]
    DEFAULT_CSS = """
    PointTable {
        overflow-x: hidden;
    }
    """

    def on_mount(self) -> None:
        for key, label, width in FIXED_COLUMNS:
            self.add_column(label, width=width, key=key)
        self.add_column("first line", width=MIN_LINE_WIDTH, key=LINE_COLUMN)

    def on_resize(self, _event: events.Resize) -> None:
        self.fit_line_column()

    def fit_line_column(self) -> None:
        """Give the first-line column the width the fixed columns leave."""
        padding = 2 * self.cell_padding
        fixed = sum(width + padding for _key, _label, width in FIXED_COLUMNS)
        scrollbar = self.styles.scrollbar_size_vertical
        width = max(MIN_LINE_WIDTH, self.size.width - fixed - padding - scrollbar)
        column = self.columns.get(LINE_COLUMN)  # type: ignore[call-overload]
        if column is None or column.width == width:
            return
        column.width = width
        # DataTable has no public way to resize a column: drop its render caches.
        self._clear_caches()
        self._require_update_dimensions = True
        self.refresh()


def row_cells(listed: ListedRow) -> list[Text | str]:
    """The cells of one list row."""
    row = listed.row
    score = "" if listed.score is None else f"{listed.score:.2f}"
    return [
        Text(str(row.id), justify="right"),
        Text(score, justify="right"),
        local_stamp(row.created_at),
        Text(PIN_MARK if row.pinned else "", style="bold"),
        ROLE_SHORT.get(row.role, row.role),
        Text(point_line(printable(row.head), row.role), no_wrap=True, overflow="ellipsis"),
    ]


def preview_text(point: Point, confidence: float | None) -> Text:
    """The preview pane: a title line, the whole content, a rule, then the point's facts —
    the text first, so that at 80x24 (the pane stacked under the list, a few lines high) it
    is what shows above the fold (issue 16)."""
    text = Text()
    text.append(f"#{point.id}", style="bold")
    text.append(f" · {point.role}")
    if point.pinned:
        text.append(" · pinned", style="bold")
    text.append(f" · {local_stamp(point.created_at)}\n", style="dim")
    text.append(printable(point.content))
    text.append("\n" + "─" * 24 + "\n", style="dim")
    facts = [
        ("conversation", point.conversation_id or "—"),
        ("source", point.source),
        ("channel", point.channel),
        ("vector", point.embed_model or "none yet"),
    ]
    if confidence is not None:
        facts.append(("confidence", f"{confidence:.2f}"))
    if point.tags:
        facts.append(("tags", ", ".join(point.tags)))
    for index, (label, value) in enumerate(facts):
        text.append(f"{label:<13}", style="dim")
        text.append(value + ("\n" if index + 1 < len(facts) else ""))
    return text
