"""The chat screen's ways around: the sidebar (folding, the recalled hits), the chat log's
notices, Esc back to the message box and the memory screens.

It is the first of the chat screen's bases: `ChatSelection` (tui/screens/chat_selection.py)
adds the selected message (pin, forget, copy), `ChatTurn` (tui/screens/chat_turn.py) the
turn and `ChatScreen` (tui/screens/chat_screen.py) the slash commands and the conversation;
this base holds what does not depend on them.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from textual import events, work
from textual.css.query import NoMatches
from textual.message import Message
from textual.screen import Screen

from tui.widgets.chat_input import ChatInput
from tui.widgets.chat_log import ChatLog
from tui.widgets.recalled_hits import RecalledHits
from tui.widgets.status_sidebar import (
    SidebarState,
    SidebarSummary,
    StatusSidebar,
    memory_status_line,
)

if TYPE_CHECKING:
    from datetime import datetime

    from agent.turn import TurnEngine
    from memory.fact_drawer import FactDrawer
    from memory.turn_memory import TurnMemory
    from tui.app import StraylightApp

log = logging.getLogger("straylight.tui")

NARROW_COLUMNS = 100  # below this the sidebar (34 columns) would squeeze the chat


def fact_status(memory: TurnMemory, now: datetime) -> dict[str, object] | None:
    """The sidebar's facts line and hypothesis counts (reads the database: call it in a
    thread); None when the memory has no facts or the read failed (logged)."""
    drawer = memory.facts
    if drawer is None:
        return None
    try:
        counts = drawer.counts()
        pending = len(drawer.pending())
        cards = memory.hypotheses.counts(now)  # the drawer's workspace
    except Exception:
        log.exception("fact status failed")
        return None
    line = f"{counts['active']} active, {counts['stale']} stale · {pending} pending"
    return {"facts_line": line, "hypotheses": (cards["open"], cards["overdue"])}


@dataclass
class SidebarUpdate(Message):
    """New values for the sidebar, from a worker (a status read in a thread)."""

    changes: dict[str, object]


class ChatNavigation(Screen[None]):
    """The chat screen without its conversation: sidebar, notices, memory screens."""

    def __init__(self, engine: TurnEngine, sidebar: SidebarState) -> None:
        super().__init__()
        self.engine = engine
        self._sidebar_state = sidebar
        self._narrow = False  # under NARROW_COLUMNS the sidebar folds into one line
        self._sidebar_chosen = False  # Ctrl+B overrides the fold until the width changes

    @property
    def straylight(self) -> StraylightApp:
        return cast("StraylightApp", self.app)

    @property
    def chat_log(self) -> ChatLog:
        return self.query_one(ChatLog)

    async def notice(self, text: str, *, kind: str = "info") -> None:
        await self.chat_log.notice(text, kind=kind)

    def action_focus_input(self) -> None:
        self.query_one(ChatInput).focus()

    # ---- the sidebar -------------------------------------------------------------------
    def publish_sidebar(self, **changes: object) -> None:
        self._sidebar_state = self._sidebar_state.with_changes(**changes)
        for part in self._sidebar_parts():
            part.state = self._sidebar_state

    def _sidebar_parts(self) -> list[StatusSidebar | SidebarSummary]:
        """The sidebar and its folded line, found by id a level at a time: `query()` would
        walk the whole chat log (38k nodes at 800 messages, ~0.2 s), and this runs on every
        Ollama check (every 3 s while it is offline). None while the app shuts down."""
        try:
            main = self.get_child_by_id("main")
            column = main.get_child_by_id("chat-column")
            return [
                main.get_child_by_id("sidebar", StatusSidebar),
                column.get_child_by_id("sidebar-summary", SidebarSummary),
            ]
        except NoMatches:
            return []

    @property
    def sidebar_state(self) -> SidebarState:
        return self._sidebar_state

    def on_sidebar_update(self, message: SidebarUpdate) -> None:
        self.publish_sidebar(**message.changes)
        counts = message.changes.get("hypotheses")
        if isinstance(counts, tuple) and self.straylight.job_alerts.get("hypotheses"):
            self.straylight.overdue_counted(int(counts[1]))  # a card decided: its alert goes
        if "facts_line" in message.changes and self.straylight.job_alerts.get("bindings"):
            self.straylight.recheck_bindings()  # a fact written may mend a binding

    @work(thread=True, exclusive=True, group="memory-status", exit_on_error=False)
    def refresh_memory_status(self) -> None:
        """The sidebar's memory block (points, index, RAM, headroom), read in a thread."""
        memory = self.engine.memory
        if memory is None:
            return
        try:
            status = memory.store.status()
        except Exception:
            if self.engine.memory is not memory:  # closed under the read: quitting or reopening
                return
            log.exception("memory status failed")
            return
        self.post_message(
            SidebarUpdate(
                {"memory_line": memory_status_line(status), "headroom": str(status["headroom"])}
            )
        )

    @work(thread=True, exclusive=True, group="fact-status", exit_on_error=False)
    def refresh_fact_status(self) -> None:
        """The sidebar's facts line and hypothesis counts, read in a thread."""
        memory = self.engine.memory
        changes = fact_status(memory, self.engine.clock.now()) if memory is not None else None
        if changes is not None:
            self.post_message(SidebarUpdate(changes))

    @work(thread=True, exclusive=True, group="longterm-status", exit_on_error=False)
    def refresh_longterm(self) -> None:
        """The sidebar's longterm.md block, re-read in a thread: at each turn (the prompt
        reads the file then), when the chat comes back and when the terminal regains focus,
        so an outside edit shows at once, not at the next Ollama poll."""
        try:
            state = self.engine.longterm.load()
        except Exception:
            log.exception("reading longterm.md for the sidebar failed")
            return
        self.post_message(
            SidebarUpdate(
                {
                    "longterm_bytes": state.size_bytes,
                    "longterm_budget": state.budget_bytes,
                    "longterm_warning": state.warning,
                }
            )
        )

    LONGTERM_CHECK_SECONDS = 2.0
    _longterm_seen: tuple[int, int] | None = None
    _longterm_looked = False  # the first look (at the start) only learns what is there

    def watch_longterm_file(self) -> None:
        """Look at longterm.md's size and time every `LONGTERM_CHECK_SECONDS`, and re-read
        it when they changed: a terminal that reports no focus (tmux by default) left an
        outside edit unshown until the next turn or Ollama poll (30 s)."""
        self._look_at_longterm()  # what the start shows: the baseline
        self.set_interval(self.LONGTERM_CHECK_SECONDS, self._check_longterm)

    def _check_longterm(self) -> None:
        if self.app.screen is self:  # under a screen: its closing refreshes the counts
            self._look_at_longterm()

    @work(thread=True, exclusive=True, group="longterm-check", exit_on_error=False)
    def _look_at_longterm(self) -> None:
        try:
            info = os.stat(self.engine.longterm.path, follow_symlinks=False)
            seen: tuple[int, int] | None = (info.st_size, info.st_mtime_ns)
        except OSError:
            seen = None
        first, self._longterm_looked = not self._longterm_looked, True
        if seen != self._longterm_seen:
            self._longterm_seen = seen
            if not first:
                self.refresh_longterm()

    def refresh_counts(self) -> None:
        """Every count the sidebar shows, read again (facts, candidates, points, longterm)."""
        self.refresh_fact_status()
        self.refresh_memory_status()
        self.refresh_longterm()

    def on_screen_resume(self, _event: events.ScreenResume) -> None:
        """Back from a memory screen, where facts, candidates or points may have changed."""
        if self.is_mounted:
            self.refresh_counts()

    def on_app_focus(self, _event: events.AppFocus) -> None:
        """The terminal is back in front (longterm.md may have been edited elsewhere)."""
        self.refresh_longterm()

    def action_toggle_sidebar(self) -> None:
        sidebar = self.query_one(StatusSidebar)
        sidebar.display = not sidebar.display
        self._sidebar_chosen = True
        self._show_summary()

    def on_resize(self, event: events.Resize) -> None:
        """Under NARROW_COLUMNS the sidebar folds into one line (Ctrl+B still opens it)."""
        narrow = event.size.width < NARROW_COLUMNS
        if narrow != self._narrow:
            self._narrow = narrow
            self._sidebar_chosen = False
        if not self._sidebar_chosen:
            self.query_one(StatusSidebar).display = not narrow
        self._show_summary()

    def _show_summary(self) -> None:
        summary = self.query_one(SidebarSummary)
        summary.display = self._narrow and not self.query_one(StatusSidebar).display

    # ---- the memory screens and the recalled hits ------------------------------------------
    def _memory_or_say(self) -> TurnMemory | None:
        memory = self.engine.memory
        if memory is None:
            problem = self.straylight.memory_problem
            self.notify(f"Memory is not available: {problem}", severity="error")
        return memory

    def _facts_or_say(self) -> FactDrawer | None:
        """The fact drawer (it opens with the memory), or None after saying why not."""
        return self.engine.facts if self._memory_or_say() is not None else None

    def _open_screen(self, screen: Screen[Any], on_close: Any = None) -> None:
        """Push a memory screen (one of each kind at a time); the sidebar is refreshed after."""
        if type(self.app.screen) is type(screen):
            return
        app = self.straylight

        async def closed(result: object) -> None:
            self.refresh_memory_status()
            self.refresh_fact_status()
            if on_close is not None:
                outcome = on_close(result)
                if inspect.isawaitable(outcome):
                    await outcome

        app.push_screen(screen, closed)

    def action_open_memory_browser(self, point_id: int | None = None) -> None:
        if (memory := self._memory_or_say()) is None:
            return
        from tui.screens.memory_browser import MemoryBrowserScreen

        self._open_screen(MemoryBrowserScreen(memory, point_id=point_id))

    def action_open_facts(self) -> None:
        if (facts := self._facts_or_say()) is None:
            return
        from tui.screens.facts_screen import FactsScreen

        self._open_screen(FactsScreen(facts, self.straylight.settings.clock))

    def action_open_candidates(self) -> None:
        if (facts := self._facts_or_say()) is None:
            return
        from tui.widgets.candidate_prompt import CandidatePrompt

        if any(not prompt.result.done() for prompt in self.query(CandidatePrompt)):
            self.notify(
                "A fact waits for your answer in the chat: a approve · e edit · r reject · "
                "l later (then the candidates screen shows the rest).",
                severity="warning",
            )
            return
        from tui.screens.candidates_screen import CandidatesScreen

        self._open_screen(CandidatesScreen(facts))

    def action_open_hypotheses(self) -> None:
        if (facts := self._facts_or_say()) is None:
            return
        from tui.screens.hypotheses_screen import HypothesesScreen

        self._open_screen(HypothesesScreen(facts, self.straylight.settings.clock))

    def action_open_models(self, pull: str | None = None) -> None:
        """F8: the models screen (`pull` fills its pull box: a missing model's offer). F8
        itself fills it with the first model the chat misses, as its `Pull NAME (F8)` button
        and the screens' "F8 in the chat pulls it" say."""
        from tui.screens.models_screen import ModelsScreen

        if pull is None and self.straylight.missing_models:
            pull = self.straylight.missing_models[0].name
        self._open_screen(ModelsScreen(self.straylight, pull=pull), self._use_model)

    async def _use_model(self, choice: object) -> None:
        from tui.screens.models_screen import ModelChoice

        if not isinstance(choice, ModelChoice):
            return
        if choice.role == "chat":
            await self.straylight.chat.switch_model(choice.name)
        elif self.straylight.replying:
            await self.notice(
                f"A reply is streaming: switch the embedding model to {choice.name} after it.",
                kind="warning",
            )
        else:
            self.straylight.switch_embed_model(choice.name)

    def action_focus_recalled(self) -> None:
        hits = self.query_one(RecalledHits)
        if not hits.option_count:
            self.notify("No recalled hits yet: they appear after a turn that recalled some.")
            return
        sidebar = self.query_one(StatusSidebar)
        if not sidebar.display:
            sidebar.display = True
            self._sidebar_chosen = True
            self._show_summary()
        hits.focus()
        if hits.highlighted is None:
            hits.highlighted = 0
        # a sidebar just unfolded has no layout yet: bring the list into view after it
        self.call_after_refresh(hits.scroll_visible, animate=False)

    def on_recalled_hits_open_hit(self, message: RecalledHits.OpenHit) -> None:
        self.action_open_memory_browser(message.point_id)

    def on_recalled_hits_leave(self, _message: RecalledHits.Leave) -> None:
        self.action_focus_input()

    def on_recalled_hits_forget_hit(self, message: RecalledHits.ForgetHit) -> None:
        memory = self._memory_or_say()
        if memory is None:
            return
        from tui.screens.confirm_screen import ConfirmScreen

        point_id = message.point_id

        async def answered(yes: bool | None) -> None:
            if not yes:
                return
            gone = await asyncio.to_thread(memory.store.forget, point_id)
            recalled = tuple(
                line for line in self._sidebar_state.recalled or () if line.point_id != point_id
            )
            self.publish_sidebar(recalled=recalled)
            if not recalled:
                self.action_focus_input()  # the list is gone with its last hit
            self.notify(f"Forgot #{point_id}." if gone else f"#{point_id} was already gone.")
            self.refresh_memory_status()

        self.app.push_screen(ConfirmScreen(f"Forget memory point #{point_id}?"), answered)
