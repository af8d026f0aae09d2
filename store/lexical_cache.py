"""The word index's in-memory mirror: `lexical_postings`/`lexical_docs` held as flat arrays
(`store.lexical_postings`), so BM25 answers in milliseconds at a few bytes a posting.

The tables stay the source of truth (`store.lexical_index` writes them). The mirror loads them
once, applies staged writes once they commit, and checks a fingerprint of the tables before each
search — unless it is the sole writer's mirror (`store.sole_writer`) with nothing staged. What
it changes then to match the tables: `store.lexical_reconcile`; the rankings it answers with:
`store.lexical_ranking`. How it stays consistent and the measurements: docs/lexical_search.md.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from store import lexical_ranking, lexical_reconcile, meta
from store.bm25 import K1 as K1  # shared with the SQL scoring in store.lexical_index
from store.bm25 import B as B
from store.heap import large_blocks_mapped, return_freed_memory
from store.lexical_persist import IndexFile
from store.lexical_postings import CompactPostings
from store.lexical_reconcile import Staged
from store.lexical_tables import LoadStopped as LoadStopped  # store.lexical_index re-exports it
from store.lexical_tables import read_tables
from store.point_traits import PointTraits
from store.sole_writer import SOLE_WRITERS
from store.text_terms import Analyzer, default_analyzer

if TYPE_CHECKING:
    from store.lexical_posting_reads import Traits

GENERATION_KEY = "lexical.generation"  # bumped by every rebuild: every cache reloads

_FINGERPRINT_SQL = (
    "SELECT count(*), coalesce(sum(length), 0), coalesce(sum(point_id), 0), "
    f"(SELECT max(value) FROM meta WHERE key = '{GENERATION_KEY}') FROM lexical_docs"
)

_QUICK_SQL = (
    "SELECT count(*), max(point_id), "
    f"(SELECT max(value) FROM meta WHERE key = '{GENERATION_KEY}') FROM lexical_docs"
)
FULL_CHECK_SECONDS = 30.0  # the full fingerprint at least this often (writes behind the cache)

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


class LexicalCache:
    """An in-memory mirror of `lexical_postings`/`lexical_docs` that answers BM25 in ms.

    Each indexed point has a dense slot (0 … n, never reused until a reload), so a query adds
    each term's contributions into one float array by slot instead of hashing point ids
    (`CompactPostings` holds the arrays).
    Thread-safe (one lock; syncing reads through a cursor of its own). See the module
    docstring for how it stays consistent with the tables.
    """

    def __init__(
        self,
        analyzer: Analyzer | None = None,
        *,
        file: Path | None = None,
        write_file: bool = True,
        sole_writer_of: Path | None = None,
    ) -> None:
        """`file` (`lexical.idx`): open from it when it is usable, and (`write_file`) keep it
        written (`store.lexical_persist`); None keeps the mirror in memory only.
        `sole_writer_of`: the database file this process holds read-write, every write of
        the word index staged in this mirror (`store.sole_writer`): while nothing is staged
        and no other mirror claims the file, a search skips the sync check."""
        self.analyzer: Analyzer = analyzer or default_analyzer()
        self.file = None if file is None else IndexFile(file, writable=write_file)
        self.loaded_from: str | None = None  # "file" or "tables", as the last load did
        self._lock = threading.Lock()
        self._loaded = False
        self._index = CompactPostings()
        self._generation: str | None = None
        self._staged: dict[int, Staged] = {}
        self._in_flight = 0  # writes committing before they could be staged (`write_in_flight`)
        self._next_full_check = 0.0  # time.monotonic() of the next full fingerprint
        self.stats: Counter[str] = Counter()  # loads, diffs, staged_applied, …
        self._claim: str | None = None
        if sole_writer_of is not None:
            self._claim = SOLE_WRITERS.claim(sole_writer_of, self)

    # -- state

    @property
    def doc_count(self) -> int:
        """Points in the cache."""
        return self._index.doc_count

    def postings_bytes(self) -> int:
        """Bytes held by the arrays (not counting the term strings and their dict)."""
        return self._index.nbytes()

    @property
    def term_count(self) -> int:
        """Distinct terms the cache knows (some may have no live point left)."""
        return self._index.term_count

    def terms_of(self, point_id: int) -> tuple[str, ...]:
        """A point's distinct terms as last synced (empty when it is not indexed)."""
        with self._lock:
            return self._index.terms_of(point_id)

    def traits_of(self, point_ids: Sequence[int]) -> Traits | None:
        """The traits of these points as last synced (`store.point_traits`; words, days,
        answers, speakers in their order); None when one is not indexed or has none."""
        with self._lock:
            return self._index.traits_of(point_ids)

    def document_frequency(self, term: str) -> int:
        """How many points hold `term`, as last synced."""
        with self._lock:
            return self._index.document_frequency(term)

    def _fingerprint(self) -> Fingerprint:
        index = self._index
        return (index.doc_count, index.total_length, index.id_sum, self._generation)

    def _clear(self) -> None:
        self._index = CompactPostings()

    # -- loading and syncing

    def load(
        self, con: duckdb.DuckDBPyConnection, *, stop: Callable[[], bool] | None = None
    ) -> None:
        """(Re)build the whole cache from what is committed in `con`'s database: mapped from
        `file` when it is usable (then changes since it was written are replayed from the
        tables), else loaded from the tables. `stop()` is asked between batches of rows: True
        abandons the load (LoadStopped), leaving the cache empty — the store is closing, and
        nobody should wait for it."""
        with self._lock, _read_snapshot(con) as snapshot:
            generation = meta.get(snapshot, GENERATION_KEY)
            opened = None
            if self.file is not None:
                opened = self.file.open(snapshot, self.analyzer.name, generation)
            if opened is None:
                self._load(snapshot, stop=stop)
                return
            self._index, self._generation = opened, generation
            self._loaded = True
            self._next_full_check = 0.0  # the file may be older than the tables: diff now
            self.loaded_from = "file"
            self.stats["file_opens"] += 1
            self._sync(snapshot)

    def save_file(self, *, force: bool = False) -> bool:
        """Write `file` when it is missing, stale, or `force`, or when enough changed since it
        was written (`store.lexical_persist`); then map it in place of the arrays in memory
        if nothing changed meanwhile. False when nothing was written (or it failed: logged)."""
        file = self.file
        if file is None:
            return False
        with self._lock:
            if not self._file_wanted(file, force):
                return False  # (the usual open: glibc's heap is left as it is)
        with large_blocks_mapped(self._temporary_bytes):
            with self._lock:  # asked again: the cache may have changed meanwhile
                if not self._file_wanted(file, force):
                    return False
                snapshot = file.snapshot(self._index, self._generation)
            if snapshot is None or not file.write(snapshot):
                return False
            mapped = file.reopen(snapshot)
            with self._lock:
                unchanged = (
                    self._index is snapshot.index and self._index.changes == snapshot.changes
                )
                if mapped is not None and unchanged:
                    self._index = mapped
                    snapshot = replace(snapshot, index=mapped, changes=0)
                    return_freed_memory()  # the arrays just dropped were most of the heap
                file.mark(snapshot)
        return True

    def _file_wanted(self, file: IndexFile, force: bool) -> bool:
        """Whether `file` should be written now (call under the lock)."""
        return self._loaded and file.wanted(self._index, self.doc_count, force)

    def _temporary_bytes(self) -> int:
        """Above any temporary array a search makes: a float64 a slot (the scratch's size;
        no search holds more than every slot once)."""
        return 8 * (len(self._index.doc_lengths()) + 1024)

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
        with large_blocks_mapped(self._temporary_bytes):
            self._index = read_tables(con, stop)
        self._generation = generation
        self._loaded = True
        self._next_full_check = time.monotonic() + FULL_CHECK_SECONDS
        self.loaded_from = "tables"
        self.stats["loads"] += 1
        return_freed_memory()

    def close(self) -> None:
        """Forget everything, unmapping `file` (its mapping holds a descriptor): the store
        is closing. A later `load` starts again."""
        with self._lock:
            self._clear()
            self._loaded = False
            self.loaded_from = None
            if self.file is not None:
                self.file.forget()
            if self._claim is not None:
                SOLE_WRITERS.release(self._claim, self)
                self._claim = None

    def stage_add(
        self,
        point_id: int,
        length: int,
        counts: Counter[str],
        traits: PointTraits | None = None,
    ) -> None:
        """A write of this point is in flight; apply it once a search can see it."""
        with self._lock:
            staged = Staged(time.monotonic(), length, Counter(counts), traits)
            self._staged[point_id] = staged

    @contextmanager
    def write_in_flight(self) -> Iterator[None]:
        """A write whose point id is known only once it has committed (a save in one
        autocommitted statement) runs inside this, its `stage_add` before the end: until
        then a search syncs with the tables (it may see the commit before the staging)."""
        with self._lock:
            self._in_flight += 1
        try:
            yield
        finally:
            with self._lock:
                self._in_flight -= 1

    def stage_remove(self, point_id: int) -> None:
        """A removal of this point is in flight; apply it once a search can see it."""
        with self._lock:
            self._staged[point_id] = Staged(time.monotonic(), None, None)

    def sync(self, con: duckdb.DuckDBPyConnection) -> None:
        """Bring the cache to what is committed (one aggregate when nothing changed)."""
        with self._lock, _read_snapshot(con) as snapshot:
            self._sync(snapshot)

    def _catch_up(self, con: duckdb.DuckDBPyConnection) -> None:
        """`_sync` before a search, unless this mirror is the sole writer's (`_trusted`) and
        nothing is staged: then nothing was committed since the last sync that it does not
        hold (~0.5–1 ms of DuckDB saved a search). The full check still runs when due."""
        if (
            self._loaded
            and not self._staged
            and not self._in_flight
            and self._trusted()
            and time.monotonic() < self._next_full_check
        ):
            return
        with _read_snapshot(con) as snapshot:
            self._sync(snapshot)

    def _trusted(self) -> bool:
        return self._claim is not None and SOLE_WRITERS.alone(self._claim, self)

    def _sync(self, con: duckdb.DuckDBPyConnection) -> None:
        """Catch up with what is committed: a quick check (count and highest id come from
        DuckDB's statistics: O(1)) every time, the full fingerprint (sums over every row:
        O(n), ~1 ms per 100k points) when the quick one or staged writes say something
        changed, and at least every FULL_CHECK_SECONDS for writes that bypassed the cache."""
        if not self._loaded:
            self._load(con)
            return
        self.stats["sync_checks"] += 1
        count, max_id, generation = con.execute(_QUICK_SQL).fetchall()[0]
        if generation != self._generation:
            self._load(con, new_generation=True)
            return
        if self._index.slot_count > 2 * int(count) + 10_000:
            self._load(con)  # many removed slots: rebuild compactly
            return
        staged = bool(self._staged)
        if staged:
            lexical_reconcile.apply_staged(con, self._index, self._staged, self.stats)
        quick = (int(count), None if max_id is None else int(max_id))
        unchanged = quick == (self._index.doc_count, self._index.max_id())
        # the sole writer's staged writes, all applied, leave nothing for the full check
        settled = not staged or (not self._staged and self._trusted())
        if unchanged and settled and time.monotonic() < self._next_full_check:
            return
        count, total, id_sum, generation = con.execute(_FINGERPRINT_SQL).fetchall()[0]
        self._next_full_check = time.monotonic() + FULL_CHECK_SECONDS
        if self._fingerprint() == (int(count), int(total), int(id_sum), generation):
            return
        if not lexical_reconcile.diff(con, self._index, self.stats):
            self._load(con)  # so much changed that the whole tables load quicker

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
            self._catch_up(con)
            return lexical_ranking.score(self._index, groups, k, wanted)

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
            self._catch_up(con)
            return lexical_ranking.ranked_and_within(self._index, groups, k, list(subset))

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
            chosen = lexical_ranking.feedback_terms(self._index, seeds, terms, asked)
            return lexical_ranking.ranked(self._index, chosen, k) if chosen else []
