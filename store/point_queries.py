"""The reads of `PointStore` (its base class `PointQueries`): points and list rows by id,
filter, page, hash and source; the counts; a model's vectors; the audit trail's rows.

Apart from the writes (`store.point_store`) because they share nothing with them but the
database and the records (`store.point_records`). Times come back aware UTC; vectors as
read-only float32 arrays (`store.point_values`).

Measured on the 2-core dev machine (other jobs running, so read these as upper bounds), with a
440 MB database of 100,000 points × 768 floats:

- `vectors(model)` (index rebuilds): one `fetchnumpy()` of (id, embedding), sorted by id in
  numpy, the bytes joined and viewed as one float32 matrix — ~0.6–0.7 s warm (query ~0.5 s),
  1.4–3 s for the first call after opening (cold reads). pyarrow is not installed, so no arrow path.
- `counts()` ~40 ms, `ids_without_vector` ~60 ms.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from store import point_sizes
from store.database import Database
from store.point_records import (
    AUDIT_COLUMNS,
    POINT_COLUMNS,
    ROW_COLUMNS,
    AuditEvent,
    Point,
    PointFilter,
    PointRow,
    audit_from_row,
    filter_clauses,
    point_from_row,
    row_from_tuple,
    where_sql,
)
from store.point_values import FloatVector, matrix_from_bytes


class PointQueries:
    """Reads of the points and audit tables; every method is safe to call from any thread."""

    def __init__(self, db: Database) -> None:
        self.db = db

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
