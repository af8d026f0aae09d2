"""The SQL behind confidence decay and boosts (`memory.confidence` holds the rules).

Facts keep their charged decay periods in `facts.decay_periods`; pinned points keep their
confidence in `point_confidence` (a row made lazily, the first time decay or a boost touches
the point). Functions that take a cursor run inside the caller's transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from store.database import Cursor, Database
from store.point_values import as_utc


def fact_decay_bookkeeping(
    db: Database, reason_prefix: str
) -> tuple[dict[int, int], dict[int, datetime]]:
    """(fact id → periods charged, fact id → time of its latest decay charge: the latest
    'fact_confidence' audit row whose reason starts with `reason_prefix`)."""
    with db.cursor() as cur:
        charged = cur.execute("SELECT id, coalesce(decay_periods, 0) FROM facts").fetchall()
        charges = cur.execute(
            "SELECT TRY_CAST(json_extract_string(detail, '$.fact.id') AS BIGINT) AS fact_id, "
            "max(\"at\") FROM audit WHERE event = 'fact_confidence' "
            "AND starts_with(reason, ?) GROUP BY fact_id",
            [reason_prefix],
        ).fetchall()
    return (
        {int(fact_id): int(periods) for fact_id, periods in charged},
        {int(fact_id): as_utc(at) for fact_id, at in charges if fact_id is not None},
    )


def set_fact_decay_periods(db: Database, fact_id: int, periods: int) -> None:
    with db.transaction() as cur:
        cur.execute("UPDATE facts SET decay_periods = ? WHERE id = ?", [periods, fact_id])


def start_point_rows(cur: Cursor, ids: Sequence[int] | None, confidence: float) -> int:
    """Give pinned points (all, or those of `ids`) their confidence row (`confidence`,
    verified at the point's `created_at`), and restart the count of every row whose point was
    pinned after its last verification. Returns the rows created."""
    only = "" if ids is None else "AND p.id IN (SELECT unnest(?::BIGINT[]))"
    params: list[Any] = [confidence] + ([] if ids is None else [list(ids)])
    created = cur.execute(
        "INSERT INTO point_confidence (point_id, confidence, last_verified, decay_periods) "
        "SELECT p.id, ?, p.created_at, 0 FROM points AS p "
        f"WHERE p.pinned {only} AND NOT EXISTS "
        "(SELECT 1 FROM point_confidence AS c WHERE c.point_id = p.id) RETURNING point_id",
        params,
    ).fetchall()
    cur.execute(
        "UPDATE point_confidence SET last_verified = pins.at, decay_periods = 0 FROM ("
        "SELECT point_id, max(\"at\") AS at FROM audit WHERE event = 'pin' "
        "AND point_id IS NOT NULL GROUP BY point_id) AS pins "
        "WHERE pins.point_id = point_confidence.point_id "
        "AND pins.at > point_confidence.last_verified"
    )
    return len(created)


def pinned_unverified_since(cur: Cursor, when: datetime) -> list[tuple[int, float, datetime, int]]:
    """(point id, confidence, last verified, periods charged) of the pinned points not
    verified since `when`, by id."""
    rows = cur.execute(
        "SELECT c.point_id, c.confidence, c.last_verified, c.decay_periods "
        "FROM point_confidence AS c JOIN points AS p ON p.id = c.point_id "
        "WHERE p.pinned AND c.last_verified <= ? ORDER BY c.point_id",
        [as_utc(when)],
    ).fetchall()
    return [(int(pid), float(conf), as_utc(at), int(periods)) for pid, conf, at, periods in rows]


def set_point_decay(
    cur: Cursor, ids: Sequence[int], confidences: Sequence[float], periods: Sequence[int]
) -> None:
    """Write the decayed confidence and the periods charged of each point."""
    cur.execute(
        "UPDATE point_confidence SET confidence = u.confidence, "
        "decay_periods = u.decay_periods FROM (SELECT unnest(?::BIGINT[]) AS point_id, "
        "unnest(?::DOUBLE[]) AS confidence, unnest(?::INTEGER[]) AS decay_periods) AS u "
        "WHERE point_confidence.point_id = u.point_id",
        [list(ids), list(confidences), list(periods)],
    )


def pinned_below_one(cur: Cursor, ids: Sequence[int]) -> dict[int, float]:
    """The confidence of each pinned point of `ids` whose row is below 1."""
    rows = cur.execute(
        "SELECT c.point_id, c.confidence FROM point_confidence AS c "
        "JOIN points AS p ON p.id = c.point_id "
        "WHERE p.pinned AND c.point_id IN (SELECT unnest(?::BIGINT[])) AND c.confidence < 1",
        [list(ids)],
    ).fetchall()
    return {int(point_id): float(confidence) for point_id, confidence in rows}


def set_point_confidences(cur: Cursor, confidences: dict[int, float]) -> None:
    cur.execute(
        "UPDATE point_confidence SET confidence = u.confidence FROM ("
        "SELECT unnest(?::BIGINT[]) AS point_id, unnest(?::DOUBLE[]) AS confidence) AS u "
        "WHERE point_confidence.point_id = u.point_id",
        [list(confidences), list(confidences.values())],
    )


def point_confidences(db: Database, ids: Sequence[int], pinned_default: float) -> dict[int, float]:
    """Each point's confidence: its row's, or `pinned_default` for a pinned point without
    one. Points without either are left out."""
    with db.cursor() as cur:
        rows = cur.execute(
            "SELECT p.id, coalesce(c.confidence, CASE WHEN p.pinned THEN ? END) "
            "FROM points AS p LEFT JOIN point_confidence AS c ON c.point_id = p.id "
            "WHERE p.id IN (SELECT unnest(?::BIGINT[]))",
            [pinned_default, list(ids)],
        ).fetchall()
    return {int(point_id): float(value) for point_id, value in rows if value is not None}
