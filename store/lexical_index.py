"""The lexical half of hybrid recall: Okapi BM25 over two DuckDB tables.

DuckDB is the source of truth: `lexical_postings(term, point_id, tf)` and
`lexical_docs(point_id, length)`, with the analyzer and a generation in `meta`. Terms come
from `store.text_terms`; a query is groups of alternative stems and a document scores the best
alternative of each group. Writes are incremental, inside the transaction that writes the
point, so the index never disagrees with the points. The formula, the write and reindex rules
and the measurements: docs/lexical_search.md.
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

K1 = 1.2
B = 0.75

ANALYZER_KEY = "lexical.analyzer"
GENERATION_KEY = "lexical.generation"

# Staged changes that never became visible (rolled back) are forgotten after this long;
# should such a transaction commit later, the fingerprint check still finds it.
STAGED_TTL_SECONDS = 600.0
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
    that already exists."""

    counts: Counter[str]

    @property
    def length(self) -> int:
        return sum(self.counts.values())

    @property
    def terms(self) -> list[str]:
        return list(self.counts)

    @property
    def tfs(self) -> list[int]:
        return list(self.counts.values())


def analyse(
    text: str, *, analyzer: Analyzer | None = None, cache: LexicalCache | None = None
) -> PointWords:
    """The word-index rows of `text` (with the cache's analyzer when a cache is given)."""
    return PointWords(Counter(_analyzer(analyzer, cache).terms(text)))


def index_point(
    con: duckdb.DuckDBPyConnection,
    point_id: int,
    text: str,
    *,
    analyzer: Analyzer | None = None,
    cache: LexicalCache | None = None,
    new: bool = False,
) -> None:
    """Index one point's text: its postings and its length, in the caller's transaction.

    `new=True` (a point inserted in this same transaction) skips the look-up for an
    earlier version of it.

    Call it inside the transaction that inserts the point (docs/lexical_search.md), so that
    both commit or neither does. Touches only this point's rows. A point that is already
    indexed is replaced. `cache`, when given, is told about the change (it applies it once
    the change is committed). `analyzer` defaults to the cache's, else the default one.
    """
    words = analyse(text, analyzer=analyzer, cache=cache)
    counts, length = words.counts, words.length
    if (
        not new
        and con.execute("SELECT 1 FROM lexical_docs WHERE point_id = ?", [point_id]).fetchall()
    ):
        _delete_rows(con, point_id)
    con.execute("INSERT INTO lexical_docs VALUES (?, ?)", [point_id, length])
    if counts:
        con.execute(
            "INSERT INTO lexical_postings SELECT unnest(?::VARCHAR[]), ?, unnest(?::INTEGER[])",
            [words.terms, point_id, words.tfs],
        )
    if cache is not None:
        cache.stage_add(point_id, length, counts)


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
) -> int:
    """Rebuild the whole index from `(point_id, text)` rows; returns the number indexed.

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

    def flush() -> None:
        if doc_ids:
            con.execute(
                "INSERT INTO lexical_docs SELECT unnest(?::BIGINT[]), unnest(?::INTEGER[])",
                [doc_ids, lengths],
            )
        if terms:
            con.execute(
                "INSERT INTO lexical_postings SELECT unnest(?::VARCHAR[]), "
                "unnest(?::BIGINT[]), unnest(?::INTEGER[])",
                [terms, pids, tfs],
            )
        for buffer in (terms, pids, tfs, doc_ids, lengths):
            buffer.clear()

    for point_id, text in rows:
        if point_id in seen:  # the last text of a repeated id would win in SQL: refuse instead
            raise ValueError(f"point {point_id} given twice")
        seen[point_id] = None
        counts = Counter(a.terms(text))
        doc_ids.append(point_id)
        lengths.append(sum(counts.values()))
        for term, tf in counts.items():
            terms.append(term)
            pids.append(point_id)
            tfs.append(tf)
        if len(terms) >= _BULK_CHUNK:
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
