"""The word index's in-memory mirror: `lexical_postings`/`lexical_docs` held as arrays, so
BM25 answers in milliseconds.

The tables stay the source of truth (`store.lexical_index` writes them). The mirror loads them
once, applies staged writes once they commit, and checks a fingerprint of the tables before each
search. How it stays consistent and the measurements: docs/lexical_search.md.
"""

from __future__ import annotations

import math
import threading
import time
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import duckdb
import numpy as np

from store import meta
from store.text_terms import Analyzer, default_analyzer

if TYPE_CHECKING:
    from numpy.typing import NDArray

# Okapi BM25's parameters, shared with the SQL scoring in `store.lexical_index`.
K1 = 1.2
B = 0.75

GENERATION_KEY = "lexical.generation"  # bumped by every rebuild: every cache reloads

# Staged changes that never became visible (rolled back) are forgotten after this long;
# should such a transaction commit later, the fingerprint check still finds it.
STAGED_TTL_SECONDS = 600.0

_FINGERPRINT_SQL = (
    "SELECT count(*), coalesce(sum(length), 0), coalesce(sum(point_id), 0), "
    f"(SELECT max(value) FROM meta WHERE key = '{GENERATION_KEY}') FROM lexical_docs"
)

Fingerprint = tuple[int, int, int, str | None]


@contextmanager
def _read_snapshot(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """A cursor of `con`'s database in a read transaction of its own: one snapshot of what is
    committed, whatever transaction `con` is in (~0.2 ms)."""
    cursor = con.cursor()
    try:
        cursor.begin()
        yield cursor
    finally:
        try:
            cursor.rollback()
        finally:
            cursor.close()


@dataclass
class _Postings:
    """One term's postings as parallel compact arrays of cache slots, tfs and doc lengths.

    A removed posting keeps its place with tf 0 (it then scores 0) until `compact`.
    """

    slots: array[int] = field(default_factory=lambda: array("i"))
    tfs: array[int] = field(default_factory=lambda: array("i"))
    lengths: array[int] = field(default_factory=lambda: array("i"))
    live: int = 0

    def add(self, slot: int, tf: int, length: int) -> None:
        self.slots.append(slot)
        self.tfs.append(tf)
        self.lengths.append(length)
        self.live += 1

    def remove(self, slot: int) -> None:
        positions = np.flatnonzero(np.frombuffer(self.slots, dtype=np.int32) == slot)
        for pos in positions.tolist():
            if self.tfs[pos] > 0:
                self.tfs[pos] = 0
                self.live -= 1
        dead = len(self.slots) - self.live
        if dead > 16 and dead > self.live:
            keep = [i for i, tf in enumerate(self.tfs) if tf > 0]
            self.slots = array("i", [self.slots[i] for i in keep])
            self.tfs = array("i", [self.tfs[i] for i in keep])
            self.lengths = array("i", [self.lengths[i] for i in keep])

    def nbytes(self) -> int:
        return 3 * self.slots.itemsize * len(self.slots)


@dataclass
class _Staged:
    at: float
    length: int | None  # None: a removal
    counts: Counter[str] | None


LOAD_BATCH_TERMS = 2_000  # terms fetched at a time while loading (a stop is checked between)


class LoadStopped(Exception):
    """`LexicalCache.load` was asked to stop (the store is closing)."""


class LexicalCache:
    """An in-memory mirror of `lexical_postings`/`lexical_docs` that answers BM25 in ms.

    Each indexed point has a dense slot (0 … n, never reused until a reload), so a query adds
    each term's contributions into one float array by slot instead of hashing point ids.
    Thread-safe (one lock; syncing reads through a cursor of its own). See the module
    docstring for how it stays consistent with the tables.
    """

    def __init__(self, analyzer: Analyzer | None = None) -> None:
        self.analyzer: Analyzer = analyzer or default_analyzer()
        self._lock = threading.Lock()
        self._loaded = False
        self._postings: dict[str, _Postings] = {}
        self._slot_of: dict[int, int] = {}  # point id -> slot
        self._point_of = array("q")  # slot -> point id, -1 once removed
        self._doc_terms: dict[int, tuple[str, ...]] = {}  # point id -> its terms
        self._doc_length: dict[int, int] = {}
        self._total_length = 0
        self._id_sum = 0
        self._generation: str | None = None
        self._staged: dict[int, _Staged] = {}
        self.stats: Counter[str] = Counter()  # loads, diffs, staged_applied

    # -- state

    @property
    def doc_count(self) -> int:
        """Points in the cache."""
        return len(self._doc_length)

    def postings_bytes(self) -> int:
        """Bytes held by the posting arrays (not counting dict and tuple overhead)."""
        return sum(p.nbytes() for p in self._postings.values())

    def _fingerprint(self) -> Fingerprint:
        return (len(self._doc_length), self._total_length, self._id_sum, self._generation)

    def _clear(self) -> None:
        self._postings = {}
        self._slot_of = {}
        self._point_of = array("q")
        self._doc_terms = {}
        self._doc_length = {}
        self._total_length = 0
        self._id_sum = 0

    def _add_doc(self, point_id: int, length: int, counts: dict[str, int]) -> None:
        if point_id in self._doc_length:
            self._remove_doc(point_id)
        slot = len(self._point_of)  # slots are never reused: a term's slots stay unique
        self._point_of.append(point_id)
        self._slot_of[point_id] = slot
        for term, tf in counts.items():
            postings = self._postings.get(term)
            if postings is None:
                postings = self._postings[term] = _Postings()
            postings.add(slot, tf, length)
        self._doc_terms[point_id] = tuple(counts)
        self._doc_length[point_id] = length
        self._total_length += length
        self._id_sum += point_id

    def _remove_doc(self, point_id: int) -> None:
        length = self._doc_length.pop(point_id, None)
        if length is None:
            return
        slot = self._slot_of.pop(point_id)
        for term in self._doc_terms.pop(point_id, ()):
            postings = self._postings.get(term)
            if postings is not None:
                postings.remove(slot)
                if postings.live == 0:
                    del self._postings[term]
        self._point_of[slot] = -1
        self._total_length -= length
        self._id_sum -= point_id

    # -- loading and syncing

    def load(
        self, con: duckdb.DuckDBPyConnection, *, stop: Callable[[], bool] | None = None
    ) -> None:
        """(Re)build the whole cache from what is committed in `con`'s database. `stop()`
        is asked between batches of rows: True abandons the load (LoadStopped), leaving the
        cache empty — the store is closing, and nobody should wait for it."""
        with self._lock, _read_snapshot(con) as snapshot:
            self._load(snapshot, stop=stop)

    def _load(
        self,
        con: duckdb.DuckDBPyConnection,
        *,
        new_generation: bool = False,
        stop: Callable[[], bool] | None = None,
    ) -> None:
        """Rebuild from the tables. Staged changes stay staged (they may commit later), unless
        the index was rebuilt (`reindex_all`): its terms may be another analyzer's."""
        self._clear()
        if new_generation:
            self._staged.clear()
        generation = meta.get(con, GENERATION_KEY)
        docs = con.execute("SELECT point_id, length FROM lexical_docs ORDER BY point_id").fetchall()
        self._point_of = array("q", [int(pid) for pid, _ in docs])
        self._slot_of = {pid: slot for slot, pid in enumerate(self._point_of)}
        self._doc_length = {int(pid): int(length) for pid, length in docs}
        # Slots are the row numbers of lexical_docs by point id: the join assigns them in SQL
        # and drops orphan postings (check_consistency reports those).
        result = con.execute(
            "SELECT p.term, list(d.slot), list(p.tf), list(d.length) "
            "FROM lexical_postings p JOIN ("
            " SELECT point_id, length, (row_number() OVER (ORDER BY point_id) - 1)::INTEGER AS slot"
            " FROM lexical_docs) d ON d.point_id = p.point_id "
            "GROUP BY p.term"
        )
        doc_terms: list[list[str]] = [[] for _ in docs]
        while batch := result.fetchmany(LOAD_BATCH_TERMS):
            if stop is not None and stop():
                self._clear()
                raise LoadStopped("the word-index load was stopped")
            for term, slots, tfs, lengths in batch:
                self._postings[term] = _Postings(
                    array("i", slots), array("i", tfs), array("i", lengths), len(slots)
                )
                for slot in slots:
                    doc_terms[slot].append(term)
        self._doc_terms = {
            pid: tuple(terms) for pid, terms in zip(self._point_of, doc_terms, strict=True)
        }
        self._total_length = sum(self._doc_length.values())
        self._id_sum = sum(self._doc_length)
        self._generation = generation
        self._loaded = True
        self.stats["loads"] += 1

    def stage_add(self, point_id: int, length: int, counts: Counter[str]) -> None:
        """A write of this point is in flight; apply it once a search can see it."""
        with self._lock:
            self._staged[point_id] = _Staged(time.monotonic(), length, Counter(counts))

    def stage_remove(self, point_id: int) -> None:
        """A removal of this point is in flight; apply it once a search can see it."""
        with self._lock:
            self._staged[point_id] = _Staged(time.monotonic(), None, None)

    def sync(self, con: duckdb.DuckDBPyConnection) -> None:
        """Bring the cache to what is committed (one aggregate when nothing changed)."""
        with self._lock, _read_snapshot(con) as snapshot:
            self._sync(snapshot)

    def _sync(self, con: duckdb.DuckDBPyConnection) -> None:
        if not self._loaded:
            self._load(con)
            return
        count, total, id_sum, generation = con.execute(_FINGERPRINT_SQL).fetchall()[0]
        if generation != self._generation:
            self._load(con, new_generation=True)
            return
        if len(self._point_of) > 2 * int(count) + 10_000:
            self._load(con)  # many removed slots: rebuild compactly
            return
        target: Fingerprint = (int(count), int(total), int(id_sum), generation)
        if self._staged:
            self._apply_staged(con)
        if self._fingerprint() != target:
            self._diff(con)

    def _apply_staged(self, con: duckdb.DuckDBPyConnection) -> None:
        ids = list(self._staged)
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
            staged = self._staged[pid]
            if staged.length is None:  # a removal
                if pid not in visible:
                    self._remove_doc(pid)
                    del self._staged[pid]
                elif pid not in self._doc_length or now - staged.at > STAGED_TTL_SECONDS:
                    del self._staged[pid]
            elif visible.get(pid) == staged.length and staged.counts is not None:
                self._add_doc(pid, staged.length, staged.counts)
                del self._staged[pid]
                self.stats["staged_applied"] += 1
            elif now - staged.at > STAGED_TTL_SECONDS:
                del self._staged[pid]

    def _diff(self, con: duckdb.DuckDBPyConnection) -> None:
        """Reconcile with the tables by doc list; load postings of docs the cache lacks."""
        self.stats["diffs"] += 1
        docs = {
            int(pid): int(length)
            for pid, length in con.execute("SELECT point_id, length FROM lexical_docs").fetchall()
        }
        for pid in [p for p in self._doc_length if p not in docs]:
            self._remove_doc(pid)
        changed = [pid for pid, length in docs.items() if self._doc_length.get(pid) != length]
        if len(changed) > max(1000, len(docs) // 5):
            self._load(con)
            return
        if not changed:
            return
        counts: dict[int, dict[str, int]] = {pid: {} for pid in changed}
        for term, pid, tf in con.execute(
            "SELECT term, point_id, tf FROM lexical_postings "
            "WHERE point_id IN (SELECT unnest(?::BIGINT[]))",
            [changed],
        ).fetchall():
            counts[int(pid)][str(term)] = int(tf)
        for pid in changed:
            self._add_doc(pid, docs[pid], counts[pid])

    # -- searching

    def search(
        self,
        con: duckdb.DuckDBPyConnection,
        query: str,
        k: int,
        *,
        candidate_ids: Iterable[int] | None = None,
    ) -> list[tuple[int, float]]:
        """Like `search(con, …)`, from memory, after syncing with what is committed."""
        groups = self.analyzer.query_terms(query)
        if not groups or k <= 0:
            return []
        wanted: list[int] | None = None
        if candidate_ids is not None:
            wanted = list(candidate_ids)
            if not wanted:
                return []
        with self._lock:
            with _read_snapshot(con) as snapshot:
                self._sync(snapshot)
            return self._score(groups, k, wanted)

    def search_and_subset(
        self,
        con: duckdb.DuckDBPyConnection,
        query: str,
        k: int,
        subset: Sequence[int],
    ) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
        """The top `k` overall and the ranking within `subset` (e.g. the pinned points),
        from one sync and one scoring pass — what recall needs, at half the cost."""
        groups = self.analyzer.query_terms(query)
        if not groups or k <= 0:
            return [], []
        with self._lock:
            with _read_snapshot(con) as snapshot:
                self._sync(snapshot)
            totals = self._totals(groups)
            if totals is None:
                return [], []
            overall = self._top(totals, k, None)
            within = self._top(totals, len(subset), list(subset)) if subset else []
            return overall, within

    def feedback_search(
        self, query: str, seeds: Sequence[int], terms: int, k: int
    ) -> list[tuple[int, float]]:
        """A second word round seeded by the first one's hits (pseudo-relevance feedback):
        the `terms` terms the `seeds` share most, weighted by idf (a term in one seed only,
        or in the query, or in fewer than two points overall is left out), searched as a
        query of their own. From memory as last synced (the first round just synced)."""
        if terms <= 0 or k <= 0 or not seeds:
            return []
        asked = {term for group in self.analyzer.query_terms(query) for term in group}
        with self._lock:
            n = len(self._doc_length)
            shared: Counter[str] = Counter()
            for point_id in seeds:
                shared.update(self._doc_terms.get(point_id, ()))
            weighted: list[tuple[float, str]] = []
            for term, count in shared.items():
                postings = self._postings.get(term)
                if count < 2 or term in asked or postings is None or postings.live < 2:
                    continue
                idf = math.log(1.0 + (n - postings.live + 0.5) / (postings.live + 0.5))
                weighted.append((count * idf, term))
            best = sorted(weighted, reverse=True)[:terms]
            chosen: list[tuple[str, ...]] = [(term,) for _, term in best]
            totals = self._totals(chosen) if chosen else None
            return [] if totals is None else self._top(totals, k, None)

    def _term_scores(
        self, postings: _Postings, n: int, avgdl: float
    ) -> tuple[NDArray[np.int32], NDArray[np.float64]]:
        """This term's slots and BM25 contributions (0 for removed postings)."""
        slots = np.frombuffer(postings.slots, dtype=np.int32)
        tfs = np.frombuffer(postings.tfs, dtype=np.int32).astype(np.float64)
        lengths = np.frombuffer(postings.lengths, dtype=np.int32).astype(np.float64)
        df = postings.live
        idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        return slots, (idf * (K1 + 1)) * tfs / (tfs + K1 * (1 - B + B * lengths / avgdl))

    def _score(
        self, groups: list[tuple[str, ...]], k: int, wanted: list[int] | None
    ) -> list[tuple[int, float]]:
        totals = self._totals(groups)
        return [] if totals is None else self._top(totals, k, wanted)

    def _totals(self, groups: list[tuple[str, ...]]) -> NDArray[np.float64] | None:
        """BM25 of every doc slot for the query; None when no term matches."""
        n = len(self._doc_length)
        if n == 0:
            return None
        avgdl = max(self._total_length / n, 1e-9)
        totals = np.zeros(len(self._point_of), dtype=np.float64)
        matched = False
        for group in groups:
            present = [
                p for p in (self._postings.get(term) for term in group) if p is not None and p.live
            ]
            if not present:
                continue
            matched = True
            if len(present) == 1:  # a term's slots are unique: fancy-index add is exact
                slots, scores = self._term_scores(present[0], n, avgdl)
                totals[slots] += scores
                continue
            best = np.zeros_like(totals)
            for postings in present:
                slots, scores = self._term_scores(postings, n, avgdl)
                best[slots] = np.maximum(best[slots], scores)
            totals += best
        return totals if matched else None

    def _top(
        self, totals: NDArray[np.float64], k: int, wanted: list[int] | None
    ) -> list[tuple[int, float]]:
        if wanted is not None:
            candidates = np.fromiter(
                (self._slot_of[p] for p in set(wanted) if p in self._slot_of), dtype=np.int64
            )
        else:
            candidates = np.flatnonzero(totals)
        if candidates.size > k:
            values = totals[candidates]
            threshold = np.partition(values, candidates.size - k)[candidates.size - k]
            candidates = candidates[values >= threshold]
        values = totals[candidates]
        keep = values > 0
        candidates, values = candidates[keep], values[keep]
        point_ids = np.frombuffer(self._point_of, dtype=np.int64)[candidates]
        order = np.lexsort((point_ids, -values))[:k]
        return [(int(point_ids[i]), float(values[i])) for i in order]
