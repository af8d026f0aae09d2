"""The fact drawer's approval gate: a proposal becomes a pending candidate, and only the
user's `approve` makes a candidate a fact; a `reject` is remembered.

These functions are `FactDrawer`'s methods (`drawer.propose(…)`), kept apart from its
explicit writes, reads and decay (`memory.fact_drawer`). One lock per database makes the
gate's checks and its write one step, whichever drawer asks.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memory.fact_types import FactError, FactProposal
from store.database import Database
from store.fact_records import Candidate, Fact, FactWrite
from store.fact_store import same_body

if TYPE_CHECKING:
    from memory.fact_drawer import FactDrawer


@dataclass(frozen=True, slots=True)
class GateOutcome:
    """A proposal at the gate: the new candidate, or None and why not."""

    candidate: Candidate | None
    reason: str = ""


_GATES: weakref.WeakKeyDictionary[Database, threading.Lock] = weakref.WeakKeyDictionary()
_GATES_LOCK = threading.Lock()


def _gate(db: Database) -> threading.Lock:
    """The one lock of a database's approval gate, shared by every drawer on it (the owner
    runs its clients' commands at once, each with a drawer of its own)."""
    with _GATES_LOCK:
        return _GATES.setdefault(db, threading.Lock())


def propose(
    drawer: FactDrawer, proposal: FactProposal, *, origin: str, conversation_id: str = ""
) -> GateOutcome:
    """A proposal becomes a pending candidate, unless it was rejected before, is already
    pending, or is already a fact with the same body."""
    try:
        new = drawer._write_for(
            key=proposal.key,
            type=proposal.type,
            body=proposal.body,
            scope=proposal.scope,
            proof=proposal.proof,
            source=proposal.source,
            confidence=proposal.confidence,
            requires=proposal.requires,
            verified=False,
        )
    except FactError as error:
        return GateOutcome(None, str(error))
    with _gate(drawer.db):  # checked and written as one: two at once made two candidates
        return _through_gate(drawer, new, origin, conversation_id)


def _through_gate(
    drawer: FactDrawer, new: FactWrite, origin: str, conversation_id: str
) -> GateOutcome:
    if drawer.store.has_candidate(drawer.workspace, new.key, new.body, "rejected"):
        return GateOutcome(None, "rejected before")
    if drawer.store.has_candidate(drawer.workspace, new.key, new.body, "pending"):
        return GateOutcome(None, "already pending")
    known = drawer.store.find(new.scope, new.workspace, new.key)
    if (  # bodies compared as the checks above compare them
        known is not None
        and known.status == "active"
        and same_body(known.body) == same_body(new.body)
    ):
        return GateOutcome(None, "already a fact")
    if drawer.store.has_candidate(drawer.workspace, new.key, new.body, "approved"):
        return GateOutcome(None, "approved before")  # maybe edited since: do not undo that
    candidate = drawer.store.add_candidate(new, origin=origin, conversation_id=conversation_id)
    return GateOutcome(candidate)


def propose_all(
    drawer: FactDrawer, proposals: Sequence[FactProposal], *, origin: str, conversation_id: str = ""
) -> list[Candidate]:
    """`propose` each; the candidates made (the others were refused, see `propose`)."""
    outcomes = [
        drawer.propose(p, origin=origin, conversation_id=conversation_id) for p in proposals
    ]
    return [o.candidate for o in outcomes if o.candidate is not None]


def pending(drawer: FactDrawer, *, all_workspaces: bool = False) -> list[Candidate]:
    """The candidates waiting for approval: this workspace's and the global ones, or with
    `all_workspaces` every workspace's."""
    return [
        c
        for c in drawer.store.candidates(status="pending")
        if all_workspaces or c.scope == "global" or c.workspace == drawer.workspace
    ]


def candidate(drawer: FactDrawer, candidate_id: int) -> Candidate | None:
    return drawer.store.candidate(candidate_id)


def approve(
    drawer: FactDrawer,
    candidate_id: int,
    *,
    key: str | None = None,
    body: str | None = None,
    type: str | None = None,
    scope: str | None = None,
) -> Fact:
    """Make a pending candidate a fact (optionally edited first). Checked and decided under
    the gate's lock: two clients deciding the same candidate at once (a reject from the shell
    and an approve in the chat, both served by the owner) get one decision and one "already
    …" refusal; both used to succeed."""
    with _gate(drawer.db):
        return _approve(drawer, candidate_id, key=key, body=body, type=type, scope=scope)


def _approve(
    drawer: FactDrawer,
    candidate_id: int,
    *,
    key: str | None,
    body: str | None,
    type: str | None,
    scope: str | None,
) -> Fact:
    candidate = _pending(drawer, candidate_id)
    new = drawer._write_for(
        key=candidate.key if key is None else key,  # an explicit "" is refused
        type=type or candidate.type,
        body=body if body is not None else candidate.body,
        scope=scope or candidate.scope,
        proof=candidate.proof,
        source=candidate.source,
        confidence=candidate.confidence,
        requires=candidate.requires,
        verified=bool(candidate.proof),
        workspace=candidate.workspace or None,
    )
    edited = " (edited)" if (new.key, new.body) != (candidate.key, candidate.body) else ""
    fact = drawer.store.write(
        new, reason=f"approved candidate #{candidate.id} ({candidate.origin}){edited}"
    )
    drawer.store.decide(candidate, "approved", reason=f"fact #{fact.id}{edited}")
    return fact


def replaces(drawer: FactDrawer, candidate: Candidate) -> Fact | None:
    """The fact approving `candidate` as it is would overwrite with another body (same
    scope, workspace and key), or None."""
    workspace = "" if candidate.scope == "global" else candidate.workspace
    current = drawer.store.find(candidate.scope, workspace, candidate.key)
    if current is None or same_body(current.body) == same_body(candidate.body):
        return None  # the same body, said in another case or with a closing mark
    return current


def reject(
    drawer: FactDrawer, candidate_id: int, *, reason: str = "rejected by the user"
) -> Candidate:
    """Reject a pending candidate; its key and body will not be proposed again. One
    decision at a time, as `approve`."""
    with _gate(drawer.db):
        candidate = _pending(drawer, candidate_id)
        return drawer.store.decide(candidate, "rejected", reason=reason)


def _pending(drawer: FactDrawer, candidate_id: int) -> Candidate:
    candidate = drawer.store.candidate(candidate_id)
    if candidate is None:
        raise FactError(f"no candidate #{candidate_id}")
    if candidate.status != "pending":
        raise FactError(f"candidate #{candidate_id} is already {candidate.status}")
    return candidate
