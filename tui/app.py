"""The chat TUI's app: the chat screen, the settings, the store's lifecycle and the jobs.

Heavy libraries (ollama, httpx, duckdb, usearch, Markdown) are not imported here: the
first frame comes first. Model calls and file I/O run in workers that report back with
messages; nothing blocks typing. The chat itself is tui/screens/chat_screen.py; the
memory's side is the base class in tui/app_memory.py, the jobs' side its base class in
tui/app_jobs.py, the palette's entries tui/app_palette.py.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import work
from textual.app import SystemCommand
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.worker import Worker

from agent.ollama_gateway import OllamaGateway
from agent.settings import Settings
from agent.turn import TurnEngine
from agent.workspace import resolve_workspace
from tui.app_memory import MemoryApp
from tui.app_palette import straylight_commands
from tui.commands import CHAT_KEYS
from tui.display_text import printable
from tui.gc_pauses import unfreeze_all
from tui.keymap import key_conflicts, split_keymap
from tui.model_pulls import ModelPulls
from tui.owner_live import CandidateWatch
from tui.screens.chat_screen import ChatScreen
from tui.slash_router import SLASH_GROUP
from tui.startup_timer import seconds_since_start
from tui.widgets.chat_input import ChatInput

if TYPE_CHECKING:
    from rich.console import RenderableType
    from textual.theme import Theme

    from agent.model_catalog import MissingModel
    from jobs.scheduler import JobScheduler
    from tui.memory_session import MemorySession
    from tui.owner_server import OwnerServer
    from tui.stop_signals import StopSignals

log = logging.getLogger("straylight.tui")

REFLECT_ON_QUIT_SECONDS = 30.0  # quitting waits this long at most for the reflection pass
FINISH_ON_QUIT_SECONDS = 30.0  # and this long for a slash command still running


class ThemeNotSaved(Message):
    """The theme worker could not write config.toml: why, for a warning."""

    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason


class StraylightApp(MemoryApp):
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
        self._finishing_commands = False  # Ctrl+Q waits for the running slash commands once
        self.crashed = False
        self._stop_signals: StopSignals | None = None  # SIGTERM / SIGHUP quit as Ctrl+Q does
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

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Textual's, always as plain text: a notification repeats paths and Ollama's words,
        whose `[…]` is text (`[/x]` in a data dir's path stopped the chat with a MarkupError,
        `[num_ctx]` vanished), with control characters as symbols. Straylight's own
        notifications use no markup, so `markup` (Textual's widgets pass True) is ignored."""
        del markup
        super().notify(
            printable(message), title=title, severity=severity, timeout=timeout, markup=False
        )

    def action_help_quit(self) -> None:
        """Ctrl+C: Textual's hint how to quit, in plain text (Textual writes it in markup,
        which `notify` shows as it is: "Press [b]ctrl+q[/b] to quit the app")."""
        for key, active in self.active_bindings.items():
            if active.binding.action in ("quit", "app.quit"):
                self.notify(f"Press {key} to quit the app", title="Do you want to quit?")
                return

    def on_mount(self) -> None:
        self._apply_theme_setting()
        known, unknown = split_keymap(self.settings.keymap)
        if known:
            self.set_keymap(known)
        if unknown:
            self.call_after_refresh(self.chat.report_unknown_bindings, unknown)
        chat_keys = [(key.id, key.key) for key in CHAT_KEYS] + ChatInput.own_keys()
        if shared := key_conflicts(chat_keys, known):
            self.call_after_refresh(self.chat.report_key_conflicts, shared)
        self.call_after_refresh(self._after_first_frame)
        self._catch_stop_signals()

    STOP_SIGNALS: ClassVar = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)

    def _catch_stop_signals(self) -> None:
        """SIGTERM (`kill`), SIGHUP (the terminal closed, an ssh session gone) and SIGINT
        (`kill -INT`; the Ctrl+C key reaches the app as a key, not a signal) quit the way
        Ctrl+Q does, with 128 + the signal: a streaming reply is kept, marked cancelled
        with the signal as its reason, and the terminal is restored. By default they killed
        the TUI at once: what had arrived was lost, the terminal left in the app's mode. When
        the screen does not answer (nobody reads the terminal), `tui.stop_signals` ends the
        process after a grace."""
        from tui.stop_signals import StopSignals

        signals = StopSignals(asyncio.get_running_loop(), self.STOP_SIGNALS, self._stop_by_signal)
        if signals.install():
            self._stop_signals = signals

    def _release_stop_signals(self) -> None:
        if self._stop_signals is not None:
            self._stop_signals.uninstall()
            self._stop_signals = None

    def _stop_by_signal(self, signum: signal.Signals) -> None:
        if self._stop_signals is not None:
            self._stop_signals.taken(shutdown=True)
        log.warning("stopped by %s", signum.name)
        self.engine.stop_reason = f"stopped by {signum.name}"
        self.quitting = True  # no reflection pass first: the user may be gone
        self.chat.cancel_reply()
        self.exit(return_code=128 + signum)

    def _apply_theme_setting(self) -> None:
        """The `theme` setting, then every later choice (the palette's "Theme") is
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
            self.post_message(ThemeNotSaved(str(error)))
            return
        log.info("theme %s saved to %s", name, config_path)

    def on_theme_not_saved(self, message: ThemeNotSaved) -> None:
        self.notify(message.reason, severity="warning")

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

    # ---- help, quitting (after the session's reflection) ---------------------------------
    def action_help(self) -> None:
        from tui.screens.help_screen import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(split_keymap(self.settings.keymap)[0]))

    def action_check_ollama(self) -> None:
        self.chat.check_status()

    async def action_quit(self) -> None:
        """Quit; a slash command still running (`/remember` waiting on its embedding, an
        `/import`) ends first, then the session's reflection pass runs, each in a worker so
        the screen stays live (at most 30 s each; Ctrl+Q again quits at once)."""
        if self._finishing_commands:  # Ctrl+Q again: now, as the notice says
            self.quitting = True
            self.exit()
            return
        running = [w for w in self.workers if w.group == SLASH_GROUP and not w.is_finished]
        if running:
            self._finishing_commands = True
            names = ", ".join(sorted({w.name.removeprefix("slash ") for w in running}))
            self.notify(f"Finishing {names} before quitting… (Ctrl+Q again quits now)")
            self.finish_commands_then_quit(running)
            return
        await self._quit_after_reflection()

    async def _quit_after_reflection(self) -> None:
        chat = self.chat
        if self.quitting or not chat.unreflected_turns or self.engine.facts is None:
            self.exit()
            return
        self.quitting = True
        chat.unreflected_turns = 0
        chat.cancel_reply()
        self.notify("Reflecting on the session before quitting… (Ctrl+Q again quits now)")
        self.reflect_then_exit(chat.conversation_id)

    @work(exclusive=True, group="quit-commands", exit_on_error=False)
    async def finish_commands_then_quit(self, running: list[Worker[Any]]) -> None:
        """The slash commands a Ctrl+Q found running, waited for: they were cancelled with
        the app, and a `/remember` whose embedding was slow was lost without a word."""
        waits = [asyncio.ensure_future(worker.wait()) for worker in running]
        try:
            await asyncio.wait(waits, timeout=FINISH_ON_QUIT_SECONDS)
        finally:  # (Ctrl+Q again: the app cancels this worker; nothing left unread)
            for waiting in waits:
                waiting.cancel()
                waiting.add_done_callback(_read_outcome)
        await self._quit_after_reflection()

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


def _read_outcome(done: asyncio.Future[Any]) -> None:
    """Read a finished wait's outcome, so asyncio does not report it as never retrieved."""
    if not done.cancelled():
        done.exception()
