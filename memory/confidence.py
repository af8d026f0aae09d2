"""Seed 003, concept 1: confidence that fades unverified and grows when a memory is used.

Facts and pinned points carry a confidence between 0 and 1: `decay_confidence` (the daily
`decay` job) takes 0.05 for every full 30 days without verification, idempotently;
`boost_used` adds 0.05 when a memory injected into a turn was used in its reply
(`used_in_reply`: the key named, or a sentence of the body found by fuzzy match) outside the
reply's sentences that say it cannot do something. The rules
and their measurements: docs/confidence.md.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from memory.fact_types import key_parts
from memory.text.sentences import split_sentences
from store import confidence_rows
from store.database import Database
from store.fact_records import Fact
from store.fact_store import FactStore
from store.point_store import as_utc
from store.text_terms import default_analyzer

PERIOD = timedelta(days=30)
DECAY_STEP = 0.05
BOOST_STEP = 0.05
POINT_START_CONFIDENCE = 1.0
USED_MIN_SCORE = 85.0  # rapidfuzz partial_ratio, 0–100
USED_MIN_CHARS = 20  # a body unit shorter than this (normalised) is too generic to match
USED_MAX_UNIT_CHARS = 240  # longer units are cut: partial_ratio's cost grows with the unit
USED_MIN_KEY_PARTS = 2
DECAY_REASON_PREFIX = "decay:"
BOOST_REASON = "boost: used in a reply"

_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)


@dataclass
class ConfidenceReport:
    """What one decay run did."""

    facts: list[str] = field(default_factory=list)  # keys of facts whose confidence fell
    points: list[int] = field(default_factory=list)  # ids of pinned points whose fell
    charged: int = 0  # 30-day periods charged in all (also those charged at the floor)
    started: int = 0  # pinned points that got their confidence row in this run

    def summary(self) -> str:
        """One line for the job log: `2 facts and 1 pinned point lower`."""
        parts = []
        if self.facts:
            parts.append(f"{len(self.facts)} fact{'' if len(self.facts) == 1 else 's'}")
        if self.points:
            noun = "pinned point" if len(self.points) == 1 else "pinned points"
            parts.append(f"{len(self.points)} {noun}")
        return f"{' and '.join(parts)} lower" if parts else "nothing lower"


def periods_without_verification(reference: datetime, now: datetime) -> int:
    """Full 30-day periods from `reference` to `now` (0 when `now` is not later)."""
    elapsed = as_utc(now) - as_utc(reference)
    if elapsed <= timedelta(0):
        return 0
    return elapsed // PERIOD


def _lowered(confidence: float, periods: int) -> float:
    return round(max(0.0, confidence - DECAY_STEP * periods), 6)


def _raised(confidence: float) -> float:
    return round(min(1.0, confidence + BOOST_STEP), 6)


# ---- decay -------------------------------------------------------------------------------


def decay_confidence(db: Database, now: datetime) -> ConfidenceReport:
    """Charge every period not yet charged, for facts (all workspaces, not retired) and for
    pinned points; fact changes are audited ('fact_confidence', reason `decay: N×30 days
    unverified` with N the periods since the reference)."""
    report = ConfidenceReport()
    _decay_facts(db, now, report)
    _decay_points(db, now, report)
    return report


def _already_charged(fact: Fact, stored: int, last_charge: datetime | None) -> int:
    """Periods already charged against the fact's current reference time: the stored count,
    unless the fact was verified at or after the last charge (then that count was for an
    older reference and the count restarts at 0)."""
    if stored <= 0:
        return 0
    if fact.last_verified is not None and (
        last_charge is None or fact.last_verified >= last_charge
    ):
        return 0
    return stored


def _decay_facts(db: Database, now: datetime, report: ConfidenceReport) -> None:
    store = FactStore(db)
    facts = store.visible("", statuses=["active", "stale"], all_workspaces=True)
    stored, last_charges = confidence_rows.fact_decay_bookkeeping(db, DECAY_REASON_PREFIX)
    for fact in facts:
        reference = fact.last_verified or fact.created_at
        total = periods_without_verification(reference, now)
        charged = _already_charged(fact, stored.get(fact.id, 0), last_charges.get(fact.id))
        if total <= charged:
            if charged != stored.get(fact.id, 0):
                confidence_rows.set_fact_decay_periods(
                    db, fact.id, charged
                )  # a verification restarted the count
            continue
        new = _lowered(fact.confidence, total - charged)
        # The count first: a crash between the two statements loses a charge rather than
        # charging it twice on the next run.
        confidence_rows.set_fact_decay_periods(db, fact.id, total)
        store.set_confidence(fact, new, reason=f"decay: {total}×30 days unverified")
        report.charged += total - charged
        if new < fact.confidence:
            report.facts.append(fact.key)


def _decay_points(db: Database, now: datetime, report: ConfidenceReport) -> None:
    with db.transaction() as cur:
        report.started += confidence_rows.start_point_rows(cur, None, POINT_START_CONFIDENCE)
        rows = confidence_rows.pinned_unverified_since(cur, as_utc(now) - PERIOD)
        ids: list[int] = []
        values: list[float] = []
        periods: list[int] = []
        for point_id, confidence, last_verified, charged in rows:
            total = periods_without_verification(last_verified, now)
            if total <= charged:
                continue
            new = _lowered(confidence, total - charged)
            ids.append(point_id)
            values.append(new)
            periods.append(total)
            report.charged += total - charged
            if new < confidence:
                report.points.append(point_id)
        if ids:
            confidence_rows.set_point_decay(cur, ids, values, periods)


# ---- use and boost -----------------------------------------------------------------------


def _normalise(text: str) -> str:
    folded = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(_NON_WORD.sub(" ", folded).split())


def _chunks(unit: str) -> list[str]:
    """`unit` in pieces of whole words of at most USED_MAX_UNIT_CHARS (a longer word alone)."""
    if len(unit) <= USED_MAX_UNIT_CHARS:
        return [unit]
    pieces: list[str] = []
    current = ""
    for word in unit.split(" "):
        if current and len(current) + 1 + len(word) > USED_MAX_UNIT_CHARS:
            pieces.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    pieces.append(current)
    return pieces


def _body_units(body: str) -> list[str]:
    """The normalised body and its sentences, long ones in pieces of at most
    USED_MAX_UNIT_CHARS; only those of at least USED_MIN_CHARS."""
    whole = _normalise(body)
    units = [whole] if len(whole) <= USED_MAX_UNIT_CHARS else []
    for line in body.split("\n"):
        for sentence in split_sentences(line, ends=".!?;"):
            units.extend(_chunks(_normalise(sentence)))
    return [unit for unit in dict.fromkeys(units) if len(unit) >= USED_MIN_CHARS]


def _key_named(reply: str, key: str) -> bool:
    analyzer = default_analyzer()
    groups_by_part: dict[tuple[tuple[str, ...], ...], None] = {}
    for part in key_parts(key.casefold()):
        groups = tuple(analyzer.query_terms(part))
        if groups:
            groups_by_part[groups] = None
    if len(groups_by_part) < USED_MIN_KEY_PARTS:
        return False
    words = set(analyzer.terms(reply))
    return all(
        any(alternative in words for alternative in group)
        for groups in groups_by_part
        for group in groups
    )


def used_in_reply(reply: str, *, key: str | None, body: str) -> bool:
    """Whether a memory injected into a turn was used in its reply (rules: docs/confidence.md)."""
    from rapidfuzz import fuzz  # imported at first use: 3 MB an empty memory does not need

    text = _normalise(reply)
    if not text:
        return False
    for unit in _body_units(body):
        if len(unit) <= len(text) and (
            fuzz.partial_ratio(unit, text, score_cutoff=USED_MIN_SCORE) >= USED_MIN_SCORE
        ):
            return True
    return key is not None and _key_named(reply, key)


def boost_used(
    db: Database,
    reply: str,
    facts: Sequence[Fact],
    pinned: Sequence[tuple[int, str]],
) -> list[str]:
    """+0.05 (capped at 1.0) for each injected fact and pinned point (id, content) used in
    `reply`. Returns what rose: fact keys, and pinned points as `#id`. A memory already at
    1.0 does not rise (and its fact gets no audit row); a fact boost is audited
    ('fact_confidence', reason `boost: used in a reply`)."""
    from memory.cant_check import without_inability

    reply = without_inability(reply)  # "I can't deploy …" names a capability, it does not use it
    boosted: list[str] = []
    store = FactStore(db)
    seen: set[int] = set()
    for fact in facts:
        if fact.id in seen or not used_in_reply(reply, key=fact.key, body=fact.body):
            continue
        seen.add(fact.id)
        current = store.find(fact.scope, fact.workspace, fact.key)
        if current is None or current.id != fact.id or current.confidence >= 1.0:
            continue
        store.set_confidence(current, _raised(current.confidence), reason=BOOST_REASON)
        boosted.append(current.key)
    used = list(
        dict.fromkeys(
            point_id for point_id, content in pinned if used_in_reply(reply, key=None, body=content)
        )
    )
    boosted.extend(f"#{point_id}" for point_id in _boost_points(db, used))
    return boosted


def _boost_points(db: Database, ids: Sequence[int]) -> list[int]:
    if not ids:
        return []
    with db.transaction() as cur:
        confidence_rows.start_point_rows(cur, ids, POINT_START_CONFIDENCE)
        current = confidence_rows.pinned_below_one(cur, ids)
        raised = {point_id: _raised(confidence) for point_id, confidence in current.items()}
        if raised:
            confidence_rows.set_point_confidences(cur, raised)
    return [point_id for point_id in ids if point_id in raised]


def confidence_of_points(db: Database, ids: Iterable[int]) -> dict[int, float]:
    """The confidence of each of `ids` that has one: its row's, or 1.0 for a pinned point not
    yet touched by decay or a boost. Unknown and unpinned points without a row are left out.
    Read-only: no row is created."""
    wanted = list(dict.fromkeys(int(point_id) for point_id in ids))
    if not wanted:
        return {}
    found = confidence_rows.point_confidences(db, wanted, POINT_START_CONFIDENCE)
    return {point_id: found[point_id] for point_id in wanted if point_id in found}
