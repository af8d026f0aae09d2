"""The dream run and the actions on its hypothesis cards (seed 003, concept 3).

`run_dream` is one consolidation pass: it picks related memories (`memory.dream.pick_sources`
over the workspace's active facts and the newest `POOL_POINTS` pinned points), asks the model
once with structured output, checks the reply (`memory.dream.check_card`) and creates at most
one card (`START_CONFIDENCE`, due `DUE_AFTER` later). Every outcome, card or not, has a reason,
logged on `straylight.dream`. With fewer than 2 related memories no request is sent. A failed
model call is an outcome too ("model call failed: …"): `run_dream` does not raise for it
(database errors do propagate). A card whose statement matches an existing card's (any status:
a refuted or deleted card is not proposed again) is not created.

`validate_card`, `refute_card` and `delete_card` apply the allowed status changes
(`memory.dream.transition_problem`); an unknown id raises `LookupError`, a change that is not
allowed raises `CardStateError`. Validating proposes one fact candidate at the approval gate
(origin ``hypothesis``), in the card's workspace.

The database calls of `run_dream` run in worker threads; the card actions block (call them
from a thread in a UI).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from agent.gateway_errors import GatewayError
from memory.dream import (
    DUE_AFTER,
    REFUTED_CONFIDENCE,
    SOURCE,
    START_CONFIDENCE,
    VALIDATED_CONFIDENCE,
    CardDraft,
    DreamSource,
    check_card,
    dream_messages,
    dream_schema,
    duplicate_of,
    pick_sources,
    transition_problem,
    validated_fact_proposal,
)
from memory.fact_drawer import FactDrawer
from store.database import Database
from store.fact_store import Candidate
from store.hypothesis_store import Hypothesis, HypothesisStore
from store.point_store import PointStore

log = logging.getLogger("straylight.dream")

POOL_POINTS = 500
"""The newest pinned points considered by a dream run (all active facts are)."""


class StructuredChat(Protocol):
    """What the dream run needs of the gateway (`agent.ollama_gateway.OllamaGateway`)."""

    async def chat_structured(
        self, model: str, messages: Sequence[dict[str, Any]], schema: dict[str, Any]
    ) -> str: ...


class CardStateError(ValueError):
    """A status change the card's current status does not allow; one line for the user."""


@dataclass(frozen=True, slots=True)
class DreamOutcome:
    """The card created (or None) and why; `sources` are the memory ids shown to the model."""

    card: Hypothesis | None
    reason: str
    sources: tuple[str, ...] = ()


def _gather(db: Database, drawer: FactDrawer, workspace: str) -> tuple[list[DreamSource], int]:
    facts = drawer.store.visible(workspace, statuses=["active"])
    points = PointStore(db).list_points(pinned=True, limit=POOL_POINTS, newest_first=True)
    points.reverse()  # oldest first: ties in picking go to the older memory
    covered = HypothesisStore(db).cited_by_open(workspace=workspace)
    sources = pick_sources(facts, points, covered=covered)
    return sources, len(facts) + len(points)


def _finish(outcome: DreamOutcome) -> DreamOutcome:
    if outcome.card is not None:
        log.info("dream: %s", outcome.reason)
    else:
        log.info("dream: no card: %s", outcome.reason)
    return outcome


async def run_dream(
    db: Database, drawer: FactDrawer, gateway: StructuredChat, model: str, *, workspace: str
) -> DreamOutcome:
    """One dream run: at most one hypothesis card (docs/dream.md)."""
    sources, usable = await asyncio.to_thread(_gather, db, drawer, workspace)
    if len(sources) < 2:
        if usable < 2:
            reason = f"fewer than 2 usable memories ({usable} active facts and pinned points)"
        else:
            reason = f"no two related memories among {usable} active facts and pinned points"
        return _finish(DreamOutcome(None, reason))
    ids = tuple(source.id for source in sources)
    try:
        raw = await gateway.chat_structured(model, dream_messages(sources), dream_schema(ids))
    except GatewayError as error:
        return _finish(DreamOutcome(None, f"model call failed: {error}", ids))
    checked = check_card(raw, set(ids))
    if isinstance(checked, str):
        return _finish(DreamOutcome(None, checked, ids))
    store = HypothesisStore(db)
    existing = await asyncio.to_thread(store.list)
    if (twin := duplicate_of(checked, existing)) is not None:
        return _finish(
            DreamOutcome(None, f"duplicate of hypothesis #{twin.id} ({twin.status})", ids)
        )
    draft: CardDraft = checked
    create = functools.partial(
        store.create,
        statement=draft.statement,
        source_ids=draft.source_ids,
        prediction=draft.prediction,
        measurement=draft.measurement,
        confidence=START_CONFIDENCE,
        due_at=db.clock.now() + DUE_AFTER,
        workspace=workspace,
        source=SOURCE,
        reason=f"dream run with {model} over {len(ids)} memories",
    )
    card = await asyncio.to_thread(create)
    reason = f"hypothesis #{card.id} from {', '.join(card.source_ids)}"
    return _finish(DreamOutcome(card, reason, ids))


# ---------------------------------------------------------------------------- card actions


def _card_for(store: HypothesisStore, card_id: int, target: str) -> Hypothesis:
    card = store.get(card_id)
    if card is None:
        raise LookupError(f"no hypothesis #{card_id}")
    if (problem := transition_problem(card.status, target)) is not None:
        raise CardStateError(f"hypothesis #{card_id} cannot be {target}: {problem}")
    return card


def validate_card(
    db: Database, drawer: FactDrawer, card_id: int
) -> tuple[Hypothesis, Candidate | None]:
    """Validate an open card: confidence `VALIDATED_CONFIDENCE`, status validated, and one
    fact candidate at the gate (None when the gate refuses it: already pending or a fact)."""
    store = HypothesisStore(db)
    _card_for(store, card_id, "validated")
    card = store.set_status(
        card_id, "validated", VALIDATED_CONFIDENCE, reason="validated by the user"
    )
    gate = drawer
    if card.workspace and card.workspace != drawer.workspace:
        gate = FactDrawer(db, card.workspace, drawer.config)
    outcome = gate.propose(validated_fact_proposal(card), origin="hypothesis")
    if outcome.candidate is None:
        log.info("hypothesis #%d validated; no candidate: %s", card.id, outcome.reason)
    else:
        log.info("hypothesis #%d validated; candidate #%d", card.id, outcome.candidate.id)
    return card, outcome.candidate


def refute_card(db: Database, card_id: int) -> Hypothesis:
    """Refute an open or validated card: confidence 0, status refuted."""
    store = HypothesisStore(db)
    _card_for(store, card_id, "refuted")
    log.info("hypothesis #%d refuted", card_id)
    return store.set_status(card_id, "refuted", REFUTED_CONFIDENCE, reason="refuted by the user")


def delete_card(db: Database, card_id: int) -> Hypothesis:
    """Delete a card (status deleted; the row and its audit trail stay)."""
    store = HypothesisStore(db)
    _card_for(store, card_id, "deleted")
    log.info("hypothesis #%d deleted", card_id)
    return store.set_status(card_id, "deleted", reason="deleted by the user")
