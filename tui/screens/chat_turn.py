"""The chat screen's turn and what Ollama says: the turn's events (agent/turn_events.py)
streamed into the chat log and the sidebar (a failed turn named, a cancelled reply kept, a
turn's saved points given to its two messages), and Ollama and longterm.md checked in the
background, into the sidebar, with a Pull notice for each configured model Ollama lacks.

`ChatScreen` (tui/screens/chat_screen.py) builds on this: it keeps the conversation (its
id, new and continued ones), sends what the message box holds and owns the chat's keys.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual import work
from textual.css.query import NoMatches
from textual.message import Message

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
from tui.display_text import printable
from tui.screens.chat_facts import ChatFacts
from tui.widgets.chat_message import ChatMessage, EmptyChatHint
from tui.widgets.recalled_hits import RecalledLine

if TYPE_CHECKING:
    from agent.gateway_values import OllamaStatus
    from agent.image_attachment import ImageAttachment
    from agent.model_catalog import MissingModel
    from store.longterm_file import LongtermState
    from tui.widgets.missing_model import MissingModelNotice

log = logging.getLogger("straylight.tui")


@dataclass
class StatusChecked(Message):
    """A background check of Ollama and longterm.md finished."""

    ollama: OllamaStatus
    longterm: LongtermState


class ChatTurn(ChatFacts):
    """The turn streamed into the chat log, and Ollama's state into the sidebar."""

    system_prompt: str | None  # this conversation's own (`/system`), or none
    pending_image: ImageAttachment | None  # `/image PATH`, for the next message
    _unsaved: dict[int, tuple[ChatMessage, ChatMessage]]  # turn → its messages
    _offered_pulls: set[MissingModel]  # missing models with a notice shown

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
        from tui.screens.memory_screen import MemoryScreen
        from tui.widgets.missing_model import MissingModelNotice

        missing = missing_models(
            status.models,
            chat_model=self.model,
            embed_model=self.straylight.settings.memory.embed_model,
        )
        self.straylight.missing_models = missing
        for screen in self.app.screen_stack:  # an open models screen drops a pulled one's line
            if isinstance(screen, MemoryScreen) and screen.is_mounted:
                screen.show_missing_models()
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

    # ---- the turn ---------------------------------------------------------------------
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
                        stopped = event.stats.done_reason == "length"  # named by LimitNotice
                        await reply.finish(event.text, "cut_off" if stopped else "complete")
                        self.publish_sidebar(last_reply=_reply_stats(event))
                        if self.sidebar_state.model_pulled is False:  # pulled meanwhile
                            self.check_status()
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
            from tui.cli_output import FULL_OR_FAILING, cannot_write

            if isinstance(error, OSError) and error.errno in FULL_OR_FAILING:  # as `ask` says
                said = f"⚠ {cannot_write(error)}"
            else:
                said = f"⚠ {type(error).__name__}: {error} (details in {self.settings.log_file})"
            await self.notice(said, kind="error")
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
        elif event.error.kind == "cut_off":  # Ollama may have gone away with the connection
            self.check_status()
        elif event.error.kind == "model_missing":
            self.publish_sidebar(model_pulled=False)
        elif event.error.kind == "context_overflow":  # the estimate said it fits; it did not
            self.publish_sidebar(context_headroom="critical")

    def cancel_reply(self) -> None:
        """Stop the streaming reply, if one streams (what arrived is kept)."""
        if self.replying:
            self.workers.cancel_group(self, "reply")


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
