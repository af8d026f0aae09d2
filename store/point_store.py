"""Layer-3 points and the audit trail in `straylight.duckdb` (tables of schema v1): the writes.

A point is one saved message or document chunk with its optional embedding. Every change a
user would care about is written in the same transaction as its audit row: `add` → 'save',
`delete` → 'forget', `set_pinned` → 'pin' / 'unpin'; the save filter's refusals are
recorded with `record_skip` ('skip' + the rule), anything else (e.g. 'ingest') with
`record_event`. No policy lives here: what to save, mask or forget is decided in `memory/`.
The records it takes and gives, and how a row becomes one: `store.point_records`; its reads
(points, rows, counts, vectors, audit rows): its base class, `store.point_queries`.

Times are aware UTC in and out (`created_at`, audit `at`); a naive datetime is refused.
Embeddings are float32 vectors (read-only numpy arrays in a `Point`) stored as BLOBs of
little-endian float32 bytes (`store.point_values`) together with the name of the model that
made them; bulk writes go through numpy columns (`store.point_columns`).

Measured on the 2-core dev machine (other jobs running, so read these as upper bounds), with a
440 MB database of 100,000 points × 768 floats:

- `add_many`: numpy columns scanned by DuckDB — 10,000 × 768 in ~0.8–1 s (~2 s under load);
  bound parameters would cost ~1.5 ms a point. `add`: ~3 ms at 100k (cProfile, load ~2.5:
  the statement ~1.8 ms, BEGIN and COMMIT ~1.1 ms).
- `set_embeddings`: 10,000 × 768 in ~1.2 s.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

import duckdb
import numpy.typing as npt

from store.database import Database
from store.lexical_index import PointWords
from store.parsed_sql import parsed
from store.point_columns import point_columns, registered, tag_columns, vector_columns
from store.point_queries import PointQueries

# The `X as X` imports: other modules import these names from here, as before.
from store.point_records import ROLES as ROLES
from store.point_records import ROW_HEAD_CHARS as ROW_HEAD_CHARS
from store.point_records import NewPoint
from store.point_values import FloatVector as FloatVector
from store.point_values import as_utc as as_utc
from store.point_values import as_vector
from store.point_values import content_hash as content_hash
from store.point_values import vector_bytes as vector_bytes
from store.point_values import vector_from_bytes as vector_from_bytes
from store.row_file import RowFile
from store.row_file_format import StoredRow

# A save is one statement (DuckDB runs data-modifying CTEs, also those the final SELECT does
# not name): the point with its id from the sequence, its 'save' audit row and, with `words`,
# its word-index rows. Measured at 100k points (CPU a save, paired): a separate `nextval`
# statement and a final SELECT of four counts (a plan of cross products) cost ~1.1 ms of
# the ~3.9 ms this statement took; DuckDB's parse, bind and plan are most of what is left
# (its inserts ~0.8 ms), and a SQL PREPARE cannot take Python's parameters. The text is
# parsed once per process (`store.parsed_sql`: ~0.5 ms less a save).
_SAVE_POINT = """
WITH p AS (
    INSERT INTO points (id, role, content, conversation_id, channel, pinned, tags, source,
        content_hash, created_at, embedding, embed_model)
    VALUES (nextval('point_id_seq'), ?, ?, ?, ?, ?, ?::VARCHAR[], ?, ?, ?, ?, ?) RETURNING id
),
a AS (INSERT INTO audit ("at", event, point_id, reason) SELECT ?, 'save', id, ? FROM p)
{words_cte}
SELECT id FROM p
"""
_WORDS_CTE = """,
d AS (INSERT INTO lexical_docs (point_id, length, words, day, answers, speaker)
    SELECT id, ?, ?, ?, ?, ? FROM p),
t AS (INSERT INTO lexical_postings SELECT unnest(?::VARCHAR[]), id, unnest(?::INTEGER[]) FROM p)"""
_SAVE_POINT_ONLY = _SAVE_POINT.format(words_cte="")
_SAVE_POINT_WITH_WORDS = _SAVE_POINT.format(words_cte=_WORDS_CTE)
_INSERT_POINTS = """
INSERT INTO points (id, role, content, conversation_id, channel, pinned, tags, source,
    content_hash, created_at, embedding, embed_model)
SELECT p.id, p.role, p.content, p.conversation_id, p.channel, p.pinned,
    coalesce(t.tags, []::VARCHAR[]), p.source, p.content_hash,
    make_timestamp(p.created_us) AT TIME ZONE 'UTC', v.embedding, v.embed_model
FROM straylight_points AS p
LEFT JOIN (
    SELECT id, list(tag::VARCHAR ORDER BY pos) AS tags FROM straylight_tags GROUP BY id
) AS t ON t.id = p.id
LEFT JOIN (
    SELECT id, embedding::BLOB AS embedding, embed_model::VARCHAR AS embed_model
    FROM straylight_vectors
) AS v ON v.id = p.id
ORDER BY p.id
"""
_UPDATE_VECTORS = """
UPDATE points SET embedding = v.embedding::BLOB, embed_model = v.embed_model::VARCHAR
FROM straylight_vectors AS v WHERE points.id = v.id
RETURNING points.id
"""
_AUDIT_SAVES = (
    "INSERT INTO audit (\"at\", event, point_id, reason) SELECT ?, 'save', unnest(?::BIGINT[]), ?"
)
_INSERT_AUDIT = (
    'INSERT INTO audit ("at", event, point_id, rule, reason, detail) '
    "VALUES (?, ?, ?, ?, ?, ?) RETURNING id"
)


class PointStore(PointQueries):
    """Points and their audit trail; every method is safe to call from any thread."""

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self.rows: RowFile | None = None
        """`rows.dat`, when this store keeps it (`MemoryStore`): every write below appends
        the new points after the commit and zeroes the removed ones before it."""

    def _appended(self, ids: Sequence[int], batch: Sequence[NewPoint], now: datetime) -> None:
        """After a commit: the new points' unchanging fields into `rows.dat`."""
        if self.rows is not None:
            self.rows.append(
                [
                    StoredRow(
                        pid, new.role, new.created_at or now, new.conversation_id, new.content
                    )
                    for pid, new in zip(ids, batch, strict=True)
                ]
            )

    def _forgetting(self, ids: Sequence[int]) -> None:
        """Before a delete's transaction: the points' records in `rows.dat` zeroed."""
        if self.rows is not None and ids:
            self.rows.forget(ids)

    def _forgotten(self, ids: Sequence[int]) -> None:
        """After a delete's commit: `rows.dat` knows the points are gone."""
        if self.rows is not None and ids:
            self.rows.gone(ids)

    # --- writes ---------------------------------------------------------------------------

    def add(
        self,
        new: NewPoint,
        *,
        audit_reason: str | None = None,
        words: PointWords | None = None,
    ) -> int:
        """Insert a point, its 'save' audit row and (given `words`) its word-index rows in one
        statement, committed by itself (`Database.autocommit`); return its id.

        Work that needs the point committed (staging its words in the mirror, the vector
        index) starts after this returns; a caller staging words wraps the call and its
        staging in `LexicalCache.write_in_flight`.
        """
        now = self.db.clock.now()
        params = [*self._point_params(new, now), now, audit_reason]
        with self.db.autocommit() as cur:
            if words is None:
                rows = cur.execute(parsed(cur, _SAVE_POINT_ONLY), params).fetchall()
            else:
                params += [words.length, *words.trait_row, words.terms, words.tfs]
                rows = cur.execute(parsed(cur, _SAVE_POINT_WITH_WORDS), params).fetchall()
        point_id = int(rows[0][0])
        self._appended([point_id], [new], now)
        return point_id

    def add_many(
        self,
        items: Iterable[NewPoint],
        *,
        audit_reason: str | None = None,
        also: Callable[[duckdb.DuckDBPyConnection, list[int]], None] | None = None,
    ) -> list[int]:
        """Insert points (each with a 'save' audit row) in one transaction; ids ascend in order.

        `also(cursor, ids)` runs inside that transaction."""
        batch = list(items)
        if not batch:
            return []
        now = self.db.clock.now()
        with self.db.transaction() as cur:
            ids = self._insert_many(cur, batch, now, audit_reason)
            if also is not None:
                also(cur, ids)
        self._appended(ids, batch, now)
        return ids

    def replace_many(
        self,
        items: Iterable[NewPoint],
        remove: Iterable[int],
        *,
        audit_reason: str | None = None,
        remove_reason: str | None = None,
        event: tuple[str, str | None, str | None] | None = None,
        also: Callable[[duckdb.DuckDBPyConnection, list[int]], None] | None = None,
    ) -> list[int]:
        """Delete `remove` (each with a 'forget' audit row and its word-index rows) and insert
        `items`, in one transaction with `also(cursor, new ids)` and the audit row `event`
        (event, reason, detail): a re-import killed midway leaves the old version whole."""
        batch = list(items)
        now = self.db.clock.now()
        removed = sorted(set(remove))
        deleted: list[int] = []
        self._forgetting(removed)
        with self.db.transaction() as cur:
            for point_id in removed:
                gone = cur.execute("DELETE FROM points WHERE id = ? RETURNING id", [point_id])
                if gone.fetchall():
                    deleted.append(point_id)
                    cur.execute("DELETE FROM lexical_postings WHERE point_id = ?", [point_id])
                    cur.execute("DELETE FROM lexical_docs WHERE point_id = ?", [point_id])
                    self._audit(cur, now, "forget", point_id=point_id, reason=remove_reason)
            ids = self._insert_many(cur, batch, now, audit_reason) if batch else []
            if also is not None:
                also(cur, ids)
            if event is not None:
                name, reason, detail = event
                self._audit(cur, now, name, reason=reason, detail=detail)
        self._forgotten(deleted)
        self._appended(ids, batch, now)
        return ids

    def _insert_many(
        self,
        cur: duckdb.DuckDBPyConnection,
        batch: list[NewPoint],
        now: datetime,
        audit_reason: str | None,
    ) -> list[int]:
        ids = self._allocate_ids(cur, len(batch))
        vectors = [
            (point_id, new.embedding, new.embed_model or "")
            for point_id, new in zip(ids, batch, strict=True)
            if new.embedding is not None
        ]
        views = {
            "straylight_points": point_columns(ids, batch, now),
            "straylight_tags": tag_columns(ids, batch),
            "straylight_vectors": vector_columns(vectors),
        }
        with registered(cur, views):
            cur.execute(_INSERT_POINTS)
        cur.execute(_AUDIT_SAVES, [now, ids, audit_reason])
        return ids

    def delete(
        self,
        point_id: int,
        *,
        reason: str | None,
        event: str = "forget",
        also: Callable[[duckdb.DuckDBPyConnection, int], None] | None = None,
    ) -> bool:
        """Forget a point (and its lexical postings) with an audit row (`event`).

        False, and no audit row, for an unknown id. `also(cursor, id)` runs inside the
        same transaction.
        """
        self._forgetting([point_id])
        with self.db.transaction() as cur:
            gone = cur.execute("DELETE FROM points WHERE id = ? RETURNING id", [point_id])
            if not gone.fetchall():
                return False
            cur.execute("DELETE FROM lexical_postings WHERE point_id = ?", [point_id])
            cur.execute("DELETE FROM lexical_docs WHERE point_id = ?", [point_id])
            self._audit(cur, self.db.clock.now(), event, point_id=point_id, reason=reason)
            if also is not None:
                also(cur, point_id)
        self._forgotten([point_id])
        return True

    def set_pinned(self, point_id: int, pinned: bool, *, reason: str | None) -> bool:
        """Pin or unpin with a 'pin' / 'unpin' audit row; False for an unknown id."""
        with self.db.transaction() as cur:
            hit = cur.execute(
                "UPDATE points SET pinned = ? WHERE id = ? RETURNING id", [pinned, point_id]
            ).fetchall()
            if not hit:
                return False
            event = "pin" if pinned else "unpin"
            self._audit(cur, self.db.clock.now(), event, point_id=point_id, reason=reason)
        return True

    def set_embedding(self, point_id: int, vector: npt.ArrayLike, model: str) -> bool:
        """Store a point's vector and its model; False for an unknown id."""
        return self.set_embeddings([(point_id, vector, model)]) == 1

    def set_embeddings(self, items: Iterable[tuple[int, npt.ArrayLike, str]]) -> int:
        """Store many (id, vector, model) in one transaction (the last wins for a repeated
        id); return how many of the ids existed."""
        latest = {point_id: (as_vector(vector), model) for point_id, vector, model in items}
        if not latest:
            return 0
        rows = [(point_id, vector, model) for point_id, (vector, model) in latest.items()]
        with (
            self.db.transaction() as cur,
            registered(cur, {"straylight_vectors": vector_columns(rows)}),
        ):
            return len(cur.execute(_UPDATE_VECTORS).fetchall())

    def record_event(
        self,
        event: str,
        point_id: int | None = None,
        reason: str | None = None,
        detail: str | None = None,
        *,
        rule: str | None = None,
    ) -> int:
        """Append one audit row (e.g. 'ingest'); return its id."""
        with self.db.transaction() as cur:
            at = self.db.clock.now()
            return self._audit(
                cur, at, event, point_id=point_id, rule=rule, reason=reason, detail=detail
            )

    def record_skip(self, role: str, rule: str, conversation_id: str, content_preview: str) -> int:
        """Record that the save filter refused a message ('skip' + rule); return the row id.

        The preview is stored as given: mask it before it gets here.
        """
        detail = json.dumps(
            {"role": role, "conversation_id": conversation_id, "preview": content_preview},
            ensure_ascii=False,
        )
        return self.record_event("skip", None, None, detail, rule=rule)

    # --- helpers --------------------------------------------------------------------------

    @staticmethod
    def _point_params(new: NewPoint, now: datetime) -> list[Any]:
        return [
            new.role,
            new.content,
            new.conversation_id,
            new.channel,
            new.pinned,
            list(new.tags),
            new.source,
            content_hash(new.content),
            new.created_at or now,
            None if new.embedding is None else vector_bytes(new.embedding),
            new.embed_model,
        ]

    @staticmethod
    def _allocate_ids(cur: duckdb.DuckDBPyConnection, count: int) -> list[int]:
        rows = cur.execute("SELECT nextval('point_id_seq') FROM range(?)", [count]).fetchall()
        return sorted(int(row[0]) for row in rows)

    @staticmethod
    def _audit(
        cur: duckdb.DuckDBPyConnection,
        at: datetime,
        event: str,
        *,
        point_id: int | None = None,
        rule: str | None = None,
        reason: str | None = None,
        detail: str | None = None,
    ) -> int:
        params = [as_utc(at), event, point_id, rule, reason, detail]
        return int(cur.execute(_INSERT_AUDIT, params).fetchall()[0][0])
