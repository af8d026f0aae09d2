"""The chat screen: the chat log, the message box, the status sidebar and the chat's keys.

It consumes the turn's events (agent/turn_events.py), routes slash commands through the one
registry (tui/commands.py), and opens the memory screens. Workers do the I/O and report
back with messages; the handlers update widgets.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from contextlib import aclosing
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, cast

from textual import events, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer

from agent.turn import new_conversation_id
from agent.turn_events import (
    Approval,
    ApprovalRequested,
    CandidatesProposed,
    CapabilityReminder,
    FactsInjected,
    LongtermWarning,
    PointsSaved,
    Recalled,
    ReplyDelta,
    ReplyFailed,
    ReplyFinished,
    ToolUsed,
)
from tui.commands import CHAT_KEYS, CHAT_ONLY_ACTIONS, SLASH_COMMANDS
from tui.display_text import printable
from tui.widgets.chat_input import ChatInput
from tui.widgets.chat_log import ChatLog
from tui.widgets.chat_message import ChatMessage, EmptyChatHint
from tui.widgets.recalled_hits import RecalledHits, RecalledLine
from tui.widgets.status_sidebar import SidebarState, SidebarSummary, StatusSidebar

if TYPE_CHECKING:
    from agent.ollama_gateway import OllamaStatus
    from agent.turn import TurnEngine
    from memory.fact_drawer import FactDrawer
    from memory.turn_memory import TurnMemory
    from store.fact_store import Candidate
    from store.longterm_file import LongtermState
    from tui.app import StraylightApp
    from tui.screens.conversations_screen import ContinueConversation

log = logging.getLogger("straylight.tui")

NARROW_COLUMNS = 100  # below this the sidebar (34 columns) would squeeze the chat


@dataclass
class SidebarUpdate(Message):
    """New values for the sidebar, from a worker (a status read in a thread)."""

    changes: dict[str, object]


@dataclass
class StatusChecked(Message):
    """A background check of Ollama and longterm.md finished."""

    ollama: OllamaStatus
    longterm: LongtermState


class ChatScreen(Screen[None]):
    """The conversation: one turn at a time, streamed into the chat log."""

    BINDINGS: ClassVar[list[BindingType]] = [key.binding() for key in CHAT_KEYS]

    def __init__(self, app: StraylightApp) -> None:
        super().__init__()
        settings = app.settings
        self.settings = settings
        self.engine: TurnEngine = app.engine
        self.model = settings.model
        self.conversation_id = new_conversation_id(settings.clock)
        self.conversation_started: datetime = settings.clock.now()
        self.ollama_status: OllamaStatus | None = None
        self.replying = False
        self.unreflected_turns = 0  # finished turns of this conversation since its reflection
        self._unsaved: dict[int, tuple[ChatMessage, ChatMessage]] = {}  # turn → its messages
        self._narrow = False  # under NARROW_COLUMNS the sidebar folds into one line
        self._sidebar_chosen = False  # Ctrl+B overrides the fold until the width changes
        self._sidebar_state = SidebarState(
            host=settings.ollama_host,
            model=self.model,
            conversation_started=self.conversation_started,
            longterm_budget=settings.longterm_budget_bytes,
            workspace=app.workspace,
        )

    @property
    def straylight(self) -> StraylightApp:
        return cast("StraylightApp", self.app)

    # ---- layout ---------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            with Vertical(id="chat-column"):
                yield SidebarSummary(id="sidebar-summary")
                with ChatLog(id="chat-log"):
                    yield EmptyChatHint()
                yield ChatInput(id="input")
            yield StatusSidebar(id="sidebar")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(ChatInput).focus()
        self.chat_log.anchor()
        self.publish_sidebar()

    @property
    def chat_log(self) -> ChatLog:
        return self.query_one(ChatLog)

    async def notice(self, text: str, *, kind: str = "info") -> None:
        await self.chat_log.notice(text, kind=kind)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The chat's own keys work (and show in the Footer) only while the chat is on top; a
        memory screen or the help has its own keys, and Esc closes it first."""
        return not (action in CHAT_ONLY_ACTIONS and self.app.screen is not self)

    # ---- the sidebar -------------------------------------------------------------------
    def publish_sidebar(self, **changes: object) -> None:
        self._sidebar_state = self._sidebar_state.with_changes(**changes)
        for sidebar in self.query(StatusSidebar):  # none while the app shuts down
            sidebar.state = self._sidebar_state
        for summary in self.query(SidebarSummary):
            summary.state = self._sidebar_state

    @property
    def sidebar_state(self) -> SidebarState:
        return self._sidebar_state

    def on_sidebar_update(self, message: SidebarUpdate) -> None:
        self.publish_sidebar(**message.changes)

    # ---- Ollama and longterm.md, checked in the background --------------------------------
    @work(exclusive=True, group="status", exit_on_error=False)
    async def check_status(self) -> None:
        """Ask Ollama how it is and re-read longterm.md's state, off the event loop."""
        try:
            await asyncio.to_thread(self.engine.longterm.ensure_template)
        except OSError as error:
            log.warning("cannot create longterm.md: %s", error)
        ollama = await self.engine.gateway.check()
        longterm = await asyncio.to_thread(self.engine.longterm.load)
        self.post_message(StatusChecked(ollama, longterm))

    def on_status_checked(self, message: StatusChecked) -> None:
        self._apply_ollama_status(message.ollama)
        self._apply_longterm(message.longterm)
        app = self.straylight
        delay = app.poll_online_seconds if message.ollama.reachable else app.poll_offline_seconds
        self.set_timer(delay, self.check_status, name="ollama-recheck")

    def _apply_ollama_status(self, status: OllamaStatus) -> None:
        was_offline = self.ollama_status is not None and not self.ollama_status.reachable
        self.ollama_status = status
        if status.reachable:
            detail = f"version {status.version}" if status.version else None
            self.publish_sidebar(
                ollama="online", ollama_detail=detail, model_pulled=status.has_model(self.model)
            )
            if was_offline:
                self.notify(f"Ollama is back at {status.host}", timeout=4)
        else:
            self.publish_sidebar(ollama="offline", ollama_detail=status.error, model_pulled=None)

    def _apply_longterm(self, state: LongtermState) -> None:
        self.publish_sidebar(
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
        now = self.settings.clock.now()
        user, reply = await self.chat_log.start_turn(text, time=now, model=self.model)
        finished = False
        turn = self.engine.run(text, conversation_id=self.conversation_id, model=self.model)
        try:
            async with aclosing(turn) as turn_events:
                async for event in turn_events:
                    if isinstance(event, ReplyDelta):
                        await reply.append(event.text)
                    elif isinstance(event, ReplyFinished):
                        self._unsaved[event.turn] = (user, reply)  # until its PointsSaved
                        finished = True
                        await reply.finish(event.text, "complete")
                        self.publish_sidebar(last_reply=_reply_stats(event))
                        self.unreflected_turns += 1
                        self._restart_idle_timer()
                    elif isinstance(event, ApprovalRequested):
                        event.answer(await self.ask_approval(event.candidate))
                    elif isinstance(event, FactsInjected):
                        self.publish_sidebar(
                            injected_facts=len(event.injected.facts),
                            injected=tuple(f.key for f in event.injected.facts),
                        )
                    elif isinstance(event, Recalled):
                        self.publish_sidebar(recalled=_recalled_lines(event))
                    elif isinstance(event, ToolUsed):
                        await self.notice(f"🗂 {event.name}: {event.summary}")
                    elif isinstance(event, CandidatesProposed):
                        await self.announce_candidates(event.candidates)
                    elif isinstance(event, CapabilityReminder):
                        await self._remind_capabilities(event)
                    elif isinstance(event, ReplyFailed):
                        finished = True
                        self.publish_sidebar(last_reply=None)
                        await self._show_failure(reply, event)
                    elif isinstance(event, LongtermWarning) and not event.over_budget:
                        self.publish_sidebar(longterm_warning=event.text)  # (over budget: shown)
        except asyncio.CancelledError:
            self.publish_sidebar(last_reply=None)
            await reply.finish(status="cancelled")
            raise
        except Exception as error:  # named on screen, detailed in the log
            log.exception("turn failed")
            finished = True
            await reply.finish(status="failed")
            await self.notice(
                f"⚠ {type(error).__name__}: {error} (details in {self.settings.log_file})",
                kind="error",
            )
        finally:
            self.replying = False
            if not finished and reply.status in ("waiting", "streaming"):
                await reply.finish(status="cancelled")

    def points_saved(self, event: PointsSaved) -> None:
        """The engine saved a turn's points: its two messages keep their ids."""
        user, reply = self._unsaved.pop(event.turn, (None, None))
        if user is not None and reply is not None:
            user.point_id, reply.point_id = event.user_point_id, event.reply_point_id

    async def _show_failure(self, reply: ChatMessage, event: ReplyFailed) -> None:
        if event.partial:
            await reply.finish(event.partial, "cut_off")
            note = f"⚠ {event.error} — the partial reply above is kept, marked cut off."
        else:
            await reply.remove()
            note = f"⚠ {event.error}"
        await self.notice(note, kind="error")
        if event.error.kind == "unreachable":
            self.publish_sidebar(ollama="offline", ollama_detail=str(event.error))
            self.check_status()
        elif event.error.kind == "model_missing":
            self.publish_sidebar(model_pulled=False)

    # ---- layer 4 in the chat: approval, candidates, the "can't" check -------------------
    async def ask_approval(self, candidate: Candidate) -> Approval:
        """An inline prompt in the chat log; the turn waits for the answer."""
        from tui.widgets.candidate_prompt import CandidatePrompt

        prompt = CandidatePrompt(candidate)
        await self.chat_log.add(prompt)
        prompt.focus()
        try:
            return await prompt.result
        except asyncio.CancelledError:
            prompt.leave_for_later()  # the reply was cancelled: the candidate stays pending
            raise
        finally:
            for box in self.query(ChatInput):  # none while the app shuts down
                box.focus()

    async def announce_candidates(self, candidates: list[Candidate]) -> None:
        candidates = [c for c in candidates if c.origin != "tool"]  # its line is shown
        if not candidates:
            self.straylight.refresh_fact_status()
            return
        lines = [f"#{c.id} {c.type} `{c.key}`: {c.body}" for c in candidates]
        count = len(candidates)
        await self.notice(
            f"🗂 {count} fact candidate{'' if count == 1 else 's'} "
            "(/candidates approve ID or reject ID):\n" + "\n".join(lines)
        )
        self.straylight.refresh_fact_status()

    async def _remind_capabilities(self, event: CapabilityReminder) -> None:
        lines = [f"{f.type} `{f.key}`: {f.body}" for f in event.facts]
        await self.notice(
            "↳ Known fact — this was done from here before; the next turn carries it:\n"
            + "\n".join(lines),
            kind="warning",
        )

    # ---- reflection at the end of a session ---------------------------------------------
    def _restart_idle_timer(self) -> None:
        timer = getattr(self, "_idle_timer", None)
        if timer is not None:
            timer.stop()
        minutes = self.settings.memory_reflection_idle_minutes
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
        if proposed and not self.straylight.quitting:
            await self.announce_candidates(proposed)

    def cancel_reply(self) -> None:
        """Stop the streaming reply, if one streams (what arrived is kept)."""
        if self.replying:
            self.workers.cancel_group(self, "reply")

    # ---- slash commands ----------------------------------------------------------------
    async def run_slash_command(self, line: str) -> None:
        command, _, argument = line.partition(" ")
        argument = argument.strip()
        entry = SLASH_COMMANDS.get(command)
        if entry is not None and entry.opens and not argument:
            await self.run_action(entry.opens)
        elif entry is None or entry.runs is None:
            known = ", ".join(SLASH_COMMANDS)
            await self.notice(f"Unknown command {command}. Known: {known}.", kind="error")
        elif entry.runs == "help":
            self.straylight.action_help()
        elif entry.runs == "new":
            await self.action_new_conversation()
        elif entry.runs == "model":
            if argument:
                await self.switch_model(argument)
            else:
                await self.notice(self._models_text())
        elif entry.runs == "dream":
            self.straylight.run_job_now("dream", announce=True)
        else:
            await self._run_store_command(command, argument)

    async def _run_store_command(self, command: str, argument: str) -> None:
        """A memory, fact or hypothesis command: its failure is named on screen (detailed in
        the log), and the sidebar's counts are refreshed after."""
        from tui.fact_commands import run_fact_command, run_hypothesis_command
        from tui.memory_commands import run_memory_command

        app = self.straylight
        runs = SLASH_COMMANDS[command].runs
        try:
            if runs == "memory":
                await run_memory_command(
                    self.engine.memory, app.memory_problem, command, argument, self.notice
                )
            elif runs == "fact":
                await run_fact_command(
                    self.engine.facts, app.memory_problem, command, argument, self.notice
                )
            else:
                await run_hypothesis_command(self.engine.facts, argument, self.notice)
        except Exception as error:  # named on screen, detailed in the log
            log.exception("%s failed", command)
            await self.notice(f"⚠ {command} failed: {error}", kind="error")
        if runs == "memory":
            app.refresh_memory_status()
        else:
            app.refresh_fact_status()

    def _models_text(self) -> str:
        status = self.ollama_status
        if status is None or not status.reachable:
            return f"Model: {self.model}. Ollama is offline, so the pulled models are unknown."
        pulled = ", ".join(status.models) or "none"
        return f"Model: {self.model}. Pulled: {pulled}. `/model NAME` switches."

    async def switch_model(self, name: str) -> None:
        self.model = name
        pulled = self.ollama_status.has_model(name) if self.ollama_status else None
        if self.ollama_status is not None and not self.ollama_status.reachable:
            pulled = None
        self.publish_sidebar(model=name, model_pulled=pulled)
        note = f"Model for this session: {name}."
        if pulled is False:
            note += f" It is not pulled: run `ollama pull {name}`."
        await self.notice(note, kind="warning" if pulled is False else "info")

    async def report_unknown_bindings(self, unknown: list[str]) -> None:
        await self.notice(
            f"config.toml [keymap]: unknown binding id {', '.join(unknown)} (ignored); "
            "F1 lists the ids.",
            kind="error",
        )

    # ---- actions -----------------------------------------------------------------
    def action_cancel_reply(self) -> None:
        if self.replying:
            self.cancel_reply()
            self.notify("Reply cancelled; what arrived is kept.", timeout=3)

    async def action_new_conversation(self) -> None:
        self.cancel_reply()
        self.reflect_in_background()
        self.conversation_id = new_conversation_id(self.settings.clock)
        self.conversation_started = self.settings.clock.now()
        await self.chat_log.clear()
        self._publish_new_conversation(self.conversation_started)
        self.notify("New conversation.", timeout=3)

    def _publish_new_conversation(self, started: datetime) -> None:
        self.publish_sidebar(
            conversation_started=started,
            last_reply=None,
            recalled=None,
            injected=(),
            injected_facts=None,
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
            self.app.copy_to_clipboard(message.text)  # OSC 52: works over ssh too
            self.notify("Copied the message.", timeout=3)

    async def action_pin_message(self) -> None:
        message = self._selected()
        memory = self.engine.memory
        if message is None:
            return
        if memory is None:
            problem = self.straylight.memory_problem
            await self.notice(f"Memory is not available: {problem}", kind="error")
            return
        point_id, created = await _pin(memory, message)
        note = "pinned as a new memory" if created else "pinned"
        await self.notice(f"#{point_id} {note}: {message.text[:60].strip()}…")
        self.straylight.refresh_memory_status()

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
            gone = await _forget(memory, message)
            text = f"Forgot {len(gone)} memory point(s)." if gone else "No memory point for it."
            await self.notice(text, kind="info" if gone else "warning")
            self.straylight.refresh_memory_status()

        self.app.push_screen(
            ConfirmScreen("Forget this message's memory point? The log keeps the message."),
            answered,
        )

    # ---- the memory screens, longterm.md in $EDITOR, the recalled hits ---------------------
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
            app.refresh_memory_status()
            app.refresh_fact_status()
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

        self.cancel_reply()
        self.reflect_in_background()  # the conversation being left gets its reflection
        self.conversation_id = chosen.conversation_id
        first = chosen.started or self.settings.clock.now()
        self.conversation_started = first
        await self.chat_log.show(chat_widgets(chosen.messages))
        self._publish_new_conversation(first)
        await self.notice(
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
                with self.app.suspend():  # the editor owns the terminal until it exits
                    edit_file(path)
            except SuspendNotSupported:
                if not self.app.is_headless:
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
            self.publish_sidebar(recalled=recalled)
            if not recalled:
                self.action_focus_input()  # the list is gone with its last hit
            self.notify(f"Forgot #{point_id}." if gone else f"#{point_id} was already gone.")
            self.straylight.refresh_memory_status()

        self.app.push_screen(ConfirmScreen(f"Forget memory point #{point_id}?"), answered)


def _recalled_lines(event: Recalled) -> tuple[RecalledLine, ...]:
    """`#12 0.82 the first words…` for each hit (pinned ones marked)."""
    lines = []
    for hit in event.result.hits[:6]:
        words = " ".join(printable(hit.content).split())[:18]
        pin = "📌" if hit.pinned else ""
        lines.append(RecalledLine(hit.id, f"#{hit.id} {hit.score:.2f}{pin} {words}…"))
    return tuple(lines)


async def _point_ids(memory: TurnMemory, message: ChatMessage) -> list[int]:
    """The message's saved point (the engine reported its id), or, for a message whose id is
    unknown (a continued conversation, a save that skipped it), the points holding its text."""
    if message.point_id is not None:
        return [message.point_id]
    return [point.id for point in await memory.saved_points(message.text)]


async def _pin(memory: TurnMemory, message: ChatMessage) -> tuple[int, bool]:
    """Pin the saved point of this message; a message that was not saved (the filter skipped
    it) becomes a new pinned point. (id, created)."""
    for point_id in reversed(await _point_ids(memory, message)):
        if await asyncio.to_thread(memory.store.set_pinned, point_id, True):
            return point_id, False
    return await memory.remember(message.text), True


async def _forget(memory: TurnMemory, message: ChatMessage) -> list[int]:
    """Forget the point(s) of this message; the ids forgotten."""
    gone = []
    for point_id in await _point_ids(memory, message):
        if await asyncio.to_thread(memory.store.forget, point_id):
            gone.append(point_id)
    return gone


def _reply_stats(event: ReplyFinished) -> str | None:
    stats = event.stats
    if stats.eval_count and stats.eval_duration_ns:
        rate = stats.eval_count / (stats.eval_duration_ns / 1e9)
        return f"last reply {stats.eval_count} tokens, {rate:.0f} tok/s"
    if stats.eval_count:
        return f"last reply {stats.eval_count} tokens"
    return None
