"""The chat TUI: a streaming chat log, a message box, a status sidebar.

Heavy libraries (ollama, httpx, duckdb, usearch, Markdown) are not imported here: the
first frame comes first. Model calls and file I/O run in workers that report back with
messages; nothing blocks typing.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from textual import events, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer

from agent.ollama_gateway import OllamaGateway, OllamaStatus, normalise_model_name
from agent.settings import Settings
from agent.turn import (
    Approval,
    CandidatesProposed,
    CapabilityReminder,
    FactsInjected,
    LongtermWarning,
    Recalled,
    ReplyDelta,
    ReplyFailed,
    ReplyFinished,
    ToolUsed,
    TurnEngine,
    new_conversation_id,
)
from agent.workspace import resolve_workspace
from tui.display_text import printable
from tui.fact_commands import (
    FACT_COMMANDS,
    HYPOTHESIS_COMMANDS,
    run_fact_command,
    run_hypothesis_command,
)
from tui.keymap import split_keymap
from tui.memory_commands import MEMORY_COMMANDS, run_memory_command
from tui.startup_timer import seconds_since_start
from tui.widgets.chat_input import ChatInput
from tui.widgets.chat_message import ChatMessage, ChatNotice, EmptyChatHint
from tui.widgets.recalled_hits import RecalledHits, RecalledLine
from tui.widgets.status_sidebar import SidebarState, SidebarSummary, StatusSidebar

if TYPE_CHECKING:
    from jobs.background_jobs import JobResult
    from jobs.scheduler import JobScheduler
    from memory.fact_drawer import FactDrawer
    from memory.turn_memory import TurnMemory
    from store.fact_store import Candidate
    from store.longterm_file import LongtermState
    from store.point_store import Point
    from tui.memory_session import MemorySession
    from tui.screens.conversations_screen import ContinueConversation

log = logging.getLogger("straylight.tui")

SLASH_COMMANDS: dict[str, str] = {
    "/help": "show keys and commands",
    "/new": "start a new conversation",
    "/model": "/model NAME switches the chat model; /model alone lists pulled models",
    **MEMORY_COMMANDS,
    **FACT_COMMANDS,
    **HYPOTHESIS_COMMANDS,
    "/dream": "run the dream now: at most one hypothesis card from related memories",
    "/conversations": "the daily logs by day and conversation: read one, continue it",
    "/longterm": "edit longterm.md in $VISUAL / $EDITOR (the TUI waits)",
}
CHAT_SCREEN_ACTIONS = frozenset(
    {
        "cancel_reply",
        "new_conversation",
        "toggle_sidebar",
        "select_message",
        "focus_recalled",
        "open_memory_browser",
        "open_facts",
        "open_candidates",
        "open_hypotheses",
        "open_conversations",
        "edit_longterm",
    }
)
SCREEN_COMMANDS: dict[str, str] = {  # without an argument these open their screen
    "/recall": "open_memory_browser",
    "/facts": "open_facts",
    "/candidates": "open_candidates",
    "/hypotheses": "open_hypotheses",
    "/conversations": "open_conversations",
    "/longterm": "edit_longterm",
}
REFLECT_ON_QUIT_SECONDS = 30.0  # quitting waits this long at most for the reflection pass
NARROW_COLUMNS = 100  # below this the sidebar (34 columns) would squeeze the chat


@dataclass
class MemoryOpened(Message):
    """The memory worker finished opening layer 3 (or says why it could not)."""

    memory: TurnMemory | None
    problem: str | None


@dataclass
class JobFinished(Message):
    """A background job ran (scheduled, caught up, or run by a command)."""

    name: str
    result: JobResult


@dataclass
class StatusChecked(Message):
    """A background check of Ollama and longterm.md finished."""

    ollama: OllamaStatus
    longterm: LongtermState


class StraylightApp(App[int]):
    """Straylight's chat screen."""

    CSS_PATH = "app.tcss"
    TITLE = "Straylight"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel_reply", "Cancel", id="cancel_reply"),
        Binding("ctrl+n", "new_conversation", "New chat", id="new_conversation"),
        Binding("ctrl+b", "toggle_sidebar", "Sidebar", id="toggle_sidebar"),
        Binding("f1", "help", "Help", id="help"),
        Binding("ctrl+q", "quit", "Quit", id="quit", priority=True),
        Binding("ctrl+up", "select_message(0)", "Select message", id="select_message", show=False),
        Binding("f2", "open_memory_browser", "Memory", id="open_memory_browser"),
        Binding("f3", "open_facts", "Facts", id="open_facts"),
        Binding("f4", "open_candidates", "Candidates", id="open_candidates", show=False),
        Binding("f5", "open_hypotheses", "Hypotheses", id="open_hypotheses", show=False),
        Binding("ctrl+o", "open_conversations", "Chats", id="open_conversations", show=False),
        Binding("ctrl+g", "edit_longterm", "longterm.md", id="edit_longterm", show=False),
        Binding("ctrl+r", "focus_recalled", "Recalled hits", id="focus_recalled", show=False),
    ]

    def __init__(
        self,
        settings: Settings,
        *,
        poll_online_seconds: float = 30.0,
        poll_offline_seconds: float = 3.0,
    ) -> None:
        super().__init__()
        self.settings = settings
        self.poll_online_seconds = poll_online_seconds
        self.poll_offline_seconds = poll_offline_seconds
        self.gateway = OllamaGateway.from_config(settings.ollama)
        self.engine = TurnEngine(settings, self.gateway)
        self.engine.approver = self.ask_approval
        self.workspace = resolve_workspace(settings.workspace)
        self.unreflected_turns = 0  # finished turns of this conversation since its reflection
        self.scheduler: JobScheduler | None = None
        self.job_alerts: dict[str, tuple[str, ...]] = {}  # job name → its current alert lines
        self._quitting = False
        self._narrow = False  # under NARROW_COLUMNS the sidebar folds into one line
        self._sidebar_chosen = False  # Ctrl+B overrides the fold until the width changes
        self.model = settings.ollama.model
        self.conversation_id = new_conversation_id(settings.clock)
        self.conversation_started: datetime = settings.clock.now()
        self.ollama_status: OllamaStatus | None = None
        self.replying = False
        self.crashed = False
        self.memory_session: MemorySession | None = None
        self.memory_problem = "still opening"
        self._sidebar_state = SidebarState(
            host=settings.ollama.host,
            model=self.model,
            conversation_started=self.conversation_started,
            longterm_budget=settings.longterm_budget_bytes,
            workspace=self.workspace,
        )

    # ---- layout ---------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            with Vertical(id="chat-column"):
                yield SidebarSummary(id="sidebar-summary")
                with VerticalScroll(id="chat-log"):
                    yield EmptyChatHint()
                yield ChatInput(id="input")
            yield StatusSidebar(id="sidebar")
        yield Footer()

    def on_mount(self) -> None:
        known, unknown = split_keymap(self.settings.keymap)
        if known:
            self.set_keymap(known)
        if unknown:
            self.call_after_refresh(self._report_unknown_bindings, unknown)
        self.query_one(ChatInput).focus()
        self.query_one("#chat-log", VerticalScroll).anchor()
        self._publish_sidebar()
        self.call_after_refresh(self._after_first_frame)

    def _after_first_frame(self) -> None:
        log.info("first frame after %.0f ms", seconds_since_start() * 1000)
        # Only now: the check imports httpx and the ollama client (~100 ms), and the
        # memory imports duckdb, numpy and usearch.
        self.check_status()
        self.open_memory()

    async def on_unmount(self) -> None:
        if self.scheduler is not None:
            await self.scheduler.stop()
        await self.engine.drain()
        if self.memory_session is not None:
            await asyncio.to_thread(self.memory_session.close)
        await self.gateway.aclose()

    # ---- memory (layer 3) ----------------------------------------------------------
    @work(thread=True, exclusive=True, group="memory-open", exit_on_error=False)
    def open_memory(self) -> None:
        from tui.memory_session import MemorySession

        session = MemorySession(self.settings, self.gateway, take_lock=False)
        try:
            memory = session.open()
        except Exception as error:
            log.exception("cannot open the memory")
            self.post_message(MemoryOpened(None, str(error)))
            return
        self.memory_session = session
        self.post_message(MemoryOpened(memory, None))

    async def on_memory_opened(self, message: MemoryOpened) -> None:
        if message.memory is None:
            self.memory_problem = message.problem or "unknown error"
            self._publish_sidebar(memory_line=f"unavailable: {self.memory_problem}")
            await self._notice(
                f"⚠ Memory is not available: {self.memory_problem}. Chat works without it.",
                kind="error",
            )
            return
        self.engine.memory = message.memory
        self.memory_problem = ""
        self.refresh_fact_status()
        self.refresh_memory_status()  # the point count, without waiting for a turn or a job
        if self.settings.jobs.enabled:
            self._start_jobs(message.memory)

    # ---- background jobs -------------------------------------------------------------
    def _start_jobs(self, memory: TurnMemory) -> None:
        from jobs.background_jobs import JobContext
        from jobs.runner import JobRunner
        from jobs.scheduler import JobScheduler

        runner = JobRunner(JobContext(self.settings, memory, self.gateway, self.model))
        self.scheduler = JobScheduler(
            runner, lambda name, result: self.post_message(JobFinished(name, result))
        )
        try:
            self.scheduler.start()
        except Exception:
            log.exception("the job scheduler did not start; jobs run only from the shell")
            self.scheduler = None

    def on_job_finished(self, message: JobFinished) -> None:
        if not self.is_running or not self.screen_stack:
            return  # a job that ended while the app shut down: its run is recorded anyway
        result = message.result
        for notice in result.notices:
            severity = {"warning": "warning", "error": "error"}.get(notice.level, "information")
            self.notify(notice.text, severity=severity, timeout=10)  # type: ignore[arg-type]
        if message.name == "memstatus" and result.status == "ok":
            self._publish_sidebar(headroom=str(result.data.get("headroom", "ok")))
        elif message.name == "overdue-hypotheses" and result.status == "ok":
            overdue = int(result.data.get("overdue", 0))
            lines = (f"{overdue} hypothesis card(s) overdue",) if overdue else ()
            self._set_alerts("hypotheses", lines)
            self._publish_sidebar(
                hypotheses=(int(result.data.get("open", 0)), overdue),
            )
        elif message.name == "bindings" and result.status == "ok":
            self._set_alerts("bindings", tuple(result.data.get("alerts", ())))
        elif message.name in ("decay", "dream"):
            self.refresh_fact_status()
        if message.name in ("backfill", "index-upkeep", "decay"):
            self.refresh_memory_status()

    def _set_alerts(self, source: str, lines: tuple[str, ...]) -> None:
        self.job_alerts[source] = lines
        merged = tuple(line for group in self.job_alerts.values() for line in group)
        self._publish_sidebar(alerts=merged)

    @work(exclusive=False, group="jobs-now", exit_on_error=False)
    async def run_job_now(self, name: str, announce: bool = False) -> None:
        if self.scheduler is None:
            memory = self.engine.memory
            if memory is None:
                await self._notice(f"Memory is not available: {self.memory_problem}")
                return
            from jobs.background_jobs import JobContext
            from jobs.runner import JobRunner

            runner = JobRunner(JobContext(self.settings, memory, self.gateway, self.model))
            result = await runner.run(name)  # jobs are off: run this one by hand anyway
            self.post_message(JobFinished(name, result))
        else:
            result = await self.scheduler.run_now(name)  # the scheduler posts JobFinished
        if announce and not result.notices:  # a notice is shown as a toast already
            await self._notice(f"{name}: {result.summary}")

    @work(thread=True, exclusive=False, group="turn-count", exit_on_error=False)
    def count_turn_for_memstatus(self) -> None:
        """Every MEMORY_STATUS_EVERY_N turns, memstatus runs (besides every 10 minutes)."""
        from memory.memstatus_notice import count_turn

        memory = self.engine.memory
        if memory is None or self.scheduler is None:
            return
        if count_turn(memory.store.db) >= self.settings.memory.status_every_n:
            self.call_from_thread(self.run_job_now, "memstatus")
        self.refresh_memory_status()

    @work(thread=True, exclusive=True, group="memory-status", exit_on_error=False)
    def refresh_memory_status(self) -> None:
        memory = self.engine.memory
        if memory is None:
            return
        try:
            status = memory.store.status()
        except Exception:
            log.exception("memory status failed")
            return
        self.call_from_thread(
            self._publish_sidebar,
            memory_line=memory_status_line(status),
            headroom=str(status["headroom"]),
        )

    # ---- sidebar and background checks -------------------------------------------
    def _publish_sidebar(self, **changes: object) -> None:
        self._sidebar_state = self._sidebar_state.with_changes(**changes)
        for sidebar in self.query(StatusSidebar):  # none while the app shuts down
            sidebar.state = self._sidebar_state
        for summary in self.query(SidebarSummary):
            summary.state = self._sidebar_state

    @work(exclusive=True, group="status", exit_on_error=False)
    async def check_status(self) -> None:
        """Ask Ollama how it is and re-read longterm.md's state, off the event loop."""
        try:
            await asyncio.to_thread(self.engine.longterm.ensure_template)
        except OSError as error:
            log.warning("cannot create longterm.md: %s", error)
        ollama = await self.gateway.check()
        longterm = await asyncio.to_thread(self.engine.longterm.load)
        self.post_message(StatusChecked(ollama, longterm))

    def on_status_checked(self, message: StatusChecked) -> None:
        self._apply_ollama_status(message.ollama)
        self._apply_longterm(message.longterm)
        delay = self.poll_online_seconds if message.ollama.reachable else self.poll_offline_seconds
        self.set_timer(delay, self.check_status, name="ollama-recheck")

    def _apply_ollama_status(self, status: OllamaStatus) -> None:
        was_offline = self.ollama_status is not None and not self.ollama_status.reachable
        self.ollama_status = status
        if status.reachable:
            detail = f"version {status.version}" if status.version else None
            self._publish_sidebar(
                ollama="online", ollama_detail=detail, model_pulled=status.has_model(self.model)
            )
            if was_offline:
                self.notify(f"Ollama is back at {status.host}", timeout=4)
        else:
            self._publish_sidebar(ollama="offline", ollama_detail=status.error, model_pulled=None)

    def _apply_longterm(self, state: LongtermState) -> None:
        self._publish_sidebar(
            longterm_bytes=state.size_bytes,
            longterm_budget=state.budget_bytes,
            longterm_warning=state.warning,
        )

    # ---- sending -----------------------------------------------------------------
    async def on_chat_input_submitted(self, message: ChatInput.Submitted) -> None:
        text = message.text
        if text.lstrip().startswith("/"):
            message.input.clear()
            await self.run_slash_command(text.strip())
            return
        if self.replying:
            self.notify("A reply is still streaming: Esc cancels it.", severity="warning")
            return
        message.input.clear()
        self.replying = True
        self.send_turn(text)

    @work(exclusive=True, group="reply", exit_on_error=False)
    async def send_turn(self, text: str) -> None:
        chat_log = self.query_one("#chat-log", VerticalScroll)
        await chat_log.query(EmptyChatHint).remove()
        now = self.settings.clock.now()
        await chat_log.mount(ChatMessage("user", text, time=now))
        reply = ChatMessage("assistant", time=now, model=self.model, status="waiting")
        await chat_log.mount(reply)
        chat_log.scroll_end(animate=False)
        finished = False
        try:
            async for event in self.engine.run(
                text, conversation_id=self.conversation_id, model=self.model
            ):
                if isinstance(event, ReplyDelta):
                    await reply.append(event.text)
                elif isinstance(event, ReplyFinished):
                    finished = True
                    await reply.finish(event.text, "complete")
                    self._publish_sidebar(last_reply=_reply_stats(event))
                    self.set_timer(1.0, self.refresh_memory_status)
                    self.unreflected_turns += 1
                    self._restart_idle_timer()
                    self.count_turn_for_memstatus()
                elif isinstance(event, FactsInjected):
                    self._publish_sidebar(
                        injected_facts=len(event.injected.facts),
                        injected=tuple(f.key for f in event.injected.facts),
                    )
                elif isinstance(event, Recalled):
                    self._publish_sidebar(recalled=_recalled_lines(event))
                elif isinstance(event, ToolUsed):
                    await self._notice(f"🗂 {event.name}: {event.summary}")
                elif isinstance(event, CandidatesProposed):
                    await self._announce_candidates(event.candidates)
                elif isinstance(event, CapabilityReminder):
                    await self._remind_capabilities(event)
                elif isinstance(event, ReplyFailed):
                    finished = True
                    self._publish_sidebar(last_reply=None)
                    await self._show_failure(reply, event)
                elif isinstance(event, LongtermWarning) and not event.over_budget:
                    self._publish_sidebar(longterm_warning=event.text)  # (over budget: shown)
        except asyncio.CancelledError:
            self._publish_sidebar(last_reply=None)
            await reply.finish(status="cancelled")
            raise
        except Exception as error:  # named on screen, detailed in the log
            log.exception("turn failed")
            finished = True
            await reply.finish(status="failed")
            await self._notice(
                f"⚠ {type(error).__name__}: {error} (details in {self.settings.log_file})",
                kind="error",
            )
        finally:
            self.replying = False
            if not finished and reply.status in ("waiting", "streaming"):
                await reply.finish(status="cancelled")

    async def _show_failure(self, reply: ChatMessage, event: ReplyFailed) -> None:
        chat_log = self.query_one("#chat-log", VerticalScroll)
        if event.partial:
            await reply.finish(event.partial, "cut_off")
            note = f"⚠ {event.error} — the partial reply above is kept, marked cut off."
        else:
            await reply.remove()
            note = f"⚠ {event.error}"
        await chat_log.mount(ChatNotice(note, kind="error"))
        chat_log.scroll_end(animate=False)
        if event.error.kind == "unreachable":
            self._publish_sidebar(ollama="offline", ollama_detail=str(event.error))
            self.check_status()
        elif event.error.kind == "model_missing":
            self._publish_sidebar(model_pulled=False)

    # ---- actions -----------------------------------------------------------------
    def action_cancel_reply(self) -> None:
        if self.replying:
            self.workers.cancel_group(self, "reply")
            self.notify("Reply cancelled; what arrived is kept.", timeout=3)

    async def action_new_conversation(self) -> None:
        if self.replying:
            self.workers.cancel_group(self, "reply")
        self.reflect_in_background()
        self.conversation_id = new_conversation_id(self.settings.clock)
        self.conversation_started = self.settings.clock.now()
        chat_log = self.query_one("#chat-log", VerticalScroll)
        await chat_log.remove_children()
        await chat_log.mount(EmptyChatHint())
        self._publish_sidebar(
            conversation_started=self.conversation_started,
            last_reply=None,
            recalled=None,
            injected=(),
            injected_facts=None,
        )
        self.notify("New conversation.", timeout=3)

    # ---- the selected message: pin, forget, copy -----------------------------------------
    def action_select_message(self, step: int) -> None:
        """Ctrl+Up selects the last message; Up/Down on a message move the selection."""
        chat = list(self.query(ChatMessage))
        if not chat:
            return
        current = self.focused
        if step == 0 or not isinstance(current, ChatMessage) or current not in chat:
            target = chat[-1]
        else:
            index = chat.index(current) + step
            if index >= len(chat):
                self.action_focus_input()
                return
            target = chat[max(index, 0)]
        target.focus()
        target.scroll_visible(animate=False)

    def action_focus_input(self) -> None:
        self.query_one(ChatInput).focus()

    def _selected(self) -> ChatMessage | None:
        focused = self.focused
        return focused if isinstance(focused, ChatMessage) and focused.text.strip() else None

    def action_copy_message(self) -> None:
        message = self._selected()
        if message is not None:
            self.copy_to_clipboard(message.text)  # OSC 52: works over ssh too
            self.notify("Copied the message.", timeout=3)

    async def action_pin_message(self) -> None:
        message = self._selected()
        memory = self.engine.memory
        if message is None:
            return
        if memory is None:
            await self._notice(f"Memory is not available: {self.memory_problem}", kind="error")
            return
        point_id, created = await _pin_text(memory, message.text)
        note = "pinned as a new memory" if created else "pinned"
        await self._notice(f"#{point_id} {note}: {message.text[:60].strip()}…")
        self.refresh_memory_status()

    def action_forget_message(self) -> None:
        message = self._selected()
        if message is None:
            return
        memory = self._memory_or_say()
        if memory is None:
            return
        from tui.screens.confirm_screen import ConfirmScreen

        async def answered(yes: bool | None) -> None:
            if not yes:
                return
            gone = await _forget_text(memory, message.text)
            text = f"Forgot {len(gone)} memory point(s)." if gone else "No memory point for it."
            await self._notice(text, kind="info" if gone else "warning")
            self.refresh_memory_status()

        self.push_screen(
            ConfirmScreen("Forget this message's memory point? The log keeps the message."),
            answered,
        )

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

    def action_help(self) -> None:
        from tui.screens.help_screen import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_check_ollama(self) -> None:
        self.check_status()

    async def switch_model(self, name: str) -> None:
        self.model = name
        pulled = self.ollama_status.has_model(name) if self.ollama_status else None
        if self.ollama_status is not None and not self.ollama_status.reachable:
            pulled = None
        self._publish_sidebar(model=name, model_pulled=pulled)
        note = f"Model for this session: {name}."
        if pulled is False:
            note += f" It is not pulled: run `ollama pull {name}`."
        await self._notice(note, kind="warning" if pulled is False else "info")

    async def _report_unknown_bindings(self, unknown: list[str]) -> None:
        await self._notice(
            f"config.toml [keymap]: unknown binding id {', '.join(unknown)} (ignored); "
            "F1 lists the ids.",
            kind="error",
        )

    # ---- the memory screens, longterm.md in $EDITOR, the recalled hits ---------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The chat's own keys work (and show in the Footer) only on the chat screen; a
        memory screen or the help has its own keys, and Esc closes it first."""
        return not (action in CHAT_SCREEN_ACTIONS and len(self.screen_stack) > 1)

    def _memory_or_say(self) -> TurnMemory | None:
        memory = self.engine.memory
        if memory is None:
            self.notify(f"Memory is not available: {self.memory_problem}", severity="error")
        return memory

    def _facts_or_say(self) -> FactDrawer | None:
        """The fact drawer (it opens with the memory), or None after saying why not."""
        return self.engine.facts if self._memory_or_say() is not None else None

    def _open_screen(self, screen: Screen[Any], on_close: Any = None) -> None:
        """Push a memory screen (one of each kind at a time); the sidebar is refreshed after."""
        if type(self.screen) is type(screen):
            return

        async def closed(result: object) -> None:
            self.refresh_memory_status()
            self.refresh_fact_status()
            if on_close is not None:
                outcome = on_close(result)
                if inspect.isawaitable(outcome):
                    await outcome

        self.push_screen(screen, closed)

    def action_open_memory_browser(self, point_id: int | None = None) -> None:
        if (memory := self._memory_or_say()) is None:
            return
        from tui.screens.memory_browser import MemoryBrowserScreen

        self._open_screen(MemoryBrowserScreen(memory, point_id=point_id))

    def action_open_facts(self) -> None:
        if (facts := self._facts_or_say()) is None:
            return
        from tui.screens.facts_screen import FactsScreen

        self._open_screen(FactsScreen(facts))

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

        self._open_screen(HypothesesScreen(facts))

    def action_open_conversations(self) -> None:
        from tui.screens.conversations_screen import ConversationsScreen

        self._open_screen(
            ConversationsScreen(self.engine.daily_log, self.conversation_id),
            self._continue_conversation,
        )

    async def _continue_conversation(self, chosen: ContinueConversation | None) -> None:
        """The conversations screen chose one to continue: show it and make it current."""
        if chosen is None:
            return
        if chosen.conversation_id == self.conversation_id:
            self.notify("That is the conversation you are in.", timeout=3)
            return
        from tui.screens.conversations_screen import chat_widgets

        if self.replying:
            self.workers.cancel_group(self, "reply")
        self.reflect_in_background()  # the conversation being left gets its reflection
        self.conversation_id = chosen.conversation_id
        first = chosen.started or self.settings.clock.now()
        self.conversation_started = first
        chat_log = self.query_one("#chat-log", VerticalScroll)
        await chat_log.remove_children()
        await chat_log.mount_all(chat_widgets(chosen.messages))
        chat_log.scroll_end(animate=False)
        self._publish_sidebar(
            conversation_started=first,
            last_reply=None,
            recalled=None,
            injected=(),
            injected_facts=None,
        )
        await self._notice(
            f"Continuing conversation {chosen.conversation_id}: the next message goes on it."
        )
        self.query_one(ChatInput).focus()

    def action_edit_longterm(self) -> None:
        """Suspend the TUI, edit longterm.md in $VISUAL / $EDITOR, re-read it after."""
        from textual.app import SuspendNotSupported

        from tui.external_editor import EditorError, edit_file

        path = self.engine.longterm.path
        try:
            self.engine.longterm.ensure_template()
            try:
                with self.suspend():  # the editor owns the terminal until it exits
                    edit_file(path)
            except SuspendNotSupported:
                if not self.is_headless:
                    raise EditorError(
                        f"this terminal cannot hand over to an editor; edit {path} yourself"
                    ) from None
                edit_file(path)  # headless (tests): there is no terminal to hand over
        except (EditorError, OSError) as error:
            self.notify(str(error), severity="error", timeout=8)
            return
        self.check_status()  # re-reads longterm.md and updates the sidebar
        self.notify(f"longterm.md saved; the next turn reads it ({path})", timeout=4)

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
            self._publish_sidebar(recalled=recalled)
            if not recalled:
                self.action_focus_input()  # the list is gone with its last hit
            self.notify(f"Forgot #{point_id}." if gone else f"#{point_id} was already gone.")
            self.refresh_memory_status()

        self.push_screen(ConfirmScreen(f"Forget memory point #{point_id}?"), answered)

    # ---- layer 4: approval, candidates, the "can't" check, reflection ----------------
    async def ask_approval(self, candidate: Candidate) -> Approval:
        """The engine's approver: an inline prompt in the chat log; the turn waits."""
        from tui.widgets.candidate_prompt import CandidatePrompt

        chat_log = self.query_one("#chat-log", VerticalScroll)
        prompt = CandidatePrompt(candidate)
        await chat_log.mount(prompt)
        chat_log.scroll_end(animate=False)
        prompt.focus()
        try:
            return await prompt.result
        except asyncio.CancelledError:
            prompt.leave_for_later()  # the reply was cancelled: the candidate stays pending
            raise
        finally:
            for box in self.query(ChatInput):  # none while the app shuts down
                box.focus()

    async def _announce_candidates(self, candidates: list[Candidate]) -> None:
        candidates = [c for c in candidates if c.origin != "tool"]  # its line is shown
        if not candidates:
            self.refresh_fact_status()
            return
        lines = [f"#{c.id} {c.type} `{c.key}`: {c.body}" for c in candidates]
        count = len(candidates)
        await self._notice(
            f"🗂 {count} fact candidate{'' if count == 1 else 's'} "
            "(/candidates approve ID or reject ID):\n" + "\n".join(lines)
        )
        self.refresh_fact_status()

    async def _remind_capabilities(self, event: CapabilityReminder) -> None:
        lines = [f"{f.type} `{f.key}`: {f.body}" for f in event.facts]
        await self._notice(
            "↳ Known fact — this was done from here before; the next turn carries it:\n"
            + "\n".join(lines),
            kind="warning",
        )

    def _restart_idle_timer(self) -> None:
        timer = getattr(self, "_idle_timer", None)
        if timer is not None:
            timer.stop()
        minutes = self.settings.facts.reflection_idle_minutes
        self._idle_timer = self.set_timer(minutes * 60, self.reflect_in_background)

    def reflect_in_background(self) -> None:
        """Session end (/new, idle): reflect on the conversation without blocking anyone."""
        if self.unreflected_turns and self.engine.facts is not None:
            self.unreflected_turns = 0
            self.run_reflection(self.conversation_id)

    @work(exclusive=False, group="reflection", exit_on_error=False)
    async def run_reflection(self, conversation_id: str) -> None:
        try:
            proposed = await self.engine.reflect(conversation_id, self.model)
        except Exception as error:  # noqa: BLE001 - logged, never on the way
            log.warning("reflection on %s failed: %s", conversation_id, error)
            return
        if proposed and not self._quitting:
            await self._announce_candidates(proposed)

    async def action_quit(self) -> None:
        """Quit; the session's reflection pass runs first, in a worker so the screen stays
        live (at most 30 s; Ctrl+Q again quits at once)."""
        if self._quitting or not self.unreflected_turns or self.engine.facts is None:
            self.exit()
            return
        self._quitting = True
        self.unreflected_turns = 0
        if self.replying:
            self.workers.cancel_group(self, "reply")
        self.notify("Reflecting on the session before quitting… (Ctrl+Q again quits now)")
        self.reflect_then_exit(self.conversation_id)

    @work(exclusive=True, group="quit", exit_on_error=False)
    async def reflect_then_exit(self, conversation_id: str) -> None:
        try:
            await asyncio.wait_for(
                self.engine.reflect(conversation_id, self.model), REFLECT_ON_QUIT_SECONDS
            )
        except Exception as error:  # noqa: BLE001 - quitting goes on regardless
            log.warning("reflection at quit failed: %s", error)
        self.exit()

    @work(thread=True, exclusive=True, group="fact-status", exit_on_error=False)
    def refresh_fact_status(self) -> None:
        drawer = self.engine.facts
        if drawer is None:
            return
        from memory.hypotheses import Hypotheses

        try:
            counts = drawer.counts()
            pending = len(drawer.pending())
            cards = Hypotheses.of(drawer).counts(self.settings.clock.now())
        except Exception:
            log.exception("fact status failed")
            return
        line = f"{counts['active']} active, {counts['stale']} stale · {pending} pending"
        self.call_from_thread(
            self._publish_sidebar,
            facts_line=line,
            hypotheses=(cards["open"], cards["overdue"]),
        )

    async def _notice(self, text: str, *, kind: str = "info") -> None:
        chat_log = self.query_one("#chat-log", VerticalScroll)
        await chat_log.mount(ChatNotice(text, kind=kind))
        chat_log.scroll_end(animate=False)

    async def run_slash_command(self, line: str) -> None:
        command, _, argument = line.partition(" ")
        argument = argument.strip()
        if command in SCREEN_COMMANDS and not argument:
            await self.run_action(SCREEN_COMMANDS[command])
        elif command == "/help":
            self.action_help()
        elif command == "/new":
            await self.action_new_conversation()
        elif command == "/model":
            if argument:
                await self.switch_model(argument)
            else:
                await self._notice(self._models_text())
        elif command == "/dream":
            self.run_job_now("dream", announce=True)
        elif command in HYPOTHESIS_COMMANDS:
            try:
                await run_hypothesis_command(self.engine.facts, argument, self._notice)
            except Exception as error:  # named on screen, detailed in the log
                log.exception("%s failed", command)
                await self._notice(f"⚠ {command} failed: {error}", kind="error")
            self.refresh_fact_status()
        elif command in FACT_COMMANDS:
            try:
                await run_fact_command(
                    self.engine.facts, self.memory_problem, command, argument, self._notice
                )
            except Exception as error:  # named on screen, detailed in the log
                log.exception("%s failed", command)
                await self._notice(f"⚠ {command} failed: {error}", kind="error")
            self.refresh_fact_status()
        elif command in MEMORY_COMMANDS:
            memory = self.engine.memory
            try:
                await run_memory_command(
                    memory, self.memory_problem, command, argument, self._notice
                )
            except Exception as error:  # named on screen, detailed in the log
                log.exception("%s failed", command)
                await self._notice(f"⚠ {command} failed: {error}", kind="error")
            self.refresh_memory_status()
        else:
            known = ", ".join(SLASH_COMMANDS)
            await self._notice(f"Unknown command {command}. Known: {known}.", kind="error")

    def _models_text(self) -> str:
        status = self.ollama_status
        if status is None or not status.reachable:
            return f"Model: {self.model}. Ollama is offline, so the pulled models are unknown."
        pulled = ", ".join(status.models) or "none"
        return f"Model: {self.model}. Pulled: {pulled}. `/model NAME` switches."

    # ---- command palette ---------------------------------------------------------------
    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Ctrl+P: every action. The chat's own (and opening a memory screen) are offered on
        the chat screen only, as their keys are; a memory screen lists its own keys."""
        yield from super().get_system_commands(screen)
        yield SystemCommand("Help: keys and commands", "Show the help screen", self.action_help)
        yield SystemCommand(
            "Check Ollama now", "Re-check the Ollama server", self.action_check_ollama
        )
        if screen is not self.screen_stack[0]:
            return
        yield SystemCommand(
            "New conversation", "Start a new conversation", self.action_new_conversation
        )
        yield SystemCommand(
            "Cancel reply", "Stop the reply that is streaming", self.action_cancel_reply
        )
        yield SystemCommand(
            "Toggle sidebar", "Show or hide the status sidebar", self.action_toggle_sidebar
        )
        yield SystemCommand(
            "Recalled hits",
            "Go to the last prompt's recalled hits (Ctrl+R)",
            self.action_focus_recalled,
        )
        for command, title, help_text in PALETTE_COMMANDS:
            yield SystemCommand(title, help_text, _slash_callback(self, command))
        if self.ollama_status is not None and self.ollama_status.reachable:
            embed = normalise_model_name(self.settings.memory.embed_model)
            for name in self.ollama_status.models:
                if normalise_model_name(name) == embed:
                    continue  # the embedding model cannot chat
                yield SystemCommand(
                    f"Switch model: {name}",
                    "Chat with this model for the rest of the session",
                    _switch_callback(self, name),
                    discover=False,
                )

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


PALETTE_COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("/recall", "Memory browser", "Search, filter, pin and forget memory points (F2)"),
    ("/memstatus", "Memory status", "Points, index, RAM estimate and headroom"),
    ("/facts", "Facts", "Facts by type, status and workspace: edit, retire, revive (F3)"),
    ("/candidates", "Fact candidates", "Approve, edit or reject what waits for approval (F4)"),
    ("/hypotheses", "Hypotheses", "The dream's cards, overdue first: validate, refute (F5)"),
    ("/conversations", "Conversations", "The daily logs: read one, continue it (Ctrl+O)"),
    ("/longterm", "Edit longterm.md", "Open longterm.md in $VISUAL / $EDITOR (Ctrl+G)"),
    ("/dream", "Dream now", "At most one hypothesis card from related memories"),
)


def memory_status_line(status: dict[str, Any]) -> str:
    """The sidebar's memory block: points (total, pinned, without a vector), the index, the
    RAM estimate and its headroom level (coloured by the sidebar)."""
    points, index = status["points"], status["index"]
    total = points["total"]
    lines = f"{total:,} point{'' if total == 1 else 's'}, {points['pinned']:,} pinned"
    if points["without_vector"]:
        lines += f"\n{points['without_vector']:,} without a vector"
    ram = status["ram_estimate_bytes"] / 2**20
    return f"{lines}\nindex {index['state']}\nRAM ~{ram:.1f} MiB · {status['headroom']}"


def _slash_callback(app: StraylightApp, command: str) -> object:
    async def run() -> None:
        await app.run_slash_command(command)

    return run


def _recalled_lines(event: Recalled) -> tuple[RecalledLine, ...]:
    """`#12 0.82 the first words…` for each hit (pinned ones marked)."""
    lines = []
    for hit in event.result.hits[:6]:
        words = " ".join(printable(hit.content).split())[:18]
        pin = "📌" if hit.pinned else ""
        lines.append(RecalledLine(hit.id, f"#{hit.id} {hit.score:.2f}{pin} {words}…"))
    return tuple(lines)


async def _points_of(memory: TurnMemory, text: str) -> list[Point]:
    """The points saved from this message (the save path masks and strips it first)."""
    from memory.secret_masking import mask_secrets
    from store.point_store import content_hash

    digest = content_hash(mask_secrets(text).strip())
    return await asyncio.to_thread(memory.store.points.find_by_hash, digest)


async def _pin_text(memory: TurnMemory, text: str) -> tuple[int, bool]:
    """Pin the saved point of this message; a message that was not saved (the filter skipped
    it) becomes a new pinned point. (id, created)."""
    found = await _points_of(memory, text)
    if found:
        await asyncio.to_thread(memory.store.set_pinned, found[-1].id, True)
        return found[-1].id, False
    return await memory.remember(text), True


async def _forget_text(memory: TurnMemory, text: str) -> list[int]:
    """Forget every point holding exactly this message; the ids forgotten."""
    gone = []
    for point in await _points_of(memory, text):
        if await asyncio.to_thread(memory.store.forget, point.id):
            gone.append(point.id)
    return gone


def _switch_callback(app: StraylightApp, name: str) -> object:
    async def switch() -> None:
        await app.switch_model(name)

    return switch


def _reply_stats(event: ReplyFinished) -> str | None:
    stats = event.stats
    if stats.eval_count and stats.eval_duration_ns:
        rate = stats.eval_count / (stats.eval_duration_ns / 1e9)
        return f"last reply {stats.eval_count} tokens, {rate:.0f} tok/s"
    if stats.eval_count:
        return f"last reply {stats.eval_count} tokens"
    return None


def run_app(settings: Settings) -> int:
    app = StraylightApp(settings)
    result = app.run()
    if app.crashed:
        return 1
    return app.return_code or (result if isinstance(result, int) else 0)
