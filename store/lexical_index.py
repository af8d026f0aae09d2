"""The lexical half of hybrid recall: Okapi BM25 over two DuckDB tables.

DuckDB is the source of truth: `lexical_postings(term, point_id, tf)` and
`lexical_docs(point_id, length, words, day, answers, speaker)` (the last four: the point's traits,
`store.point_traits`), with the analyzer and a generation in `meta`. Terms come
from `store.text_terms`; a query is groups of alternative stems and a document scores the best
alternative of each group. Writes are incremental, inside the transaction that writes the
point, so the index never disagrees with the points. This module holds the SQL; the in-memory
mirror (`LexicalCache`) is `store.lexical_cache`. The formula, the write and reindex rules and
the measurements: docs/lexical_search.md.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import duckdb
import numpy as np

from store import meta
from store.lexical_cache import GENERATION_KEY, K1, B, LexicalCache
from store.lexical_cache import LoadStopped as LoadStopped  # tests and benchmarks import it here
from store.point_traits import PointTraits, TraitRow, trait_row
from store.text_terms import Analyzer, default_analyzer

if TYPE_CHECKING:
    from numpy.typing import NDArray

ANALYZER_KEY = "lexical.analyzer"
_BULK_CHUNK = 50_000

_SEARCH_SQL = """
WITH q AS (SELECT unnest(?::VARCHAR[]) AS term, unnest(?::INTEGER[]) AS grp),
stats AS (
    SELECT count(*)::DOUBLE AS n, coalesce(avg(length), 0)::DOUBLE AS avgdl FROM lexical_docs
),
hits AS (
    SELECT p.term, p.point_id, p.tf::DOUBLE AS tf, q.grp
    FROM lexical_postings p JOIN q ON p.term = q.term
),
df AS (SELECT term, count(*)::DOUBLE AS df FROM hits GROUP BY term),
scored AS (
    SELECT h.point_id, h.grp,
        max(
            ln(1 + (s.n - df.df + 0.5) / (df.df + 0.5))
            * h.tf * ({k1} + 1)
            / (h.tf + {k1} * (1 - {b} + {b} * d.length / greatest(s.avgdl, 1e-9)))
        ) AS sc
    FROM hits h
    JOIN df ON h.term = df.term
    JOIN lexical_docs d ON d.point_id = h.point_id
    CROSS JOIN stats s
    {candidate_filter}
    GROUP BY h.point_id, h.grp
)
SELECT point_id, sum(sc) AS score FROM scored
GROUP BY point_id ORDER BY score DESC, point_id LIMIT ?
"""


def _flatten(groups: list[tuple[str, ...]]) -> tuple[list[str], list[int]]:
    terms: list[str] = []
    group_of: list[int] = []
    for i, group in enumerate(groups):
        for term in group:
            terms.append(term)
            group_of.append(i)
    return terms, group_of


# --- writing ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PointWords:
    """A point's row of the word index: how often each distinct term occurs in it.

    `PointStore.add(..., words=...)` writes these rows in the statement that inserts the point
    (one statement instead of three on the save path); `index_point` writes them for a point
    that already exists. `traits`: the point's (`store.point_traits`; None: unknown)."""

    counts: Counter[str]
    traits: PointTraits | None = None

    @property
    def length(self) -> int:
        return sum(self.counts.values())

    @property
    def terms(self) -> list[str]:
        return list(self.counts)

    @property
    def tfs(self) -> list[int]:
        return list(self.counts.values())

    @property
    def trait_row(self) -> TraitRow:
        """(words, day, answers, speaker) for `lexical_docs` (NULLs when unknown)."""
        return trait_row(self.traits)


def analyse(
    text: str,
    *,
    analyzer: Analyzer | None = None,
    cache: LexicalCache | None = None,
    traits: PointTraits | None = None,
) -> PointWords:
    """The word-index rows of `text` (with the cache's analyzer when a cache is given), with
    the point's `traits`."""
    return PointWords(Counter(_analyzer(analyzer, cache).terms(text)), traits)


def index_point(
    con: duckdb.DuckDBPyConnection,
    point_id: int,
    text: str,
    *,
    analyzer: Analyzer | None = None,
    cache: LexicalCache | None = None,
    new: bool = False,
    traits: PointTraits | None = None,
) -> None:
    """Index one point's text: its postings and its length, in the caller's transaction.

    `new=True` (a point inserted in this same transaction) skips the look-up for an
    earlier version of it.

    Call it inside the transaction that inserts the point (docs/lexical_search.md), so that
    both commit or neither does. Touches only this point's rows. A point that is already
    indexed is replaced. `cache`, when given, is told about the change (it applies it once
    the change is committed). `analyzer` defaults to the cache's, else the default one.
    `traits`: the point's (`store.point_traits`; None: unknown, recall ranks without them).
    """
    words = analyse(text, analyzer=analyzer, cache=cache, traits=traits)
    counts, length = words.counts, words.length
    if (
        not new
        and con.execute("SELECT 1 FROM lexical_docs WHERE point_id = ?", [point_id]).fetchall()
    ):
        _delete_rows(con, point_id)
    con.execute(
        "INSERT INTO lexical_docs (point_id, length, words, day, answers, speaker) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        [point_id, length, *words.trait_row],
    )
    if counts:
        con.execute(
            "INSERT INTO lexical_postings SELECT unnest(?::VARCHAR[]), ?, unnest(?::INTEGER[])",
            [words.terms, point_id, words.tfs],
        )
    if cache is not None:
        cache.stage_add(point_id, length, counts, traits)


def remove_point(
    con: duckdb.DuckDBPyConnection, point_id: int, *, cache: LexicalCache | None = None
) -> None:
    """Remove one point from the index, in the caller's transaction (the one deleting it)."""
    _delete_rows(con, point_id)
    if cache is not None:
        cache.stage_remove(point_id)


def _analyzer(analyzer: Analyzer | None, cache: LexicalCache | None) -> Analyzer:
    if cache is None:
        return analyzer or default_analyzer()
    if analyzer is not None and analyzer is not cache.analyzer:
        raise ValueError("the cache was built with another analyzer")
    return cache.analyzer


def _delete_rows(con: duckdb.DuckDBPyConnection, point_id: int) -> None:
    con.execute("DELETE FROM lexical_postings WHERE point_id = ?", [point_id])
    con.execute("DELETE FROM lexical_docs WHERE point_id = ?", [point_id])


def reindex_all(
    con: duckdb.DuckDBPyConnection,
    rows: Iterable[tuple[int, str]],
    *,
    analyzer: Analyzer | None = None,
    traits: Mapping[int, PointTraits] | None = None,
) -> int:
    """Rebuild the whole index from `(point_id, text)` rows; returns the number indexed.
    `traits`: each point's (`store.point_traits`; a point without: unknown).

    For repair and for a change of analyzer. Run it inside one transaction (a crash halfway
    then leaves the old index). Bulk inserts: ~8 s per 100k chat turns. Records the analyzer
    and bumps the generation, which makes every `LexicalCache` reload.
    """
    a = analyzer or default_analyzer()
    con.execute("DELETE FROM lexical_postings")
    con.execute("DELETE FROM lexical_docs")
    seen: dict[int, None] = {}
    terms: list[str] = []
    pids: list[int] = []
    tfs: list[int] = []
    doc_ids: list[int] = []
    lengths: list[int] = []
    columns: tuple[list[int | None], ...] = ([], [], [], [])  # words, day, answers, speaker
    known = traits or {}

    def flush() -> None:
        if doc_ids:
            con.execute(
                "INSERT INTO lexical_docs (point_id, length, words, day, answers, speaker) "
                "SELECT unnest(?::BIGINT[]), unnest(?::INTEGER[]), unnest(?::USMALLINT[]), "
                "unnest(?::INTEGER[]), unnest(?::UTINYINT[]), unnest(?::USMALLINT[])",
                [doc_ids, lengths, *columns],
            )
        if terms:
            con.execute(
                "INSERT INTO lexical_postings SELECT unnest(?::VARCHAR[]), "
                "unnest(?::BIGINT[]), unnest(?::INTEGER[])",
                [terms, pids, tfs],
            )
        for buffer in (terms, pids, tfs, doc_ids, lengths):
            buffer.clear()
        for column in columns:
            column.clear()

    for point_id, text in rows:
        if point_id in seen:  # the last text of a repeated id would win in SQL: refuse instead
            raise ValueError(f"point {point_id} given twice")
        seen[point_id] = None
        counts = Counter(a.terms(text))
        doc_ids.append(point_id)
        lengths.append(sum(counts.values()))
        for column, value in zip(columns, trait_row(known.get(point_id)), strict=True):
            column.append(value)
        for term, tf in counts.items():
            terms.append(term)
            pids.append(point_id)
            tfs.append(tf)
        if len(terms) >= _BULK_CHUNK or len(doc_ids) >= _BULK_CHUNK:
            flush()
    flush()
    meta.put(con, ANALYZER_KEY, a.name)
    generation = meta.get(con, GENERATION_KEY)
    meta.put(con, GENERATION_KEY, str(int(generation or 0) + 1))
    return len(seen)


def ensure_analyzer(con: duckdb.DuckDBPyConnection, *, analyzer: Analyzer | None = None) -> bool:
    """True when the index was built by `analyzer` (default: the current one).

    Call once at open. An empty index is claimed for the analyzer (recorded in `meta`);
    False means the index holds terms of another analyzer: run `reindex_all`.
    """
    name = (analyzer or default_analyzer()).name
    stored = meta.get(con, ANALYZER_KEY)
    if stored == name:
        return True
    if not con.execute("SELECT 1 FROM lexical_docs LIMIT 1").fetchall():
        meta.put(con, ANALYZER_KEY, name)
        return True
    return False


def traits_missing(con: duckdb.DuckDBPyConnection) -> bool:
    """True when a point was indexed without its traits (`store.point_traits`: a store
    indexed before schema 7, or without its speaker before schema 8, or by a writer that
    gave none): the open fills them."""
    return bool(
        con.execute(
            "SELECT 1 FROM lexical_docs d JOIN points p ON p.id = d.point_id "
            "WHERE d.words IS NULL OR d.day IS NULL OR d.answers IS NULL OR d.speaker IS NULL "
            "LIMIT 1"
        ).fetchall()
    )


def fill_traits(con: duckdb.DuckDBPyConnection, traits: Mapping[int, PointTraits]) -> int:
    """Set the traits of indexed points (`store.point_traits`) without re-indexing their
    words (a store indexed before schema 7: ~5 s per 100k points against ~22 s for
    `reindex_all`); bumps the generation, so every mirror and `lexical.idx` reloads them.
    Returns the number of rows updated. Run it in the caller's transaction."""
    if not traits:
        return 0
    rows = [(pid, *t.as_row()) for pid, t in traits.items()]
    return _update_docs(
        con,
        {
            "point_id": np.array([r[0] for r in rows], dtype=np.int64),
            "words": np.array([r[1] for r in rows], dtype=np.uint16),
            "day": np.array([r[2] for r in rows], dtype=np.int32),
            "answers": np.array([r[3] for r in rows], dtype=np.uint8),
            "speaker": np.array([r[4] for r in rows], dtype=np.uint16),
        },
    )


def fill_speakers(con: duckdb.DuckDBPyConnection, speakers: Mapping[int, int]) -> int:
    """Set only the speaker trait of indexed points (a store indexed at schema 7: its
    other traits are there); bumps the generation as `fill_traits`. Returns the number of
    rows updated. Run it in the caller's transaction."""
    if not speakers:
        return 0
    return _update_docs(
        con,
        {
            "point_id": np.fromiter(speakers, dtype=np.int64, count=len(speakers)),
            "speaker": np.fromiter(speakers.values(), dtype=np.uint16, count=len(speakers)),
        },
    )


def _update_docs(con: duckdb.DuckDBPyConnection, columns: dict[str, NDArray[Any]]) -> int:
    """One `UPDATE … FROM` a registered table of `lexical_docs` columns by point id, and a
    generation bump when a row changed."""
    sets = ", ".join(f"{name} = t.{name}" for name in columns if name != "point_id")
    con.register("straylight_traits", columns)
    try:
        updated = con.execute(
            f"UPDATE lexical_docs SET {sets} "
            "FROM straylight_traits AS t WHERE lexical_docs.point_id = t.point_id "
            "RETURNING lexical_docs.point_id"
        ).fetchall()
    finally:
        con.unregister("straylight_traits")
    if updated:
        generation = meta.get(con, GENERATION_KEY)
        meta.put(con, GENERATION_KEY, str(int(generation or 0) + 1))
    return len(updated)


def check_consistency(
    con: duckdb.DuckDBPyConnection, point_ids: Iterable[int]
) -> tuple[list[int], list[int]]:
    """Compare the index with the ids that should be in it: `(missing, extra)`, sorted.

    `missing`: ids without a `lexical_docs` row. `extra`: ids in the index (in `lexical_docs`
    or with orphan postings) that are not in `point_ids`.
    """
    rows = con.execute(
        """
        WITH e AS (SELECT DISTINCT unnest(?::BIGINT[]) AS id),
        indexed AS (SELECT point_id FROM lexical_docs UNION SELECT point_id FROM lexical_postings)
        SELECT
            (SELECT list(e.id ORDER BY e.id) FROM e
             ANTI JOIN lexical_docs d ON d.point_id = e.id),
            (SELECT list(i.point_id ORDER BY i.point_id) FROM indexed i
             ANTI JOIN e ON e.id = i.point_id)
        """,
        [list(point_ids)],
    ).fetchall()
    missing, extra = rows[0]
    return [int(x) for x in missing or []], [int(x) for x in extra or []]


# --- reading ------------------------------------------------------------------------------


def search(
    con: duckdb.DuckDBPyConnection,
    query: str,
    k: int,
    *,
    candidate_ids: Iterable[int] | None = None,
    analyzer: Analyzer | None = None,
    cache: LexicalCache | None = None,
) -> list[tuple[int, float]]:
    """The top `k` points for `query` as `(point_id, score)`, best first (ties: lower id).

    Only points with at least one matching term; an empty or all-stopword query gives [].
    `candidate_ids` restricts the result (the statistics stay global). With `cache` the
    in-memory index answers (synced first with what is committed in `con`'s database); without
    it, one SQL query on `con` (which sees `con`'s own open transaction too).
    """
    if cache is not None:
        _analyzer(analyzer, cache)
        return cache.search(con, query, k, candidate_ids=candidate_ids)
    groups = _analyzer(analyzer, None).query_terms(query)
    if not groups or k <= 0:
        return []
    terms, group_of = _flatten(groups)
    positional: list[object] = [terms, group_of]
    candidate_filter = ""
    if candidate_ids is not None:
        wanted = list(candidate_ids)
        if not wanted:
            return []
        candidate_filter = "WHERE h.point_id IN (SELECT unnest(?::BIGINT[]))"
        positional.append(wanted)
    positional.append(k)
    sql = _SEARCH_SQL.format(candidate_filter=candidate_filter, k1=repr(K1), b=repr(B))
    rows = con.execute(sql, positional).fetchall()
    return [(int(pid), float(score)) for pid, score in rows]
