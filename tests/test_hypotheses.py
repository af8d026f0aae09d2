"""Hypothesis cards on a real DuckDB file: due dates with an injected clock, one alert per card
per day, validate / refute / delete with their audit rows, and counts."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from memory.dream import CardDraft
from memory.fact_drawer import FactDrawer
from memory.fact_types import FactProposal
from memory.hypotheses import (
    START_CONFIDENCE,
    VALIDATED_CONFIDENCE,
    CardStateError,
    Hypotheses,
)
from store.clock import Clock
from store.database import Database, database_path, open_database
from store.fact_store import FactStore
from store.hypothesis_store import Hypothesis, HypothesisStore

T0 = datetime(2026, 11, 29, 21, 4, 38, tzinfo=UTC)
WS = "/home/me/blyck"
STATEMENT = "Blyck deploys time out because the office VPN drops AWS connections."
MEASUREMENT = "Count failed deploys in deploy.log over the next 14 days."


@pytest.fixture
def db_file(tmp_path: Path) -> Path:
    return database_path(tmp_path / "home")


@pytest.fixture
def at(db_file: Path) -> Iterator[Callable[[datetime], Database]]:
    """Open the database with the clock frozen at an instant (the previous one is closed)."""
    opened: list[Database] = []

    def open_at(when: datetime) -> Database:
        for db in opened:
            db.close()
        opened.append(open_database(db_file, clock=Clock(when)))
        return opened[-1]

    yield open_at
    for db in opened:
        db.close()


def new_card(db: Database, statement: str = STATEMENT, workspace: str = WS) -> Hypothesis:
    draft = CardDraft(
        statement=statement,
        source_ids=("fact:1", "point:2"),
        prediction="At least 3 of the next 5 deploys will fail while the VPN is up.",
        measurement=MEASUREMENT,
    )
    return Hypotheses(db).create(draft, workspace=workspace, reason="")


def audit(db: Database) -> list[tuple[str, dict[str, object]]]:
    with db.cursor() as cur:
        rows = cur.execute(
            "SELECT event, detail FROM audit WHERE event LIKE 'hypothesis_%' ORDER BY id"
        ).fetchall()
    return [(event, json.loads(detail)) for event, detail in rows]


# --- due dates ------------------------------------------------------------------------------


def test_a_card_is_overdue_exactly_fourteen_days_later(
    at: Callable[[datetime], Database],
) -> None:
    card = new_card(at(T0))
    assert (card.created_at, card.due_at, card.status) == (T0, T0 + timedelta(days=14), "open")

    db = at(T0 + timedelta(days=14) - timedelta(seconds=1))
    store = HypothesisStore(db)
    assert store.counts(db.clock.now()) == {"open": 1, "overdue": 0}
    assert not store.list()[0].is_overdue(db.clock.now())
    assert store.due_alerts(db.clock.now()) == []

    db = at(T0 + timedelta(days=14))
    store = HypothesisStore(db)
    assert store.counts(db.clock.now()) == {"open": 1, "overdue": 1}
    assert store.list()[0].is_overdue(db.clock.now())
    assert [c.id for c in store.due_alerts(db.clock.now())] == [card.id]


def test_alerts_come_once_per_card_per_day(at: Callable[[datetime], Database]) -> None:
    db = at(T0)
    first = new_card(db)
    second = new_card(at(T0 + timedelta(days=1)), "A second claim about the staging database.")
    later = new_card(at(T0 + timedelta(days=5)), "A third claim that is not due yet at all.")

    db = at(T0 + timedelta(days=15, hours=1))  # 2026-12-14 22:04 UTC: first and second due
    store = HypothesisStore(db)
    now = db.clock.now()
    alerted = store.due_alerts(now)
    assert [c.id for c in alerted] == [first.id, second.id]
    assert all(c.last_alerted == date(2026, 12, 14) for c in alerted)
    assert store.due_alerts(now) == []
    assert store.due_alerts(now + timedelta(hours=1, minutes=55)) == []  # 23:59, same day

    next_day = datetime(2026, 12, 15, 0, 0, 1, tzinfo=UTC)
    assert [c.id for c in store.due_alerts(next_day)] == [first.id, second.id]
    assert store.due_alerts(next_day) == []
    assert store.get(later.id) is not None and store.get(later.id).last_alerted is None  # type: ignore[union-attr]

    Hypotheses(db, FactDrawer(db, WS)).validate(first.id)  # decided cards are never alerted
    assert [c.id for c in store.due_alerts(next_day + timedelta(days=1))] == [second.id]


def test_list_puts_overdue_cards_first_then_by_due_date(
    at: Callable[[datetime], Database],
) -> None:
    old = new_card(at(T0), "An old claim that is overdue by the time we look.")
    validated = new_card(at(T0 + timedelta(days=1)), "A validated claim that was due early.")
    soon = new_card(at(T0 + timedelta(days=10)), "A newer claim that is due within days.")
    db = at(T0 + timedelta(days=20))
    new = new_card(db, "The newest claim, due in two weeks from now.")
    Hypotheses(db, FactDrawer(db, WS)).validate(validated.id)
    order = [c.id for c in HypothesisStore(db).list()]
    assert order == [old.id, validated.id, soon.id, new.id]
    later = db.clock.now() + timedelta(days=5)  # now `soon` is overdue too
    assert [c.id for c in HypothesisStore(db).list(["open"], now=later)] == [
        old.id,
        soon.id,
        new.id,
    ]


# --- actions --------------------------------------------------------------------------------


def test_validate_raises_confidence_and_proposes_one_pending_candidate(
    at: Callable[[datetime], Database],
) -> None:
    card = new_card(at(T0))
    db = at(T0 + timedelta(days=3))
    drawer = FactDrawer(db, WS)
    validated, candidate = Hypotheses(db, drawer).validate(card.id)
    assert (validated.status, validated.confidence) == ("validated", VALIDATED_CONFIDENCE)
    assert validated.confidence > START_CONFIDENCE
    assert validated.decided_at == T0 + timedelta(days=3)
    assert candidate is not None
    assert [c.id for c in drawer.pending()] == [candidate.id]
    assert (candidate.origin, candidate.source, candidate.type, candidate.status) == (
        "hypothesis",
        "generated-hypothesis",
        "fact",
        "pending",
    )
    assert candidate.body == STATEMENT
    assert candidate.proof == f"hypothesis #{card.id} validated: {MEASUREMENT}"
    assert candidate.confidence == VALIDATED_CONFIDENCE
    assert candidate.key.startswith(f"hypothesis:{card.id}:")
    assert "blyck" in candidate.key
    assert drawer.list_facts() == []  # no fact until the user approves
    with pytest.raises(CardStateError, match="cannot be validated"):
        Hypotheses(db, drawer).validate(card.id)
    assert len(drawer.pending()) == 1
    assert [event for event, _ in audit(db)] == ["hypothesis_create", "hypothesis_validate"]
    assert audit(db)[-1][1]["status"] == "validated"


def test_validating_a_card_of_another_workspace_proposes_there(
    at: Callable[[datetime], Database],
) -> None:
    db = at(T0)
    card = new_card(db, workspace="/home/me/other")
    _, candidate = Hypotheses(db, FactDrawer(db, WS)).validate(card.id)
    assert candidate is not None and candidate.workspace == "/home/me/other"
    assert FactDrawer(db, WS).pending() == []


def test_refute_sets_confidence_zero(at: Callable[[datetime], Database]) -> None:
    db = at(T0)
    card = new_card(db)
    refuted = Hypotheses(db).refute(card.id)
    assert (refuted.status, refuted.confidence, refuted.decided_at) == ("refuted", 0.0, T0)
    assert HypothesisStore(db).counts(T0 + timedelta(days=30)) == {"open": 0, "overdue": 0}
    with pytest.raises(CardStateError):
        Hypotheses(db, FactDrawer(db, WS)).validate(card.id)
    assert FactDrawer(db, WS).pending() == []
    assert [event for event, _ in audit(db)] == ["hypothesis_create", "hypothesis_refute"]


def test_delete_keeps_the_row(at: Callable[[datetime], Database]) -> None:
    db = at(T0)
    card = new_card(db)
    deleted = Hypotheses(db).delete(card.id)
    assert deleted.status == "deleted" and deleted.confidence == START_CONFIDENCE
    store = HypothesisStore(db)
    assert store.get(card.id) == deleted
    assert store.list(["open"]) == [] and store.list() == [deleted]
    with pytest.raises(CardStateError):
        Hypotheses(db).refute(card.id)
    with pytest.raises(CardStateError):
        Hypotheses(db).delete(card.id)
    assert [event for event, _ in audit(db)] == ["hypothesis_create", "hypothesis_delete"]
    assert audit(db)[-1][1]["id"] == card.id


def test_unknown_ids_raise_lookup_error(at: Callable[[datetime], Database]) -> None:
    db = at(T0)
    for action in (
        lambda: Hypotheses(db, FactDrawer(db, WS)).validate(42),
        lambda: Hypotheses(db).refute(42),
        lambda: Hypotheses(db).delete(42),
        lambda: HypothesisStore(db).set_status(42, "refuted"),
    ):
        with pytest.raises(LookupError, match="no hypothesis #42"):
            action()
    assert HypothesisStore(db).get(42) is None


def test_counts_open_and_overdue(at: Callable[[datetime], Database]) -> None:
    db = at(T0)
    new_card(db, "The first open claim about deploys of blyck.")
    refuted = new_card(db, "A refuted claim about deploys of blyck.")
    Hypotheses(db).refute(refuted.id)
    db = at(T0 + timedelta(days=7))
    new_card(db, "A later open claim about deploys of blyck.")
    store = HypothesisStore(db)
    assert store.counts(T0 + timedelta(days=7)) == {"open": 2, "overdue": 0}
    assert store.counts(T0 + timedelta(days=14)) == {"open": 2, "overdue": 1}
    assert store.counts(T0 + timedelta(days=21)) == {"open": 2, "overdue": 2}
    assert store.counts(T0, workspace="elsewhere") == {"open": 0, "overdue": 0}


def test_as_json_holds_every_column(at: Callable[[datetime], Database]) -> None:
    card = new_card(at(T0))
    data = card.as_json()
    assert set(data) == {
        "id",
        "statement",
        "source_ids",
        "prediction",
        "measurement",
        "confidence",
        "source",
        "status",
        "workspace",
        "created_at",
        "due_at",
        "decided_at",
        "last_alerted",
    }
    assert data["source_ids"] == ["fact:1", "point:2"]
    assert data["due_at"] == "2026-12-13T21:04:38Z"
    assert data["source"] == "generated-hypothesis"


def test_a_new_card_gets_the_policy_numbers(at: Callable[[datetime], Database]) -> None:
    draft = CardDraft(
        statement=STATEMENT, source_ids=("fact:1", "point:2"), prediction="p", measurement="m"
    )
    card = Hypotheses(at(T0)).create(draft, workspace="", reason="")
    assert (card.confidence, card.due_at, card.source) == (
        0.30,
        T0 + timedelta(days=14),
        "generated-hypothesis",
    )


@pytest.mark.parametrize("action", ["refute", "delete"])
def test_refuting_or_deleting_a_validated_card_rejects_its_pending_candidate(
    at: Callable[[datetime], Database], action: str
) -> None:
    """A claim the user refuted (or threw away) after validating it is no longer one to
    approve: its fact candidate, still pending, is rejected, the card's id in the audit."""
    db = at(T0)
    card = new_card(db)
    drawer = FactDrawer(db, WS)
    other = drawer.propose(
        FactProposal(type="rule", key="deploy-window", body="Deploys on weekdays only."),
        origin="cli",
    ).candidate
    _, candidate = Hypotheses(db, drawer).validate(card.id)
    assert candidate is not None and other is not None
    getattr(Hypotheses(db), action)(card.id)  # without a drawer: the CLI's and the TUI's have one
    assert [c.id for c in drawer.pending()] == [other.id]  # the unrelated one stays
    decided = FactStore(db).candidate(candidate.id)
    assert decided is not None and decided.status == "rejected"
    assert drawer.list_facts() == []
