"""Upkeep of `vectors.usearch`, the derived vector index of one data dir.

DuckDB is the source of truth, vectors included. The index file is rebuilt from it whenever
it is missing, damaged or of another dimension (in a background thread; meanwhile `search`
runs an exact search over the stored vectors), and reconciled with it on every open, so a
crash between a commit and the index update loses nothing.

A save's add runs in the index thread after its commit (`submit_add`); the save does not
wait for it. Whatever reads or changes the index next — a search, `remove`, `add`, `state`,
`upkeep`, `close` — first waits for the adds submitted before it (`flush`), so the next recall
finds the point by its vector, a forget is never undone by a late add, and the index is the
same as if every add had run in the save. A crash before an add ran loses nothing: the point
and its vector are committed, and the open reconciles the index with them.

The file is saved (atomically) on close and after `SAVE_EVERY` changes or 1 % of its size,
whichever is more: a save rewrites the whole file (161 MB at 100k points), so saving every
200 changes made the disk the bottleneck of the commits around it. A crash loses at most
that many index entries, which the next open reconciles from the database. From
`LAZY_SAVE_FROM` vectors on, close, the open's reconcile and the upkeep job save it only
once `SAVE_EVERY` changes are unsaved: quitting after a few saves at 1M took ~10 s (the
1.6 GB file rewritten), and the next open adds the few it lacks back instead (~1 ms each).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from store import point_reads
from store.database import Database
from store.point_store import PointStore
from store.vector_arrays import exact_search
from store.vector_index import VectorIndex
from store.vector_index_file import INDEX_FILENAME

log = logging.getLogger("straylight.memory")

SAMPLE_SIZE = 8  # vectors compared with the database's when an index file is loaded
SAMPLE_MIN_COSINE = 0.99  # f16 storage keeps a vector's cosine with itself above 0.999

SAVE_EVERY = 200  # index changes between two saves of vectors.usearch, at least …
SAVE_FRACTION = 100  # … and at least 1/100 of the index: a save rewrites the whole file
# From this many vectors on, close and open save the file only once `SAVE_EVERY` changes are
# unsaved: fewer are added back from the database by the next open (~1 ms each at 1M), where
# a save rewrites the whole file (161 MB, ~1 s at 100k; 1.6 GB, ~10 s at 1M) at every quit.
LAZY_SAVE_FROM = 10_000
MAX_PENDING_ADDS = 256  # submitted adds not yet run; one more waits for them (backpressure)


class VectorKeeper:
    """The vector index of a data dir for one embedding model: open, add, remove, search,
    reconcile and save. Thread-safe; `lock` also guards the caller's first-vector setup."""

    def __init__(
        self, home: Path, db: Database, embed_model: str, *, read_only: bool = False
    ) -> None:
        self.path = home / INDEX_FILENAME
        self.db = db
        self.embed_model = embed_model
        self.read_only = read_only  # never save, rebuild or delete: search exactly instead
        self._index: VectorIndex | None = None
        self.lock = threading.RLock()
        self._worker = ThreadPoolExecutor(1, thread_name_prefix="index-add")
        self._queue_lock = threading.Lock()
        self._last_add: Future[None] | None = None  # the newest submitted add (FIFO thread)
        self._pending = 0  # submitted adds not yet run
        self._rebuild_thread: threading.Thread | None = None
        self._saving: threading.Thread | None = None
        self._unsaved = 0  # index changes since the file was last saved
        self._file_holds_index = False  # the file is this index, but for the unsaved changes
        self._fallback: tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]] | None = None
        self._rebuild_told = ""  # the rebuild the upkeep job last reported (its reason)

    @property
    def index(self) -> VectorIndex | None:
        """The index, once the adds submitted before this call have run."""
        self.flush()
        return self._index

    def discard_file(self) -> None:
        """Delete the index file (its vectors are of a model no longer used)."""
        self._discard()

    def _discard(self) -> None:
        """Remove the file; one that cannot be removed (a folder in its place) is logged:
        the index lives in memory and every save fails, logged, until it is moved aside."""
        try:
            self.path.unlink(missing_ok=True)
        except OSError as error:
            log.error("cannot remove %s (%s): the index stays in memory", self.path, error)

    # ---- opening ----------------------------------------------------------------------
    def open(self, dim: int, *, first: bool = False, identity: bytes | None = None) -> None:
        """Load the index, reconciled with the database, or rebuild it in the background.

        A file of another identity (another data dir's, another model's) or whose sampled
        vectors differ from the database's is stale and rebuilt. Read-only, nothing is
        written: a stale or missing index stays so and searches run exactly."""
        index = VectorIndex(self.path, dim, identity=identity)
        state = index.open(clean=not self.read_only)
        if first:  # the first vector ever: an empty index is in sync
            self._discard()
            index.open()
            index.state = state = "in_sync"
        with self.lock:
            self._index = index
        if state == "in_sync":
            self._file_holds_index = True  # loaded from it
            ids = point_reads.vector_ids(self.db, self.embed_model, dim)
            report = index.reconcile(ids, lambda missing: self._vectors(missing, dim))
            problem = check_sample(index, ids, lambda some: self._vectors(some, dim))
            if problem is not None:
                index.state, index.reason = "stale", problem
                state = "stale"
            elif (report.added or report.removed) and not self.read_only:
                log.info("index reconciled: +%d −%d", report.added, report.removed)
                if not self._lazy_after(index, report.added + report.removed):
                    if len(index) < LAZY_SAVE_FROM:
                        self._save(index)
                    else:  # a large file: rewritten in the background, the open goes on
                        with self.lock:
                            self._save_in_background(index)
        if state == "in_sync":
            return
        if self.read_only:
            log.info("vector index %s (%s): exact search in this process", state, index.reason)
            return
        log.warning("vector index %s (%s): rebuilding in the background", state, index.reason)
        self._start_rebuild(index, dim)

    def _vectors(self, ids: npt.NDArray[Any], dim: int) -> npt.NDArray[np.float32]:
        return point_reads.vector_matrix(self.db, ids, dim)

    def _all_vectors(self, dim: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        return PointStore(self.db).vectors(self.embed_model, dim)

    def _vectors_for_rebuild(
        self, dim: int
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """Every vector, then DuckDB's cached copy of them dropped: the read pulled the whole
        vector column into its buffer pool (312 MiB at 100k), which nothing reads again."""
        found = self._all_vectors(dim)
        self.db.drop_cached_blocks()
        return found

    def _start_rebuild(self, index: VectorIndex, dim: int) -> None:
        self._file_holds_index = False  # until the rebuilt index is saved

        def rebuild() -> None:
            try:
                ids, matrix = self._vectors_for_rebuild(dim)
                self._fallback = (ids, matrix)  # searches run exactly over these meanwhile
                index.rebuild(ids, matrix)
                log.info("vector index rebuilt with %d vectors", len(ids))
            except Exception:
                log.exception("rebuilding the vector index failed")
            finally:
                self._fallback = None

        self._rebuild_thread = threading.Thread(target=rebuild, name="index-rebuild", daemon=True)
        self._rebuild_thread.start()

    # ---- changes ----------------------------------------------------------------------
    def submit_add(self, ids: Sequence[int], vectors: npt.ArrayLike) -> Future[None]:
        """`add` in the index thread, for a committed point: the caller need not wait (a
        failure is logged; the open or the upkeep reconciles). Later reads wait for it.
        Pass vectors nobody changes afterwards (the add may run later)."""
        with self._queue_lock:
            backlog = self._pending >= MAX_PENDING_ADDS
        if backlog:
            self.flush()
        with self._queue_lock:
            try:
                future = self._worker.submit(self._add_logged, ids, vectors)
            except RuntimeError:  # closed meanwhile: the next open reconciles the point
                log.info("index closed: %d vector(s) left for the next open", len(ids))
                done: Future[None] = Future()
                done.set_result(None)
                return done
            self._pending += 1
            self._last_add = future
        return future

    def flush(self) -> None:
        """Wait until the adds submitted so far have run (no-op in the index thread itself).
        Call it without holding `lock`: the adds take it."""
        with self._queue_lock:
            last = self._last_add
        if last is None or threading.current_thread().name.startswith("index-add"):
            return
        with contextlib.suppress(Exception):  # logged by _add_logged
            last.result()

    def _add_logged(self, ids: Sequence[int], vectors: npt.ArrayLike) -> None:
        try:
            self._add_now(ids, vectors)
        except Exception:
            log.exception("adding %d vector(s) to the index failed (reconciled later)", len(ids))
        finally:
            with self._queue_lock:
                self._pending -= 1

    def add(self, ids: Sequence[int], vectors: npt.ArrayLike) -> None:
        """Add vectors now (after the adds submitted before)."""
        self.flush()
        self._add_now(ids, vectors)

    def _add_now(self, ids: Sequence[int], vectors: npt.ArrayLike) -> None:
        with self.lock:
            index = self._index
            if index is None or not ids:
                return
            index.add(np.asarray(ids, dtype=np.int64), np.asarray(vectors, dtype=np.float32))
            self._unsaved += len(ids)
            if self._unsaved >= max(SAVE_EVERY, len(index) // SAVE_FRACTION):
                self._save_in_background(index)

    def _save_in_background(self, index: VectorIndex) -> None:
        """Save in the index-save thread, unless a save is running (call under `lock`, or
        before anything else can change the index)."""
        if not (self._saving and self._saving.is_alive()):
            self._unsaved = 0
            self._saving = threading.Thread(
                target=self._save, args=(index,), name="index-save", daemon=True
            )
            self._saving.start()

    def _lazy_after(self, index: VectorIndex, reconciled: int) -> bool:
        """Count the changes a reconcile made; whether the file may still lag (`_lazy`)."""
        with self.lock:
            self._unsaved += reconciled
            return self._lazy(index)

    def _lazy(self, index: VectorIndex) -> bool:
        """Whether the file may lag the index by the unsaved changes (`LAZY_SAVE_FROM`)."""
        return (
            len(index) >= LAZY_SAVE_FROM
            and self._unsaved < SAVE_EVERY
            and self._file_holds_index
            and self.path.exists()
        )

    def _save(self, index: VectorIndex) -> bool:
        """Save vectors.usearch (also off the save path: searches go on; a crash is
        reconciled). A failed save is logged, never raised: the database holds every vector.
        A read-only process never saves."""
        if self.read_only:
            return False
        try:
            index.save()
        except OSError:
            log.exception("saving the vector index failed (it is rebuilt on open)")
            return False
        self._file_holds_index = True
        return True

    def remove(self, ids: Sequence[int]) -> None:
        self.flush()  # an add still queued would bring a removed point back
        with self.lock:
            if self._index is not None and ids:
                self._index.remove(np.asarray(ids, dtype=np.int64))
                self._unsaved += len(ids)

    # ---- reading ----------------------------------------------------------------------
    def search(self, query: npt.NDArray[np.float32], k: int) -> list[tuple[int, float]]:
        """The `k` nearest points by cosine; exact over the stored vectors while rebuilding.
        Empty without an index or for a query of another dimension."""
        self.flush()  # the point a save just committed is found
        with self.lock:
            index = self._index
        if index is None or index.ndim != query.shape[-1]:
            return []
        if index.state == "in_sync":
            return [(int(pid), float(score)) for pid, score in index.search(query, k)]
        fallback = self._fallback
        ids, matrix = fallback if fallback else self._all_vectors(index.ndim)
        return [(int(pid), float(s)) for pid, s in exact_search(query, ids, matrix, k)]

    def state(self) -> tuple[str, int] | None:
        """(state, size) of the index; None when there is none yet."""
        self.flush()
        with self.lock:
            index = self._index
        if index is None:
            return None
        return index.state, len(index)

    def stale_detail(self) -> tuple[str, int | None] | None:
        """(why, vectors its file holds) when the index is stale — a file this process does
        not use (another data dir's or model's, damaged, other vectors) —; else None."""
        with self.lock:
            index = self._index
        if index is None or index.state != "stale":
            return None
        return index.reason, index.file_vectors

    # ---- upkeep and closing -----------------------------------------------------------
    def upkeep(self) -> dict[str, Any]:
        """The index-upkeep job: reconcile with the database and save (atomically) when it
        changed (from `LAZY_SAVE_FROM` vectors, once `SAVE_EVERY` changes are unsaved). Does
        nothing while a rebuild runs."""
        self.flush()
        with self.lock:
            index = self._index
        if index is None:
            return {"state": "none", "added": 0, "removed": 0, "saved": False}
        if index.state != "in_sync":
            return {"state": index.state, "added": 0, "removed": 0, "saved": False}
        # a rebuild since the last upkeep (at the open: a missing or foreign file) is named once
        reason = index.reason if index.reason.startswith("rebuilt") else ""
        rebuilt = reason if reason != self._rebuild_told else ""
        self._rebuild_told = reason
        dim = index.ndim
        ids = point_reads.vector_ids(self.db, self.embed_model, dim)
        report = index.reconcile(ids, lambda missing: self._vectors(missing, dim))
        saved = False
        lazy = self._lazy_after(index, report.added + report.removed)
        if index.dirty and not lazy:
            saved = self._save(index)
            with self.lock:
                self._unsaved = 0
        return {
            "state": index.state,
            "added": report.added,
            "removed": report.removed,
            "saved": saved,
            "rebuilt": rebuilt or None,
        }

    def wait(self, timeout: float | None = None) -> None:
        """Block until the submitted adds, a background rebuild and a save finished."""
        self.flush()
        for thread in (self._rebuild_thread, self._saving):
            if thread is not None:
                thread.join(timeout)

    def close(self) -> None:
        """Run the submitted adds, save a changed index (from `LAZY_SAVE_FROM` vectors, once
        `SAVE_EVERY` changes are unsaved: the next open adds fewer back); stop the index
        thread and unmap the file."""
        self._worker.shutdown(wait=True)
        if self._saving is not None:
            self._saving.join()  # a background save of this index ends first
        with self.lock:
            index = self._index
            if index is not None and index.dirty and not self._lazy(index):
                self._save(index)
            if index is not None:
                index.close()  # a viewed file is unmapped


def check_sample(
    index: VectorIndex,
    ids: npt.NDArray[np.int64],
    fetch: Callable[[npt.NDArray[np.int64]], npt.NDArray[np.float32]],
) -> str | None:
    """Compare up to SAMPLE_SIZE of the index's vectors with the database's: why they
    differ (an index made from other vectors under the same ids), or None."""
    if not len(ids):
        return None
    step = max(1, len(ids) // SAMPLE_SIZE)
    some = np.asarray(ids[::step][:SAMPLE_SIZE], dtype=np.int64)
    held = index.stored_vectors([int(i) for i in some])
    for point_id, stored in zip(some, fetch(some), strict=True):
        got = held.get(int(point_id))
        if got is None:
            return f"point {int(point_id)} is missing from the index"
        norms = float(np.linalg.norm(got) * np.linalg.norm(stored))
        if norms == 0.0 or float(np.dot(got, stored)) / norms < SAMPLE_MIN_COSINE:
            return f"the index's vector of point {int(point_id)} is not the database's"
    return None
