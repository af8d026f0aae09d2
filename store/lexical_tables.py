"""The word index read from its tables: `lexical_docs` and `lexical_postings` as one
`CompactPostings`, the whole load of `LexicalCache` when `lexical.idx` cannot be used.

Loading reads three plain scans and one DISTINCT (DuckDB keeps much of what a join, window
or sort allocates: measured in docs/memory-scale.md); numpy matches postings to terms by
DuckDB's 64-bit `hash(term)` and to slots by point id.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from store.lexical_postings import CompactPostings
from store.point_traits import MISSING_DAY, MISSING_SPEAKER, MISSING_WORDS

if TYPE_CHECKING:
    import duckdb
    from numpy.typing import NDArray

    from store.lexical_posting_reads import Traits

# Should two terms share a hash, the postings are read with the join below instead.
_LOAD_DOCS_SQL = (  # the traits of a point indexed without them: MISSING_* (store.point_traits)
    f"SELECT point_id, length, coalesce(words, {MISSING_WORDS}) AS words, "
    f"coalesce(day, {MISSING_DAY}) AS day, coalesce(answers, 0) AS answers, "
    f"coalesce(speaker, {MISSING_SPEAKER}) AS speaker "
    "FROM lexical_docs ORDER BY point_id"
)
_LOAD_TERMS_SQL = "SELECT term, hash(term) AS h FROM (SELECT DISTINCT term FROM lexical_postings)"
_LOAD_POSTINGS_SQL = "SELECT point_id, hash(term) AS h, tf FROM lexical_postings"
_LOAD_POSTINGS_BY_TERM_SQL = """
SELECT p.point_id, t.tid, p.tf
FROM lexical_postings p JOIN (
    SELECT term, (row_number() OVER (ORDER BY term) - 1)::INTEGER AS tid
    FROM (SELECT DISTINCT term FROM lexical_postings)
) t ON t.term = p.term
"""


class LoadStopped(Exception):
    """`LexicalCache.load` was asked to stop (the store is closing)."""


def read_tables(
    con: duckdb.DuckDBPyConnection, stop: Callable[[], bool] | None = None
) -> CompactPostings:
    """Every indexed point's postings and traits, as committed in `con`'s snapshot. `stop()`
    is asked between the reads: True raises `LoadStopped`."""
    docs = con.execute(_LOAD_DOCS_SQL).fetchnumpy()
    _check_stop(stop)
    return _read_postings(
        con,
        np.asarray(docs["point_id"], dtype=np.int64),
        np.asarray(docs["length"], dtype=np.int32),
        stop,
        (
            np.asarray(docs["words"], dtype=np.uint16),
            np.asarray(docs["day"], dtype=np.int32),
            np.asarray(docs["answers"], dtype=np.uint8),
            np.asarray(docs["speaker"], dtype=np.uint16),
        ),
    )


def _check_stop(stop: Callable[[], bool] | None) -> None:
    if stop is not None and stop():
        raise LoadStopped("the word-index load was stopped")


def _read_postings(
    con: duckdb.DuckDBPyConnection,
    point_ids: NDArray[np.int64],
    lengths: NDArray[np.int32],
    stop: Callable[[], bool] | None,
    traits: Traits,
) -> CompactPostings:
    """The postings of the docs `point_ids` (ascending) as a `CompactPostings`; postings of
    points without a `lexical_docs` row are left out (check_consistency reports those)."""
    rows = con.execute(_LOAD_TERMS_SQL).fetchall()
    _check_stop(stop)
    terms = [str(term) for term, _ in rows]
    term_hashes = np.fromiter((h for _, h in rows), dtype=np.uint64, count=len(rows))
    del rows
    by_hash = np.argsort(term_hashes)
    sorted_hashes = term_hashes[by_hash]
    unique = not np.any(sorted_hashes[1:] == sorted_hashes[:-1])
    columns = con.execute(_LOAD_POSTINGS_SQL if unique else _LOAD_POSTINGS_BY_TERM_SQL).fetchnumpy()
    _check_stop(stop)
    post_ids = np.asarray(columns["point_id"], dtype=np.int64)
    if unique:
        post_terms = by_hash[np.searchsorted(sorted_hashes, columns["h"])].astype(np.int32)
    else:
        terms.sort()  # the query's term ids are ranks by term
        post_terms = np.asarray(columns["tid"], dtype=np.int32)
    post_tfs = np.asarray(columns["tf"], dtype=np.int32)
    del columns
    slots = np.searchsorted(point_ids, post_ids)
    known = slots < len(point_ids)
    known[known] = point_ids[slots[known]] == post_ids[known]
    del post_ids
    order = np.argsort(slots, kind="stable")
    order = order[known[order]]
    return CompactPostings.from_arrays(
        terms,
        point_ids,
        lengths,
        slots[order].astype(np.int32),
        post_terms[order],
        post_tfs[order],
        traits,
    )
