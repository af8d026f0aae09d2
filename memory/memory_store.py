"""Layer 3, the semantic memory: points in DuckDB, a derived usearch index, BM25 in DuckDB.

`MemoryStore` is the one object the turn engine, the CLI and the TUI talk to. Its methods
are synchronous and thread-safe (callers run them in worker threads); embedding is not its
business — callers pass vectors in, or an async `embed` function to the async helpers in
`memory/turn_memory.py`. It opens and closes the memory and keeps its embedding dimension;
the other jobs live in their own modules: writing points (`memory.point_writes`), status
and its counters (`memory.store_status`), recall (`memory.recall`), ingest
(`memory.ingest`), the RAM estimate (`memory.headroom`) and the upkeep of
`vectors.usearch` (`store.vector_upkeep`).

* DuckDB is the source of truth, vectors included. `vectors.usearch` is rebuilt from it
  whenever it is missing, damaged, of another dimension, or made for another embedding
  model; meanwhile recall runs an exact search over the stored vectors.
* A point and its lexical postings are written in one transaction; the vector index follows
  after the commit and is reconciled with the database on every open, so a crash between
  the two loses nothing.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memory import ingest, point_writes, store_status
from memory.embedding_check import vector_problem
from memory.embedding_space import (
    EmbeddingSpace,
    record_space,
    resolve_space,
    stored_spelling,
)
from memory.headroom import Headroom, headroom, ram_estimate_bytes
from memory.ingest import IngestPlan, IngestReport
from memory.neighbour_words import reindex_texts
from memory.open_ahead import drop_open_ahead, start_open_ahead
from memory.pinned_points import PinnedPoints
from memory.point_traits import fill_missing_traits, point_traits
from memory.recall import RecallMode, lexical_text
from memory.recall import (
    recall as recall_points,
)
from memory.recall_block import RecallHit, RecallResult, format_recall_block
from memory.save_filter import SaveFilter
from memory.settings_models import MemoryConfig
from store import lexical_index, point_reads
from store.clock import Clock
from store.database import (
    BACKGROUND_CHECKPOINT_MIN_BYTES,
    Cursor,
    Database,
    database_path,
    open_database,
)
from store.lexical_file import LEXICAL_FILENAME
from store.lexical_index import LexicalCache
from store.point_store import PointStore
from store.row_file import ROWS_FILENAME, RowFile
from store.side_thread import SideThread
from store.vector_upkeep import INDEX_FILENAME, VectorKeeper

__all__ = [  # what callers import from here, besides MemoryStore and its config
    "INDEX_FILENAME",
    "Headroom",
    "IngestPlan",
    "IngestReport",
    "MemoryConfig",
    "MemoryStore",
    "RecallHit",
    "RecallMode",
    "RecallResult",
    "format_recall_block",
    "headroom",
    "lexical_text",
    "ram_estimate_bytes",
]

log = logging.getLogger("straylight.memory")


class MemoryStore:
    """Points, their vectors and their words, for one data dir."""

    def __init__(
        self, home: Path, config: MemoryConfig, db: Database, *, read_only: bool = False
    ) -> None:
        self.home = home
        self.config = config
        self.db = db
        self.read_only = read_only  # a reading command: nothing in the data dir is written
        self.points = PointStore(db)
        # rows.dat: a recall's hit rows without a DuckDB statement (a writer's only)
        self.rows = None if read_only else RowFile(home / ROWS_FILENAME)
        self.points.rows = self.rows
        self._rows_thread: threading.Thread | None = None
        self.filter = SaveFilter(config.save_filter)
        self.lexical = LexicalCache(  # a writer's mirror skips its sync check (sole_writer)
            file=home / LEXICAL_FILENAME,
            write_file=not read_only,
            sole_writer_of=None if read_only else db.path,
        )
        self.lexical_ready = False  # the word index's in-memory mirror is loaded
        self.vectors = VectorKeeper(home, db, config.embed_model, read_only=read_only)
        self.pins = PinnedPoints()
        # One document ingest at a time (`TurnMemory.ingest_doc`, from plan to write): two
        # clients importing one file at once each planned "add it all" and stored it twice.
        self.ingesting = threading.Lock()
        self.side = SideThread("recall-words")  # a recall ranks the words there (recall.py)
        self._lexical_thread: threading.Thread | None = None
        self._lexical_cursor: Cursor | None = None  # while it loads
        self._closing = False
        self._dim: int | None = None
        self.space = EmbeddingSpace(config.embed_model, None, None)

    # ---- opening and closing ----------------------------------------------------------
    @classmethod
    def open(
        cls, home: Path, config: MemoryConfig, *, clock: Clock, read_only: bool = False
    ) -> MemoryStore:
        """Open (or create) the database, then load or rebuild the index in the background.

        `read_only` (`status`, `recall`, the list commands): DuckDB's read-only mode, no
        index saved, rebuilt or deleted, no counter bumped — the data dir's bytes stay as
        they were. Raises `store.database.DatabaseError` subclasses with one-line messages.

        The derived files' checks start first, in threads (`start_open_ahead`): they need
        nothing from the database and run while DuckDB opens (~0.5 s at 1M points)."""
        start_open_ahead(home)
        try:
            db = open_database(database_path(home), clock=clock, read_only=read_only)
            try:
                spelling = stored_spelling(db, config.embed_model)
            except BaseException:
                db.close()
                raise
            if spelling != config.embed_model:
                config = config.model_copy(update={"embed_model": spelling})
            store = cls(home, config, db, read_only=db.read_only)
            try:
                store._start()
            except BaseException:
                store._stop_lexical_load()  # it reads the database being closed
                db.close()
                raise
        except BaseException:
            drop_open_ahead(home)
            raise
        drop_open_ahead(home, words=False)  # (when the vector open did not take its check)
        return store

    def _start(self) -> None:
        if not self.read_only:
            with self.db.transaction() as cur:
                current = lexical_index.ensure_analyzer(cur, analyzer=self.lexical.analyzer)
                if not current:  # the tokenizer changed since these points were indexed
                    points = point_reads.points_to_reindex(cur)
                    texts = reindex_texts(points)  # neighbours too
                    traits = {p.id: point_traits(p.content, p.created_at) for p in points}
                    lexical_index.reindex_all(
                        cur, texts, analyzer=self.lexical.analyzer, traits=traits
                    )
                elif lexical_index.traits_missing(cur):  # indexed before schema 7 or 8: once,
                    fill_missing_traits(cur)  # ~5 s per 100k points
        for point_id in point_reads.pinned_ids(self.db):
            self.pins.add(point_id)
        self.pins.set_vectors(
            point_reads.vectors_of(self.db, sorted(self.pins.ids), self.config.embed_model)
        )
        if self.pins.ids:  # what that read cached of the vector column (13 MB at 100k)
            self.db.drop_cached_blocks()  # before the load's long cursor, which it would wait for
        self.space = resolve_space(self.db, self.config.embed_model, read_only=self.read_only)
        self._dim = self.space.dim
        # The word index loads while the vector file is loaded (~1.1 s at 1M): the memory
        # answers with words and vectors ~1.5 s sooner at 1M. It starts after the analyzer
        # check (it never loads postings a re-index is replacing) and after `database.id`
        # exists (a new store's first open makes it; lexical.idx is tied to it).
        self._lexical_thread = threading.Thread(
            target=self._load_lexical, name="lexical-load", daemon=True
        )
        self._lexical_thread.start()
        if self.rows is not None:  # checked and caught up once the words are in
            self._rows_thread = threading.Thread(
                target=self._load_rows, args=(self.rows,), name="rows-load", daemon=True
            )
            self._rows_thread.start()
        if self._dim is not None:
            self.vectors.open(self._dim, identity=self.space.identity)

    def _load_lexical(self) -> None:
        try:
            with self.db.cursor() as cur:
                self._lexical_cursor = cur
                if not self._closing:
                    self.lexical.load(cur, stop=lambda: self._closing)
                    self.lexical_ready = True
                    self.db.drop_cached_blocks()  # the tables it read: 14 MB at 100k
                    self.lexical.save_file()  # lexical.idx, when missing or stale
        except Exception:
            if self._closing:
                log.info("the word-index load stopped: the store is closing")
            else:
                log.exception("loading the lexical cache failed; recall uses SQL")
        finally:
            self._lexical_cursor = None
            drop_open_ahead(self.home, vectors=False)  # (when the load did not take its check)

    def _load_rows(self, rows: RowFile) -> None:
        """`rows.dat`'s load, after the word index's: it never slows the open (a first
        build reads every point's content: seconds at a million points); recall reads the
        hit rows from DuckDB until it is done."""
        if self._lexical_thread is not None:
            self._lexical_thread.join()
        if not self._closing or rows.forgets_pending:  # a forget's text must not stay there
            rows.load(self.db, lambda: self._closing)

    def wait_for_words(self, timeout: float | None = None) -> bool:
        """Block until the word index's load ended; whether its mirror is in (recall then
        ranks words without SQL)."""
        if self._lexical_thread is not None:
            self._lexical_thread.join(timeout)
        return self.lexical_ready

    def wait_until_ready(self, timeout: float | None = None) -> None:
        """Block until a background index rebuild and the lexical load finished (tests)."""
        self.vectors.wait(timeout)
        if self._lexical_thread is not None:
            self._lexical_thread.join(timeout)
        if self._rows_thread is not None:
            self._rows_thread.join(timeout)

    def close(self) -> None:
        """Save a changed index and close the database. A word-index load still running
        is interrupted (it would make quitting wait: ~2.5 s at 100k points, ~70 s at 1M)."""
        self.side.stop()  # a recall's word ranking in flight ends first
        self._stop_lexical_load()
        if self.lexical_ready:
            self.lexical.save_file()  # when enough changed since it was written
        self.lexical_ready = False
        self.lexical.close()  # unmaps lexical.idx
        if self.rows is not None:
            self.rows.close()
        self.vectors.close()
        self.db.close()

    def _stop_lexical_load(self) -> None:
        """Interrupt a word-index load still running and wait for its thread."""
        self._closing = True
        loading = self._lexical_cursor
        if loading is not None:
            with contextlib.suppress(Exception):
                loading.interrupt()
        self.wait_until_ready(timeout=30)

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # ---- the embedding dimension ------------------------------------------------------
    @property
    def embed_dim(self) -> int | None:
        """The dimension of this store's vectors (None until the first one), kept in memory."""
        return self._dim

    def change_dimension(self, dim: int) -> None:
        """The embedding model now gives vectors of `dim` (re-pulled under the same name):
        they become this store's; points with vectors of the old size are re-embedded by
        backfill, and the index is rebuilt from the vectors of the new size."""
        with self.vectors.lock:
            log.warning(
                "embedding dimension of %s changed from %s to %d: re-embedding",
                self.config.embed_model,
                self._dim,
                dim,
            )
            record_space(self.db, self.config.embed_model, dim)
            self._dim = dim
            self.vectors.open(dim, identity=self.space.identity)

    def _accept_dimension(self, dim: int) -> bool:
        """The first vector decides the dimension; a different one is refused (logged)."""
        current = self.embed_dim
        if current is None:
            with self.vectors.lock:
                if self.embed_dim is None:
                    record_space(self.db, self.config.embed_model, dim)
                    self._dim = dim
                    self.vectors.open(dim, first=True, identity=self.space.identity)
            return self.embed_dim == dim
        if current != dim:
            log.error("embedding of dimension %d, expected %d: stored without vector", dim, current)
            return False
        return True

    def usable_vector(self, vector: Sequence[float] | None) -> Sequence[float] | None:
        """`vector` if it can be stored here (finite, sane, of this store's dimension; the
        first one decides it), else None: the point is stored without one."""
        return self._usable_vector(vector)

    def _usable_vector(self, vector: Sequence[float] | None) -> Sequence[float] | None:
        if vector is None or len(vector) == 0:
            return None
        problem = vector_problem(vector)
        if problem is not None:  # NaN, inf, absurd: stored without vector, backfilled later
            log.warning("unusable embedding (%s): stored without vector", problem)
            return None
        return vector if self._accept_dimension(len(vector)) else None

    def ids_to_embed(self) -> list[int]:
        """Points without a vector of this model and dimension (backfill's work)."""
        return self.points.ids_without_vector(self.config.embed_model, self.embed_dim)

    # ---- writing points (memory.point_writes) -----------------------------------------
    save = point_writes.save  # one message as a point, through the save filter
    skip_rule = point_writes.skip_rule  # the save filter's verdict, audited
    load_dedup_memory = point_writes.load_dedup_memory  # a conversation's last saves
    remember = point_writes.remember  # a pinned point that bypasses the filter
    forget = point_writes.forget  # a point out of DuckDB, the word and vector indexes
    set_pinned = point_writes.set_pinned
    store_vectors = point_writes.store_vectors  # backfill's vectors
    after_replace = point_writes.after_replace  # the index and pins after an ingest

    # ---- status and its counters (memory.store_status) --------------------------------
    count_embed_requests = store_status.count_embed_requests
    count_recall_failure = store_status.count_recall_failure
    status = store_status.status  # the memory part of `straylight status --json`
    embedding_status = store_status.embedding_status
    index_state = store_status.index_state
    index_note = store_status.index_note  # the plain `status` line of a stale index

    # ---- the other jobs, in their own modules ----------------------------------------
    plan_ingest = ingest.plan_ingest  # compare a document with its stored doc points
    apply_ingest = ingest.apply_ingest  # write a planned ingest
    recall = recall_points  # hybrid recall (memory.recall)

    def texts_of(self, ids: Sequence[int]) -> dict[int, str]:
        return {pid: row.content for pid, row in point_reads.hit_rows(self.db, ids).items()}

    def upkeep_index(self) -> dict[str, Any]:
        """The index-upkeep job (`store.vector_upkeep.VectorKeeper.upkeep`), then DuckDB's
        write-ahead log folded in (`Database.checkpoint`): off the saves' path."""
        report = self.vectors.upkeep()
        report["checkpointed"] = self.db.checkpoint(BACKGROUND_CHECKPOINT_MIN_BYTES)
        return report
