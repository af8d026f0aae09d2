"""The chat screen: the chat log, the message box, the status sidebar and the chat's keys.

It consumes the turn's events (agent/turn_events.py), routes slash commands through the one
registry (tui/commands.py) and keeps the conversation (its id, the turn, new and continued
conversations). Its bases, each a layer on the one before: moving around (messages,
sidebar, memory screens) in tui/screens/chat_navigation.py, the session's model and
thinking in chat_models.py, the last message's edit in chat_editing.py, approval,
candidates and reflection in chat_facts.py. Workers do the I/O and report back with
messages; the handlers update widgets.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import aclosing
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.geometry import Size
from textual.message import Message

from agent.turn import new_conversation_id
from agent.turn_events import (
    ApprovalRequested,
    CandidatesProposed,
    CapabilityReminder,
    ContextBudgeted,
    ContextNotice,
    FactsInjected,
    LimitNotice,
    LongtermWarning,
    MessageMasked,
    PointsSaved,
    Recalled,
    ReplyDelta,
    ReplyFailed,
    ReplyFinished,
    ThinkingDelta,
    ToolUsed,
)
from tui.commands import CHAT_KEYS, CHAT_ONLY_ACTIONS
from tui.display_text import printable
from tui.gc_pauses import freeze_long_lived, unfreeze_all
from tui.screens.chat_facts import ChatFacts
from tui.slash_router import run_slash_command, slash_refusal
from tui.widgets.chat_input import ChatInput
from tui.widgets.chat_log import ChatLog
from tui.widgets.chat_message import ChatMessage, EmptyChatHint
from tui.widgets.fitting_footer import FittingFooter
from tui.widgets.recalled_hits import RecalledLine
from tui.widgets.status_sidebar import SidebarState, SidebarSummary, StatusSidebar

if TYPE_CHECKING:
    from agent.gateway_values import OllamaStatus
    from agent.image_attachment import ImageAttachment
    from agent.model_catalog import MissingModel
    from store.longterm_file import LongtermState
    from tui.app import StraylightApp
    from tui.screens.conversation_views import ContinueConversation
    from tui.widgets.missing_model import MissingModelNotice

log = logging.getLogger("straylight.tui")


@dataclass
class StatusChecked(Message):
    """A background check of Ollama and longterm.md finished."""

    ollama: OllamaStatus
    longterm: LongtermState


class ChatScreen(ChatFacts):
    """The conversation: one turn at a time, streamed into the chat log."""

    BINDINGS: ClassVar[list[BindingType]] = [key.binding() for key in CHAT_KEYS]

    def __init__(self, app: StraylightApp) -> None:
        settings = app.settings
        started = settings.clock.now()
        super().__init__(
            app.engine,
            SidebarState(
                host=settings.ollama.host,
                model=settings.ollama.model,
                conversation_started=started,
                longterm_budget=settings.longterm_budget_bytes,
                workspace=app.workspace,
            ),
        )
        self.settings = settings
        self.model = settings.ollama.model
        self.conversation_id = new_conversation_id(settings.clock)
        self.conversation_started: datetime = started
        self.ollama_status: OllamaStatus | None = None
        self.replying = False
        self.unreflected_turns = 0  # finished turns of this conversation since its reflection
        self.system_prompt: str | None = None  # this conversation's own (`/system`), or none
        self.editing_last = False  # the box holds the last user message, to resend edited
        self._unsaved: dict[int, tuple[ChatMessage, ChatMessage]] = {}  # turn → its messages
        self._offered_pulls: set[MissingModel] = set()  # missing models with a notice shown
        self.pending_image: ImageAttachment | None = None  # `/image PATH`, for the next message

    # ---- layout ---------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            with Vertical(id="chat-column"):
                yield SidebarSummary(id="sidebar-summary")
                with ChatLog(id="chat-log"):
                    yield EmptyChatHint()
                yield ChatInput(id="input")
            yield StatusSidebar(id="sidebar")
        yield FittingFooter()

    def on_mount(self) -> None:
        self.query_one(ChatInput).focus()
        self.chat_log.anchor()
        self.publish_sidebar()

    def on_screen_suspend(self) -> None:
        """A screen opens over the chat: the chat's objects, alive and unchanged while it is
        open, leave the collector's full passes first (tui/gc_pauses.py)."""
        freeze_long_lived()

    def _screen_resized(self, size: Size) -> None:
        """A screen pushed over the chat gets a first Resize, which Textual passes on to the
        chat below it: the chat then laid its whole log out again for nothing, so opening F1
        or F2 slowed with the session's length (issue 16). Only a real change of size lays
        it out (Textual 8.2's hook; a size changed while suspended is laid out on resume)."""
        if size != self.outer_size:
            super()._screen_resized(size)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The chat's own keys work (and show in the Footer) only while the chat is on top; a
        memory screen or the help has its own keys, and Esc closes it first."""
        return not (action in CHAT_ONLY_ACTIONS and self.app.screen is not self)

    # ---- Ollama and longterm.md, checked in the background --------------------------------
    @work(exclusive=True, group="status", exit_on_error=False)
    async def check_status(self) -> None:
        """Ask Ollama how it is and re-read longterm.md's state, off the event loop."""
        try:
            await asyncio.to_thread(self.engine.longterm.ensure_template)
        except OSError as error:
            log.warning("cannot create longterm.md: %s", error)
        ollama = await self.engine.gateway.check_with_capabilities()
        longterm = await asyncio.to_thread(self.engine.longterm.load)
        self.post_message(StatusChecked(ollama, longterm))

    def on_status_checked(self, message: StatusChecked) -> None:
        self._apply_ollama_status(message.ollama)
        self._apply_longterm(message.longterm)
        for hint in self._empty_chat_hints():  # the embedding model: pulled or the command
            hint.show_setup()
        app = self.straylight
        delay = app.poll_online_seconds if message.ollama.reachable else app.poll_offline_seconds
        self.set_timer(delay, self.check_status, name="ollama-recheck")

    def _empty_chat_hints(self) -> list[EmptyChatHint]:
        """The hint of an empty chat, among the log's children only (`query()` would walk
        every message's widgets, on every Ollama check). None while the app shuts down."""
        try:
            return list(self.chat_log.query_children(EmptyChatHint))
        except NoMatches:
            return []

    def _apply_ollama_status(self, status: OllamaStatus) -> None:
        was_offline = self.ollama_status is not None and not self.ollama_status.reachable
        self.ollama_status = status
        if status.reachable:
            detail = f"version {status.version}" if status.version else None
            embed_model = self.straylight.settings.memory.embed_model
            self.publish_sidebar(
                ollama="online",
                ollama_detail=detail,
                model_pulled=status.has_model(self.model),
                embed_model=embed_model,
                embed_pulled=status.has_model(embed_model),
            )
            self.offer_missing_models(status)
            if was_offline:
                self.notify(f"Ollama is back at {status.host}", timeout=4)
        else:
            self.publish_sidebar(
                ollama=status.state,
                ollama_detail=status.error,
                model_pulled=None,
                embed_pulled=None,
            )

    def offer_missing_models(self, status: OllamaStatus) -> None:
        """A notice with a Pull button for each configured model Ollama does not have, once
        per model until it is pulled; the app keeps the list (palette, memory screens)."""
        from agent.model_catalog import missing_models
        from tui.widgets.missing_model import MissingModelNotice

        missing = missing_models(
            status.models,
            chat_model=self.model,
            embed_model=self.straylight.settings.memory.embed_model,
        )
        self.straylight.missing_models = missing
        for model in missing:
            if model not in self._offered_pulls:
                self._offered_pulls.add(model)
                self.run_worker(self.chat_log.add(MissingModelNotice(model)))
        self._offered_pulls &= set(missing)  # pulled (or deleted again): offer it again

    def on_missing_model_notice_pull_requested(
        self, message: MissingModelNotice.PullRequested
    ) -> None:
        self.action_open_models(pull=message.name)

    def _apply_longterm(self, state: LongtermState) -> None:
        self.publish_sidebar(
            longterm_bytes=state.size_bytes,
            longterm_budget=state.budget_bytes,
            longterm_warning=state.warning,
        )

    # ---- sending -----------------------------------------------------------------
    async def on_chat_input_submitted(self, message: ChatInput.Submitted) -> None:
        text = message.text
        if text.lstrip().startswith("//"):  # `//etc/hosts has…`: a message, one `/` less
            text = text.lstrip()[1:]
        elif text.lstrip().startswith("/"):
            refusal = slash_refusal(text)
            if refusal is not None:  # kept in the box: maybe a message starting with a path
                await self.notice(refusal, kind="error")
                return
            message.input.clear()
            await self.run_slash_command(text.strip())
            return
        if self.replying:
            self.notify("A reply is still streaming: Esc cancels it.", severity="warning")
            return
        refusal = self.chat_refusal()
        if refusal is not None:  # as `/model` and `ask --model`: nothing logged, text kept
            await self.notice(refusal, kind="error")
            return
        message.input.clear()
        if self.editing_last:  # the edited last message: the old exchange is superseded
            from tui.conversation_commands import retry_last

            self.editing_last = False
            if not await retry_last(self, new_text=text) and not message.input.text:
                message.input.load_text(text)  # not resent (Ollama away): the edit stays
                message.input.move_cursor(message.input.document.end)
                self.editing_last = True
            return
        self.replying = True
        self.send_turn(text)

    @work(exclusive=True, group="reply", exit_on_error=False)
    async def send_turn(self, text: str) -> None:
        now = self.settings.clock.now()
        user, reply = await self.chat_log.start_turn(text, time=now, model=self.model)
        self.refresh_longterm()  # the size of the longterm.md this prompt reads
        finished = False
        from tui.image_command import image_for_turn

        image = await image_for_turn(self)
        turn = self.engine.run(
            text,
            conversation_id=self.conversation_id,
            model=self.model,
            system=self.system_prompt,
            image=image,
        )
        try:
            async with aclosing(turn) as turn_events:
                async for event in turn_events:
                    if isinstance(event, ReplyDelta):
                        await reply.append(event.text)
                    elif isinstance(event, MessageMasked):  # show what the log holds
                        await user.show_text(event.text)
                    elif isinstance(event, ThinkingDelta):
                        await reply.append_thinking(event.text)
                    elif isinstance(event, ReplyFinished):
                        self._unsaved[event.turn] = (user, reply)  # until its PointsSaved
                        finished = True
                        await reply.finish(event.text, "complete")
                        self.publish_sidebar(last_reply=_reply_stats(event))
                        self.unreflected_turns += 1
                        self._restart_idle_timer()
                    elif isinstance(event, ApprovalRequested):
                        event.answer(await self._approval_or_later(event.candidate))
                    elif isinstance(event, FactsInjected):
                        self.publish_sidebar(
                            injected_facts=len(event.injected.facts),
                            injected=tuple(f.key for f in event.injected.facts),
                        )
                    elif isinstance(event, Recalled):
                        self.publish_sidebar(recalled=_recalled_lines(event))
                    elif isinstance(event, ToolUsed):
                        await self.notice(f"🗂 {event.name}: {event.summary}")
                        self.refresh_fact_status()  # an approval or a new candidate: at once
                    elif isinstance(event, CandidatesProposed):
                        await self.announce_candidates(event.candidates)
                    elif isinstance(event, CapabilityReminder):
                        await self._remind_capabilities(event)
                    elif isinstance(event, ReplyFailed):
                        finished = True
                        self.publish_sidebar(last_reply=None)
                        await self._show_failure(reply, event)
                    elif isinstance(event, ContextBudgeted):
                        self.publish_sidebar(
                            context=event.summary(),
                            context_headroom=event.headroom,
                            context_notes=event.notes,
                        )
                    elif isinstance(event, ContextNotice | LimitNotice):
                        await self.notice(f"⚠ {event.text}")
                        if isinstance(event, ContextNotice):  # Ollama cut the prompt anyway
                            self.publish_sidebar(context_headroom="critical")
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

    def not_saved_yet(self, message: ChatMessage) -> bool:
        """The message is of the turn that streams: its points are saved when it ends."""
        return self.replying and message in self.chat_messages()[-2:]

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
        elif event.error.kind == "context_overflow":  # the estimate said it fits; it did not
            self.publish_sidebar(context_headroom="critical")

    def cancel_reply(self) -> None:
        """Stop the streaming reply, if one streams (what arrived is kept)."""
        if self.replying:
            self.workers.cancel_group(self, "reply")

    # ---- slash commands ----------------------------------------------------------------
    async def run_slash_command(self, line: str) -> None:
        await run_slash_command(self, line)

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
        self.system_prompt, self.editing_last = None, False
        self.conversation_id = new_conversation_id(self.settings.clock)
        self.conversation_started = self.settings.clock.now()
        await self.chat_log.clear()
        unfreeze_all()  # the old log is garbage now: let the collector have it
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

    def action_open_conversations(self) -> None:
        from tui.screens.conversations_screen import ConversationsScreen

        memory = self.engine.memory
        self._open_screen(
            ConversationsScreen(
                self.engine.daily_log, self.conversation_id, memory.store if memory else None
            ),
            self._continue_conversation,
        )

    async def _continue_conversation(self, chosen: ContinueConversation | None) -> None:
        """The conversations screen chose one to continue: show it and make it current."""
        if chosen is None:
            return
        if chosen.conversation_id == self.conversation_id:
            self.notify("That is the conversation you are in.", timeout=3)
            return
        from tui.screens.conversation_views import chat_widgets

        self.cancel_reply()
        self.reflect_in_background()  # the conversation being left gets its reflection
        self.conversation_id = chosen.conversation_id
        self.system_prompt, self.editing_last = chosen.system_prompt, False
        first = chosen.started or self.settings.clock.now()
        self.conversation_started = first
        await self.chat_log.show(chat_widgets(chosen.messages))
        unfreeze_all()  # the log it replaced is garbage now
        self._publish_new_conversation(first)
        await self.notice(
            f"Continuing conversation {chosen.conversation_id}: the next message goes on it."
        )
        self.query_one(ChatInput).focus()

    async def action_retry_message(self) -> None:
        """r on the selected message: regenerate it, when it is the last reply."""
        from tui.conversation_commands import retry_last

        selected = self._selected()
        replies = [m for m in self.chat_messages() if m.role == "assistant"]
        if selected is None or not replies or selected is not replies[-1]:
            self.notify("Only the last reply can be regenerated.", severity="warning")
            return
        self.query_one(ChatInput).focus()
        await retry_last(self)

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


def _recalled_lines(event: Recalled) -> tuple[RecalledLine, ...]:
    """`#12 0.82 the first words…` for each hit (pinned ones marked)."""
    lines = []
    for hit in event.result.hits[:6]:
        words = " ".join(printable(hit.content).split())[:18]
        pin = "📌" if hit.pinned else ""
        lines.append(RecalledLine(hit.id, f"#{hit.id} {hit.score:.2f}{pin} {words}…"))
    return tuple(lines)


def _reply_stats(event: ReplyFinished) -> str | None:
    stats = event.stats
    if stats.eval_count and stats.eval_duration_ns:
        rate = stats.eval_count / (stats.eval_duration_ns / 1e9)
        return f"last reply {stats.eval_count} tokens, {rate:.0f} tok/s"
    if stats.eval_count:
        return f"last reply {stats.eval_count} tokens"
    return None
