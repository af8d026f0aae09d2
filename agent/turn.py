"""The turn: one user message in, one streamed reply out — used by the TUI and the CLI.

1. The user's message is masked (once: the log, the points and the prompt get the same text);
   the last N messages of this conversation are read back from the log through its parser,
   and then the message is appended to today's log, before the model is asked anything.
2. The prompt is persona + longterm.md + known facts + recalled context + that history,
   fitted into the model's window by the context budget (agent/turn_context.py): what does
   not fit is left out on a boundary and reported (`ContextBudgeted`); a message too long
   for the window is not sent (a named failure); every request sends `options.num_ctx`.
3. The reply streams from Ollama; every failure is a named `GatewayError`.
4. The reply is logged when complete; cut off or cancelled, what arrived is logged and
   marked; failed before any text, an empty reply marked `failed` with the reason.
5. Both points are saved in the background; when that is done the `after_turn` listener
   hears `PointsSaved`, and `MemstatusDue` every `memory_status_every_n` turns.
   Progress is reported as an async iterator of `TurnEvent`s (agent/turn_events.py).

This module runs the steps; the known facts, the tools and `think` per model and a tool round
are agent/turn_tools.py's, the background save agent/turn_saves.py's.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import itertools
import logging
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from agent import turn_facts
from agent.fact_tools import MAX_ROUNDS
from agent.gateway_errors import (
    ContextOverflow,
    GatewayError,
    ModelError,
    ThinkLevelRefused,
    ToolsNotSupported,
)
from agent.gateway_values import ChatDelta, ChatDone, ChatThinking, ChatToolCalls, ToolCall
from agent.ollama_gateway import OllamaGateway
from agent.prompt import persona_for
from agent.settings import Settings
from agent.turn_context import TurnContext, prompt_parts
from agent.turn_events import (
    AfterTurnListener,
    ContextNotice,
    FactsInjected,
    LimitNotice,
    LongtermWarning,
    MessageMasked,
    Recalled,
    ReplyDelta,
    ReplyFailed,
    ReplyFinished,
    ThinkingDelta,
    TurnEvent,
)
from agent.turn_limits import TurnLimits, reply_end_notice
from agent.turn_saves import BackgroundSaves
from agent.turn_tools import TurnTools
from memory.secret_masking import mask_secrets
from store.conversation_id import new_conversation_id as new_conversation_id
from store.daily_log import DailyLog, LogMessage, MessageStatus
from store.longterm_file import LongtermFile, LongtermState

if TYPE_CHECKING:  # the memory pulls in duckdb, numpy and usearch: not before the first frame
    from agent.context_budget import BudgetedPrompt
    from agent.image_attachment import ImageAttachment
    from memory.fact_drawer import FactDrawer
    from memory.turn_memory import TurnMemory, TurnRecall
    from store.fact_records import Candidate

log = logging.getLogger("straylight.turn")

MAX_REFITS = 3
"""Times a prompt Ollama refused as longer than its window is fitted again and resent: its
own refusal names no size, so each try learns only that the prompt was longer than the
window (the estimate rises by a third or more each time)."""


class TurnEngine:
    """Runs turns against one data dir and one Ollama gateway."""

    def __init__(
        self, settings: Settings, gateway: OllamaGateway, memory: TurnMemory | None = None
    ) -> None:
        self.settings = settings
        self.gateway = gateway
        self.memory = memory
        self.clock = settings.clock
        self.daily_log = DailyLog(settings.home / "conversation")
        self.longterm = LongtermFile(settings.home / "longterm.md", settings.longterm_budget_bytes)
        self._turns = itertools.count(1)
        self.context = TurnContext(settings.ollama.num_ctx, gateway, lambda: self.memory)
        self.tools = TurnTools(lambda: self.settings, gateway, lambda: self.facts)
        self.saves = BackgroundSaves(lambda: self.settings, self.context)
        self.think: bool | str | None = settings.ollama.think  # `/think` changes it
        self.stop_reason = "cancelled by the user"  # a cancelled reply's reason (`ask`: signals)

    @property
    def facts(self) -> FactDrawer | None:
        return self.memory.facts if self.memory is not None else None

    def _append(self, message: LogMessage) -> None:
        moment = message.time or self.clock.now()
        self.daily_log.append(message, moment.astimezone().date())

    def open_turn(self, current: LogMessage) -> tuple[list[LogMessage], LongtermState]:
        """Read the history (the last N messages of the conversation, back from the log
        through its parser; each masked, as a hand-edited day file may hold what the log
        never wrote), then append `current` (even when reading failed: nothing typed is
        lost), then read longterm.md's state, its text masked for the prompt (here, in the
        turn's thread: a file of megabytes takes ~0.1 s a MB to mask)."""
        limit = self.settings.history_turns
        try:
            recent = self.daily_log.recent(current.conversation_id, limit) if limit else []
        finally:
            self._append(current)
        # the log was masked as it was written, but a hand-edited day file was not
        history = [
            dataclasses.replace(m, content=mask_secrets(m.content)) for m in recent if m.content
        ]
        longterm = self.longterm.load()  # the file is the user's; the prompt is masked
        return history, dataclasses.replace(longterm, text=mask_secrets(longterm.text))

    async def run(
        self,
        text: str,
        *,
        conversation_id: str,
        model: str,
        system: str | None = None,
        image: ImageAttachment | None = None,
    ) -> AsyncGenerator[TurnEvent, None]:
        """One turn. Cancelling the consumer logs what arrived, marked `cancelled`.
        `system`: the conversation's own system prompt (None: the persona). `image` goes
        with the message to a vision model; the log keeps its path and hash."""
        turn = next(self._turns)
        limits = self._limits()  # the turn's deadline starts now
        text = text.replace("\0", "")  # (a piped file's NULs: the log stays text for grep)
        typed, text = text, mask_secrets(text)  # nothing unmasked is persisted, not the log
        user_message = LogMessage(
            "user",
            text,
            conversation_id=conversation_id,
            time=self.clock.now(),
            model=model,
            extra=image.log_extra() if image is not None else {},
        )
        history, longterm = await asyncio.to_thread(self.open_turn, user_message)
        parts: list[str] = []
        thought_chars = 0  # thinking is shown, never kept: only its size is logged
        outcome: tuple[MessageStatus, str | None] | None = None
        try:  # from here a cancel (Esc, a signal: the embedding's or the model's cold load
            # can take seconds) logs an empty reply marked `cancelled`, as one mid-reply does
            if text != typed:
                yield MessageMasked(text)
            if longterm.warning:
                yield LongtermWarning(longterm.warning)
            elif longterm.over_budget:
                yield LongtermWarning(
                    f"{longterm.path} is {longterm.size_bytes:,} bytes, over its budget of "
                    f"{longterm.budget_bytes:,}: every turn sends as much of it as the context "
                    "window holds (what it cannot hold is named)",
                    over_budget=True,
                )
            recall: TurnRecall | None = None
            answered = history[-1].content if history and history[-1].role == "assistant" else ""
            # the user's message before `answered`: indexed with this turn's point (issue 17)
            earlier = history[-2].content if answered and len(history) > 1 else ""
            if self.memory is not None:
                recall = await self.memory.recall_for_turn(
                    text, exclude_contents=[m.content for m in history], context=answered
                )
                if recall.late_vector is not None:  # a stalled Ollama: said, not waited for
                    yield LimitNotice(recall.late_vector)
                if recall.result is not None:
                    yield Recalled(recall.result)
            query_vector = recall.query_vector if recall else None
            injected = await self.tools.inject_facts(text, query_vector, conversation_id)
            if injected is not None:
                yield FactsInjected(injected)
            tools = await self.tools.tools_for(model)
            material = prompt_parts(
                persona=persona_for(system),
                user=user_message,
                history=history,
                longterm=longterm.text,  # masked by `open_turn`
                injected=injected,
                recall=recall.result if recall else None,
                tools=tools,
            )
            images = 0 if image is None else 1
            budgeted, context = await self.context.budget(model, material, images=images)
            yield context
            # (masked in a thread: a prompt of a long longterm.md is tens of KB)
            messages = await asyncio.to_thread(_request_messages, budgeted, image)
            options = await self.context.options(model)
            think, think_unsent = await self.tools.think_for(model, self.think)
            if think_unsent is not None:
                yield LimitNotice(think_unsent)

            if not budgeted.fits:  # Ollama would mangle it: not sent, named (it is logged)
                most = (await self.context.window(model)).model_max
                raise ContextOverflow(budgeted.refusal(own_system=bool(system), model_max=most))
            rounds = 0
            first_round = True  # a tool round starts a new deadline for the first event
            refits = 0  # a prompt Ollama refused as too long is fitted again, a few times
            while True:
                calls: list[ToolCall] = []
                done: ChatDone | None = None
                round_text: list[str] = []
                try:
                    async for event in limits.stream(
                        self.gateway.stream_chat(
                            model, messages, options=options, tools=tools, think=think
                        ),
                        first_round=first_round,
                    ):
                        if isinstance(event, ChatDelta):
                            parts.append(event.text)
                            round_text.append(event.text)
                            yield ReplyDelta(event.text)
                        elif isinstance(event, ChatThinking):
                            if not thought_chars and not event.text.strip():
                                continue  # blank so far (`<think>\n\n</think>`): nothing to show
                            thought_chars += len(event.text)
                            yield ThinkingDelta(event.text)
                        elif isinstance(event, ChatToolCalls):
                            calls.extend(event.calls)
                        else:
                            done = event
                except ToolsNotSupported:
                    if tools is None or parts:
                        raise
                    log.info("%s does not support tools: asking again without them", model)
                    self.tools.support[model] = False
                    tools = None
                    continue
                except ThinkLevelRefused as refused:
                    if not isinstance(think, str) or parts:
                        raise
                    self.tools.no_levels.add(model)  # asked with true from now on
                    yield LimitNotice(
                        f"{refused}: thinking is on (think true) instead; "
                        "set think to true or false to say so yourself"
                    )
                    think = True
                    continue
                except GatewayError as raised:
                    if parts or rounds or refits == MAX_REFITS:
                        raise
                    again = await self.context.refit(
                        raised, model, budgeted, material, images=images
                    )
                    if again is None:
                        raise
                    refits += 1
                    budgeted, context, told = again
                    yield context
                    if refits == 1:  # said once: the budget's line names what was left out
                        yield ContextNotice(told)
                    messages = await asyncio.to_thread(_request_messages, budgeted, image)
                    continue
                if calls and tools is None and rounds == 0:  # none were offered (memory_tools
                    # off, a model without tools): a server that calls them anyway is not obeyed
                    names = ", ".join(sorted({call.name for call in calls}))
                    log.warning("%s called tools that were not offered (%s): not run", model, names)
                    calls = []
                if calls and rounds < MAX_ROUNDS:
                    rounds += 1
                    first_round = False
                    round_tools = self.tools.tool_round(
                        calls, "".join(round_text), messages, limits, query_vector, conversation_id
                    )
                    async with aclosing(round_tools):
                        async for step_event in round_tools:
                            yield step_event
                    if rounds == MAX_ROUNDS or limits.turn_cap_reached:
                        tools = None  # the last request: the model must answer in text
                    continue
                if calls and not parts:
                    raise ModelError(
                        f"the model asked for tools again after {MAX_ROUNDS} rounds "
                        "and gave no answer"
                    )
                assert done is not None
                if thought_chars:
                    log.info("%s thought %d characters (not kept)", model, thought_chars)
                reply = mask_secrets("".join(parts))
                ended = reply_end_notice(
                    done.done_reason,
                    (self.gateway.request_options(model) or {}).get("num_predict"),
                    answered=bool(reply.strip()),
                    thought_chars=thought_chars,
                )
                # Stopped at its length limit: logged cut off, with the line that names it.
                complete: tuple[MessageStatus, str | None] = (
                    ("cut_off", ended) if done.done_reason == "length" else ("complete", None)
                )
                outcome = complete
                await asyncio.to_thread(self._log_reply, reply, conversation_id, model, complete)
                # Calibrated (or a truncation noted) before the background save keeps it;
                # tool rounds add messages the estimate did not see: not compared.
                overflow = (
                    await self.context.after_reply(model, budgeted, done, images=images)
                    if rounds == 0
                    else None
                )
                save = functools.partial(
                    self.saves.start,
                    turn=turn,
                    user_text=text,
                    recall=recall,
                    reply=reply,
                    conversation_id=conversation_id,
                    answered=answered,
                    # Ollama cut it anyway: `status` reports it like a prompt it refused
                    context=context if overflow is None else replace(context, headroom="critical"),
                    earlier=earlier,
                )
                if self.memory is not None:
                    save(self.memory)
                else:  # not open yet: saved when it is (`saves.start_held`)
                    self.saves.hold(save)
                yield ReplyFinished(reply, done, turn)
                if ended is not None:  # the length limit, or no answer at all: named
                    yield LimitNotice(ended)
                if overflow is not None:
                    yield ContextNotice(overflow.message)
                used = turn_facts.used_memories(injected, recall)
                async for followup in self.tools.after_reply(text, reply, conversation_id, used):
                    yield followup
                break
        except GatewayError as raised:
            error = self.context.refused(raised, model)
            partial = mask_secrets("".join(parts))
            # Cut off: what arrived is kept. Failed before any text: an empty reply marked
            # `failed` with the reason, so the log says why the message went unanswered.
            failed: tuple[MessageStatus, str | None] = (
                "cut_off" if partial else "failed",
                str(error),
            )
            outcome = failed
            await asyncio.to_thread(self._log_reply, partial, conversation_id, model, failed)
            if isinstance(error, ContextOverflow):  # `status` reports the prompt that did not fit
                await self.context.save(replace(context, headroom="critical"))
            yield ReplyFailed(error, partial)
        except Exception as raised:  # (a full disk at a commit): the reply says what failed
            if outcome is None:  # not "cancelled by the user": nobody cancelled
                partial = mask_secrets("".join(parts))
                broke: tuple[MessageStatus, str | None] = (
                    "cut_off" if partial else "failed",
                    mask_secrets(_failure_reason(raised)),
                )
                outcome = broke
                self._log_reply(partial, conversation_id, model, broke)
            raise
        finally:
            if outcome is None:
                # Cancelled (Esc, Ctrl-C, the consumer went away): keep what arrived.
                self._log_reply(
                    mask_secrets("".join(parts)),
                    conversation_id,
                    model,
                    ("cancelled", self.stop_reason),
                )

    def _limits(self) -> TurnLimits:
        ollama, facts = self.settings.ollama, self.settings.facts
        return TurnLimits(
            read_timeout=self.gateway.read_timeout,
            max_chars=ollama.reply_max_chars,
            max_seconds=ollama.reply_max_seconds,
            calls_per_round=facts.tool_calls_per_round,
            calls_per_turn=facts.tool_calls_per_turn,
        )

    @property
    def after_turn(self) -> AfterTurnListener | None:
        """Hears what the background save found (`PointsSaved`, `MemstatusDue`)."""
        return self.saves.after_turn

    @after_turn.setter
    def after_turn(self, listener: AfterTurnListener | None) -> None:
        self.saves.after_turn = listener

    @property
    def counts_memstatus_turns(self) -> bool:
        """Whether turns count towards memstatus (the TUI: only while its jobs run)."""
        return self.saves.counts_memstatus_turns

    @counts_memstatus_turns.setter
    def counts_memstatus_turns(self, value: bool) -> None:
        self.saves.counts_memstatus_turns = value

    async def drain(self, timeout: float = 30.0) -> list[BaseException]:
        """Wait for background saves (at exit, and in `ask`); the errors of the saves that
        failed since the last drain (the turn itself is in the daily log either way)."""
        return await self.saves.drain(timeout)

    async def reflect(self, conversation_id: str, model: str) -> list[Candidate]:
        """The end-of-session reflection pass (none without the drawer or when it is off)."""
        drawer = self.facts
        if drawer is None or not self.settings.facts.reflection:
            return []
        return await turn_facts.reflect(
            drawer, self.gateway, self.daily_log, conversation_id, model
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


def _request_messages(
    budgeted: BudgetedPrompt, image: ImageAttachment | None
) -> list[dict[str, Any]]:
    """The chat request's messages from a budget; the image on the user's message (the client
    sends the bytes base64-encoded). Each content masked as it leaves: the recalled points
    and known facts were masked when they were stored, by the patterns of that day (a store
    older than a pattern holds its secrets as they were typed)."""
    messages: list[dict[str, Any]] = [
        {**message, "content": mask_secrets(message["content"])}
        if isinstance(message.get("content"), str)
        else message
        for message in budgeted.kept.chat_messages()
    ]
    if image is not None:
        messages[-1] = {**messages[-1], "images": [image.data]}
    return messages


def _failure_reason(error: Exception) -> str:
    """A failed turn's reason in the log: a write the disk stopped as `cannot write FILE:
    REASON` (DuckDB's commit wraps it in a TransactionException), else the error's class
    and its first words on one line."""
    from store.database_errors import as_os_error

    inside = as_os_error(error)
    if inside is not None:
        return f"cannot write {inside.filename}: {inside.strerror}"
    return f"{type(error).__name__}: {' '.join(str(error).split())}"
