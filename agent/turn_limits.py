"""The limits of one turn: when the reply must start, how long and how large it may get, and
how many tool calls the model may make.

- **One deadline.** The reply's first event must arrive within `http_timeout_seconds` of the
  turn's start, whatever ran before it (the recall's embedding, /api/show): a stalled server
  is reported at the timeout, not at the timeout plus each call before the chat. After the
  first event the read timeout applies between chunks, as before. A tool round starts a
  new deadline (the model is asked again).
- **Reply size and duration** (`reply_max_chars`, thinking included, and
  `reply_max_seconds`, the time spent in chat requests, tool rounds added up): an endless
  stream is stopped, named, and what arrived is kept, marked cut off, like any other stream
  that broke off.
- **Tool calls** (`memory_tool_calls_per_round`, `memory_tool_calls_per_turn`): the calls
  over a cap are not run; the model is told once, and after the turn's cap it must answer
  in text.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field, replace
from typing import TypeVar

from agent.gateway_errors import GatewayError, ModelTimeout
from agent.gateway_values import ChatDelta, ChatThinking, ToolCall

log = logging.getLogger("straylight.turn")

Event = TypeVar("Event")


class ReplyLimitReached(GatewayError):
    """The reply grew past `reply_max_chars` or ran past `reply_max_seconds` (exit 5)."""

    kind = "reply_limit"

    def __init__(self, what: str, setting: str) -> None:
        super().__init__(f"the reply reached its limit of {what} (raise {setting} to allow more)")
        self.setting = setting


@dataclass(slots=True)
class TurnLimits:
    """The clock and the counters of one turn (made when it starts)."""

    read_timeout: float
    max_chars: int
    max_seconds: float
    calls_per_round: int
    calls_per_turn: int
    started: float = field(default_factory=lambda: asyncio.get_running_loop().time())
    chars: int = 0
    calls: int = 0
    streamed: float = 0.0  # seconds spent in chat requests so far (the duration limit)

    async def stream(
        self, events: AsyncIterator[Event], *, first_round: bool
    ) -> AsyncIterator[Event]:
        """`events` (one chat request's stream), within the deadline and the size and
        duration limits; the stream is closed however this ends."""
        loop = asyncio.get_running_loop()
        begun = loop.time()
        # The duration counts the time in chat requests, not a user deciding on a tool call.
        end = begun + self.max_seconds - self.streamed
        first_by = (self.started if first_round else begun) + self.read_timeout
        waiting_for_first = True
        async with aclosing(events):  # type: ignore[type-var]
            try:
                while True:
                    limit = min(first_by, end) if waiting_for_first else end
                    try:
                        async with asyncio.timeout_at(limit):
                            event = await anext(events)
                    except StopAsyncIteration:
                        return
                    except TimeoutError:
                        if loop.time() >= end:
                            raise self._too_long() from None
                        mid_reply = self.chars > 0  # some text came, then nothing
                        raise ModelTimeout(self.read_timeout, mid_reply=mid_reply) from None
                    waiting_for_first = False
                    if isinstance(event, ChatDelta | ChatThinking):
                        room = self.max_chars - self.chars
                        self.chars += len(event.text)
                        if self.chars > self.max_chars:
                            if room > 0:  # what fits is kept (a reply may come in one chunk)
                                yield replace(event, text=event.text[:room])
                            raise ReplyLimitReached(
                                f"{self.max_chars:,} characters", "STRAYLIGHT_REPLY_MAX_CHARS"
                            )
                    yield event
            finally:
                self.streamed += loop.time() - begun

    def _too_long(self) -> ReplyLimitReached:
        return ReplyLimitReached(f"{self.max_seconds:g} s", "STRAYLIGHT_REPLY_MAX_SECONDS")

    def admit(self, calls: Sequence[ToolCall]) -> tuple[list[ToolCall], str | None]:
        """The calls of one round that may run, and the note naming the cap that stopped
        the others (None when all may run)."""
        room = min(self.calls_per_round, self.calls_per_turn - self.calls)
        admitted = list(calls[: max(room, 0)])
        self.calls += len(admitted)
        if len(admitted) == len(calls):
            return admitted, None
        skipped = len(calls) - len(admitted)
        if room < self.calls_per_round:
            cap = f"{self.calls_per_turn} per turn (MEMORY_TOOL_CALLS_PER_TURN)"
        else:
            cap = f"{self.calls_per_round} per round (MEMORY_TOOL_CALLS_PER_ROUND)"
        note = (
            f"the model asked for {len(calls)} tool calls at once; {skipped} not run: "
            f"the limit is {cap}"
        )
        log.warning("%s", note)
        return admitted, note

    @property
    def turn_cap_reached(self) -> bool:
        return self.calls >= self.calls_per_turn


def reply_end_notice(
    done_reason: str | None, num_predict: object, *, answered: bool, thought_chars: int
) -> str | None:
    """One line for a reply that ended without a whole answer, or None: stopped at its length
    limit, or ended with no answer at all (a thinking model that only thought; its thinking
    is never shown as the reply, so an empty reply would otherwise pass without a word)."""
    if done_reason == "length":
        return _length_stop(num_predict, answered=answered)
    if answered:
        return None
    if thought_chars:
        return (
            f"the model gave no answer, only {thought_chars:,} characters of thinking "
            "(not kept): ask again, or set think lower"
        )
    return "the model gave no answer (an empty reply): ask again, or rephrase"


def _length_stop(num_predict: object, *, answered: bool) -> str:
    """One line for a reply Ollama ended with `done_reason` "length": cut at `num_predict`
    (config.toml's `[model_options]`), or, without one, at the context window; a thinking
    model can spend the whole limit thinking and give no answer at all."""
    if num_predict is None:
        if answered:  # no num_predict sent: the model's own, or the window filled up
            return (
                "the reply stopped at its length limit (the model's num_predict, or the "
                "context window full): it may be cut short; raise num_ctx, or set num_predict "
                "in [model_options]"
            )
        limit = "the model's num_predict, or the context window"
    else:
        limit = f"num_predict = {num_predict} in [model_options]"
    if answered:
        return f"the reply stopped at its length limit ({limit}): it may be cut short"
    return (
        f"the model used its whole length limit ({limit}) before any answer (a thinking "
        "model may spend it thinking): raise num_predict, or set think lower"
    )
