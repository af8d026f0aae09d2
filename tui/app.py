"""The chat TUI's app: the chat screen, the settings, the store's lifecycle and the jobs.

Heavy libraries (ollama, httpx, duckdb, usearch, Markdown) are not imported here: the
first frame comes first. Model calls and file I/O run in workers that report back with
messages; nothing blocks typing. The chat itself is tui/screens/chat_screen.py; the jobs'
side is the base class in tui/app_jobs.py, the palette's entries tui/app_palette.py.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import work
from textual.app import SystemCommand
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.screen import Screen

from agent.ollama_gateway import OllamaGateway
from agent.settings import Settings
from agent.turn import TurnEngine
from agent.turn_events import AfterTurnEvent, MemstatusDue, PointsSaved
from agent.workspace import resolve_workspace
from tui.app_jobs import JobsApp
from tui.app_palette import straylight_commands
from tui.gc_pauses import freeze_long_lived, unfreeze_all
from tui.keymap import split_keymap
from tui.model_pulls import ModelPulls
from tui.owner_live import CandidateWatch, MemoryChangedElsewhere, NewCandidates
from tui.screens.chat_navigation import fact_status
from tui.screens.chat_screen import ChatScreen
from tui.startup_timer import seconds_since_start

if TYPE_CHECKING:
    from rich.console import RenderableType
    from textual.theme import Theme

    from agent.model_catalog import MissingModel
    from jobs.scheduler import JobScheduler
    from memory.deferred_store import DeferredMemory
    from memory.turn_memory import TurnMemory
    from tui.memory_session import MemorySession
    from tui.owner_server import OwnerServer

log = logging.getLogger("straylight.tui")

REFLECT_ON_QUIT_SECONDS = 30.0  # quitting waits this long at most for the reflection pass


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


class StraylightApp(JobsApp):
    """Straylight: the chat screen, and the memory and jobs behind it."""

    CSS_PATH = "app.tcss"
    TITLE = "Straylight"
    MODES: ClassVar[dict[str, str | Callable[[], Screen[Any]]]] = {"chat": "chat"}  # installed
    DEFAULT_MODE = "chat"
    BINDINGS: ClassVar[list[BindingType]] = [  # on every screen; the chat's own: ChatScreen
        Binding("f1", "help", "Help", id="help"),
        Binding("ctrl+q", "quit", "Quit", id="quit", priority=True),
    ]

    def __init__(
        self,
        settings: Settings,
        *,
        poll_online_seconds: float = 30.0,
        poll_offline_seconds: float = 3.0,
        config_path: Path | None = None,
    ) -> None:
        super().__init__()
        self.settings = settings
        self.config_path = config_path  # where a theme chosen in the palette is kept (None: not)
        self._kept_theme: str | None = settings.theme  # the theme config.toml holds now
        self.poll_online_seconds = poll_online_seconds
        self.poll_offline_seconds = poll_offline_seconds
        self.gateway = OllamaGateway.from_config(settings.ollama)
        self.engine = TurnEngine(settings, self.gateway)
        self.engine.after_turn = self._post_after_turn
        self.engine.counts_memstatus_turns = False  # until the job scheduler runs
        self.workspace = resolve_workspace(settings.workspace)
        self.scheduler: JobScheduler | None = None
        self.job_alerts: dict[str, tuple[str, ...]] = {}  # job name → its current alert lines
        self.quitting = False
        self.crashed = False
        self._signals_caught = False  # SIGTERM / SIGHUP quit as Ctrl+Q does (on the main thread)
        self.memory_session: MemorySession | None = None
        self.owner_server: OwnerServer | None = None  # serving the data dir to other clients
        self.serving_stops = False  # `exit` stops serving first (see there)
        self.candidate_watch = CandidateWatch()
        self.memory_problem = "still opening"
        self.model_pulls = ModelPulls()  # pulls started on the models screen (F8)
        self.missing_models: tuple[MissingModel, ...] = ()  # by the last Ollama check
        self.chat = ChatScreen(self)
        self.install_screen(self.chat, "chat")

    @property
    def replying(self) -> bool:
        return self.chat.replying

    def on_mount(self) -> None:
        self._apply_theme_setting()
        known, unknown = split_keymap(self.settings.keymap)
        if known:
            self.set_keymap(known)
        if unknown:
            self.call_after_refresh(self.chat.report_unknown_bindings, unknown)
        self.call_after_refresh(self._after_first_frame)
        self._catch_stop_signals()

    STOP_SIGNALS: ClassVar = (signal.SIGTERM, signal.SIGHUP)

    def _catch_stop_signals(self) -> None:
        """SIGTERM (`kill`) and SIGHUP (the terminal closed, an ssh session gone) quit the
        way Ctrl+Q does, with 128 + the signal: a streaming reply is kept, marked cancelled
        with the signal as its reason, and the terminal is restored. By default they killed
        the TUI at once: what had arrived was lost, the terminal left in the app's mode."""
        if threading.current_thread() is not threading.main_thread():
            return
        loop = asyncio.get_running_loop()
        for signum in self.STOP_SIGNALS:
            loop.add_signal_handler(signum, self._stop_by_signal, signum)
        self._signals_caught = True

    def _release_stop_signals(self) -> None:
        if self._signals_caught:
            self._signals_caught = False
            loop = asyncio.get_running_loop()
            for signum in self.STOP_SIGNALS:
                loop.remove_signal_handler(signum)

    def _stop_by_signal(self, signum: signal.Signals) -> None:
        log.warning("stopped by %s", signum.name)
        self.engine.stop_reason = f"stopped by {signum.name}"
        self.quitting = True  # no reflection pass first: the user may be gone
        self.chat.cancel_reply()
        self.exit(return_code=128 + signum)

    def _apply_theme_setting(self) -> None:
        """The `theme` setting, then every later choice (the palette's "Change theme") is
        written back to config.toml: the theme is kept across starts."""
        name = self.settings.theme
        if name and name in self.available_themes:
            self.theme = name
        elif name:
            self.call_after_refresh(
                self.notify,
                f"Unknown theme {name!r} in the settings; using the default.",
                severity="warning",
            )
        self.theme_changed_signal.subscribe(self, self._theme_changed)

    def _theme_changed(self, theme: Theme) -> None:
        # compared with the theme last kept (not the start setting), so going back is kept too
        if self.config_path is not None and theme.name != self._kept_theme:
            self._kept_theme = theme.name
            self._save_theme(self.config_path, theme.name)

    @work(thread=True, exclusive=True, group="theme", exit_on_error=False)
    def _save_theme(self, config_path: Path, name: str) -> None:
        from tui.theme_setting import ThemeSaveError, save_theme

        try:
            save_theme(config_path, name)
        except ThemeSaveError as error:
            log.warning("theme not saved: %s", error)
            self.call_from_thread(self.notify, str(error), severity="warning")
            return
        log.info("theme %s saved to %s", name, config_path)

    def _after_first_frame(self) -> None:
        log.info("first frame after %.0f ms", seconds_since_start() * 1000)
        # Only now: the check imports httpx and the ollama client (~100 ms), and the
        # memory imports duckdb, numpy and usearch.
        self.chat.check_status()
        self.open_memory()

    def exit(
        self,
        result: int | None = None,
        return_code: int = 0,
        message: RenderableType | None = None,
    ) -> None:
        """Quit once the owner server has stopped: Textual puts the real stdout back when its
        message loop ends, before `on_unmount`, so a command still running for another client
        then printed the rest on this terminal and its client got a cut output. Asked again
        while the server stops (Ctrl+Q twice), it quits at once."""
        if self.owner_server is None or self.serving_stops:
            super().exit(result, return_code, message)
            return
        self.serving_stops = True
        self._stop_serving_then_exit(result, return_code, message)

    @work(exclusive=True, group="stop-serving", exit_on_error=False)
    async def _stop_serving_then_exit(
        self, result: int | None, return_code: int, message: RenderableType | None
    ) -> None:
        """Stop taking commands, let the running ones end (the server's grace), then exit."""
        try:
            if self.owner_server is not None:
                await asyncio.to_thread(self.owner_server.stop)
        finally:
            super().exit(result, return_code, message)

    async def on_unmount(self) -> None:
        self.quitting = True  # the jobs, if their start is still queued, do not start now
        self._release_stop_signals()
        if self.scheduler is not None:
            await self.scheduler.stop()
        if self.owner_server is not None:  # stopped already when `exit` was the way out
            await asyncio.to_thread(self.owner_server.stop)
            from tui import open_chat

            open_chat.unregister(self.settings.home)
        await self.engine.drain()
        self.engine.memory = None  # a sidebar status read still running sees it go quietly
        if self.memory_session is not None:
            await asyncio.to_thread(self.memory_session.close)
        await self.gateway.aclose()
        unfreeze_all()  # what this app froze is the collector's again

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
            self.chat.publish_sidebar(memory_line=f"unavailable: {self.memory_problem}")
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

    # ---- help, quitting (after the session's reflection) ---------------------------------
    def action_help(self) -> None:
        from tui.screens.help_screen import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(split_keymap(self.settings.keymap)[0]))

    def action_check_ollama(self) -> None:
        self.chat.check_status()

    async def action_quit(self) -> None:
        """Quit; the session's reflection pass runs first, in a worker so the screen stays
        live (at most 30 s; Ctrl+Q again quits at once)."""
        chat = self.chat
        if self.quitting or not chat.unreflected_turns or self.engine.facts is None:
            self.exit()
            return
        self.quitting = True
        chat.unreflected_turns = 0
        chat.cancel_reply()
        self.notify("Reflecting on the session before quitting… (Ctrl+Q again quits now)")
        self.reflect_then_exit(chat.conversation_id)

    @work(exclusive=True, group="quit", exit_on_error=False)
    async def reflect_then_exit(self, conversation_id: str) -> None:
        try:
            await asyncio.wait_for(
                self.engine.reflect(conversation_id, self.chat.model), REFLECT_ON_QUIT_SECONDS
            )
        except Exception as error:  # noqa: BLE001 - quitting goes on regardless
            log.warning("reflection at quit failed: %s", error)
        self.exit()

    # ---- command palette ---------------------------------------------------------------
    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """Ctrl+P: Textual's own, then Straylight's (tui/app_palette.py)."""
        yield from super().get_system_commands(screen)
        yield from straylight_commands(self, screen)

    # ---- errors never print a traceback on the user's screen ---------------------
    def _handle_exception(self, error: Exception) -> None:
        log.error("unhandled error in the TUI", exc_info=error)
        self._crash_message = f"{type(error).__name__}: {error}"
        super()._handle_exception(error)

    def _print_error_renderables(self) -> None:
        if self._exit_renderables:
            self.crashed = True
            message = getattr(self, "_crash_message", "unexpected error")
            self.error_console.print(
                f"straylight: the TUI stopped on an unexpected error: {message} "
                f"(details in {self.settings.log_file})",
                markup=False,
                highlight=False,
            )
            self._exit_renderables.clear()


def run_app(settings: Settings, config_path: Path | None = None) -> int:
    app = StraylightApp(settings, config_path=config_path)
    result = app.run()
    if app.crashed:
        return 1
    return app.return_code or (result if isinstance(result, int) else 0)
