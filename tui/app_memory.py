"""The app's memory (layer 3): opening it in a worker (or a deferred stand-in on a new data
dir), the `MemoryOpened` report, the turns' saves reported back (`AfterTurn`), switching the
embedding model, and serving the data dir to other clients, whose writes refresh the sidebar
and the candidates. `StraylightApp` (tui/app.py) sets the attributes; the jobs start from
here once there is a database (tui/app_jobs.py).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual import work
from textual.message import Message

from agent.turn_events import AfterTurnEvent, MemstatusDue, PointsSaved
from agent.workspace import resolve_workspace
from tui.app_jobs import JobsApp
from tui.gc_pauses import freeze_long_lived
from tui.owner_live import CandidateWatch, MemoryChangedElsewhere, NewCandidates
from tui.screens.chat_navigation import fact_status
from tui.startup_timer import seconds_since_start

if TYPE_CHECKING:
    from memory.deferred_store import DeferredMemory
    from memory.turn_memory import TurnMemory
    from tui.memory_session import MemorySession
    from tui.owner_server import OwnerServer

log = logging.getLogger("straylight.tui")


@dataclass
class MemoryOpened(Message):
    """The memory worker finished opening layer 3 (or says why it could not)."""

    memory: TurnMemory | None
    problem: str | None
    sidebar: dict[str, object] | None = None  # the facts' sidebar values, read by the opener


@dataclass
class AfterTurn(Message):
    """The engine's background save of a turn reported back (point ids, memstatus due)."""

    event: AfterTurnEvent


class MemoryApp(JobsApp):
    """The memory's side of `StraylightApp` (tui/app.py), which sets these attributes."""

    quitting: bool
    memory_session: MemorySession | None
    owner_server: OwnerServer | None  # serving the data dir to other clients
    candidate_watch: CandidateWatch

    # ---- memory (layer 3) ----------------------------------------------------------
    @work(thread=True, exclusive=True, group="memory-open", exit_on_error=False)
    def open_memory(self, *, ahead: bool = True) -> None:
        """Open layer 3; on a data dir with no database yet, a stand-in that opens it at
        the first write (memory/deferred_store.py: no DuckDB in an idle, empty app).
        `ahead`: the derived files are checked in threads while this one imports the
        store's modules and opens the database (memory/open_ahead.py)."""
        from memory.deferred_store import DeferredMemory, database_exists

        if database_exists(self.settings.home):
            from memory.open_ahead import drop_open_ahead, start_open_ahead

            if ahead:
                start_open_ahead(self.settings.home)
            try:
                memory = self._open_and_report()
            except Exception:  # noqa: BLE001 - named on screen and logged already
                drop_open_ahead(self.settings.home)  # (the store's open may not have run)
                return
            self._serve_other_clients()
            if memory.store.wait_for_words(timeout=600):  # (bench.scaling reads this line)
                log.info("memory usable after %.0f ms", seconds_since_start() * 1000)
            return
        deferred = DeferredMemory(
            self.settings.home,
            self.settings.memory,
            resolve_workspace(self.settings.workspace),
            self.settings.facts,
            self._open_deferred,
        )
        log.info("no memory database yet: it is created at the first write")
        self._serve_other_clients()
        self.post_message(MemoryOpened(deferred.as_turn_memory(), None))

    def _open_session(self) -> TurnMemory:
        """In a worker thread: the memory session, its store registered for this process."""
        from tui.memory_session import MemorySession

        session = MemorySession(self.settings, self.gateway, take_lock=False)
        memory = session.open()
        self.memory_session = session
        if memory.facts is not None:  # the candidates pending already are not news
            try:
                self.candidate_watch.mark_seen(memory.facts.pending())
            except Exception:
                log.exception("reading the pending candidates failed")
        return memory

    def memory_wanted(self) -> None:
        """Something is about to write (the user started typing a message): a deferred
        memory starts opening now, in a worker, so the first turn need not wait for it."""
        from memory.deferred_store import DeferredMemory

        memory = self.engine.memory
        if isinstance(memory, DeferredMemory) and not memory.opening_started:
            memory.opening_started = True
            self._open_ahead(memory)

    @work(thread=True, exclusive=True, group="memory-open-ahead", exit_on_error=False)
    def _open_ahead(self, memory: DeferredMemory) -> None:
        try:
            memory.open()
        except Exception:  # noqa: BLE001 - named on screen and logged by _open_and_report
            return

    def _open_and_report(self) -> TurnMemory:
        """In a worker thread: open the memory and tell the app (`MemoryOpened`, either way)."""
        try:
            memory = self._open_session()
        except Exception as error:
            log.exception("cannot open the memory")
            self.post_message(MemoryOpened(None, str(error)))
            raise
        sidebar = fact_status(memory, self.engine.clock.now())  # comes with the open
        self.post_message(MemoryOpened(memory, None, sidebar))
        return memory

    def _open_deferred(self) -> TurnMemory:
        """The deferred memory's opener (in the thread of its first write or real read):
        the app then holds the real memory and starts the jobs."""
        memory = self._open_and_report()
        log.info("memory database opened at its first write")
        return memory

    async def on_memory_opened(self, message: MemoryOpened) -> None:
        if message.memory is None:
            self.engine.memory = None  # (a deferred memory whose first open failed, too)
            self.memory_problem = message.problem or "unknown error"
            self.chat.publish_sidebar(  # the facts live in the same database
                memory_line=f"unavailable: {self.memory_problem}", facts_line="unavailable"
            )
            await self.chat.notice(
                f"⚠ Memory is not available: {self.memory_problem}. Chat works without it.",
                kind="error",
            )
            return
        from memory.deferred_store import DeferredMemory

        self.engine.memory = message.memory
        self.engine.saves.start_held(message.memory)  # turns that ended while it opened
        self.memory_problem = ""
        if message.sidebar is not None:
            self.chat.publish_sidebar(**message.sidebar)
        else:
            self.chat.refresh_fact_status()
        self.chat.refresh_memory_status()  # the point count, without waiting for a turn or a job
        freeze_long_lived()  # the start-up's modules and objects: out of the full passes
        deferred = isinstance(message.memory, DeferredMemory)  # jobs: once there is a database
        if self.settings.jobs.enabled and not deferred and self.scheduler is None:
            # after the sidebar's next paint: the jobs' imports (APScheduler) would delay it
            self.call_after_refresh(self._start_jobs_for, message.memory)

    def _start_jobs_for(self, memory: TurnMemory) -> None:
        """Start the jobs unless the memory changed or the app quit since it opened."""
        if self.engine.memory is memory and self.scheduler is None and not self.quitting:
            self._start_jobs(memory)

    @work(exclusive=True, group="embed-switch", exit_on_error=False)
    async def switch_embed_model(self, name: str) -> None:
        """Embed with `name` for the rest of the session (the models screen's e): the jobs
        stop, layer 3 closes and opens again with the new model. Opening with another model
        marks every point for re-embedding (memory/memory_store.py), which backfill does in
        the background; recall matches words meanwhile. config.toml is not changed."""
        if self.scheduler is not None:
            scheduler, self.scheduler = self.scheduler, None
            await scheduler.stop()
        await self.engine.drain()
        self.engine.memory = None
        self.memory_problem = f"reopening with the embedding model {name}"
        if self.memory_session is not None:
            session, self.memory_session = self.memory_session, None
            await asyncio.to_thread(session.close)
        memory = self.settings.memory.model_copy(update={"embed_model": name})
        facts = self.settings.facts.model_copy(update={"embed_model": name})
        self.settings = self.settings.model_copy(update={"memory": memory, "facts": facts})
        self.engine.settings = self.settings
        self.open_memory(ahead=False)  # (the vector file is the old model's: no use checking)
        self.chat.check_status()  # the sidebar's embedding line follows
        await self.chat.notice(
            f"Embedding model for this session: {name}. Every memory point is re-embedded "
            "in the background; recall matches words until then."
        )

    def _post_after_turn(self, event: AfterTurnEvent) -> None:
        self.post_message(AfterTurn(event))  # the save task runs on the app's loop

    def on_after_turn(self, message: AfterTurn) -> None:
        """A turn's points are saved (the messages keep their ids; the sidebar counts them),
        or memstatus is due (every MEMORY_STATUS_EVERY_N turns, besides every 10 minutes)."""
        event = message.event
        if isinstance(event, PointsSaved):
            self.chat.points_saved(event)
            self.chat.refresh_memory_status()
            self.look_for_new_candidates(announce=False)  # the chat showed its own
        elif isinstance(event, MemstatusDue) and self.scheduler is not None:
            self.run_job_now("memstatus")

    # ---- other clients: this process owns the data dir and serves it ------------------
    def _serve_other_clients(self) -> None:
        """In the memory worker: serve the data dir (when this process holds its lock, as
        `straylight` does)."""
        from store.data_dir_lock import held_here
        from tui.owner_server import OwnerServer

        if held_here(self.settings.home):
            from tui import open_chat

            open_chat.register(self.settings.home, lambda: self.chat.conversation_id)
            self.owner_server = OwnerServer.start_soft(
                self.settings.home, on_finished=self._post_forwarded
            )

    def _post_forwarded(self, argv: object, exit_code: int) -> None:
        from tui.owner_live import may_have_written

        words = tuple(str(word) for word in argv) if isinstance(argv, list | tuple) else ()
        if may_have_written(words, exit_code):
            self.post_message(MemoryChangedElsewhere(words, exit_code))

    def on_memory_changed_elsewhere(self, _message: MemoryChangedElsewhere) -> None:
        """Another client wrote: the sidebar's counts, an open facts or candidates screen,
        and the candidates it proposed."""
        if not self.is_running or not self.screen_stack:
            return
        self.chat.refresh_memory_status()
        self.chat.refresh_fact_status()
        from tui.screens.fact_rows import RecordScreen

        if isinstance(self.screen, RecordScreen):
            self.screen.reload()
        self.look_for_new_candidates(announce=True)

    @work(thread=True, exclusive=True, group="new-candidates", exit_on_error=False)
    def look_for_new_candidates(self, announce: bool) -> None:
        facts = self.engine.facts
        if facts is None:
            return
        fresh = self.candidate_watch.new(facts.pending())
        if fresh and announce:
            self.post_message(NewCandidates(fresh))

    async def on_new_candidates(self, message: NewCandidates) -> None:
        from tui.owner_live import candidates_notice

        await self.chat.notice(candidates_notice(message.candidates))
