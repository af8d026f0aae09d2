"""The memory browser's reads and what its workers report: a page of the newest points, the
recall hits that pass the filters, the preview of one point.

The functions block (DuckDB, recall): the screen runs them in worker threads and posts the
messages they return; the messages carry the list's generation so late pages are dropped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.message import Message

from tui.screens.browser_filter import BrowserFilter, passes
from tui.screens.point_views import ListedRow

if TYPE_CHECKING:
    from memory.memory_store import MemoryStore
    from store.point_records import Point, PointRow

PAGE_SIZE = 200  # rows fetched per page
NEWER_LIMIT = 500  # opened on a point: at most this many newer rows are shown above it
SEARCH_K = 200  # recall hits asked for (per group: pinned and the rest)


class PageLoaded(Message):
    """A page of rows for list `generation`; `total` only with the first page."""

    def __init__(
        self,
        generation: int,
        rows: list[ListedRow],
        *,
        exhausted: bool,
        total: int | None = None,
        focus_id: int | None = None,
        note: str = "",
    ) -> None:
        super().__init__()
        self.generation = generation
        self.rows = rows
        self.exhausted = exhausted
        self.total = total
        self.focus_id = focus_id
        self.note = note


class PreviewLoaded(Message):
    """The full point behind a row (None: it is gone) and its confidence, if it has one."""

    def __init__(self, point_id: int, point: Point | None, confidence: float | None) -> None:
        super().__init__()
        self.point_id = point_id
        self.point = point
        self.confidence = confidence


class PointChanged(Message):
    """A pin, unpin or forget finished; `done` False when the point was not there."""

    def __init__(self, point_id: int, action: str, done: bool) -> None:
        super().__init__()
        self.point_id = point_id
        self.action = action  # "pin", "unpin" or "forget"
        self.done = done


class LoadFailed(Message):
    """A worker's read failed: one line for the status."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


def read_page(
    store: MemoryStore,
    generation: int,
    filters: BrowserFilter,
    before_id: int | None,
    *,
    first: bool = False,
    focus_id: int | None = None,
) -> PageLoaded:
    """One page (and, with the first, the count); opened on a point, the page starts at that
    point with up to `NEWER_LIMIT` newer rows above it."""
    points = store.points
    where = filters.for_store()
    newer: list[PointRow] = []
    note = ""
    if focus_id is not None:
        if points.get(focus_id) is None:
            note, focus_id = f"No point #{focus_id} (forgotten?).", None
        else:
            newer = points.rows_newer_than(focus_id, where, limit=NEWER_LIMIT + 1)
            if len(newer) > NEWER_LIMIT:
                newer = newer[-NEWER_LIMIT:]
                note = f"Showing from #{focus_id}; Enter in an empty search: newest."
            before_id = focus_id + 1
    rows = points.page_rows(where, before_id=before_id, limit=PAGE_SIZE)
    total = points.count_matching(where) if first else None
    return PageLoaded(
        generation,
        [ListedRow(row) for row in newer + rows],
        exhausted=len(rows) < PAGE_SIZE,
        total=total,
        focus_id=focus_id,
        note=note,
    )


def search_rows(
    store: MemoryStore, query: str, vector: list[float] | None, filters: BrowserFilter
) -> list[ListedRow]:
    """Recall, then keep the hits that pass the filters."""
    result = store.recall(query, vector=vector, k=SEARCH_K)
    where = filters.for_store()
    found: list[ListedRow] = []
    rows = store.points.rows_of([hit.id for hit in result.hits])
    for hit in result.hits:
        row = rows.get(hit.id)
        if row is not None and passes(row, where):
            found.append(ListedRow(row, hit.score))
    return found


def read_preview(store: MemoryStore, point_id: int) -> PreviewLoaded:
    """The full point and its confidence (pinned points have one)."""
    from memory.confidence import confidence_of_points

    point = store.points.get(point_id)
    confidence = confidence_of_points(store.db, [point_id]).get(point_id)
    return PreviewLoaded(point_id, point, confidence)
