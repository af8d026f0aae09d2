"""Layer-3 points and the audit trail in `straylight.duckdb` (tables of schema v1).

A point is one saved message or document chunk with its optional embedding. Every change a
user would care about is written in the same transaction as its audit row: `add` → 'save',
`delete` → 'forget', `set_pinned` → 'pin' / 'unpin'; the save filter's refusals are
recorded with `record_skip` ('skip' + the rule), anything else (e.g. 'ingest') with
`record_event`. No policy lives here: what to save, mask or forget is decided in `memory/`.
The records it takes and gives, and how a row becomes one: `store.point_records`.

Times are aware UTC in and out (`created_at`, audit `at`); a naive datetime is refused.
Embeddings are float32 vectors (read-only numpy arrays in a `Point`) stored as BLOBs of
little-endian float32 bytes (`store.point_values`) together with the name of the model that
made them; bulk writes go through numpy columns (`store.point_columns`).

Measured on the 2-core dev machine (other jobs running, so read these as upper bounds), with a
440 MB database of 100,000 points × 768 floats:

- `vectors(model)` (index rebuilds): one `fetchnumpy()` of (id, embedding), sorted by id in
  numpy, the bytes joined and viewed as one float32 matrix — ~0.6–0.7 s warm (query ~0.5 s),
  1.4–3 s for the first call after opening (cold reads). pyarrow is not installed, so no arrow path.
- `add_many`: numpy columns scanned by DuckDB — 10,000 × 768 in ~0.8–1 s (~2 s under load);
  bound parameters would cost ~1.5 ms a point. `add`: ~3 ms at 100k (cProfile, load ~2.5:
  the statement ~1.8 ms, BEGIN and COMMIT ~1.1 ms).
- `set_embeddings`: 10,000 × 768 in ~1.2 s. `counts()` ~40 ms, `ids_without_vector` ~60 ms.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any

import duckdb
import numpy as np
import numpy.typing as npt

from store import point_sizes
from store.database import Database
from store.lexical_index import PointWords
from store.parsed_sql import parsed
from store.point_columns import point_columns, registered, tag_columns, vector_columns
from store.point_records import (
    AUDIT_COLUMNS,
    POINT_COLUMNS,
    ROW_COLUMNS,
    AuditEvent,
    NewPoint,
    Point,
    PointFilter,
    PointRow,
    audit_from_row,
    filter_clauses,
    point_from_row,
    row_from_tuple,
    where_sql,
)

# The `X as X` imports: other modules import these names from here, as before.
from store.point_records import ROLES as ROLES
from store.point_records import ROW_HEAD_CHARS as ROW_HEAD_CHARS
from store.point_values import FloatVector as FloatVector
from store.point_values import as_utc as as_utc
from store.point_values import as_vector, matrix_from_bytes
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


class PointStore:
    """Points and their audit trail; every method is safe to call from any thread."""

    def __init__(self, db: Database) -> None:
        self.db = db
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

    # --- reads ----------------------------------------------------------------------------

    def get(self, point_id: int) -> Point | None:
        with self.db.cursor() as cur:
            rows = cur.execute(
                f"SELECT {POINT_COLUMNS} FROM points WHERE id = ?", [point_id]
            ).fetchall()
        return point_from_row(rows[0]) if rows else None

    def list_points(
        self,
        *,
        role: str | None = None,
        pinned: bool | None = None,
        limit: int = 100,
        offset: int = 0,
        newest_first: bool = False,
    ) -> list[Point]:
        """One page of points in id order (oldest first unless `newest_first`)."""
        clauses, params = filter_clauses(role, pinned)
        order = "DESC" if newest_first else "ASC"
        sql = (
            f"SELECT {POINT_COLUMNS} FROM points{where_sql(clauses)} "
            f"ORDER BY id {order} LIMIT ? OFFSET ?"
        )
        return self._select(sql, [*params, limit, offset])

    def iter_points(
        self, *, role: str | None = None, pinned: bool | None = None, batch_size: int = 500
    ) -> Iterator[Point]:
        """All matching points in id order, fetched in batches (no cursor held between them)."""
        after = -1
        while True:
            clauses, params = filter_clauses(role, pinned)
            sql = (
                f"SELECT {POINT_COLUMNS} FROM points{where_sql(['id > ?', *clauses])} "
                "ORDER BY id LIMIT ?"
            )
            batch = self._select(sql, [after, *params, batch_size])
            yield from batch
            if len(batch) < batch_size:
                return
            after = batch[-1].id

    def page_rows(
        self, where: PointFilter | None = None, *, before_id: int | None = None, limit: int = 200
    ) -> list[PointRow]:
        """One page of list rows, newest (highest id) first: those with an id below
        `before_id` (keyset paging: pass the last id of the previous page)."""
        clauses, params = (where or PointFilter()).clauses()
        if before_id is not None:
            clauses.insert(0, "id < ?")
            params.insert(0, before_id)
        sql = f"SELECT {ROW_COLUMNS} FROM points{where_sql(clauses)} ORDER BY id DESC LIMIT ?"
        with self.db.cursor() as cur:
            rows = cur.execute(sql, [*params, limit]).fetchall()
        return [row_from_tuple(row) for row in rows]

    def rows_newer_than(
        self, point_id: int, where: PointFilter | None = None, *, limit: int = 200
    ) -> list[PointRow]:
        """The `limit` rows just above `point_id` (the next higher ids), newest first: what a
        list opened at that point shows above it."""
        clauses, params = (where or PointFilter()).clauses()
        clauses.insert(0, "id > ?")
        params.insert(0, point_id)
        sql = f"SELECT {ROW_COLUMNS} FROM points{where_sql(clauses)} ORDER BY id ASC LIMIT ?"
        with self.db.cursor() as cur:
            rows = cur.execute(sql, [*params, limit]).fetchall()
        return [row_from_tuple(row) for row in reversed(rows)]

    def rows_of(self, ids: Sequence[int]) -> dict[int, PointRow]:
        """The list rows of the given ids that exist, by id (one query)."""
        if not ids:
            return {}
        sql = f"SELECT {ROW_COLUMNS} FROM points WHERE id IN (SELECT unnest(?::BIGINT[]))"
        with self.db.cursor() as cur:
            rows = cur.execute(sql, [[int(point_id) for point_id in ids]]).fetchall()
        return {int(row[0]): row_from_tuple(row) for row in rows}

    def count_matching(self, where: PointFilter | None = None) -> int:
        """How many points pass the filter."""
        clauses, params = (where or PointFilter()).clauses()
        with self.db.cursor() as cur:
            rows = cur.execute(
                f"SELECT count(*) FROM points{where_sql(clauses)}", params
            ).fetchall()
        return int(rows[0][0])

    def by_source_prefix(self, prefix: str) -> list[Point]:
        """Points whose `source` starts with `prefix` (e.g. one ingested document), by id."""
        sql = f"SELECT {POINT_COLUMNS} FROM points WHERE starts_with(source, ?) ORDER BY id"
        return self._select(sql, [prefix])

    def recent_turn_texts(
        self, conversation_id: str, role: str, limit: int, *, without_tag: str = ""
    ) -> list[str]:
        """The contents of the last `limit` points turns saved for this conversation and
        role (none tagged `without_tag`), oldest first: the save filter's dedup memory of a
        conversation continued in another process."""
        if limit <= 0:
            return []
        with self.db.cursor() as cur:
            rows = cur.execute(
                "SELECT content FROM points WHERE conversation_id = ? AND role = ? "
                "AND source = 'turn' AND NOT list_contains(tags, ?) ORDER BY id DESC LIMIT ?",
                [conversation_id, role, without_tag, limit],
            ).fetchall()
        return [str(content) for (content,) in reversed(rows)]

    def find_by_hash(self, digest: str) -> list[Point]:
        """Points whose content hashes to `digest` (see `content_hash`), by id."""
        sql = f"SELECT {POINT_COLUMNS} FROM points WHERE content_hash = ? ORDER BY id"
        return self._select(sql, [digest])

    def counts(self) -> dict[str, int]:
        """total, user, assistant, doc, pinned, without_vector (embedding NULL)."""
        with self.db.cursor() as cur:
            row = cur.execute(
                "SELECT count(*), count(*) FILTER (WHERE role = 'user'), "
                "count(*) FILTER (WHERE role = 'assistant'), count(*) FILTER (WHERE role = 'doc'), "
                "count(*) FILTER (WHERE pinned), count(*) - count(embedding) "
                "FROM points"
            ).fetchall()[0]
        keys = ("total", "user", "assistant", "doc", "pinned", "without_vector")
        return {key: int(value) for key, value in zip(keys, row, strict=True)}

    def ids_without_vector(self, model: str, dim: int | None = None) -> list[int]:
        """Ids to (re-)embed: no vector, a vector from another model, or (with `dim`) of
        another dimension."""
        sql = "SELECT id FROM points WHERE embedding IS NULL OR embed_model IS DISTINCT FROM ?"
        params: list[Any] = [model]
        with self.db.cursor() as cur:
            if dim is not None and not point_sizes.checked(cur, model, dim):
                sql += " OR octet_length(embedding) <> ?"  # reads every vector's block
                params.append(4 * dim)
            rows = cur.execute(sql + " ORDER BY id", params).fetchall()
        return [int(row[0]) for row in rows]

    def vectors(
        self, model: str, dim: int | None = None
    ) -> tuple[npt.NDArray[np.int64], FloatVector]:
        """(ids, matrix) of every vector made by `model` (and of `dim`, if given), by id.

        `matrix` is float32 (n, dim); with no vectors it is (0, dim or 0). Raises ValueError
        if `dim` is None and the model's vectors differ in length.
        """
        sql = "SELECT id, embedding FROM points WHERE embed_model = ? AND embedding IS NOT NULL"
        params: list[Any] = [model]
        if dim is not None:
            sql += " AND octet_length(embedding) = ?"
            params.append(4 * dim)
        with self.db.cursor() as cur:
            columns = cur.execute(sql, params).fetchnumpy()
        ids = np.asarray(columns["id"], dtype=np.int64)
        if ids.size == 0:
            return ids, np.empty((0, dim or 0), dtype=np.float32)
        order = np.argsort(ids, kind="stable")
        rows = columns["embedding"][order]
        lengths = {len(row) // 4 for row in rows}
        if len(lengths) > 1:
            raise ValueError(
                f"vectors of {model!r} have several dimensions {sorted(lengths)}; pass dim="
            )
        return ids[order], matrix_from_bytes(list(rows), lengths.pop())

    def audit_events(
        self, limit: int = 100, *, event: str | None = None, point_id: int | None = None
    ) -> list[AuditEvent]:
        """The newest audit rows first, optionally of one event or one point."""
        clauses: list[str] = []
        params: list[Any] = []
        if event is not None:
            clauses.append("event = ?")
            params.append(event)
        if point_id is not None:
            clauses.append("point_id = ?")
            params.append(point_id)
        sql = f"SELECT {AUDIT_COLUMNS} FROM audit{where_sql(clauses)} ORDER BY id DESC LIMIT ?"
        with self.db.cursor() as cur:
            rows = cur.execute(sql, [*params, limit]).fetchall()
        return [audit_from_row(row) for row in rows]

    def skip_counts(self) -> dict[str, int]:
        """How many messages each save-filter rule refused."""
        with self.db.cursor() as cur:
            rows = cur.execute(
                "SELECT coalesce(rule, ''), count(*) FROM audit WHERE event = 'skip' "
                "GROUP BY ALL ORDER BY 1"
            ).fetchall()
        return {str(rule): int(count) for rule, count in rows}

    # --- helpers --------------------------------------------------------------------------

    def _select(self, sql: str, params: Sequence[Any]) -> list[Point]:
        with self.db.cursor() as cur:
            rows = cur.execute(sql, list(params)).fetchall()
        return [point_from_row(row) for row in rows]

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
