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

from agent.gateway_errors import GatewayError
from agent.ollama_gateway import ChatDelta, ChatDone, OllamaGateway
from agent.prompt import PERSONA, PromptSection, build_system_prompt
from agent.settings import Settings
from store.clock import Clock
from store.daily_log import DailyLog, LogMessage, MessageStatus
from store.longterm_file import LongtermFile

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


TurnEvent = UserMessageLogged | LongtermWarning | ReplyDelta | ReplyFinished | ReplyFailed


class TurnEngine:
    """Runs turns against one data dir and one Ollama gateway."""

    def __init__(self, settings: Settings, gateway: OllamaGateway) -> None:
        self.settings = settings
        self.gateway = gateway
        self.clock = settings.clock
        self.daily_log = DailyLog(settings.home / "conversation")
        self.longterm = LongtermFile(settings.home / "longterm.md", settings.longterm_budget_bytes)

    def _append(self, message: LogMessage) -> None:
        moment = message.time or self.clock.now()
        self.daily_log.append(message, moment.astimezone().date())

    def prepare_prompt(
        self, conversation_id: str, current: LogMessage
    ) -> tuple[list[dict[str, str]], str | None]:
        """The messages for Ollama — system prompt, the last N messages of the conversation
        read back from the log, the new message — and a warning about longterm.md, if any."""
        longterm = self.longterm.load()
        sections = [PromptSection("persona", PERSONA), PromptSection("longterm", longterm.text)]
        limit = self.settings.history_turns
        recent = self.daily_log.recent(conversation_id, limit + 1)
        if recent and recent[-1].role == "user" and recent[-1].content == current.content:
            recent = recent[:-1]  # the message just logged is `current` itself
        history = recent[-limit:] if limit else []
        messages = [{"role": "system", "content": build_system_prompt(sections)}]
        messages += [{"role": m.role, "content": m.content} for m in history if m.content]
        messages.append({"role": "user", "content": current.content})
        return messages, longterm.warning

    async def run(self, text: str, *, conversation_id: str, model: str) -> AsyncIterator[TurnEvent]:
        """One turn. Cancelling the consumer logs what arrived, marked `cancelled`."""
        user_message = LogMessage(
            "user", text, conversation_id=conversation_id, time=self.clock.now(), model=model
        )
        await asyncio.to_thread(self._append, user_message)
        yield UserMessageLogged(user_message)

        messages, warning = await asyncio.to_thread(
            self.prepare_prompt, conversation_id, user_message
        )
        if warning:
            yield LongtermWarning(warning)

        parts: list[str] = []
        outcome: tuple[MessageStatus, str | None] | None = None
        try:
            async for event in self.gateway.stream_chat(model, messages):
                if isinstance(event, ChatDelta):
                    parts.append(event.text)
                    yield ReplyDelta(event.text)
                else:
                    outcome = ("complete", None)
                    reply = "".join(parts)
                    await asyncio.to_thread(self._log_reply, reply, conversation_id, model, outcome)
                    yield ReplyFinished(reply, event)
        except GatewayError as error:
            partial = "".join(parts)
            # Cut off: what arrived is kept. Failed before any text: an empty reply marked
            # `failed` with the reason, so the log says why the message went unanswered.
            outcome = ("cut_off" if partial else "failed", str(error))
            await asyncio.to_thread(self._log_reply, partial, conversation_id, model, outcome)
            yield ReplyFailed(error, partial)
        finally:
            if outcome is None:
                # Cancelled (Esc, Ctrl-C, the consumer went away): keep what arrived.
                self._log_reply(
                    "".join(parts), conversation_id, model, ("cancelled", "cancelled by the user")
                )

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
