"""The USearch ANN index over point vectors (`vectors.usearch`), derived from DuckDB.

DuckDB holds every point's vector; this file is a cache that can always be rebuilt from it.
`VectorIndex` views it where it lies (`store.vector_view`: the changes since are kept beside
the view, and the file is loaded only once they outgrow it or at a save), keeps it in step
with the database (`add`, `remove`, `reconcile`), rebuilds it in a background thread
(`rebuild`), and saves it atomically (`save`). The brute-force fallback while `state` is not
"in_sync" is `store.vector_arrays.exact_search`. States, file format, parameters and their
measurements: docs/vector_index.md.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal

import numpy as np
import numpy.typing as npt

from store.read_write_lock import ReadWriteLock
from store.vector_arrays import (
    EXACT_BELOW,
    MAX_KEY,
    FloatMatrix,
    Hits,
    KeysLike,
    as_keys,
    as_matrix,
    as_query,
)
from store.vector_index_file import (
    NO_IDENTITY,
    SCALAR_KINDS,
    check_header,
    file_vector_count,
    remove_stale_temp_files,
    take_checked_index_file,
    write_atomically,
)
from store.vector_view import ViewedIndex

if TYPE_CHECKING:  # usearch is imported by the first index made (an empty store makes none)
    from usearch.index import Index

# The `X as X` imports: other modules import these names from here, as before.
from store.sorted_keys import sorted_unique as sorted_unique
from store.vector_index_file import INDEX_FILENAME as INDEX_FILENAME
from store.vector_index_file import IndexDType as IndexDType
from store.vector_index_file import IndexFileError as IndexFileError

IndexState = Literal["in_sync", "missing", "rebuilding", "stale"]

DEFAULT_DTYPE: Final[IndexDType] = "f16"
DEFAULT_CONNECTIVITY: Final = 16
DEFAULT_EXPANSION_ADD: Final = 128
DEFAULT_EXPANSION_SEARCH: Final = 128
ADD_CHUNK: Final = 64
FETCH_BATCH: Final = 4096
PER_VECTOR_OVERHEAD: Final = 140
BASE_BYTES: Final = 512 * 1024

_DTYPE_BYTES: Final[dict[str, int]] = {"f16": 2, "f32": 4}


@dataclass(frozen=True)
class ReconcileReport:
    """How many ids `reconcile` added to and removed from the index."""

    added: int
    removed: int


# ---------------------------------------------------------------- duplicate keys


def _last_occurrences(keys: npt.NDArray[np.uint64]) -> npt.NDArray[np.intp]:
    """Row positions keeping only the last row of each key, in their original order."""
    reversed_keys = keys[::-1]
    _, first_in_reversed = np.unique(reversed_keys, return_index=True)
    return np.sort(len(keys) - 1 - first_in_reversed)


def _dedupe(
    keys: npt.NDArray[np.uint64], matrix: FloatMatrix
) -> tuple[npt.NDArray[np.uint64], FloatMatrix]:
    if len(keys) != len(matrix):
        raise ValueError(f"{len(keys)} keys for {len(matrix)} vectors")
    if len(np.unique(keys)) == len(keys):
        return keys, matrix
    keep = _last_occurrences(keys)
    return keys[keep], matrix[keep]


# ---------------------------------------------------------------- memory


def estimate_index_bytes(
    n: int, ndim: int, dtype: IndexDType = DEFAULT_DTYPE, connectivity: int = DEFAULT_CONNECTIVITY
) -> int:
    """Resident bytes of a loaded index of n vectors (docs/vector_index.md)."""
    per_vector = ndim * _DTYPE_BYTES[dtype] + 2 * connectivity * 4 + PER_VECTOR_OVERHEAD
    return n * per_vector + BASE_BYTES


# ---------------------------------------------------------------- the index


class VectorIndex:
    """A cosine HNSW index of int keys (0 … 2**63 − 1) kept in `path` (docs/vector_index.md)."""

    def __init__(
        self,
        path: Path,
        ndim: int,
        *,
        dtype: IndexDType = DEFAULT_DTYPE,
        connectivity: int = DEFAULT_CONNECTIVITY,
        expansion_add: int = DEFAULT_EXPANSION_ADD,
        expansion_search: int = DEFAULT_EXPANSION_SEARCH,
        identity: bytes | None = None,
    ) -> None:
        """`identity` (`store.vector_index_file.index_identity`), when given, is written into
        the file and required of the file on `open`: another one makes it stale."""
        if ndim <= 0:
            raise ValueError(f"ndim must be positive, got {ndim}")
        if dtype not in SCALAR_KINDS:
            raise ValueError(f"dtype must be one of {sorted(SCALAR_KINDS)}, got {dtype!r}")
        self.path = Path(path)
        self.ndim = ndim
        self.dtype: IndexDType = dtype
        self.connectivity = connectivity
        self.expansion_add = expansion_add
        self.expansion_search = expansion_search
        self.identity = identity
        self.state: IndexState = "missing"
        self.reason = "not opened yet"
        self.file_vectors: int | None = None
        """The vectors in the file the last `open` found, by its header (whether or not it
        was used: a stale file's count, for `status`); None: no file, or one not readable."""
        self.churn = 0
        self.dirty = False
        self._index: Index | ViewedIndex = self._new_index()
        self._rw = ReadWriteLock()
        self._mutate = threading.RLock()
        self._journal: list[tuple[npt.NDArray[np.uint64], FloatMatrix | None]] | None = None

    def _new_index(self) -> Index:
        from usearch.compiled import MetricKind
        from usearch.index import Index

        return Index(
            ndim=self.ndim,
            metric=MetricKind.Cos,
            dtype=self.dtype,
            connectivity=self.connectivity,
            expansion_add=self.expansion_add,
            expansion_search=self.expansion_search,
        )

    # -- opening

    def open(self, *, clean: bool = True) -> IndexState:
        """View the file if it is valid; otherwise start empty with state missing/stale.
        `clean=False` (a read-only process) leaves dead processes' temp files alone."""
        with self._mutate:
            if self._journal is not None:
                raise RuntimeError("cannot open while a rebuild is running")
            if clean:
                remove_stale_temp_files(self.path)
            state, reason, opened = self._view_file()
            self._swap(opened if opened is not None else self._new_index())
            self.state, self.reason = state, reason
            self.churn = 0
            self.dirty = False
            return state

    def _view_file(self) -> tuple[IndexState, str, ViewedIndex | None]:
        """The file's index, viewed where it lies, or why there is none (missing, stale)."""
        self.file_vectors = None
        if not self.path.exists():
            return "missing", f"no index file at {self.path}", None
        try:
            checked = take_checked_index_file(self.path)
            try:
                payload = checked.payload
                self.file_vectors = file_vector_count(payload)
                if self.identity is not None and checked.identity != self.identity:
                    raise IndexFileError("made for another database or embedding model")
                check_header(payload, self.ndim, self.dtype)
                view = self._new_index()
                view.view(payload)  # the mapping must outlive the view: ViewedIndex.close
            except BaseException:
                checked.close()
                raise
            viewed = ViewedIndex(view, checked, self._new_index)
        except IndexFileError as exc:
            return "stale", str(exc), None
        except (OSError, RuntimeError, ValueError) as exc:
            return "stale", f"cannot load: {exc}", None
        return "in_sync", f"loaded {len(viewed)} vectors from {self.path.name}", viewed

    def close(self) -> None:
        """Unmap a viewed file; the index is empty (state missing) after."""
        with self._mutate:
            if isinstance(self._index, ViewedIndex):
                self._swap(self._new_index())
                self.state, self.reason = "missing", "closed"

    def _swap(self, index: Index | ViewedIndex) -> None:
        """Make `index` the one searched; unmap a view it replaces (no reader holds it then)."""
        with self._rw.write():
            previous, self._index = self._index, index
            if isinstance(previous, ViewedIndex) and previous is not index:
                previous.close()

    def _materialize_locked(self) -> None:
        """Load a viewed file after all, with the changes since (the mutation lock held)."""
        if isinstance(self._index, ViewedIndex):
            self._swap(self._index.materialize(self._new_index()))

    # -- reading

    def __len__(self) -> int:
        with self._rw.read():
            return len(self._index)

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, int | np.integer) or not 0 <= int(key) <= MAX_KEY:
            return False
        with self._rw.read():
            return bool(self._index.contains(int(key)))

    def keys(self) -> set[int]:
        """Every key in the index."""
        return {int(k) for k in self._key_array()}

    def _key_array(self) -> npt.NDArray[np.uint64]:
        with self._rw.read():
            return np.asarray(self._index.keys, dtype=np.uint64)

    def search(self, vector: npt.ArrayLike, k: int) -> Hits:
        """Top-k [(key, cosine similarity)], best first. Exact below EXACT_BELOW vectors."""
        q = as_query(vector, self.ndim)
        if q is None or k <= 0:
            return []
        with self._rw.read():
            index = self._index
            exact = len(index) <= EXACT_BELOW
            matches = index.search(q, k, exact=exact)
        return [
            (int(key), 1.0 - float(dist))
            for key, dist in zip(matches.keys, matches.distances, strict=True)
            if key <= MAX_KEY
        ]

    def stored_vectors(self, keys: Sequence[int]) -> dict[int, FloatMatrix]:
        """The vectors the index holds for `keys` (as float32; absent keys left out)."""
        if not keys:
            return {}
        with self._rw.read():
            found = self._index.get(as_keys(keys), dtype="f32")
        rows = found if isinstance(found, tuple) else (found,)  # a tuple for a key array
        return {
            int(k): np.asarray(v, dtype=np.float32)
            for k, v in zip(keys, rows, strict=True)
            if v is not None
        }

    def set_expansion_search(self, value: int) -> None:
        """Change the search beam width of the live index (and of later rebuilds)."""
        if value <= 0:
            raise ValueError(f"expansion_search must be positive, got {value}")
        with self._mutate, self._rw.write():
            self.expansion_search = value
            # usearch declares the setter apart from its getter, so type checkers miss it
            if isinstance(self._index, ViewedIndex):
                self._index.set_expansion_search(value)
            else:
                self._index.expansion_search = value  # type: ignore[misc]

    # -- mutating

    def add(self, keys: KeysLike, vectors: npt.ArrayLike) -> None:
        """Add vectors under keys; a key already present gets the new vector."""
        key_arr, matrix = _dedupe(as_keys(keys), as_matrix(vectors, self.ndim))
        with self._mutate:
            self._add_locked(key_arr, matrix)

    def _add_locked(self, keys: npt.NDArray[np.uint64], matrix: FloatMatrix) -> None:
        for start in range(0, len(keys), ADD_CHUNK):
            chunk_keys = keys[start : start + ADD_CHUNK]
            chunk = matrix[start : start + ADD_CHUNK]
            with self._rw.write():
                self.churn += _upsert(self._index, chunk_keys, chunk)
        if self._journal is not None:
            self._journal.append((keys, matrix))
        self.dirty = self.dirty or len(keys) > 0
        self._materialize_if_outgrown()

    def _materialize_if_outgrown(self) -> None:
        if isinstance(self._index, ViewedIndex) and self._index.outgrown():
            self._materialize_locked()

    def remove(self, keys: KeysLike) -> int:
        """Remove keys (absent ones are ignored); returns how many were present."""
        key_arr = np.unique(as_keys(keys))
        with self._mutate:
            return self._remove_locked(key_arr)

    def _remove_locked(self, keys: npt.NDArray[np.uint64]) -> int:
        if not len(keys):
            return 0
        with self._rw.write():
            present = keys[np.asarray(self._index.contains(keys), dtype=bool)]
            if len(present):
                self._index.remove(present)
        if self._journal is not None:
            self._journal.append((keys, None))
        self.churn += len(present)
        self.dirty = self.dirty or len(present) > 0
        self._materialize_if_outgrown()
        return len(present)

    def reconcile(
        self,
        db_ids: KeysLike,
        fetch_vectors: Callable[[npt.NDArray[np.int64]], npt.ArrayLike],
    ) -> ReconcileReport:
        """Make the index hold exactly `db_ids`.

        Ids in the index but not in `db_ids` are removed; ids missing from the index are
        added with vectors from `fetch_vectors(ids)`, called in batches of FETCH_BATCH, which
        must return one row per id in the order given. Holds the mutation lock throughout,
        so other writers wait; searches go on.
        """
        wanted = sorted_unique(as_keys(db_ids))
        with self._mutate:
            present = sorted_unique(self._key_array())
            if np.array_equal(present, wanted):  # a reopen after a clean close (1M: 1 ms)
                to_remove = to_add = np.empty(0, dtype=np.uint64)
            else:  # (two sorts of 2M keys: 78 ms at 1M)
                to_remove = np.setdiff1d(present, wanted, assume_unique=True)
                to_add = np.setdiff1d(wanted, present, assume_unique=True)
            removed = self._remove_locked(to_remove)
            for start in range(0, len(to_add), FETCH_BATCH):
                batch = to_add[start : start + FETCH_BATCH]
                matrix = as_matrix(fetch_vectors(batch.astype(np.int64)), self.ndim)
                if len(matrix) != len(batch):
                    raise ValueError(f"fetch_vectors gave {len(matrix)} rows for {len(batch)}")
                self._add_locked(batch, matrix)
            if self.state != "rebuilding":
                self.state, self.reason = "in_sync", "reconciled with the database"
        return ReconcileReport(added=len(to_add), removed=removed)

    def rebuild(self, ids: KeysLike, matrix: npt.ArrayLike) -> None:
        """Build a fresh index from stored vectors, swap it in, save it.

        Meant for a background thread. The old index answers searches until the swap; writes
        made meanwhile go to both (journaled and replayed onto the new one). Raises
        RuntimeError if a rebuild is already running. If building fails, the old index and
        state stay; if only the save fails, the new index stays in use and the error is raised.
        """
        key_arr, mat = _dedupe(as_keys(ids), as_matrix(matrix, self.ndim))
        previous = self._begin_rebuild()
        try:
            fresh = self._new_index()
            if len(key_arr):
                fresh.add(key_arr, mat)
            self._finish_rebuild(fresh)
        except BaseException:
            with self._mutate:
                self._journal = None
                self.state, self.reason = previous
            raise
        self.save()

    def _begin_rebuild(self) -> tuple[IndexState, str]:
        with self._mutate:
            if self._journal is not None:
                raise RuntimeError("a rebuild is already running")
            previous = (self.state, self.reason)
            self._journal = []
            self.state, self.reason = "rebuilding", "rebuilding from the database"
            return previous

    def _finish_rebuild(self, fresh: Index) -> None:
        with self._mutate:
            for keys, matrix in self._journal or []:
                if matrix is None:
                    present = keys[np.asarray(fresh.contains(keys), dtype=bool)]
                    if len(present):
                        fresh.remove(present)
                else:
                    _upsert(fresh, keys, matrix)
            self._swap(fresh)
            self._journal = None
            self.state, self.reason = "in_sync", f"rebuilt with {len(fresh)} vectors"
            self.churn = 0
            self.dirty = True

    # -- saving

    def save(self) -> None:
        """Write the index to `path` atomically (temp file, fsync, rename, fsync dir), 0600."""
        with self._mutate:
            self._materialize_locked()  # a viewed file is loaded to be written anew
            with self._rw.read():
                index = self._index
                assert not isinstance(index, ViewedIndex)
                payload = index.save()
            if payload is None:
                raise RuntimeError("usearch returned no bytes")
            write_atomically(self.path, payload, self.identity or NO_IDENTITY)
            self.dirty = False


def _upsert(index: Index | ViewedIndex, keys: npt.NDArray[np.uint64], matrix: FloatMatrix) -> int:
    """Add rows to a usearch index, replacing keys it holds; returns how many it replaced."""
    existing = keys[np.asarray(index.contains(keys), dtype=bool)]
    if len(existing):
        index.remove(existing)
    index.add(keys, matrix)
    return len(existing)
