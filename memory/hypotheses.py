"""Hypothesis cards after the dream made them: their numbers, their life, the door to them.

A new card has confidence `START_CONFIDENCE` (0.30), source ``generated-hypothesis``, status
``open`` and is due `DUE_AFTER` (14 days) after it was created; open and due is *overdue*.
Validating it sets confidence `VALIDATED_CONFIDENCE` (0.6: one confirmed measurement is
evidence, not proof — the same confidence as a fact the reflection pass inferred) and proposes
a fact candidate (`validated_fact_proposal`) at the approval gate, in the card's workspace;
refuting sets confidence 0; deleting keeps the row. Allowed changes (`transition_problem`):
open → validated / refuted / deleted; validated → refuted / deleted; refuted → deleted; a
deleted card stays deleted. An unknown id raises `LookupError`, a change that is not allowed
`CardStateError`.

`Hypotheses` is what the TUI, the CLI and the jobs use (no model is called here; the dream
run that asks one is `agent.dream_run`). Its methods block: call them from a thread in a UI.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Final

from memory.dream import CardDraft, DreamSource, pick_sources
from memory.fact_drawer import FactDrawer, unshadowed
from memory.fact_types import KEY_MAX_CHARS, FactProposal, normalise_key
from memory.text.words import STOPWORDS, detect_language, raw_tokens
from store.fact_records import Candidate, Fact
from store.fact_store import FactStore
from store.hypothesis_store import Hypothesis, HypothesisStore
from store.point_records import Point
from store.point_store import PointStore

if TYPE_CHECKING:
    from store.database import Database

log = logging.getLogger("straylight.dream")

START_CONFIDENCE = 0.30
VALIDATED_CONFIDENCE = 0.6
REFUTED_CONFIDENCE = 0.0
DUE_AFTER = timedelta(days=14)
SOURCE: Final = "generated-hypothesis"
POOL_POINTS = 500  # the newest pinned points a dream run considers (all active facts are)
SHOWN_STATUSES = ("open", "validated", "refuted")  # deleted cards stay in the audit only


class CardStateError(ValueError):
    """A status change the card's current status does not allow; one line for the user."""


_ALLOWED_FROM: dict[str, frozenset[str]] = {
    "validated": frozenset({"open"}),
    "refuted": frozenset({"open", "validated"}),
    "deleted": frozenset({"open", "validated", "refuted"}),
}


def transition_problem(current: str, target: str) -> str | None:
    """Why a card in status `current` cannot become `target`, or None."""
    allowed = _ALLOWED_FROM.get(target)
    if allowed is None:
        return f"unknown target status {target!r}"
    if current not in allowed:
        return f"the card is {current}; only a card that is {' or '.join(sorted(allowed))} can be"
    return None


def validated_fact_key(card: Hypothesis) -> str:
    """The key of a validated card's fact: ``hypothesis:<id>:<up to 4 words of the statement>``
    (content words, stopwords dropped), so injection can match it by its words."""
    tokens = [t.lower() for t in raw_tokens(card.statement)]
    stopwords = STOPWORDS[detect_language(tokens)]
    chosen: list[str] = []
    for token in tokens:
        keep = len(token) > 2 and not token.isdigit() and token not in stopwords
        if keep and token not in chosen:
            chosen.append(token)
        if len(chosen) == 4:
            break
    key = normalise_key(f"hypothesis:{card.id}:" + "-".join(chosen))
    return key[:KEY_MAX_CHARS].rstrip(":-")


def validated_fact_proposal(card: Hypothesis) -> FactProposal:
    """The fact candidate a validated card proposes at the approval gate."""
    return FactProposal(
        type="fact",
        key=validated_fact_key(card),
        body=card.statement,
        proof=f"hypothesis #{card.id} validated: {card.measurement}",
        source=SOURCE,
        confidence=VALIDATED_CONFIDENCE,
    )


class Hypotheses:
    """The hypothesis cards of one database, seen from one workspace (None: every one).

    Built from the opened memory (`Hypotheses.of(drawer)`, `TurnMemory.hypotheses`), never
    by a caller from a database handle."""

    def __init__(self, db: Database, drawer: FactDrawer | None = None) -> None:
        self.db = db
        self.drawer = drawer
        self.store = HypothesisStore(db)

    @classmethod
    def of(cls, drawer: FactDrawer) -> Hypotheses:
        """The cards next to a fact drawer, in its workspace."""
        return cls(drawer.db, drawer)

    @property
    def workspace(self) -> str | None:
        return self.drawer.workspace if self.drawer is not None else None

    # ---- reads ---------------------------------------------------------------------------
    def cards(
        self,
        statuses: Sequence[str] | None = SHOWN_STATUSES,
        *,
        now: datetime | None = None,
        all_workspaces: bool = False,
    ) -> list[Hypothesis]:
        """Cards with these statuses (None: all), overdue first, then by due date."""
        workspace = None if all_workspaces else self.workspace
        return self.store.list(statuses, now=now, workspace=workspace)

    def counts(self, now: datetime) -> dict[str, int]:
        """`{"open": n, "overdue": m}` in this workspace."""
        return self.store.counts(now, workspace=self.workspace)

    def due_alerts(self, now: datetime) -> list[Hypothesis]:
        """Overdue cards not alerted yet today (each is returned at most once a day)."""
        return self.store.due_alerts(now, workspace=self.workspace)

    def cited(self, source_ids: Sequence[str]) -> list[tuple[str, Fact | Point | None]]:
        """The memory behind each source id a card cites (`fact:12`, `point:3`), or None."""
        facts, points = FactStore(self.db), PointStore(self.db)
        found: list[tuple[str, Fact | Point | None]] = []
        for source in source_ids:
            kind, _, number = source.partition(":")
            memory: Fact | Point | None = None
            if kind == "fact" and number.isdigit():
                memory = facts.by_id(int(number))
            elif kind == "point" and number.isdigit():
                memory = points.get(int(number))
            found.append((source, memory))
        return found

    def dream_sources(self, workspace: str) -> tuple[list[DreamSource], int]:
        """What a dream run may link in `workspace` (`memory.dream.pick_sources` over its
        active facts and the newest `POOL_POINTS` pinned points, leaving out what an open
        card already cites), and how many memories were usable."""
        # a global fact this workspace has its own of the same key for is not seen from here
        facts = unshadowed(FactStore(self.db).visible(workspace, statuses=["active"]))
        points = PointStore(self.db).list_points(pinned=True, limit=POOL_POINTS, newest_first=True)
        points.reverse()  # oldest first: ties in picking go to the older memory
        covered = self.store.cited_by_open(workspace=workspace)
        sources = pick_sources(facts, points, covered=covered)
        return sources, len(facts) + len(points)

    # ---- the card actions ----------------------------------------------------------------
    def create(self, draft: CardDraft, *, workspace: str, reason: str) -> Hypothesis:
        """A new open card from a checked draft, with the start confidence and due date."""
        return self.store.create(
            statement=draft.statement,
            source_ids=draft.source_ids,
            prediction=draft.prediction,
            measurement=draft.measurement,
            confidence=START_CONFIDENCE,
            due_at=self.db.clock.now() + DUE_AFTER,
            workspace=workspace,
            source=SOURCE,
            reason=reason,
        )

    def _card_for(self, card_id: int, target: str) -> Hypothesis:
        card = self.store.get(card_id)
        if card is None:
            raise LookupError(f"no hypothesis #{card_id}")
        if (problem := transition_problem(card.status, target)) is not None:
            raise CardStateError(f"hypothesis #{card_id} cannot be {target}: {problem}")
        return card

    def validate(self, card_id: int) -> tuple[Hypothesis, Candidate | None]:
        """Validate an open card: confidence `VALIDATED_CONFIDENCE`, status validated, and one
        fact candidate at the gate (None when the gate refuses it: already pending or a fact).
        """
        if self.drawer is None:
            raise ValueError("validating a card needs the fact drawer")
        self._card_for(card_id, "validated")
        card = self.store.set_status(
            card_id, "validated", VALIDATED_CONFIDENCE, reason="validated by the user"
        )
        gate = self._gate(card)
        assert gate is not None  # the drawer is there (checked above)
        outcome = gate.propose(validated_fact_proposal(card), origin="hypothesis")
        if outcome.candidate is None:
            log.info("hypothesis #%d validated; no candidate: %s", card.id, outcome.reason)
        else:
            log.info("hypothesis #%d validated; candidate #%d", card.id, outcome.candidate.id)
        return card, outcome.candidate

    def refute(self, card_id: int) -> Hypothesis:
        """Refute an open or validated card: confidence 0, status refuted (and the fact
        candidate its validation proposed, if still pending, rejected)."""
        self._card_for(card_id, "refuted")
        log.info("hypothesis #%d refuted", card_id)
        card = self.store.set_status(
            card_id, "refuted", REFUTED_CONFIDENCE, reason="refuted by the user"
        )
        self._withdraw_candidate(card)
        return card

    def delete(self, card_id: int) -> Hypothesis:
        """Delete a card (status deleted; the row and its audit trail stay; the fact
        candidate its validation proposed, if still pending, rejected)."""
        self._card_for(card_id, "deleted")
        log.info("hypothesis #%d deleted", card_id)
        card = self.store.set_status(card_id, "deleted", reason="deleted by the user")
        self._withdraw_candidate(card)
        return card

    def _gate(self, card: Hypothesis) -> FactDrawer | None:
        """The fact drawer of the card's workspace (the one it was made in), where its fact
        candidate is proposed; None without a drawer or a workspace to make one for."""
        if self.drawer is not None:
            return self.drawer.in_workspace(card.workspace) if card.workspace else self.drawer
        return FactDrawer(self.db, card.workspace) if card.workspace else None

    def _withdraw_candidate(self, card: Hypothesis) -> None:
        """A validated card refuted or deleted afterwards: its claim is no longer one to
        approve, so its fact candidate, while pending, is rejected (audited with the card's
        id). A fact already approved from it stays: that was the user's decision."""
        gate = self._gate(card)
        if gate is None:
            return
        key = validated_fact_key(card)
        for candidate in gate.pending():
            if candidate.key == key and candidate.origin == "hypothesis":
                gate.reject(candidate.id, reason=f"hypothesis #{card.id} {card.status}")
                log.info(
                    "hypothesis #%d %s: candidate #%d rejected", card.id, card.status, candidate.id
                )
