"""The memory browser: every layer-3 point in a paged list with a preview, searchable by the
hybrid recall, filtered by role, pins and dates; pin, unpin and forget (after a y/n).

This module holds the screen: its layout, the search and filter bars, the keys and the pin /
forget workers. The list itself (paging from the memory, the search hits, the cursor's preview,
the title) is `BrowserList` in `browser_list`; the filters are `browser_filter`. The filters
apply to the newest-first list and to a search's hits alike. Dates are shown and read in local
time, like the rest of the app.

Keys: `/` search, `p` pin/unpin, `f` forget, `r` role filter, `o` pinned only, `d` dates
(Enter applies), Esc in a box returns to the list, Esc on a search's hits clears the search,
Esc on the list closes the browser.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from typing import ClassVar

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Input, Static

from tui.screens.browser_filter import ROLE_CYCLE, BrowserFilter, parse_day
from tui.screens.browser_list import BrowserList
from tui.screens.browser_loading import PAGE_SIZE as PAGE_SIZE  # tests import it here
from tui.screens.browser_loading import PointChanged
from tui.screens.confirm_screen import ConfirmScreen
from tui.screens.point_views import ListedRow, PointTable, row_cells

NARROW_WIDTH = 100  # narrower terminals stack the preview under the list


class MemoryBrowserScreen(BrowserList):
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
        if not message.done:  # forgotten elsewhere (the shell, an MCP client)
            self.say(f"#{point_id} is not in the memory any more.", error=True)
            if point_id in self.rows and self.total is not None:
                self.total -= 1  # the title counted it
            self._drop_row(point_id)
            self._show_title()
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
