"""The TUI's layer-4 slash commands: /fact, /facts, /candidates.

    /fact set KEY TYPE BODY [--scope global] [--proof TEXT]   write now (overwrites KEY)
    /fact get KEY · /fact retire KEY · /fact undo KEY
    /facts list                                               this workspace's facts
    /candidates [list | approve ID [BODY] | reject ID]        the approval gate
    (/facts, /candidates and /hypotheses alone open their screens: tui/commands.py)

BODY is the rest of the line (apostrophes welcome); `--scope` and `--proof` may follow it,
`--proof` takes the rest of the line. Each runs in a thread and answers with a notice.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from memory.fact_types import FACT_TYPES, FactError
from tui.commands import usage

if TYPE_CHECKING:
    from memory.fact_drawer import FactDrawer
    from store.fact_records import Fact

Notice = Callable[..., Awaitable[None]]

_SET = re.compile(r"^(?P<key>\S+)\s+(?P<type>\S+)\s+(?P<rest>.+)$", re.DOTALL)
_PROOF = re.compile(r"\s--proof(?:\s+(?P<proof>.*))?$", re.DOTALL)
_SCOPE = re.compile(r"\s--scope(?=\s|$)(?:\s+(?P<scope>\S+))?")


def parse_fact_set(argument: str) -> tuple[str, str, str, str, str]:
    """`KEY TYPE BODY [--scope S] [--proof P]` → (key, type, body, scope, proof)."""
    match = _SET.match(argument.strip())
    if match is None:
        raise FactError("usage: /fact set KEY TYPE BODY [--scope global] [--proof TEXT]")
    rest = " " + match["rest"]
    proof = ""
    if found := _PROOF.search(rest):
        proof, rest = (found["proof"] or "").strip(), rest[: found.start()]
        if not proof:  # `--proof` last on the line: it was kept as the body's last word
            raise FactError("--proof needs a TEXT after it (the rest of the line)")
    scope = "workspace"
    if found := _SCOPE.search(rest):
        if found["scope"] is None:
            raise FactError("--scope needs workspace or global after it")
        scope, rest = found["scope"], rest[: found.start()] + rest[found.end() :]
    if match["type"] not in FACT_TYPES:
        raise FactError(f"unknown fact type {match['type']!r}; one of {', '.join(FACT_TYPES)}")
    return match["key"], match["type"], rest.strip(), scope, proof


def fact_line(fact: Fact) -> str:
    where = " (global)" if fact.scope == "global" else ""
    status = "" if fact.status == "active" else f" [{fact.status}]"
    return f"{fact.type} `{fact.key}`{where}{status}: {fact.body}"


async def run_fact_command(
    drawer: FactDrawer | None, unavailable: str, command: str, argument: str, notice: Notice
) -> None:
    if drawer is None:
        await notice(f"Facts are not available: {unavailable}", kind="error")
        return
    try:
        if command == "/facts":
            await _list(drawer, notice)
        elif command == "/candidates":
            await _candidates(drawer, argument, notice)
        else:
            await _fact(drawer, argument, notice)
    except FactError as error:
        await notice(_sentence(str(error)), kind="error")


def _sentence(text: str) -> str:
    """An error as the chat's notices read: a capital first, a full stop last."""
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "!", "?", ")")) else text + "."


async def _fact(drawer: FactDrawer, argument: str, notice: Notice) -> None:
    verb, _, rest = argument.strip().partition(" ")
    rest = rest.strip()
    if verb == "set":
        key, kind, body, scope, proof = parse_fact_set(rest)
        fact = await asyncio.to_thread(drawer.set, key, kind, body, scope=scope, proof=proof)
        await notice(f"Fact set: {fact_line(fact)}")
    elif verb in ("get", "retire", "undo") and rest:
        if verb == "undo":
            if not await asyncio.to_thread(drawer.get, rest):
                await notice(f"No fact {rest!r}.", kind="error")
                return
            restored = await asyncio.to_thread(drawer.undo, rest)
            await notice(f"Restored: {fact_line(restored)}" if restored else f"Undone: {rest}")
            return
        action = drawer.get if verb == "get" else drawer.retire
        facts = await asyncio.to_thread(action, rest)
        if not facts:
            retired = verb == "retire" and await asyncio.to_thread(drawer.has_key, rest)
            text = f"Fact {rest!r} is already retired." if retired else f"No fact {rest!r}."
            await notice(text, kind="error")
            return
        prefix = "Retired: " if verb == "retire" else ""
        await notice("\n".join(prefix + fact_line(f) for f in facts))
    else:
        await notice(f"Usage: {usage('/fact')}", kind="error")


async def _list(drawer: FactDrawer, notice: Notice) -> None:
    facts = await asyncio.to_thread(drawer.list_facts)
    shown = [f for f in facts if f.status != "retired"]
    if not shown:
        await notice(f"No facts yet for {drawer.workspace}. /fact set KEY TYPE BODY adds one.")
        return
    await notice(f"Facts ({drawer.workspace}):\n" + "\n".join(fact_line(f) for f in shown))


async def _candidates(drawer: FactDrawer, argument: str, notice: Notice) -> None:
    verb, _, rest = argument.strip().partition(" ")
    if verb in ("", "list"):
        pending = await asyncio.to_thread(drawer.pending)
        if not pending:
            await notice("No candidates wait for approval.")
            return
        replaced = await asyncio.to_thread(lambda: [drawer.replaces(c) for c in pending])
        lines = [
            f"#{c.id} {c.type} `{c.key}` (from {c.origin}): {c.body}"
            + (f"\n    proof: {c.proof}" if c.proof else "")
            + (f"\n    replaces: {old.body}" if old else "")
            for c, old in zip(pending, replaced, strict=True)
        ]
        await notice("Candidates (/candidates approve ID or reject ID):\n" + "\n".join(lines))
        return
    number, _, body = rest.strip().partition(" ")
    if verb not in ("approve", "reject") or not number.lstrip("#").isdigit():
        await notice(f"Usage: {usage('/candidates')}", kind="error")
        return
    candidate_id = int(number.lstrip("#"))
    if verb == "approve":
        fact = await asyncio.to_thread(drawer.approve, candidate_id, body=body.strip() or None)
        await notice(f"Approved #{candidate_id}: {fact_line(fact)}")
    else:
        rejected = await asyncio.to_thread(drawer.reject, candidate_id)
        await notice(f"Rejected #{candidate_id} ({rejected.key}); it will not be proposed again.")


async def run_hypothesis_command(drawer: FactDrawer | None, argument: str, notice: Notice) -> None:
    """`/hypotheses [validate|refute|delete ID]` — the dream's cards (see `straylight
    hypotheses`)."""
    if drawer is None:
        await notice("Hypotheses are not available: the memory is not open.", kind="error")
        return
    from memory.hypotheses import CardStateError, Hypotheses

    verb, _, number = argument.strip().partition(" ")
    book = Hypotheses.of(drawer)
    if verb in ("", "list"):
        now = drawer.db.clock.now()
        cards = await asyncio.to_thread(lambda: book.cards(["open", "validated"], now=now))
        if not cards:
            await notice("No hypothesis cards. /dream may make one from related memories.")
            return
        lines = [
            f"#{c.id} [{c.status}{', overdue' if c.is_overdue(now) else ''}] "
            f"{c.confidence:.2f} due {c.due_at:%Y-%m-%d}: {c.statement}"
            for c in cards
        ]
        await notice("Hypotheses (/hypotheses validate|refute|delete ID):\n" + "\n".join(lines))
        return
    if verb not in ("validate", "refute", "delete") or not number.strip().lstrip("#").isdigit():
        await notice(f"Usage: {usage('/hypotheses')}", kind="error")
        return
    card_id = int(number.strip().lstrip("#"))
    try:
        if verb == "validate":
            card, candidate = await asyncio.to_thread(book.validate, card_id)
            extra = f"; fact candidate #{candidate.id} waits for approval" if candidate else ""
            await notice(f"Validated #{card.id} (confidence {card.confidence:.2f}){extra}.")
        elif verb == "refute":
            card = await asyncio.to_thread(book.refute, card_id)
            await notice(f"Refuted #{card.id}.")
        else:
            card = await asyncio.to_thread(book.delete, card_id)
            await notice(f"Deleted #{card.id}.")
    except LookupError:
        await notice(f"No hypothesis #{card_id}.", kind="error")
    except CardStateError as error:
        await notice(str(error), kind="error")
