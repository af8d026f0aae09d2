"""The memory browser: every layer-3 point in a paged list with a preview, searchable by the
hybrid recall, filtered by role, pins and dates; pin, unpin and forget (after a y/n).

With an empty search the list shows the points newest first (highest id first), fetched from
DuckDB a page at a time (keyset paging on the id): the next page is loaded when the cursor or
the view comes within `PREFETCH_ROWS` of the last loaded row, so 100k points cost no more to
open than 100. A search (Enter in the search box) embeds the query (fail-soft: words only when
Ollama is away) and shows up to `SEARCH_K` recall hits with their scores. The filters apply to
both. Dates are shown and read in local time, like the rest of the app.

Every database call runs in a worker thread (`browser_loading`) and reports back with a message;
a change of search or filter bumps a generation number so late pages of an older list are
dropped. The filters are `browser_filter`, the list widget and the preview text `point_views`.

Keys: `/` search, `p` pin/unpin, `f` forget, `r` role filter, `o` pinned only, `d` dates
(Enter applies), Esc in a box returns to the list, Esc on a search's hits clears the search,
Esc on the list closes the browser.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.coordinate import Coordinate
from textual.timer import Timer
from textual.widgets import DataTable, Input, Static

from tui.screens.browser_filter import ROLE_CYCLE, BrowserFilter, parse_day
from tui.screens.browser_loading import PAGE_SIZE as PAGE_SIZE  # tests import it here
from tui.screens.browser_loading import (
    LoadFailed,
    PageLoaded,
    PointChanged,
    PreviewLoaded,
    read_page,
    read_preview,
    search_rows,
)
from tui.screens.confirm_screen import ConfirmScreen
from tui.screens.memory_screen import MemoryScreen
from tui.screens.point_views import ListedRow, PointTable, preview_text, row_cells

if TYPE_CHECKING:
    from memory.turn_memory import TurnMemory

PREFETCH_ROWS = 150  # fetch the next page when the cursor or view is this close to the end
PREVIEW_DELAY = 0.06  # seconds the cursor must rest on a row before its preview loads
NARROW_WIDTH = 100  # narrower terminals stack the preview under the list


class MemoryBrowserScreen(MemoryScreen[None]):
    """Browse, search, filter, pin and forget the points of layer 3."""

    TITLE_TEXT: ClassVar[str] = "Memory browser"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "search", "Search", id="browser_search"),
        Binding("p", "pin", "Pin/unpin", id="browser_pin"),
        Binding("f", "forget", "Forget", id="browser_forget"),
        Binding("r", "cycle_role", "Role", id="browser_role"),
        Binding("o", "toggle_pinned", "Pinned only", id="browser_pinned"),
        Binding("d", "dates", "Dates", id="browser_dates"),
    ]
    DEFAULT_CSS = """
    MemoryBrowserScreen .bar {
        height: 1;
        padding: 0 1;
    }
    MemoryBrowserScreen .bar Static {
        width: auto;
        padding: 0 1 0 0;
    }
    MemoryBrowserScreen .bar .filter {
        padding: 0 1;
        margin-right: 1;
        background: $boost;
    }
    MemoryBrowserScreen .bar .filter.-on {
        background: $accent 40%;
        text-style: bold;
    }
    MemoryBrowserScreen #browser-search {
        width: 1fr;
        margin-right: 1;
    }
    MemoryBrowserScreen #bar-hint {
        color: $text-muted;
        padding-left: 1;
    }
    MemoryBrowserScreen.-narrow #bar-hint {
        display: none;
    }
    MemoryBrowserScreen .date {
        width: 13;
    }
    MemoryBrowserScreen #browser-main {
        height: 1fr;
    }
    MemoryBrowserScreen #browser-list {
        width: 2fr;
        height: 1fr;
    }
    MemoryBrowserScreen #browser-preview {
        width: 1fr;
        height: 1fr;
        padding: 0 1;
        border-left: solid $panel-lighten-2;
    }
    MemoryBrowserScreen.-narrow #browser-main {
        layout: vertical;
    }
    MemoryBrowserScreen.-narrow #browser-list {
        width: 1fr;
        height: 3fr;
    }
    MemoryBrowserScreen.-narrow #browser-preview {
        width: 1fr;
        height: 2fr;
        border-left: none;
        border-top: solid $panel-lighten-2;
    }
    MemoryBrowserScreen.-narrow .date {
        width: 12;
    }
    """

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

    # ---- layout -------------------------------------------------------------------------
    def compose_body(self) -> ComposeResult:
        with Horizontal(id="browser-bar", classes="bar"):
            yield Static("Search", id="search-label")
            yield Input(
                placeholder="words or a question, Enter (empty: newest first)",
                id="browser-search",
                compact=True,
            )
        with Horizontal(id="browser-bar-filters", classes="bar"):
            yield Static("", id="filter-role", classes="filter")
            yield Static("", id="filter-pinned", classes="filter")
            yield Static("from", classes="label")
            yield Input(placeholder="YYYY-MM-DD", id="date-from", classes="date", compact=True)
            yield Static("to", classes="label")
            yield Input(placeholder="YYYY-MM-DD", id="date-to", classes="date", compact=True)
            yield Static("Enter applies · Esc back to the list", id="bar-hint")
        with Horizontal(id="browser-main"):
            yield PointTable(id="browser-list", cursor_type="row", zebra_stripes=True)
            with VerticalScroll(id="browser-preview"):
                yield Static("", id="preview-body")

    def on_mount(self) -> None:
        self._fit_layout(self.app.size.width)
        self._show_filters()
        self.table.focus()
        self.watch(self.table, "scroll_y", self._on_list_scrolled, init=False)
        self.reload(focus_id=self.initial_point_id)

    def on_resize(self, event: events.Resize) -> None:
        self._fit_layout(event.size.width)

    def _fit_layout(self, width: int) -> None:
        """Below `NARROW_WIDTH` columns the preview goes under the list (a pushed screen
        gets no Resize until the terminal changes, so breakpoints alone are not enough)."""
        self.set_class(width < NARROW_WIDTH, "-narrow")

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
        note = f"{len(found)} hit{'' if len(found) == 1 else 's'} for “{query}” ({mode})."
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
        if self.query_text:
            return Text("No hit passes the filters.", style="dim")
        return Text("No points match." if self.filters.describe() else "No points yet.", "dim")

    def cursor_point_id(self) -> int | None:
        """The id of the highlighted row, or None for an empty list."""
        table = self.table
        if table.row_count == 0:
            return None
        key = table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key.value
        return int(str(key))

    # ---- actions --------------------------------------------------------------------------
    def action_search(self) -> None:
        self.query_one("#browser-search", Input).focus()

    def action_dates(self) -> None:
        self.query_one("#date-from", Input).focus()

    def action_cycle_role(self) -> None:
        index = ROLE_CYCLE.index(self.filters.role)
        role = ROLE_CYCLE[(index + 1) % len(ROLE_CYCLE)]
        self._apply(replace(self.filters, role=role))

    def action_toggle_pinned(self) -> None:
        self._apply(replace(self.filters, pinned_only=not self.filters.pinned_only))

    def action_close(self) -> None:
        """Esc: from a box back to the list; on the list of a search, clear the search (the
        list stays, newest first, with the focus: keys meant for it never reach the chat
        box); on the plain list, close the browser."""
        if isinstance(self.focused, Input):
            self.table.focus()
            return
        if self.query_text:
            self.query_text = ""
            self.note = ""
            self.query_one("#browser-search", Input).value = ""
            self.table.focus()
            self.reload()
            self.say("Search cleared: newest first. Esc again closes the browser.")
            return
        super().action_close()

    def action_pin(self) -> None:
        point_id = self.cursor_point_id()
        if point_id is None:
            self.say("Nothing to pin: the list is empty.", error=True)
            return
        self.change_pin(point_id, not self.rows[point_id].row.pinned)

    def action_forget(self) -> None:
        point_id = self.cursor_point_id()
        if point_id is None:
            self.say("Nothing to forget: the list is empty.", error=True)
            return
        question = (
            f"Forget point #{point_id}? It leaves the memory for good "
            "(the daily log keeps the message)."
        )

        def answered(yes: bool | None) -> None:
            if yes:
                self.forget_point(point_id)
            else:
                self.say(f"Kept #{point_id}.")

        self.app.push_screen(ConfirmScreen(question), answered)

    @work(thread=True, group="browser-change", exit_on_error=False)
    def change_pin(self, point_id: int, pinned: bool) -> None:
        done = self.memory.store.set_pinned(point_id, pinned)
        self.post_message(PointChanged(point_id, "pin" if pinned else "unpin", done))

    @work(thread=True, group="browser-change", exit_on_error=False)
    def forget_point(self, point_id: int) -> None:
        done = self.memory.store.forget(point_id)
        self.post_message(PointChanged(point_id, "forget", done))

    def on_point_changed(self, message: PointChanged) -> None:
        point_id = message.point_id
        if not message.done:
            self.say(f"#{point_id} is not in the memory any more.", error=True)
            self._drop_row(point_id)
            return
        if message.action == "forget":
            self._drop_row(point_id)
            if self.total is not None:
                self.total -= 1
            self._show_title()
            self.say(f"Forgot #{point_id}.")
            return
        pinned = message.action == "pin"
        listed = self.rows.get(point_id)
        if listed is not None:
            listed = ListedRow(replace(listed.row, pinned=pinned), listed.score)
            self.rows[point_id] = listed
            self.table.update_cell(str(point_id), "pin", row_cells(listed)[3])
        self.say(f"Pinned #{point_id}." if pinned else f"Unpinned #{point_id}.")
        if point_id == self.cursor_point_id():
            self._schedule_preview(0.0)

    def _drop_row(self, point_id: int) -> None:
        self.rows.pop(point_id, None)
        if str(point_id) in self.table.rows:
            self.table.remove_row(str(point_id))
        self._schedule_preview(0.0)
        self._maybe_load_more()

    # ---- the search and filter boxes ------------------------------------------------------
    @on(Input.Submitted, "#browser-search")
    def _search_submitted(self, event: Input.Submitted) -> None:
        self.query_text = event.value.strip()
        self.note = ""
        if not self.query_text:
            self.say("Newest first.")
        self.table.focus()
        self.reload()

    @on(Input.Submitted, ".date")
    def _dates_submitted(self, _event: Input.Submitted) -> None:
        try:
            since, until = self._days()
        except ValueError as error:
            self.say(str(error), error=True)
            return
        if since and until and since > until:
            self.say(f"The range ends ({until}) before it starts ({since}).", error=True)
            return
        self.table.focus()
        self._apply(BrowserFilter(self.filters.role, self.filters.pinned_only, since, until))

    def _days(self) -> tuple[date | None, date | None]:
        """The day range typed in the boxes (ValueError names a bad date). Only Enter in a
        box applies it; the other filter keys keep the range that was applied."""
        since = parse_day(self.query_one("#date-from", Input).value)
        until = parse_day(self.query_one("#date-to", Input).value)
        return since, until

    def _apply(self, filters: BrowserFilter) -> None:
        self.filters = filters
        self._show_filters()
        self.reload()

    # ---- what the view says ---------------------------------------------------------------
    def _show_filters(self) -> None:
        role = self.query_one("#filter-role", Static)
        role.update(f"role: {self.filters.role or 'all'}")
        role.set_class(self.filters.role is not None, "-on")
        pinned = self.query_one("#filter-pinned", Static)
        pinned.update("pinned only" if self.filters.pinned_only else "pinned or not")
        pinned.set_class(self.filters.pinned_only, "-on")

    def _show_title(self) -> None:
        parts = [self.TITLE_TEXT]
        if self.query_text:
            parts.append(f"search “{self.query_text}”: {len(self.rows)} hits")
        elif self.total is not None:
            parts.append(f"{self.total:,} point{'' if self.total == 1 else 's'}, newest first")
        elif self.fetching:
            parts.append("loading…")
        described = self.filters.describe()
        if described:
            parts.append(described)
        self.query_one("#screen-title", Static).update(Text(" · ".join(parts)))
