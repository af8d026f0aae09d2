"""Layer-4 rows in `straylight.duckdb`: facts, candidates, and their audit trail (schema v3).

No policy lives here (what may be written, masked, injected or decayed is `memory/`'s call).
A fact is unique per (scope, workspace, key); writing an existing key overwrites it, and every
write is an audit row (`event` 'fact_set', 'fact_status', 'fact_confidence', 'fact_undo', or
'fact_delete' when an undo removes a first write; `fact_key` = the key;
`detail` = JSON `{"fact": <the version written>, "previous": <the one it replaced or null>}`),
so an overwrite can be seen and undone. Candidates wait at the gate with status 'pending'
until approved or rejected ('candidate_propose', 'candidate_approve', 'candidate_reject').
This module holds the `FactStore` and its SQL; the records it reads and writes (`Fact`,
`Candidate`, `FactVersion`, `FactWrite`) and their row readers are in `store.fact_records`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

import duckdb

from store.database import Database
from store.fact_records import (
    CANDIDATE_COLUMNS,
    FACT_COLUMNS,
    Candidate,
    Fact,
    FactVersion,
    FactWrite,
    candidate_from_row,
    fact_from_row,
)
from store.point_store import FloatVector, as_utc, vector_bytes


class FactStore:
    """Facts and candidates; every method is safe to call from any thread."""

    def __init__(self, db: Database) -> None:
        self.db = db

    # --- facts: writes --------------------------------------------------------------------

    def write(self, new: FactWrite, *, reason: str, event: str = "fact_set") -> Fact:
        """Insert or overwrite the fact with this identity; audit the version written."""
        now = self.db.clock.now()
        with self.db.transaction() as cur:
            previous = self._find(cur, new.scope, new.workspace, new.key)
            params = [
                new.type,
                new.body,
                new.confidence,
                new.proof,
                new.status,
                new.source,
                now,
                now,
                new.last_verified,
                list(new.requires),
            ]
            if previous is None:
                cur.execute(
                    "INSERT INTO facts (type, body, confidence, proof, status, source, "
                    "updated_at, last_seen, last_verified, requires, created_at, scope, "
                    "workspace, key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?::VARCHAR[], ?, ?, ?, ?)",
                    [*params, now, new.scope, new.workspace, new.key],
                )
            else:
                cur.execute(
                    "UPDATE facts SET type = ?, body = ?, confidence = ?, proof = ?, status = ?, "
                    "source = ?, updated_at = ?, last_seen = ?, last_verified = ?, "
                    "requires = ?::VARCHAR[], embedding = CASE WHEN body = ? THEN embedding END, "
                    "embed_model = CASE WHEN body = ? THEN embed_model END WHERE id = ?",
                    [*params, new.body, new.body, previous.id],
                )
            fact = self._find(cur, new.scope, new.workspace, new.key)
            assert fact is not None
            self._audit(cur, now, event, fact, previous, reason)
        return fact

    def set_status(self, fact: Fact, status: str, *, reason: str) -> Fact:
        """Change a fact's status (retire, revive, stale); audited as 'fact_status'."""
        now = self.db.clock.now()
        with self.db.transaction() as cur:
            cur.execute(
                "UPDATE facts SET status = ?, updated_at = ? WHERE id = ?", [status, now, fact.id]
            )
            updated = self._by_id(cur, fact.id)
            assert updated is not None
            self._audit(cur, now, "fact_status", updated, fact, reason)
        return updated

    def set_confidence(self, fact: Fact, confidence: float, *, reason: str) -> Fact:
        now = self.db.clock.now()
        with self.db.transaction() as cur:
            cur.execute(
                "UPDATE facts SET confidence = ?, updated_at = ? WHERE id = ?",
                [confidence, now, fact.id],
            )
            updated = self._by_id(cur, fact.id)
            assert updated is not None
            self._audit(cur, now, "fact_confidence", updated, fact, reason)
        return updated

    def touch_seen(self, ids: Sequence[int]) -> None:
        """Set last_seen to now (a fact was injected or read); not audited."""
        if not ids:
            return
        with self.db.transaction() as cur:
            cur.execute(
                "UPDATE facts SET last_seen = ? WHERE id IN (SELECT unnest(?::BIGINT[]))",
                [self.db.clock.now(), list(ids)],
            )

    def set_embedding(self, fact_id: int, vector: FloatVector, model: str) -> None:
        with self.db.transaction() as cur:
            cur.execute(
                "UPDATE facts SET embedding = ?, embed_model = ? WHERE id = ?",
                [vector_bytes(vector), model, fact_id],
            )

    def delete(self, fact: Fact, *, reason: str) -> None:
        """Remove a fact row (undo of a first write); the audit keeps every version."""
        with self.db.transaction() as cur:
            cur.execute("DELETE FROM facts WHERE id = ?", [fact.id])
            self._audit(cur, self.db.clock.now(), "fact_delete", fact, fact, reason)

    # --- facts: reads ---------------------------------------------------------------------

    def find(self, scope: str, workspace: str, key: str) -> Fact | None:
        with self.db.cursor() as cur:
            return self._find(cur, scope, workspace, key)

    def by_id(self, fact_id: int) -> Fact | None:
        """The fact with this row id, in any scope and status (None if there is none)."""
        with self.db.cursor() as cur:
            return self._by_id(cur, fact_id)

    def by_key(self, key: str, workspace: str) -> list[Fact]:
        """The fact with this key in `workspace`, then the global one (0, 1 or 2 facts)."""
        with self.db.cursor() as cur:
            rows = cur.execute(
                f"SELECT {FACT_COLUMNS} FROM facts WHERE key = ? AND "
                "((scope = 'workspace' AND workspace = ?) OR scope = 'global') "
                "ORDER BY scope = 'global'",
                [key, workspace],
            ).fetchall()
        return [fact_from_row(row) for row in rows]

    def visible(
        self,
        workspace: str,
        *,
        types: Sequence[str] | None = None,
        statuses: Sequence[str] | None = None,
        all_workspaces: bool = False,
    ) -> list[Fact]:
        """Facts of `workspace` and the global scope (or of every workspace), by key."""
        clauses = [] if all_workspaces else ["(scope = 'global' OR workspace = ?)"]
        params: list[Any] = [] if all_workspaces else [workspace]
        if types:
            clauses.append("type IN (SELECT unnest(?::VARCHAR[]))")
            params.append(list(types))
        if statuses:
            clauses.append("status IN (SELECT unnest(?::VARCHAR[]))")
            params.append(list(statuses))
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        with self.db.cursor() as cur:
            rows = cur.execute(
                f"SELECT {FACT_COLUMNS} FROM facts{where} ORDER BY key, scope, workspace",
                params,
            ).fetchall()
        return [fact_from_row(row) for row in rows]

    def counts(self, workspace: str) -> dict[str, int]:
        """active / stale / retired facts visible from `workspace`."""
        with self.db.cursor() as cur:
            rows = cur.execute(
                "SELECT status, count(*) FROM facts WHERE scope = 'global' OR workspace = ? "
                "GROUP BY status",
                [workspace],
            ).fetchall()
        counts = {"active": 0, "stale": 0, "retired": 0}
        counts.update({str(status): int(n) for status, n in rows})
        return counts

    def history(self, key: str) -> list[FactVersion]:
        """Every audited version of facts with this key (any scope), oldest first."""
        with self.db.cursor() as cur:
            rows = cur.execute(
                'SELECT id, "at", event, reason, detail FROM audit WHERE fact_key = ? '
                "AND event LIKE 'fact_%' ORDER BY id",
                [key],
            ).fetchall()
        versions = []
        for audit_id, at, event, reason, detail in rows:
            data = json.loads(detail)
            versions.append(
                FactVersion(
                    int(audit_id), as_utc(at), event, reason, data["fact"], data["previous"]
                )
            )
        return versions

    # --- candidates -----------------------------------------------------------------------

    def add_candidate(
        self,
        new: FactWrite,
        *,
        origin: str,
        conversation_id: str = "",
    ) -> Candidate:
        now = self.db.clock.now()
        with self.db.transaction() as cur:
            row = cur.execute(
                f"INSERT INTO candidates (type, scope, workspace, key, body, proof, confidence, "
                f"source, origin, requires, conversation_id, created_at) "
                f"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?::VARCHAR[], ?, ?) "
                f"RETURNING {CANDIDATE_COLUMNS}",
                [
                    new.type,
                    new.scope,
                    new.workspace,
                    new.key,
                    new.body,
                    new.proof,
                    new.confidence,
                    new.source,
                    origin,
                    list(new.requires),
                    conversation_id,
                    now,
                ],
            ).fetchall()[0]
            candidate = candidate_from_row(row)
            self._audit_candidate(cur, now, "candidate_propose", candidate, origin)
        return candidate

    def candidate(self, candidate_id: int) -> Candidate | None:
        with self.db.cursor() as cur:
            rows = cur.execute(
                f"SELECT {CANDIDATE_COLUMNS} FROM candidates WHERE id = ?", [candidate_id]
            ).fetchall()
        return candidate_from_row(rows[0]) if rows else None

    def candidates(self, *, status: str | None = "pending") -> list[Candidate]:
        where, params = ("WHERE status = ?", [status]) if status else ("", [])
        with self.db.cursor() as cur:
            rows = cur.execute(
                f"SELECT {CANDIDATE_COLUMNS} FROM candidates {where} ORDER BY id", params
            ).fetchall()
        return [candidate_from_row(row) for row in rows]

    def has_candidate(self, workspace: str, key: str, body: str, status: str) -> bool:
        """A candidate with this key and body (in this workspace or global) and status; the
        bodies compared as `same_body` does (a rejected rule said again in lower case, or
        with a `!`, is the same rule)."""
        with self.db.cursor() as cur:
            rows = cur.execute(
                "SELECT body FROM candidates WHERE key = ? AND status = ? "
                "AND (scope = 'global' OR workspace = ?)",
                [key, status, workspace],
            ).fetchall()
        wanted = same_body(body)
        return any(same_body(str(row[0])) == wanted for row in rows)

    def decide(self, candidate: Candidate, status: str, *, reason: str) -> Candidate:
        """Mark a pending candidate approved or rejected (audited)."""
        now = self.db.clock.now()
        with self.db.transaction() as cur:
            cur.execute(
                "UPDATE candidates SET status = ?, decided_at = ? WHERE id = ?",
                [status, now, candidate.id],
            )
            decided = replace(candidate, status=status, decided_at=now)
            event = "candidate_approve" if status == "approved" else "candidate_reject"
            self._audit_candidate(cur, now, event, decided, reason)
        return decided

    # --- helpers --------------------------------------------------------------------------

    @staticmethod
    def _find(cur: duckdb.DuckDBPyConnection, scope: str, workspace: str, key: str) -> Fact | None:
        rows = cur.execute(
            f"SELECT {FACT_COLUMNS} FROM facts WHERE scope = ? AND workspace = ? AND key = ?",
            [scope, workspace, key],
        ).fetchall()
        return fact_from_row(rows[0]) if rows else None

    @staticmethod
    def _by_id(cur: duckdb.DuckDBPyConnection, fact_id: int) -> Fact | None:
        rows = cur.execute(f"SELECT {FACT_COLUMNS} FROM facts WHERE id = ?", [fact_id]).fetchall()
        return fact_from_row(rows[0]) if rows else None

    @staticmethod
    def _audit(
        cur: duckdb.DuckDBPyConnection,
        at: datetime,
        event: str,
        fact: Fact,
        previous: Fact | None,
        reason: str,
    ) -> None:
        detail = json.dumps(
            {"fact": fact.as_json(), "previous": previous.as_json() if previous else None},
            ensure_ascii=False,
        )
        cur.execute(
            'INSERT INTO audit ("at", event, reason, detail, fact_key) VALUES (?, ?, ?, ?, ?)',
            [at, event, reason, detail, fact.key],
        )

    @staticmethod
    def _audit_candidate(
        cur: duckdb.DuckDBPyConnection, at: datetime, event: str, candidate: Candidate, reason: str
    ) -> None:
        detail = json.dumps({"candidate": candidate.as_json()}, ensure_ascii=False)
        cur.execute(
            'INSERT INTO audit ("at", event, reason, detail, fact_key) VALUES (?, ?, ?, ?, ?)',
            [at, event, reason, detail, candidate.key],
        )


def same_body(body: str) -> str:
    """A candidate's body as the gate compares it: case folded, runs of blanks as one, the
    sentence's closing marks (`.`, `!`, `?`) dropped — not other punctuation, which can be
    the whole difference (`C#` and `C++`, `>= 3.11` and `< 3.11`)."""
    return " ".join(body.casefold().split()).rstrip(".!?… ")
