"""Hypothesis cards of the dream run in `straylight.duckdb` (table `hypotheses`, schema v4).

A card links existing memories (`source_ids`, namespaced strings such as `fact:12` and
`point:345`), states a claim, the prediction that would falsify it and the measurement that
checks it. No policy lives here (what makes a good card, its start confidence and due date,
which status changes are allowed, are `memory.hypotheses`'s call): the store writes what it
is given.

Every change is an audit row in the same transaction (`audit.event` 'hypothesis_create',
'hypothesis_validate', 'hypothesis_refute', 'hypothesis_delete', or 'hypothesis_reopen';
`detail` = the card as JSON after the change). Deleting keeps the row (status 'deleted').

Overdue: an *open* card whose `due_at <= now` (the instant itself counts). `list` puts overdue
cards first, then the others, each by due date (then id). `due_alerts(now)` returns the overdue
cards not yet alerted on the UTC date of `now` and stamps that date into `last_alerted`, so a
card is alerted at most once per day.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

import duckdb

from store.clock import format_instant
from store.database import Database
from store.point_store import as_utc

HYPOTHESIS_STATUSES: tuple[str, ...] = ("open", "validated", "refuted", "deleted")

_COLUMNS = (
    "id, statement, source_ids, prediction, measurement, confidence, source, status, workspace, "
    "created_at, due_at, decided_at, last_alerted"
)
_EVENTS = {
    "open": "hypothesis_reopen",
    "validated": "hypothesis_validate",
    "refuted": "hypothesis_refute",
    "deleted": "hypothesis_delete",
}
# Overdue first, then by due date, then id (the SQL twin of `Hypothesis.is_overdue`).
_ORDER = "ORDER BY (status = 'open' AND due_at <= ?) DESC, due_at, id"


@dataclass(frozen=True, slots=True)
class Hypothesis:
    """One hypothesis card, every column of its row. Times are aware UTC."""

    id: int
    statement: str
    source_ids: tuple[str, ...]
    prediction: str
    measurement: str
    confidence: float
    source: str
    status: str
    workspace: str
    created_at: datetime
    due_at: datetime
    decided_at: datetime | None
    last_alerted: date | None

    def is_overdue(self, now: datetime) -> bool:
        """Open and due (`due_at <= now`)."""
        return self.status == "open" and self.due_at <= now

    def as_json(self) -> dict[str, Any]:
        """Every column as JSON-ready data (times ISO 8601 UTC, `last_alerted` a date)."""
        return {
            "id": self.id,
            "statement": self.statement,
            "source_ids": list(self.source_ids),
            "prediction": self.prediction,
            "measurement": self.measurement,
            "confidence": self.confidence,
            "source": self.source,
            "status": self.status,
            "workspace": self.workspace,
            "created_at": format_instant(self.created_at),
            "due_at": format_instant(self.due_at),
            "decided_at": format_instant(self.decided_at) if self.decided_at else None,
            "last_alerted": self.last_alerted.isoformat() if self.last_alerted else None,
        }


def _from_row(row: Sequence[Any]) -> Hypothesis:
    return Hypothesis(
        id=int(row[0]),
        statement=row[1],
        source_ids=tuple(str(s) for s in (row[2] or ())),
        prediction=row[3],
        measurement=row[4],
        confidence=float(row[5]),
        source=row[6],
        status=row[7],
        workspace=row[8],
        created_at=as_utc(row[9]),
        due_at=as_utc(row[10]),
        decided_at=as_utc(row[11]) if row[11] is not None else None,
        last_alerted=row[12],
    )


def _check_status(status: str) -> None:
    if status not in HYPOTHESIS_STATUSES:
        raise ValueError(f"unknown hypothesis status {status!r}; one of {HYPOTHESIS_STATUSES}")


def _utc_date(now: datetime) -> date:
    return as_utc(now).date()


class HypothesisStore:
    """Hypothesis cards; every method is safe to call from any thread."""

    def __init__(self, db: Database) -> None:
        self.db = db

    # --- writes ---------------------------------------------------------------------------

    def create(
        self,
        *,
        statement: str,
        source_ids: Sequence[str],
        prediction: str,
        measurement: str,
        confidence: float,
        due_at: datetime,
        source: str,
        workspace: str = "",
        reason: str = "",
    ) -> Hypothesis:
        """Insert an open card created now (the database clock), due at `due_at`; audited
        'hypothesis_create'. The numbers are `memory.hypotheses`'s policy."""
        if isinstance(source_ids, str):
            raise TypeError("source_ids must be a sequence of strings, not one string")
        now = self.db.clock.now()
        with self.db.transaction() as cur:
            rows = cur.execute(
                "INSERT INTO hypotheses (statement, source_ids, prediction, measurement, "
                "confidence, source, status, workspace, created_at, due_at) "
                "VALUES (?, ?::VARCHAR[], ?, ?, ?, ?, 'open', ?, ?, ?) "
                f"RETURNING {_COLUMNS}",
                [
                    statement,
                    [str(s) for s in source_ids],
                    prediction,
                    measurement,
                    confidence,
                    source,
                    workspace,
                    now,
                    as_utc(due_at),
                ],
            ).fetchall()
            card = _from_row(rows[0])
            self._audit(cur, now, "hypothesis_create", card, reason)
        return card

    def set_status(
        self,
        card_id: int,
        status: str,
        confidence: float | None = None,
        *,
        reason: str = "",
    ) -> Hypothesis:
        """Set a card's status (and confidence, if given); `decided_at` is now, or None when
        set back to open. Raises `LookupError` for an unknown id."""
        _check_status(status)
        now = self.db.clock.now()
        decided = None if status == "open" else now
        with self.db.transaction() as cur:
            rows = cur.execute(
                "UPDATE hypotheses SET status = ?, decided_at = ?, "
                "confidence = coalesce(?, confidence) WHERE id = ? "
                f"RETURNING {_COLUMNS}",
                [status, decided, confidence, card_id],
            ).fetchall()
            if not rows:
                raise LookupError(f"no hypothesis #{card_id}")
            card = _from_row(rows[0])
            self._audit(cur, now, _EVENTS[status], card, reason)
        return card

    def due_alerts(
        self, now: datetime, *, workspace: str | None = None
    ) -> builtins.list[Hypothesis]:
        """The overdue cards not alerted yet on the UTC date of `now`, in `list` order; their
        `last_alerted` becomes that date (so each is returned at most once a day)."""
        today = _utc_date(now)
        clauses = [
            "status = 'open'",
            "due_at <= ?",
            "(last_alerted IS NULL OR last_alerted <> ?)",
        ]
        params: list[Any] = [as_utc(now), today]
        if workspace is not None:
            clauses.append("workspace = ?")
            params.append(workspace)
        where = " AND ".join(clauses)
        with self.db.transaction() as cur:
            rows = cur.execute(
                f"UPDATE hypotheses SET last_alerted = ? WHERE {where} RETURNING {_COLUMNS}",
                [today, *params],
            ).fetchall()
        cards = [_from_row(row) for row in rows]
        cards.sort(key=lambda c: (c.due_at, c.id))
        return cards

    # --- reads ----------------------------------------------------------------------------

    def get(self, card_id: int) -> Hypothesis | None:
        with self.db.cursor() as cur:
            rows = cur.execute(
                f"SELECT {_COLUMNS} FROM hypotheses WHERE id = ?", [card_id]
            ).fetchall()
        return _from_row(rows[0]) if rows else None

    def list(
        self,
        statuses: Sequence[str] | None = None,
        *,
        now: datetime | None = None,
        workspace: str | None = None,
    ) -> builtins.list[Hypothesis]:
        """Cards with these statuses (default: all), overdue first, then by due date.

        `now` defaults to the database clock; `workspace` None means every workspace."""
        clauses: builtins.list[str] = []
        params: builtins.list[Any] = []
        if statuses is not None:
            for status in statuses:
                _check_status(status)
            clauses.append("status IN (SELECT unnest(?::VARCHAR[]))")
            params.append(builtins.list(statuses))
        if workspace is not None:
            clauses.append("workspace = ?")
            params.append(workspace)
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        instant = as_utc(now) if now is not None else self.db.clock.now()
        with self.db.cursor() as cur:
            rows = cur.execute(
                f"SELECT {_COLUMNS} FROM hypotheses{where} {_ORDER}", [*params, instant]
            ).fetchall()
        return [_from_row(row) for row in rows]

    def counts(self, now: datetime, *, workspace: str | None = None) -> dict[str, int]:
        """`{"open": n, "overdue": m}`: open cards, and of those the ones due by `now`."""
        where, params = ("AND workspace = ?", [workspace]) if workspace is not None else ("", [])
        with self.db.cursor() as cur:
            rows = cur.execute(
                "SELECT count(*), count(*) FILTER (WHERE due_at <= ?) FROM hypotheses "
                f"WHERE status = 'open' {where}",
                [as_utc(now), *params],
            ).fetchall()
        open_count, overdue = rows[0]
        return {"open": int(open_count), "overdue": int(overdue)}

    def cited_by_open(self, *, workspace: str | None = None) -> set[str]:
        """Every source id that an open card cites."""
        where, params = ("AND workspace = ?", [workspace]) if workspace is not None else ("", [])
        with self.db.cursor() as cur:
            rows = cur.execute(
                f"SELECT DISTINCT unnest(source_ids) FROM hypotheses WHERE status = 'open' {where}",
                params,
            ).fetchall()
        return {str(row[0]) for row in rows}

    # --- helpers --------------------------------------------------------------------------

    @staticmethod
    def _audit(
        cur: duckdb.DuckDBPyConnection, at: datetime, event: str, card: Hypothesis, reason: str
    ) -> None:
        cur.execute(
            'INSERT INTO audit ("at", event, reason, detail) VALUES (?, ?, ?, ?)',
            [at, event, reason or None, json.dumps(card.as_json(), ensure_ascii=False)],
        )
