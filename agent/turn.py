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
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from agent.fact_tools import (
    MAX_ROUNDS,
    MEMORY_READ,
    MEMORY_WRITE,
    TOOL_SPECS,
    parse_write,
    run_read,
    unknown_tool,
)
from agent.gateway_errors import GatewayError, ModelError, ToolsNotSupported
from agent.ollama_gateway import ChatDelta, ChatDone, ChatToolCalls, OllamaGateway, ToolCall
from agent.prompt import PERSONA, PromptSection, build_system_prompt
from agent.settings import Settings
from memory.fact_types import FactError
from memory.secret_masking import mask_secrets
from store.conversation_id import new_conversation_id as new_conversation_id
from store.daily_log import DailyLog, LogMessage, MessageStatus
from store.longterm_file import LongtermFile, LongtermState

if TYPE_CHECKING:  # the memory pulls in duckdb, numpy and usearch: not before the first frame
    from memory.fact_drawer import FactDrawer, InjectedFacts
    from memory.memory_store import RecallResult
    from memory.turn_memory import TurnMemory, TurnRecall
    from store.fact_store import Candidate, Fact

log = logging.getLogger("straylight.turn")
REFLECT_MESSAGES = 200  # the reflection pass reads at most this many messages of a session


@dataclass(frozen=True, slots=True)
class UserMessageLogged:
    message: LogMessage


@dataclass(frozen=True, slots=True)
class LongtermWarning:
    """longterm.md could not be used (`over_budget` False), or it is over its budget and
    goes into the prompt anyway, every turn (True)."""

    text: str
    over_budget: bool = False


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


@dataclass(frozen=True, slots=True)
class FactsInjected:
    """What layer 4 put under `## Known facts` this turn."""

    injected: InjectedFacts


@dataclass(frozen=True, slots=True)
class ToolUsed:
    """The model called a memory tool; `summary` is one line for the chat."""

    name: str
    summary: str


@dataclass(frozen=True, slots=True)
class CandidatesProposed:
    """New candidates at the gate (from a success event, a memory_write left pending, or the
    reflection pass)."""

    candidates: list[Candidate]


@dataclass(frozen=True, slots=True)
class CapabilityReminder:
    """The reply said it cannot do something that an active capability fact says it can."""

    facts: list[Fact]


@dataclass(frozen=True, slots=True)
class Approval:
    """The user's answer to a `memory_write` candidate: approve (maybe edited), reject, or
    decide later (it stays pending)."""

    verdict: Literal["approve", "reject", "later"]
    body: str | None = None
    key: str | None = None


Approver = Callable[["Candidate"], Awaitable[Approval]]

TurnEvent = (
    UserMessageLogged
    | LongtermWarning
    | Recalled
    | FactsInjected
    | ToolUsed
    | ReplyDelta
    | ReplyFinished
    | ReplyFailed
    | CandidatesProposed
    | CapabilityReminder
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
        self._save_failures: list[BaseException] = []  # background saves that failed
        self.clock = settings.clock
        self.daily_log = DailyLog(settings.home / "conversation")
        self.longterm = LongtermFile(settings.home / "longterm.md", settings.longterm_budget_bytes)
        self.approver: Approver | None = None  # the TUI asks the user; `ask` leaves pending
        self._carry: list[Fact] = []  # capability facts the next prompt must carry
        self._tool_support: dict[str, bool] = {}

    @property
    def facts(self) -> FactDrawer | None:
        return self.memory.facts if self.memory is not None else None

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
        facts_block: str = "",
    ) -> list[dict[str, Any]]:
        """System prompt (persona, longterm.md, known facts, recalled context), history, the
        new message."""
        sections = [
            PromptSection("persona", PERSONA),
            PromptSection("longterm", longterm.text),
            PromptSection("known_facts", facts_block),
            PromptSection("recalled_context", recalled_block),
        ]
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": build_system_prompt(sections)}
        ]
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
        elif longterm.over_budget:
            yield LongtermWarning(
                f"{longterm.path} is {longterm.size_bytes:,} bytes, over its budget of "
                f"{longterm.budget_bytes:,}: every turn sends all of it",
                over_budget=True,
            )
        recall: TurnRecall | None = None
        answered = history[-1].content if history and history[-1].role == "assistant" else ""
        if self.memory is not None:
            recall = await self.memory.recall_for_turn(
                text, exclude_contents=[m.content for m in history], context=answered
            )
            if recall.result is not None:
                yield Recalled(recall.result)
        block = recall.result.block if recall and recall.result else ""
        query_vector = recall.query_vector if recall else None
        injected = await self._inject_facts(text, query_vector)
        if injected is not None:
            yield FactsInjected(injected)
        facts_block = injected.block if injected is not None else ""
        messages = self.assemble(history, longterm, user_message, block, facts_block)
        tools = await self._tools_for(model)

        parts: list[str] = []
        outcome: tuple[MessageStatus, str | None] | None = None
        try:
            rounds = 0
            while True:
                calls: list[ToolCall] = []
                done: ChatDone | None = None
                round_text: list[str] = []
                try:
                    async for event in self.gateway.stream_chat(model, messages, tools=tools):
                        if isinstance(event, ChatDelta):
                            parts.append(event.text)
                            round_text.append(event.text)
                            yield ReplyDelta(event.text)
                        elif isinstance(event, ChatToolCalls):
                            calls.extend(event.calls)
                        else:
                            done = event
                except ToolsNotSupported:
                    if tools is None or parts:
                        raise
                    log.info("%s does not support tools: asking again without them", model)
                    self._tool_support[model] = False
                    tools = None
                    continue
                if calls and rounds < MAX_ROUNDS:
                    rounds += 1
                    messages.append(
                        {
                            "role": "assistant",
                            "content": "".join(round_text),
                            "tool_calls": [
                                {"function": {"name": c.name, "arguments": c.arguments}}
                                for c in calls
                            ],
                        }
                    )
                    for call in calls:
                        result, used, proposed = await self._run_tool(
                            call, query_vector, conversation_id
                        )
                        yield used
                        if proposed:
                            yield CandidatesProposed(proposed)
                        messages.append({"role": "tool", "content": result, "tool_name": call.name})
                    if rounds == MAX_ROUNDS:
                        tools = None  # the last request: the model must answer in text
                    continue
                if calls and not parts:
                    raise ModelError(
                        f"the model asked for tools again after {MAX_ROUNDS} rounds "
                        "and gave no answer"
                    )
                assert done is not None
                outcome = ("complete", None)
                reply = mask_secrets("".join(parts))
                await asyncio.to_thread(self._log_reply, reply, conversation_id, model, outcome)
                self._save_in_background(text, recall, reply, conversation_id, answered)
                yield ReplyFinished(reply, done)
                used = self._used_memories(injected, recall)
                async for followup in self._after_reply(text, reply, conversation_id, used):
                    yield followup
                break
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

    # ---- layer 4: facts, tools, promotion, the "can't" check -----------------------------
    async def _inject_facts(
        self, text: str, query_vector: list[float] | None
    ) -> InjectedFacts | None:
        drawer = self.facts
        if drawer is None:
            return None
        carry, self._carry = self._carry, []
        try:
            return await asyncio.to_thread(drawer.for_prompt, text, query_vector, carry=carry)
        except Exception:
            log.exception("fact injection failed; the turn goes on without known facts")
            return None

    async def _tools_for(self, model: str) -> list[dict[str, Any]] | None:
        """The memory tools, if enabled, the drawer is open and the model supports tools
        (asked once per model through /api/show; a refusal is remembered too)."""
        if not self.settings.facts.tools or self.facts is None:
            return None
        supported = self._tool_support.get(model)
        if supported is None:
            capabilities = await self.gateway.capabilities(model)
            supported = capabilities is None or "tools" in capabilities
            self._tool_support[model] = supported
        return TOOL_SPECS if supported else None

    async def _run_tool(
        self, call: ToolCall, query_vector: list[float] | None, conversation_id: str
    ) -> tuple[str, ToolUsed, list[Candidate]]:
        """Run one tool call: (result for the model, a line for the chat, new candidates)."""
        drawer = self.facts
        if drawer is None:  # tools are only offered with a drawer; be safe anyway
            return '{"error": "the fact drawer is not available"}', ToolUsed(call.name, ""), []
        if call.name == MEMORY_READ:
            done = await asyncio.to_thread(run_read, drawer, call, query_vector)
            what = call.arguments.get("key") or call.arguments.get("query") or ""
            return done.result, ToolUsed(call.name, f"looked up {str(what)[:60]!r}"), []
        if call.name != MEMORY_WRITE:
            done = unknown_tool(call)
            log.warning("the model called an unknown tool %r", call.name)
            return done.result, ToolUsed(call.name, "unknown tool: refused"), []
        parsed = parse_write(call)
        if parsed.proposal is None:
            return parsed.result, ToolUsed(call.name, "invalid arguments: refused"), []
        gate = await asyncio.to_thread(
            drawer.propose, parsed.proposal, origin="tool", conversation_id=conversation_id
        )
        if gate.candidate is None:
            result = json.dumps({"status": "not proposed", "reason": gate.reason})
            return result, ToolUsed(call.name, f"not proposed: {gate.reason}"), []
        return await self._decide(drawer, gate.candidate)

    async def _decide(
        self, drawer: FactDrawer, candidate: Candidate
    ) -> tuple[str, ToolUsed, list[Candidate]]:
        approval = Approval("later")
        if self.approver is not None:
            try:
                approval = await self.approver(candidate)
            except Exception:
                log.exception("asking for approval failed; the candidate stays pending")
        try:
            if approval.verdict == "approve":
                fact = await asyncio.to_thread(
                    drawer.approve, candidate.id, body=approval.body, key=approval.key
                )
                result = {"status": "approved", "key": fact.key, "body": fact.body}
                return json.dumps(result), ToolUsed(MEMORY_WRITE, f"saved fact {fact.key}"), []
            if approval.verdict == "reject":
                await asyncio.to_thread(drawer.reject, candidate.id)
                result = {"status": "rejected by the user"}
                return json.dumps(result), ToolUsed(MEMORY_WRITE, "rejected"), []
        except FactError as error:
            return json.dumps({"error": str(error)}), ToolUsed(MEMORY_WRITE, str(error)), []
        result = {"status": "pending", "candidate": candidate.id}
        used = ToolUsed(MEMORY_WRITE, f"candidate #{candidate.id} waits for approval")
        return json.dumps(result), used, [candidate]

    @staticmethod
    def _used_memories(
        injected: InjectedFacts | None, recall: TurnRecall | None
    ) -> tuple[list[Fact], list[tuple[int, str]]]:
        """The facts and pinned points this turn's prompt carried (for the confidence boost)."""
        facts = list(injected.facts) if injected is not None else []
        hits = recall.result.hits if recall is not None and recall.result is not None else []
        return facts, [(hit.id, hit.content) for hit in hits if hit.pinned]

    async def _after_reply(
        self,
        user_text: str,
        reply: str,
        conversation_id: str,
        used: tuple[list[Fact], list[tuple[int, str]]] = ([], []),
    ) -> AsyncIterator[TurnEvent]:
        """Promotion of success events, the "can't" check, and the confidence boost of the
        facts and pinned memories the reply used; fail-soft."""
        drawer = self.facts
        if drawer is None:
            return
        facts, pinned = used
        if facts or pinned:
            from memory.confidence import boost_used

            try:
                await asyncio.to_thread(boost_used, drawer.db, reply, facts, pinned)
            except Exception:
                log.exception("the confidence boost failed")
        proposed: list[Candidate] = []
        reminder: list[Fact] = []
        try:
            proposed = await asyncio.to_thread(
                self._promote, drawer, user_text, reply, conversation_id
            )
        except Exception:
            log.exception("promoting success events failed")
        try:
            reminder = await asyncio.to_thread(self._cant_check, drawer, reply)
        except Exception:
            log.exception("the can't check failed")
        if proposed:
            yield CandidatesProposed(proposed)
        if reminder:
            self._carry = reminder
            yield CapabilityReminder(reminder)

    @staticmethod
    def _promote(
        drawer: FactDrawer, user_text: str, reply: str, conversation_id: str
    ) -> list[Candidate]:
        from memory.success_classifier import classify_turn

        return drawer.propose_all(
            classify_turn(user_text, reply), origin="promotion", conversation_id=conversation_id
        )

    @staticmethod
    def _cant_check(drawer: FactDrawer, reply: str) -> list[Fact]:
        from memory.cant_check import find_cant_claims, match_capabilities

        claims = find_cant_claims(reply)
        if not claims:
            return []
        capabilities = drawer.active_capabilities()
        keys = match_capabilities(claims, [(f.key, f.body) for f in capabilities])
        by_key = {f.key: f for f in capabilities}
        return [by_key[key] for key in keys if key in by_key]

    async def reflect(self, conversation_id: str, model: str) -> list[Candidate]:
        """The end-of-session reflection pass: one structured call over the conversation;
        valid items become candidates, invalid or hostile ones are dropped and logged."""
        from memory.reflection import REFLECTION_SCHEMA, parse_reflection, reflection_messages

        drawer = self.facts
        if drawer is None or not self.settings.facts.reflection:
            return []
        messages = await asyncio.to_thread(self.daily_log.recent, conversation_id, REFLECT_MESSAGES)
        transcript = [(m.role, m.content) for m in messages if m.content]
        if not any(role == "user" for role, _ in transcript):
            return []
        known = await asyncio.to_thread(lambda: [f.key for f in drawer.list_facts(status="active")])
        prompt = reflection_messages(transcript, known_keys=known)
        raw = await self.gateway.chat_structured(model, prompt, REFLECTION_SCHEMA)
        result = parse_reflection(raw, transcript_text="\n".join(t for _, t in transcript))
        for preview, reason in result.dropped:
            log.warning("reflection item dropped (%s): %s", reason, preview)
        proposed = await asyncio.to_thread(
            lambda: drawer.propose_all(
                result.proposals, origin="reflection", conversation_id=conversation_id
            )
        )
        log.info(
            "reflection on %s: %d candidates, %d dropped",
            conversation_id,
            len(proposed),
            len(result.dropped),
        )
        return proposed

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
        if not task.cancelled() and (error := task.exception()) is not None:
            log.error("background save failed", exc_info=error)
            self._save_failures.append(error)

    async def drain(self, timeout: float = 30.0) -> list[BaseException]:
        """Wait for background saves (at exit, and in `ask`); the errors of the saves that
        failed since the last drain (the turn itself is in the daily log either way)."""
        if self._saves:
            await asyncio.wait(set(self._saves), timeout=timeout)
        failures, self._save_failures = self._save_failures, []
        return failures

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
