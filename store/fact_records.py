"""The records of layer 4 and how a table row becomes one: `FactWrite` in; `Fact`,
`Candidate`, `FactVersion` out, with their JSON form (`as_json`). The column lists and the row
readers sit together so their order cannot drift apart. `store.fact_store` writes the SQL.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from store.clock import format_instant
from store.point_values import FloatVector, as_utc, vector_from_bytes

FACT_COLUMNS = (
    "id, type, scope, workspace, key, body, confidence, proof, status, source, created_at, "
    "updated_at, last_seen, last_verified, requires, embedding, embed_model"
)
CANDIDATE_COLUMNS = (
    "id, type, scope, workspace, key, body, proof, confidence, source, origin, requires, "
    "status, conversation_id, created_at, decided_at"
)


@dataclass(frozen=True, slots=True)
class Fact:
    """One fact. `workspace` is '' for global facts. Equality ignores nothing but the vector."""

    id: int
    type: str
    scope: str
    workspace: str
    key: str
    body: str
    confidence: float
    proof: str
    status: str
    source: str
    created_at: datetime
    updated_at: datetime
    last_seen: datetime
    last_verified: datetime | None
    requires: tuple[str, ...] = ()
    embedding: FloatVector | None = None
    embed_model: str | None = None

    def as_json(self) -> dict[str, Any]:
        """The fact as JSON-ready data (times ISO 8601 UTC, no vector)."""
        data = {k: v for k, v in asdict(self).items() if k not in ("embedding", "embed_model")}
        for name in ("created_at", "updated_at", "last_seen", "last_verified"):
            value = data[name]
            data[name] = format_instant(value) if value is not None else None
        data["requires"] = list(self.requires)
        return data


@dataclass(frozen=True, slots=True)
class Candidate:
    """A would-be fact at the approval gate."""

    id: int
    type: str
    scope: str
    workspace: str
    key: str
    body: str
    proof: str
    confidence: float
    source: str
    origin: str
    requires: tuple[str, ...]
    status: str
    conversation_id: str
    created_at: datetime
    decided_at: datetime | None

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["requires"] = list(self.requires)
        data["created_at"] = format_instant(self.created_at)
        data["decided_at"] = format_instant(self.decided_at) if self.decided_at else None
        return data


@dataclass(frozen=True, slots=True)
class FactVersion:
    """One audit row of a fact: what was written, when, why, and what it replaced."""

    audit_id: int
    at: datetime
    event: str
    reason: str | None
    fact: dict[str, Any]
    previous: dict[str, Any] | None


def fact_from_row(row: Sequence[Any]) -> Fact:
    return Fact(
        id=int(row[0]),
        type=row[1],
        scope=row[2],
        workspace=row[3],
        key=row[4],
        body=row[5],
        confidence=float(row[6]),
        proof=row[7],
        status=row[8],
        source=row[9],
        created_at=as_utc(row[10]),
        updated_at=as_utc(row[11]),
        last_seen=as_utc(row[12]),
        last_verified=as_utc(row[13]) if row[13] is not None else None,
        requires=tuple(row[14] or ()),
        embedding=vector_from_bytes(row[15]) if row[15] is not None else None,
        embed_model=row[16],
    )


def candidate_from_row(row: Sequence[Any]) -> Candidate:
    return Candidate(
        id=int(row[0]),
        type=row[1],
        scope=row[2],
        workspace=row[3],
        key=row[4],
        body=row[5],
        proof=row[6],
        confidence=float(row[7]),
        source=row[8],
        origin=row[9],
        requires=tuple(row[10] or ()),
        status=row[11],
        conversation_id=row[12],
        created_at=as_utc(row[13]),
        decided_at=as_utc(row[14]) if row[14] is not None else None,
    )


@dataclass(frozen=True, slots=True)
class FactWrite:
    """The content of a fact write; identity is (scope, workspace, key)."""

    type: str
    scope: str
    workspace: str
    key: str
    body: str
    confidence: float
    proof: str
    status: str
    source: str
    last_verified: datetime | None
    requires: tuple[str, ...] = ()
