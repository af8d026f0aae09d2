"""The records of layer 3 and how a table row becomes one: `NewPoint` in; `Point`,
`PointRow`, `AuditEvent` out; `PointFilter` for the lists. The column lists and the row
readers sit together so their order cannot drift apart. `store.point_store` (writes) and
`store.point_queries` (reads) write the SQL.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from store.point_values import FloatVector, as_utc, as_vector, vector_from_bytes

ROLES = ("user", "assistant", "doc")

POINT_COLUMNS = (
    "id, role, content, conversation_id, channel, pinned, tags, source, content_hash, "
    "created_at, embedding, embed_model"
)
AUDIT_COLUMNS = 'id, "at", event, point_id, rule, reason, detail'


def check_role(role: str) -> None:
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}; got {role!r}")


@dataclass(frozen=True, slots=True)
class NewPoint:
    """A point to insert. `created_at` None means the database clock's now."""

    role: str
    content: str
    source: str
    conversation_id: str = ""
    channel: str = "tui"
    pinned: bool = False
    tags: Sequence[str] = ()
    created_at: datetime | None = None
    embedding: FloatVector | None = field(default=None, compare=False)
    embed_model: str | None = None

    def __post_init__(self) -> None:
        check_role(self.role)
        if isinstance(self.tags, str):
            raise TypeError("tags must be a sequence of strings, not one string")
        object.__setattr__(self, "tags", tuple(str(tag) for tag in self.tags))
        if self.created_at is not None:
            object.__setattr__(self, "created_at", as_utc(self.created_at))
        if (self.embedding is None) != (self.embed_model is None):
            raise ValueError("embedding and embed_model go together: give both or neither")
        if self.embedding is not None:
            object.__setattr__(self, "embedding", as_vector(self.embedding))


@dataclass(frozen=True, slots=True)
class Point:
    """A stored point. Equality ignores `embedding` (compare vectors with numpy)."""

    id: int
    role: str
    content: str
    conversation_id: str
    channel: str
    pinned: bool
    tags: tuple[str, ...]
    source: str
    content_hash: str
    created_at: datetime
    embedding: FloatVector | None = field(compare=False)
    embed_model: str | None


@dataclass(frozen=True, slots=True)
class AuditEvent:
    """One audit row. For 'skip' rows `detail` is JSON: role, conversation_id, preview."""

    id: int
    at: datetime
    event: str
    point_id: int | None
    rule: str | None
    reason: str | None
    detail: str | None


@dataclass(frozen=True, slots=True)
class PointRow:
    """One line of a point list: what a browser shows without the full content or vector.

    `head` is the start of the content (at most `ROW_HEAD_CHARS` characters)."""

    id: int
    role: str
    pinned: bool
    created_at: datetime
    head: str


@dataclass(frozen=True, slots=True)
class PointFilter:
    """Which points a list shows: a role, pinned only, and a half-open time range
    [`since`, `until`) of aware datetimes. None means no bound."""

    role: str | None = None
    pinned_only: bool = False
    since: datetime | None = None
    until: datetime | None = None

    def __post_init__(self) -> None:
        if self.role is not None:
            check_role(self.role)
        for name in ("since", "until"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, as_utc(value))

    def clauses(self) -> tuple[list[str], list[Any]]:
        """SQL conditions on `points` and their parameters."""
        clauses, params = filter_clauses(self.role, True if self.pinned_only else None)
        if self.since is not None:
            clauses.append("created_at >= ?")
            params.append(self.since)
        if self.until is not None:
            clauses.append("created_at < ?")
            params.append(self.until)
        return clauses, params


ROW_HEAD_CHARS = 240
ROW_COLUMNS = f"id, role, pinned, created_at, left(content, {ROW_HEAD_CHARS})"


def row_from_tuple(row: Sequence[Any]) -> PointRow:
    return PointRow(int(row[0]), row[1], bool(row[2]), row[3].astimezone(UTC), row[4])


def point_from_row(row: Sequence[Any]) -> Point:
    embedding = row[10]
    return Point(
        id=int(row[0]),
        role=row[1],
        content=row[2],
        conversation_id=row[3],
        channel=row[4],
        pinned=bool(row[5]),
        tags=tuple(row[6]),
        source=row[7],
        content_hash=row[8],
        created_at=row[9].astimezone(UTC),
        embedding=None if embedding is None else vector_from_bytes(embedding),
        embed_model=row[11],
    )


def audit_from_row(row: Sequence[Any]) -> AuditEvent:
    aid, at, event, point_id, rule, reason, detail = row
    return AuditEvent(
        id=int(aid),
        at=at.astimezone(UTC),
        event=event,
        point_id=None if point_id is None else int(point_id),
        rule=rule,
        reason=reason,
        detail=detail,
    )


def filter_clauses(role: str | None, pinned: bool | None) -> tuple[list[str], list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    if role is not None:
        check_role(role)
        clauses.append("role = ?")
        params.append(role)
    if pinned is not None:
        clauses.append("pinned = ?")
        params.append(pinned)
    return clauses, params


def where_sql(clauses: Sequence[str]) -> str:
    return f" WHERE {' AND '.join(clauses)}" if clauses else ""
