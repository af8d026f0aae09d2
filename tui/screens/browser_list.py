"""The memory browser's list: the rows it holds and how they are loaded, and the preview of
the row under the cursor. `MemoryBrowserScreen` (tui/screens/memory_browser.py) builds on this
with the bars, the keys and the pin / forget workers.

With an empty search the list shows the points newest first (highest id first), fetched from
DuckDB a page at a time (keyset paging on the id): the next page is loaded when the cursor or
the view comes within `PREFETCH_ROWS` of the last loaded row, so 100k points cost no more to
open than 100. A search (Enter in the search box) embeds the query (fail-soft: words only when
Ollama is away) and shows up to `SEARCH_K` recall hits with their scores. The preview loads once
the cursor has rested on a row for `PREVIEW_DELAY`.

Every database call runs in a worker thread (`browser_loading`) and reports back with a message;
a change of search or filter bumps a generation number so late pages of an older list are
dropped. The list widget and the preview text are `point_views`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual import on, work
from textual.containers import VerticalScroll
from textual.coordinate import Coordinate
from textual.timer import Timer
from textual.widgets import DataTable, Static

from tui.display_text import counted
from tui.screens.browser_filter import BrowserFilter
from tui.screens.browser_loading import (
    LoadFailed,
    PageLoaded,
    PreviewLoaded,
    read_page,
    read_preview,
    search_rows,
)
from tui.screens.memory_screen import MemoryScreen
from tui.screens.point_views import ListedRow, PointTable, preview_text, row_cells

if TYPE_CHECKING:
    from memory.turn_memory import TurnMemory

PREFETCH_ROWS = 150  # fetch the next page when the cursor or view is this close to the end
PREVIEW_DELAY = 0.06  # seconds the cursor must rest on a row before its preview loads


class BrowserList(MemoryScreen[None]):
    """The memory browser's list of points: its state, its pages and search hits loaded in
    workers, the cursor's point and its preview, the title line."""

    def __init__(self, memory: TurnMemory, point_id: int | None = None) -> None:
        super().__init__()
        self.memory = memory
        self.initial_point_id = point_id
        self.filters = BrowserFilter()
        self.query_text = ""
        self.rows: dict[int, ListedRow] = {}  # what the list holds, by point id
        self.generation = 0
        self.fetching = True  # until the first page is in
        self.exhausted = True
        self.total: int | None = None
        self.note = ""
        self.preview_id: int | None = None
        self._preview_timer: Timer | None = None

    @property
    def table(self) -> PointTable:
        return self.query_one(PointTable)

    # ---- loading ------------------------------------------------------------------------
    def reload(self, *, focus_id: int | None = None) -> None:
        """Start a new list for the current search and filters (older results are dropped)."""
        self.generation += 1
        self.rows.clear()
        self.table.clear()
        self.exhausted = False
        self.fetching = True
        self.total = None
        self._show_title()
        if self.query_text:
            self.run_search(self.generation, self.query_text, self.filters)
        else:
            self.load_page(self.generation, self.filters, None, first=True, focus_id=focus_id)

    @work(thread=True, group="browser-page", exit_on_error=False)
    def load_page(
        self,
        generation: int,
        filters: BrowserFilter,
        before_id: int | None,
        *,
        first: bool = False,
        focus_id: int | None = None,
    ) -> None:
        """Fetch one page (`read_page`) and post it."""
        try:
            page = read_page(
                self.memory.store, generation, filters, before_id, first=first, focus_id=focus_id
            )
        except Exception as error:  # noqa: BLE001 - shown on the status line, not raised
            self.post_message(LoadFailed(f"Cannot read the points: {error}"))
            return
        self.post_message(page)

    @work(group="browser-search", exclusive=True, exit_on_error=False)
    async def run_search(self, generation: int, query: str, filters: BrowserFilter) -> None:
        """Hybrid recall for `query` (words only when the query cannot be embedded), the hits
        narrowed by the filters."""
        import asyncio

        vector = await self.memory.embed_one(query)
        mode = "hybrid" if vector is not None else "words only: no embedding"
        try:
            found = await asyncio.to_thread(search_rows, self.memory.store, query, vector, filters)
        except Exception as error:  # noqa: BLE001 - shown on the status line, not raised
            self.post_message(LoadFailed(f"Search failed: {error}"))
            return
        note = f"{counted(len(found), 'hit')} for “{query}” ({mode})."
        self.post_message(PageLoaded(generation, found, exhausted=True, note=note))

    def on_page_loaded(self, message: PageLoaded) -> None:
        if message.generation != self.generation:
            return
        self.fetching = False
        self.exhausted = message.exhausted
        if message.total is not None:
            self.total = message.total
        if message.note:
            self.note = message.note
        table = self.table
        fresh = [listed for listed in message.rows if listed.row.id not in self.rows]
        for listed in fresh:
            self.rows[listed.row.id] = listed
            table.add_row(*row_cells(listed), key=str(listed.row.id))
        self._show_title()
        if message.note:
            self.say(message.note)
        first_page = len(self.rows) == len(fresh)
        if message.focus_id is not None and str(message.focus_id) in table.rows:
            table.move_cursor(row=table.get_row_index(str(message.focus_id)), scroll=True)
            if not message.note:
                self.say(f"Opened at #{message.focus_id}.")
            self.call_after_refresh(self._center_cursor)
            self._schedule_preview(0.0)
        elif first_page:
            self._schedule_preview(0.0)
        self._maybe_load_more()

    def on_load_failed(self, message: LoadFailed) -> None:
        self.fetching = False
        self.say(message.text, error=True)

    def _center_cursor(self) -> None:
        table = self.table
        table.scroll_to(y=max(0, table.cursor_row - table.size.height // 2), animate=False)

    def _maybe_load_more(self) -> None:
        """Fetch the next page when the cursor or the view nears the last loaded row."""
        if self.fetching or self.exhausted or self.query_text or not self.rows:
            return
        table = self.table
        bottom = max(table.cursor_row, int(table.scroll_y) + table.size.height)
        if bottom < table.row_count - PREFETCH_ROWS:
            return
        last_id = int(
            str(table.coordinate_to_cell_key(Coordinate(table.row_count - 1, 0)).row_key.value)
        )
        self.fetching = True
        self.load_page(self.generation, self.filters, last_id)

    def _on_list_scrolled(self, _old: float, _new: float) -> None:
        self._maybe_load_more()

    # ---- the preview --------------------------------------------------------------------
    @on(DataTable.RowHighlighted, "#browser-list")
    def _row_highlighted(self, _event: DataTable.RowHighlighted) -> None:
        self._maybe_load_more()
        self._schedule_preview(PREVIEW_DELAY)

    def _schedule_preview(self, delay: float) -> None:
        """Load the preview of the cursor row once the cursor rests (scrolling stays cheap)."""
        if self._preview_timer is not None:
            self._preview_timer.stop()
            self._preview_timer = None
        if delay > 0:  # (a zero-delay Timer divides by zero in Textual 8.2)
            self._preview_timer = self.set_timer(delay, self._preview_cursor_row)
        else:
            self.call_later(self._preview_cursor_row)

    def _preview_cursor_row(self) -> None:
        point_id = self.cursor_point_id()
        if point_id is None:
            self.preview_id = None
            self.query_one("#preview-body", Static).update(self._empty_text())
            return
        self.load_preview(point_id)

    @work(thread=True, group="browser-preview", exclusive=True, exit_on_error=False)
    def load_preview(self, point_id: int) -> None:
        """The full point and its confidence (`read_preview`)."""
        try:
            loaded = read_preview(self.memory.store, point_id)
        except Exception as error:  # noqa: BLE001 - shown on the status line, not raised
            self.post_message(LoadFailed(f"Cannot read point #{point_id}: {error}"))
            return
        self.post_message(loaded)

    def on_preview_loaded(self, message: PreviewLoaded) -> None:
        if message.point_id != self.cursor_point_id():
            return
        self.preview_id = message.point_id
        body = self.query_one("#preview-body", Static)
        if message.point is None:
            body.update(Text(f"#{message.point_id} is gone.", style="dim"))
        else:
            body.update(preview_text(message.point, message.confidence))
        self.query_one("#browser-preview", VerticalScroll).scroll_home(animate=False)

    def _empty_text(self) -> Text:
        if self.fetching:
            return Text("Loading…", style="dim")
        if self.query_text and self.filters.describe():
            return Text("No hit passes the filters.", style="dim")
        if self.query_text:
            return Text(f"Nothing found for “{self.query_text}”.", style="dim")
        return Text("No points match." if self.filters.describe() else "No points yet.", "dim")

    def cursor_point_id(self) -> int | None:
        """The id of the highlighted row, or None for an empty list."""
        table = self.table
        if table.row_count == 0:
            return None
        key = table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key.value
        return int(str(key))

    # ---- rows that leave, what the title says --------------------------------------------
    def _drop_row(self, point_id: int) -> None:
        self.rows.pop(point_id, None)
        if str(point_id) in self.table.rows:
            self.table.remove_row(str(point_id))
        self._schedule_preview(0.0)
        self._maybe_load_more()

    def _show_title(self) -> None:
        parts = [self.TITLE_TEXT]
        if self.query_text:
            parts.append(f"search “{self.query_text}”: {counted(len(self.rows), 'hit')}")
        elif self.total is not None:
            parts.append(f"{counted(self.total, 'point')}, newest first")
        elif self.fetching:
            parts.append("loading…")
        described = self.filters.describe()
        if described:
            parts.append(described)
        self.query_one("#screen-title", Static).update(Text(" · ".join(parts)))
