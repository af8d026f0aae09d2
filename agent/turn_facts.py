"""Layer 4 in a turn: the memory tools, the user's answer to a `memory_write`, and what
follows a complete reply (confidence boost, promotion, the "can't" check) and a session
(the reflection pass). The engine (agent/turn.py) calls these; none raises into a turn
except where said.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from agent.fact_tools import MEMORY_READ, MEMORY_WRITE, parse_write, run_read, unknown_tool
from agent.gateway_values import ToolCall
from agent.ollama_gateway import OllamaGateway
from agent.turn_events import Approval, ToolUsed
from memory.fact_types import FactError
from store.daily_log import DailyLog

if TYPE_CHECKING:  # the memory pulls in duckdb, numpy and usearch: not before the first frame
    from memory.fact_drawer import FactDrawer, InjectedFacts
    from memory.turn_memory import TurnRecall
    from store.fact_records import Candidate, Fact

log = logging.getLogger("straylight.turn")
REFLECT_MESSAGES = 200  # the reflection pass reads at most this many messages of a session


class ToolOutcome(NamedTuple):
    """One tool call done: the result for the model, a line for the chat, new candidates."""

    result: str
    used: ToolUsed
    proposed: list[Candidate]


async def run_tool(
    drawer: FactDrawer, call: ToolCall, query_vector: list[float] | None, conversation_id: str
) -> ToolOutcome | Candidate:
    """Run one tool call; a `memory_write` that passed the gate returns its candidate,
    for the user to decide on (`decide`)."""
    if call.name == MEMORY_READ:
        done = await asyncio.to_thread(run_read, drawer, call, query_vector)
        what = call.arguments.get("key") or call.arguments.get("query") or ""
        return ToolOutcome(done.result, ToolUsed(call.name, f"looked up {str(what)[:60]!r}"), [])
    if call.name != MEMORY_WRITE:
        done = unknown_tool(call)
        log.warning("the model called an unknown tool %r", call.name)
        return ToolOutcome(done.result, ToolUsed(call.name, "unknown tool: refused"), [])
    parsed = parse_write(call)
    if parsed.proposal is None:
        return ToolOutcome(parsed.result, ToolUsed(call.name, "invalid arguments: refused"), [])
    gate = await asyncio.to_thread(
        drawer.propose, parsed.proposal, origin="tool", conversation_id=conversation_id
    )
    if gate.candidate is None:
        result = json.dumps({"status": "not proposed", "reason": gate.reason})
        return ToolOutcome(result, ToolUsed(call.name, f"not proposed: {gate.reason}"), [])
    return gate.candidate


async def decide(drawer: FactDrawer, candidate: Candidate, approval: Approval) -> ToolOutcome:
    """Carry out the user's answer to a `memory_write` candidate."""
    try:
        if approval.verdict == "approve":
            fact = await asyncio.to_thread(
                drawer.approve, candidate.id, body=approval.body, key=approval.key
            )
            result = {"status": "approved", "key": fact.key, "body": fact.body}
            return ToolOutcome(
                json.dumps(result), ToolUsed(MEMORY_WRITE, f"saved fact {fact.key}"), []
            )
        if approval.verdict == "reject":
            await asyncio.to_thread(drawer.reject, candidate.id)
            result = {"status": "rejected by the user"}
            return ToolOutcome(json.dumps(result), ToolUsed(MEMORY_WRITE, "rejected"), [])
    except FactError as error:
        return ToolOutcome(
            json.dumps({"error": str(error)}), ToolUsed(MEMORY_WRITE, str(error)), []
        )
    pending = {"status": "pending", "candidate": candidate.id}
    used = ToolUsed(MEMORY_WRITE, f"candidate #{candidate.id} waits for approval")
    return ToolOutcome(json.dumps(pending), used, [candidate])


def used_memories(
    injected: InjectedFacts | None, recall: TurnRecall | None
) -> tuple[list[Fact], list[tuple[int, str]]]:
    """The facts and pinned points this turn's prompt carried (for the confidence boost)."""
    facts = list(injected.facts) if injected is not None else []
    hits = recall.result.hits if recall is not None and recall.result is not None else []
    return facts, [(hit.id, hit.content) for hit in hits if hit.pinned]


async def check_reply(
    drawer: FactDrawer,
    user_text: str,
    reply: str,
    conversation_id: str,
    used: tuple[list[Fact], list[tuple[int, str]]] = ([], []),
) -> tuple[list[Candidate], list[Fact]]:
    """After a complete reply: the confidence boost of the facts and pinned memories it used,
    the promotion of success events (new candidates) and the "can't" check (the capability
    facts the reply forgot); fail-soft."""
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
        proposed = await asyncio.to_thread(promote, drawer, user_text, reply, conversation_id)
    except Exception:
        log.exception("promoting success events failed")
    try:
        reminder = await asyncio.to_thread(cant_check, drawer, reply)
    except Exception:
        log.exception("the can't check failed")
    return proposed, reminder


def promote(
    drawer: FactDrawer, user_text: str, reply: str, conversation_id: str
) -> list[Candidate]:
    from memory.success_classifier import classify_turn

    return drawer.propose_all(
        classify_turn(user_text, reply), origin="promotion", conversation_id=conversation_id
    )


def cant_check(drawer: FactDrawer, reply: str) -> list[Fact]:
    from memory.cant_check import find_cant_claims
    from memory.cant_match import match_capabilities

    claims = find_cant_claims(reply)
    if not claims:
        return []
    capabilities = drawer.active_capabilities()
    keys = match_capabilities(claims, [(f.key, f.body) for f in capabilities])
    by_key = {f.key: f for f in capabilities}
    return [by_key[key] for key in keys if key in by_key]


async def reflect(
    drawer: FactDrawer,
    gateway: OllamaGateway,
    daily_log: DailyLog,
    conversation_id: str,
    model: str,
) -> list[Candidate]:
    """The end-of-session reflection pass: one structured call over the conversation;
    valid items become candidates, invalid or hostile ones are dropped and logged."""
    proposed, _dropped = await reflect_report(drawer, gateway, daily_log, conversation_id, model)
    return proposed


def fitted_reflection(
    transcript: Sequence[tuple[str, str]], known: Sequence[str], window: int
) -> list[dict[str, str]] | None:
    """The reflection's messages with as much of the transcript as fits `window` (the
    `num_ctx` the call sends) less the reply's reserve and the estimate's margin; None when
    not even its instructions fit. Sent whole, a long session overflowed a small window and
    Ollama cut the prompt's front — the instructions — without a word."""
    from agent.context_window import structured_room
    from agent.token_estimate import PromptEstimate
    from memory.reflection import TRANSCRIPT_BUDGET_CHARS, reflection_messages

    room = structured_room(window)
    budget = TRANSCRIPT_BUDGET_CHARS
    while True:
        prompt = reflection_messages(transcript, known_keys=known, budget_chars=budget)
        tokens = PromptEstimate.of_messages(prompt).uncalibrated
        if tokens <= room:
            return prompt
        if budget <= _REFLECT_MIN_CHARS:
            return None
        budget = max(_REFLECT_MIN_CHARS, min(budget - 1, int(budget * room / tokens * 0.9)))


_REFLECT_MIN_CHARS = 200
"""The least transcript worth a reflection call (a message's tail, a line or two)."""


async def reflect_report(
    drawer: FactDrawer,
    gateway: OllamaGateway,
    daily_log: DailyLog,
    conversation_id: str,
    model: str,
) -> tuple[list[Candidate], list[tuple[str, str]]]:
    """`reflect`, and what it dropped as (item, reason): items the checks refused (not JSON,
    hostile, proof not in the session …) and proposals the approval gate refused (rejected
    before, already pending, already a fact) — so `straylight reflect` can say why."""
    from memory.reflection import REFLECTION_SCHEMA, parse_reflection

    messages = await asyncio.to_thread(daily_log.recent, conversation_id, REFLECT_MESSAGES)
    transcript = [(m.role, m.content) for m in messages if m.content]
    if not any(role == "user" for role, _ in transcript):
        return [], [("(the conversation)", "no user message to reflect on")]
    known = await asyncio.to_thread(lambda: [f.key for f in drawer.list_facts(status="active")])
    window = (await gateway.context_window(model)).window
    prompt = fitted_reflection(transcript, known, window)
    if prompt is None:
        return [], [("(the conversation)", f"the model's {window:,}-token window is too small")]
    raw = await gateway.chat_structured(model, prompt, REFLECTION_SCHEMA)
    result = parse_reflection(raw, transcript_text="\n".join(t for _, t in transcript))
    dropped = list(result.dropped)
    for preview, reason in result.dropped:
        log.warning("reflection item dropped (%s): %s", reason, preview)

    def propose() -> list[Candidate]:
        made: list[Candidate] = []
        for proposal in result.proposals:
            outcome = drawer.propose(proposal, origin="reflection", conversation_id=conversation_id)
            if outcome.candidate is not None:
                made.append(outcome.candidate)
            else:
                dropped.append((proposal.key, outcome.reason))
        return made

    proposed = await asyncio.to_thread(propose)
    log.info(
        "reflection on %s: %d candidates, %d dropped",
        conversation_id,
        len(proposed),
        len(dropped),
    )
    return proposed, dropped
