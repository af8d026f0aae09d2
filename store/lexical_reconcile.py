"""Bringing the word index's mirror (`CompactPostings`) to what the tables hold, once the
mirror's checks (`store.lexical_cache`) say they differ: staged writes applied when they are
visible, and the doc list diffed with the postings of new or changed docs read. Functions
of the arrays and a snapshot of the tables; the caller holds the lock and decides when.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

import duckdb
import numpy as np

from store.point_traits import MISSING_SPEAKER, PointTraits

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from store.lexical_postings import CompactPostings

# Staged changes that never became visible (rolled back) are forgotten after this long;
# should such a transaction commit later, the fingerprint check still finds it.
STAGED_TTL_SECONDS = 600.0


@dataclass
class Staged:
    """A write of one point in flight (`LexicalCache.stage_add`, `stage_remove`)."""

    at: float
    length: int | None  # None: a removal
    counts: Counter[str] | None
    traits: PointTraits | None = None


def apply_staged(
    con: duckdb.DuckDBPyConnection,
    index: CompactPostings,
    staged_by_id: dict[int, Staged],
    stats: Counter[str],
) -> None:
    """Apply the staged writes `con` sees committed, dropping them from `staged_by_id`, and
    forget those staged longer than STAGED_TTL_SECONDS ago."""
    ids = list(staged_by_id)
    visible = {
        int(pid): int(length)
        for pid, length in con.execute(
            "SELECT point_id, length FROM lexical_docs "
            "WHERE point_id IN (SELECT unnest(?::BIGINT[]))",
            [ids],
        ).fetchall()
    }
    now = time.monotonic()
    for pid in ids:
        staged = staged_by_id[pid]
        if staged.length is None:  # a removal
            if pid not in visible:
                index.remove(pid)
                del staged_by_id[pid]
            elif index.slot_of(pid) is None or now - staged.at > STAGED_TTL_SECONDS:
                del staged_by_id[pid]
        elif visible.get(pid) == staged.length and staged.counts is not None:
            index.add(pid, staged.length, staged.counts, staged.traits)
            del staged_by_id[pid]
            stats["staged_applied"] += 1
        elif now - staged.at > STAGED_TTL_SECONDS:
            del staged_by_id[pid]


def diff(con: duckdb.DuckDBPyConnection, index: CompactPostings, stats: Counter[str]) -> bool:
    """Reconcile `index` with the tables by doc list (numpy, O(n)); load postings of docs it
    lacks or holds with another length. False when so many changed that a load of the whole
    tables is quicker: then `index` is half reconciled, to be replaced."""
    stats["diffs"] += 1
    added = _only_added(con, index)
    if added is not None:
        stats["diffs_of_added_only"] += 1
        if len(added) > max(1000, (index.doc_count + len(added)) // 5):
            return False
        if added:
            _load_docs(con, index, added)
        return True
    docs = con.execute("SELECT point_id, length FROM lexical_docs ORDER BY point_id").fetchnumpy()
    ids = np.asarray(docs["point_id"], dtype=np.int64)
    lengths = np.asarray(docs["length"], dtype=np.int32)
    cached_ids, cached_lengths = index.live_docs()  # by point id
    gone = cached_ids[~_members(cached_ids, ids)]
    for pid in gone.tolist():
        index.remove(pid)
    where = np.searchsorted(cached_ids, ids)
    same = _members(ids, cached_ids)
    same[same] = cached_lengths[where[same]] == lengths[same]
    changed = ids[~same].tolist()
    if len(changed) > max(1000, len(ids) // 5):
        return False
    if changed:
        _load_docs(con, index, dict(zip(changed, lengths[~same].tolist(), strict=True)))
    return True


def _only_added(con: duckdb.DuckDBPyConnection, index: CompactPostings) -> dict[int, int] | None:
    """When the docs up to the index's highest id are the tables' (count, length sum and
    id sum agree on that range: the fingerprint's test), what changed is points added
    after it (the usual open of `lexical.idx` after a session's saves): their lengths by
    id, without reading the whole doc list (1M rows and a sort: ~0.2–0.3 s at 1M points).
    None when the full diff must run."""
    top = index.max_id()
    if top is None:
        return None
    held = con.execute(
        "SELECT count(*), coalesce(sum(length), 0), coalesce(sum(point_id), 0) "
        "FROM lexical_docs WHERE point_id <= ?",
        [top],
    ).fetchall()[0]
    if tuple(map(int, held)) != (index.doc_count, index.total_length, index.id_sum):
        return None
    docs = con.execute(
        "SELECT point_id, length FROM lexical_docs WHERE point_id > ? ORDER BY point_id",
        [top],
    ).fetchnumpy()
    added = np.asarray(docs["point_id"], dtype=np.int64).tolist()
    lengths = np.asarray(docs["length"], dtype=np.int32).tolist()
    return dict(zip(added, lengths, strict=True))


def _load_docs(
    con: duckdb.DuckDBPyConnection, index: CompactPostings, length_of: dict[int, int]
) -> None:
    """Read the postings of these docs from the tables and put them in `index`."""
    changed = list(length_of)
    counts: dict[int, dict[str, int]] = {pid: {} for pid in changed}
    for term, pid, tf in con.execute(
        "SELECT term, point_id, tf FROM lexical_postings "
        "WHERE point_id IN (SELECT unnest(?::BIGINT[]))",
        [changed],
    ).fetchall():
        counts[int(pid)][str(term)] = int(tf)
    traits: dict[int, PointTraits] = {
        int(pid): PointTraits(
            int(words), int(day), int(answers), MISSING_SPEAKER if who is None else int(who)
        )
        for pid, words, day, answers, who in con.execute(
            "SELECT point_id, words, day, answers, speaker FROM lexical_docs "
            "WHERE point_id IN (SELECT unnest(?::BIGINT[])) AND words IS NOT NULL "
            "AND day IS NOT NULL AND answers IS NOT NULL",
            [changed],
        ).fetchall()
    }
    for pid in changed:
        index.add(pid, length_of[pid], counts[pid], traits.get(pid))


def _members(values: NDArray[np.int64], sorted_ids: NDArray[np.int64]) -> NDArray[np.bool_]:
    """Which of `values` are in `sorted_ids` (ascending)."""
    where = np.searchsorted(sorted_ids, values)
    found = where < len(sorted_ids)
    found[found] = sorted_ids[where[found]] == values[found]
    return found
