"""Reads of the points table that recall, index upkeep and status need beyond `PointStore`.

The SQL of `memory.memory_store` lives here (memory/ holds policy, store/ the statements):
what a recall hit shows, the pinned ids and vectors, the vectors by id for the index, the
points to re-index words from, and the sizes the RAM estimate is made of.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from store import point_sizes
from store.database import Cursor, Database
from store.point_values import (
    FloatVector,
    as_utc,
    content_hash,
    matrix_from_bytes,
    vector_from_bytes,
)
from store.row_file import RowFile
from store.row_file_format import StoredRow


@dataclass(frozen=True, slots=True)
class HitRow:
    """What a recall hit shows of a point (no embedding column)."""

    id: int
    role: str
    pinned: bool
    created_at: datetime
    content: str

    @property
    def content_hash(self) -> str:
        """The point's `content_hash`, from its content: the column is written from
        `content_hash(content)` at every insert and no statement changes `content`, so
        it is not read (the column cost ~0.1 of the ~1 ms a recall's hit rows take at
        100k; docs/recall-latency.md "Sixth session")."""
        return content_hash(self.content)


_OF_IDS = "id IN (SELECT unnest(?::BIGINT[]))"
# Up to this many ids go into the query as `id IN (?, ?, …)`: DuckDB filters its scan with
# them (and skips what the column's min/max rule out) instead of joining the whole table
# with the list; a recall's hit rows at 100k points, paired on a loaded machine: p50 2.3
# instead of 6.2 ms (docs/memory-scale.md).
LISTED_IDS_UP_TO = 256


def _rows_of(db: Database, columns: str, ids: Sequence[int]) -> list[Any]:
    """`columns` of the points of `ids`, in one query."""
    wanted = [int(i) for i in ids]
    if not wanted:
        return []
    with db.cursor() as cur:
        if len(wanted) <= LISTED_IDS_UP_TO:
            marks = ", ".join("?" * len(wanted))
            sql = f"SELECT {columns} FROM points WHERE id IN ({marks})"
            return cur.execute(sql, wanted).fetchall()
        return cur.execute(f"SELECT {columns} FROM points WHERE {_OF_IDS}", [wanted]).fetchall()


_HIT_COLUMNS = "id, role, pinned, created_at, content"


def _hit_row(r: Sequence[Any]) -> HitRow:
    """A `HitRow` from the first columns of a row that starts with `_HIT_COLUMNS`."""
    return HitRow(int(r[0]), r[1], bool(r[2]), as_utc(r[3]), r[4])


def _stored_hit_row(row: StoredRow, pinned: Container[int]) -> HitRow:
    return HitRow(row.id, row.role, row.id in pinned, row.created_at, row.content)


def hit_rows(
    db: Database,
    ids: Sequence[int],
    *,
    rows: RowFile | None = None,
    pinned: Container[int] = frozenset(),
) -> dict[int, HitRow]:
    """The hit rows of many ids: those `rows` (`rows.dat`) holds from it, with `pinned`
    (the caller's pins) saying which are pinned; the others in one query (~0.04 instead of
    ~1 ms for a recall's ~10 ids at 100k: docs/recall-latency.md "Ninth session")."""
    if not ids:
        return {}
    found: dict[int, HitRow] = {}
    rest: Sequence[int] = ids
    if rows is not None and rows.ready:
        stored, rest = rows.lookup(ids)
        found = {pid: _stored_hit_row(row, pinned) for pid, row in stored.items()}
    if rest:
        found.update((int(r[0]), _hit_row(r)) for r in _rows_of(db, _HIT_COLUMNS, rest))
    return found


def neighbour_rows(
    db: Database,
    ids: Sequence[int],
    window: int,
    *,
    rows: RowFile | None = None,
    pinned: Container[int] = frozenset(),
) -> dict[int, list[HitRow]]:
    """For each of `ids`, the points of the same conversation at most `window` ids away
    (the turns around it), nearest first (the earlier of two as near); points without a
    conversation have none. From `rows` (`rows.dat`, with `pinned` as in `hit_rows`) and
    one query over the ids in reach it cannot answer for (`_rows_of`; ids above the
    file's largest are points not saved yet, as for a query a moment earlier): a self-join
    on the conversation read the whole table."""
    if not ids or window <= 0:
        return {}
    reach = sorted({i + step for i in ids for step in range(-window, window + 1)})
    conversation: dict[int, str] = {}
    by_id: dict[int, HitRow] = {}
    if rows is not None and rows.ready:
        stored, unknown = rows.lookup(reach)
        reach = [pid for pid in unknown if pid <= rows.largest]
        for pid, row in stored.items():
            conversation[pid] = row.conversation_id
            by_id[pid] = _stored_hit_row(row, pinned)
    for r in _rows_of(db, f"{_HIT_COLUMNS}, conversation_id", reach):
        conversation[int(r[0])] = r[5]
        by_id[int(r[0])] = _hit_row(r)
    found: dict[int, list[HitRow]] = {}
    for anchor in dict.fromkeys(ids):
        own = conversation.get(anchor)
        if not own:
            continue
        near = sorted(
            (i for i in range(anchor - window, anchor + window + 1) if i != anchor),
            key=lambda i: (abs(i - anchor), i),
        )
        same = [by_id[i] for i in near if conversation.get(i) == own]
        if same:
            found[anchor] = same
    return found


def pinned_ids(db: Database) -> list[int]:
    with db.cursor() as cur:
        return [int(r[0]) for r in cur.execute("SELECT id FROM points WHERE pinned").fetchall()]


# Below this many ids the vectors are read by lists of up to LISTED_IDS_UP_TO literal ids
# (`id IN (?, ?, …)`: the primary key's index, only the rows' blocks): `IN (SELECT unnest(?))`
# fetched nearly every block of the vector column (100k points, 49 pins: 0.40 s and 292 MiB
# cached). One `id = ?` query a pin fetched what the literal list fetches (15 MiB), in 49
# round trips: 86–154 ms against 18–99 ms cold at 100k on a loaded machine (the store's open
# reads the pins' vectors).
ONE_BY_ONE_BELOW = 1000


def vectors_of(db: Database, ids: Iterable[int], model: str) -> dict[int, FloatVector]:
    """The vectors `model` made for these points (points without one are left out)."""
    wanted = list(ids)
    if not wanted:
        return {}
    if len(wanted) < ONE_BY_ONE_BELOW:
        step = LISTED_IDS_UP_TO
        rows = [
            row
            for start in range(0, len(wanted), step)
            for row in _rows_of(db, "id, embedding, embed_model", wanted[start : start + step])
        ]
    else:
        with db.cursor() as cur:
            sql = f"SELECT id, embedding, embed_model FROM points WHERE {_OF_IDS}"
            rows = cur.execute(sql, [wanted]).fetchall()
    return {
        int(pid): vector_from_bytes(vector)
        for pid, vector, made_by in rows
        if vector is not None and made_by == model
    }


def vector_ids(db: Database, model: str, dim: int | None = None) -> npt.NDArray[np.int64]:
    """Ids of the points with a vector of `model` (and of `dim`, if given: a model re-pulled
    under the same name may have left vectors of another size)."""
    if dim is not None:  # the sizes are read only when not known (store/point_sizes.py)
        return point_sizes.ids_of_size(db, model, dim)
    with db.cursor() as cur:
        rows = cur.execute(
            "SELECT id FROM points WHERE embed_model = ? AND embedding IS NOT NULL", [model]
        ).fetchall()
    return np.asarray([r[0] for r in rows], dtype=np.int64)


def vector_dim(db: Database, model: str) -> int | None:
    """The dimension of the newest vector `model` made here, or None when it made none."""
    with db.cursor() as cur:
        rows = cur.execute(
            "SELECT octet_length(embedding) FROM points WHERE embed_model = ? "
            "AND embedding IS NOT NULL ORDER BY id DESC LIMIT 1",
            [model],
        ).fetchall()
    return int(rows[0][0]) // 4 if rows else None


def vector_matrix(db: Database, ids: npt.NDArray[Any], dim: int) -> FloatVector:
    """The stored vectors of `ids`, in that order, as an (n, dim) matrix."""
    wanted = [int(i) for i in ids]
    rows = _rows_of(db, "id, embedding", wanted)
    by_id = {int(pid): blob for pid, blob in rows}
    return matrix_from_bytes([by_id[i] for i in wanted], dim)


@dataclass(frozen=True, slots=True)
class IndexedPoint:
    """What the word index is rebuilt from for one point (`memory.neighbour_words`)."""

    id: int
    role: str
    source: str
    conversation_id: str
    content: str
    created_at: datetime


def points_without_traits(
    cur: Cursor, *, after: int = -1, limit: int = 20_000
) -> list[tuple[int, str, datetime]]:
    """(id, content, created_at in UTC) of the first `limit` indexed points with an id above
    `after` whose word-index row has no traits (`store.point_traits`;
    `lexical_index.fill_traits` sets them), in id order: a page, so a million points'
    texts are never in memory at once."""
    sql = (
        "SELECT p.id, p.content, p.created_at FROM points p "
        "JOIN lexical_docs d ON d.point_id = p.id "
        "WHERE (d.words IS NULL OR d.day IS NULL OR d.answers IS NULL) AND p.id > ? "
        "ORDER BY p.id LIMIT ?"
    )
    rows = cur.execute(sql, [after, limit]).fetchall()
    return [(int(pid), str(text), as_utc(when)) for pid, text, when in rows]


def points_without_speaker(
    cur: Cursor, *, head: int, after: int = -1, limit: int = 20_000
) -> list[tuple[int, str]]:
    """(id, the first `head` characters of its content) of the first `limit` indexed points
    with an id above `after` whose word-index row has no speaker trait (a store indexed at
    schema 7; `lexical_index.fill_speakers` sets it), in id order: a page."""
    sql = (
        "SELECT p.id, left(p.content, ?) FROM points p "
        "JOIN lexical_docs d ON d.point_id = p.id "
        "WHERE d.speaker IS NULL AND p.id > ? ORDER BY p.id LIMIT ?"
    )
    rows = cur.execute(sql, [head, after, limit]).fetchall()
    return [(int(pid), str(text)) for pid, text in rows]


def points_to_reindex(cur: Cursor) -> list[IndexedPoint]:
    """Every point in id order, with what its neighbours are found by (conversation, role,
    source): what the word index is rebuilt from. The date in UTC, as `save` indexed it
    (DuckDB hands it back in the session's time zone)."""
    sql = "SELECT id, role, source, conversation_id, content, created_at FROM points ORDER BY id"
    return [
        IndexedPoint(int(pid), str(role), str(source), str(conversation), str(text), as_utc(when))
        for pid, role, source, conversation, text, when in cur.execute(sql).fetchall()
    ]


@dataclass(frozen=True, slots=True)
class StoredSizes:
    """What the RAM estimate is made of, besides the vector index (not the points' text:
    reading its length was a scan of every point's content at each status, ~65 MiB of
    DuckDB's cache at 1M points, for a term the estimate no longer has)."""

    lexical_docs: int
    lexical_postings: int


def stored_sizes(db: Database) -> StoredSizes:
    with db.cursor() as cur:
        docs, postings = cur.execute(
            "SELECT (SELECT count(*) FROM lexical_docs), (SELECT count(*) FROM lexical_postings)"
        ).fetchall()[0]
    return StoredSizes(int(docs), int(postings))
