"""The turn: one user message in, one streamed reply out — used by the TUI and the CLI.

1. The user's message is appended to today's log before anything else.
2. The prompt is persona + longterm.md + (later: known facts, recalled context) + the last
   N messages of this conversation, read back from the log through its parser.
3. The reply streams from Ollama; every failure is a named `GatewayError`.
4. The reply is logged when complete; cut off or cancelled, what arrived is logged and
   marked; failed before any text, an empty reply marked `failed` with the reason.
   Progress is reported as an async iterator of `TurnEvent`s.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent.gateway_errors import GatewayError
from agent.ollama_gateway import ChatDelta, ChatDone, OllamaGateway
from agent.prompt import PERSONA, PromptSection, build_system_prompt
from agent.settings import Settings
from memory.secret_masking import mask_secrets
from store.clock import Clock
from store.daily_log import DailyLog, LogMessage, MessageStatus
from store.longterm_file import LongtermFile, LongtermState

if TYPE_CHECKING:  # the memory pulls in duckdb, numpy and usearch: not before the first frame
    from memory.memory_store import RecallResult
    from memory.turn_memory import TurnMemory, TurnRecall

log = logging.getLogger("straylight.turn")


def new_conversation_id(clock: Clock) -> str:
    """`20261129-210438-3fa9c1`: sortable by start time, unique enough for one user."""
    return f"{clock.now():%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


@dataclass(frozen=True, slots=True)
class UserMessageLogged:
    message: LogMessage


@dataclass(frozen=True, slots=True)
class LongtermWarning:
    text: str


@dataclass(frozen=True, slots=True)
class ReplyDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ReplyFinished:
    text: str
    stats: ChatDone


@dataclass(frozen=True, slots=True)
class ReplyFailed:
    """The model call failed; `partial` (possibly empty) was logged, marked cut off or failed."""

    error: GatewayError
    partial: str


@dataclass(frozen=True, slots=True)
class Recalled:
    """What layer 3 put under `## Recalled context` this turn."""

    result: RecallResult


TurnEvent = (
    UserMessageLogged | LongtermWarning | Recalled | ReplyDelta | ReplyFinished | ReplyFailed
)


class TurnEngine:
    """Runs turns against one data dir and one Ollama gateway."""

    def __init__(
        self, settings: Settings, gateway: OllamaGateway, memory: TurnMemory | None = None
    ) -> None:
        self.settings = settings
        self.gateway = gateway
        self.memory = memory
        self._saves: set[asyncio.Task[object]] = set()
        self.clock = settings.clock
        self.daily_log = DailyLog(settings.home / "conversation")
        self.longterm = LongtermFile(settings.home / "longterm.md", settings.longterm_budget_bytes)

    def _append(self, message: LogMessage) -> None:
        moment = message.time or self.clock.now()
        self.daily_log.append(message, moment.astimezone().date())

    def read_context(
        self, conversation_id: str, current: LogMessage
    ) -> tuple[list[LogMessage], LongtermState]:
        """The last N messages of the conversation before `current`, read back from the log
        through its parser, and longterm.md's state."""
        limit = self.settings.history_turns
        recent = self.daily_log.recent(conversation_id, limit + 1)
        if recent and recent[-1].role == "user" and recent[-1].content == current.content:
            recent = recent[:-1]  # the message just logged is `current` itself
        history = [m for m in (recent[-limit:] if limit else []) if m.content]
        return history, self.longterm.load()

    def assemble(
        self,
        history: list[LogMessage],
        longterm: LongtermState,
        current: LogMessage,
        recalled_block: str = "",
    ) -> list[dict[str, str]]:
        """System prompt (persona, longterm.md, recalled context), history, the new message."""
        sections = [
            PromptSection("persona", PERSONA),
            PromptSection("longterm", longterm.text),
            PromptSection("recalled_context", recalled_block),
        ]
        messages = [{"role": "system", "content": build_system_prompt(sections)}]
        messages += [{"role": m.role, "content": m.content} for m in history]
        messages.append({"role": "user", "content": current.content})
        return messages

    async def run(self, text: str, *, conversation_id: str, model: str) -> AsyncIterator[TurnEvent]:
        """One turn. Cancelling the consumer logs what arrived, marked `cancelled`."""
        text = mask_secrets(text)  # nothing unmasked is persisted, not even in the log
        user_message = LogMessage(
            "user", text, conversation_id=conversation_id, time=self.clock.now(), model=model
        )
        await asyncio.to_thread(self._append, user_message)
        yield UserMessageLogged(user_message)

        history, longterm = await asyncio.to_thread(
            self.read_context, conversation_id, user_message
        )
        if longterm.warning:
            yield LongtermWarning(longterm.warning)
        recall: TurnRecall | None = None
        answered = history[-1].content if history and history[-1].role == "assistant" else ""
        if self.memory is not None:
            recall = await self.memory.recall_for_turn(
                text, exclude_contents=[m.content for m in history], context=answered
            )
            if recall.result is not None:
                yield Recalled(recall.result)
        block = recall.result.block if recall and recall.result else ""
        messages = self.assemble(history, longterm, user_message, block)

        parts: list[str] = []
        outcome: tuple[MessageStatus, str | None] | None = None
        try:
            async for event in self.gateway.stream_chat(model, messages):
                if isinstance(event, ChatDelta):
                    parts.append(event.text)
                    yield ReplyDelta(event.text)
                else:
                    outcome = ("complete", None)
                    reply = mask_secrets("".join(parts))
                    await asyncio.to_thread(self._log_reply, reply, conversation_id, model, outcome)
                    self._save_in_background(text, recall, reply, conversation_id, answered)
                    yield ReplyFinished(reply, event)
        except GatewayError as error:
            partial = mask_secrets("".join(parts))
            # Cut off: what arrived is kept. Failed before any text: an empty reply marked
            # `failed` with the reason, so the log says why the message went unanswered.
            outcome = ("cut_off" if partial else "failed", str(error))
            await asyncio.to_thread(self._log_reply, partial, conversation_id, model, outcome)
            yield ReplyFailed(error, partial)
        finally:
            if outcome is None:
                # Cancelled (Esc, Ctrl-C, the consumer went away): keep what arrived.
                self._log_reply(
                    mask_secrets("".join(parts)),
                    conversation_id,
                    model,
                    ("cancelled", "cancelled by the user"),
                )

    def _save_in_background(
        self,
        user_text: str,
        recall: TurnRecall | None,
        reply: str,
        conversation_id: str,
        answered: str,
    ) -> None:
        """Save both points without making anyone wait (`drain` awaits them at exit)."""
        if self.memory is None:
            return
        recalled = [hit.content for hit in recall.result.hits] if recall and recall.result else []
        task = asyncio.get_running_loop().create_task(
            self.memory.save_turn(
                user_text=user_text,
                user_vector=recall.query_vector if recall else None,
                reply_text=reply,
                conversation_id=conversation_id,
                recalled_texts=recalled,
                context=answered,
            ),
            name="memory-save",
        )
        self._saves.add(task)
        task.add_done_callback(self._save_done)

    def _save_done(self, task: asyncio.Task[object]) -> None:
        self._saves.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("background save failed", exc_info=task.exception())

    async def drain(self, timeout: float = 30.0) -> None:
        """Wait for background saves (at exit, and in `ask`)."""
        if self._saves:
            await asyncio.wait(set(self._saves), timeout=timeout)

    def _log_reply(
        self,
        text: str,
        conversation_id: str,
        model: str,
        outcome: tuple[MessageStatus, str | None],
    ) -> None:
        status, reason = outcome
        message = LogMessage(
            "assistant",
            text,
            conversation_id=conversation_id,
            time=self.clock.now(),
            model=model,
            status=status,
            reason=reason,
        )
        self._append(message)
