"""Point vectors and their keys as checked numpy arrays, and the exact search over them.

The checks every vector search and write makes (keys as uint64 in 0 … 2**63 − 1, vectors as
a finite float32 matrix, a query of unit length), rows scaled to unit length once, and the
brute-force cosine top k (`exact_search`): the fallback while the index is not "in_sync"
(docs/vector_index.md) and recall's search of the pinned points. No usearch here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

KeysLike = npt.NDArray[np.integer] | Sequence[int]
FloatMatrix = npt.NDArray[np.float32]
Hits = list[tuple[int, float]]

MAX_KEY: Final = 2**63 - 1
EXACT_BELOW: Final = 2048
"""An index of at most this many vectors is searched exactly (the graph is not worth it)."""


def as_keys(keys: KeysLike) -> npt.NDArray[np.uint64]:
    """Keys as a 1-d uint64 array; each must be an integer in 0 … 2**63 − 1."""
    arr = np.asarray(keys)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise ValueError(f"keys must be 1-d, got shape {arr.shape}")
    if arr.size == 0:
        return np.empty(0, dtype=np.uint64)
    if arr.dtype.kind == "O":
        arr = _object_keys(arr)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"keys must be integers, got {arr.dtype}")
    if (arr.dtype.kind == "i" and int(arr.min()) < 0) or int(arr.max()) > MAX_KEY:
        raise ValueError("keys must lie in 0 … 2**63 - 1")
    return arr.astype(np.uint64)


def _object_keys(arr: npt.NDArray[np.object_]) -> npt.NDArray[np.uint64]:
    values = [int(k) for k in arr]
    if any(not 0 <= k <= MAX_KEY for k in values):
        raise ValueError("keys must lie in 0 … 2**63 - 1")
    return np.array(values, dtype=np.uint64)


def as_matrix(vectors: npt.ArrayLike, ndim: int) -> FloatMatrix:
    """Vectors as a C-contiguous (n, ndim) float32 matrix of finite numbers."""
    arr = np.ascontiguousarray(vectors, dtype=np.float32)
    if arr.ndim == 1:
        arr = arr.reshape(1, -1)
    if arr.ndim != 2 or arr.shape[1] != ndim:
        raise ValueError(f"vectors must have shape (n, {ndim}), got {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError("vectors contain NaN or infinity")
    return arr


def as_query(vector: npt.ArrayLike, ndim: int) -> FloatMatrix | None:
    """The query as a unit-length float32 vector, or None if it has no direction."""
    q = as_matrix(vector, ndim)
    if q.shape[0] != 1:
        raise ValueError(f"expected one query vector, got {q.shape[0]}")
    norm = float(np.linalg.norm(q[0]))
    return None if norm == 0.0 else q[0] / norm


def normalize_rows(matrix: npt.ArrayLike) -> FloatMatrix:
    """Rows scaled to unit length (zero rows stay zero), float32. Do it once, then reuse."""
    arr = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0.0] = 1.0
    return np.ascontiguousarray(arr / norms, dtype=np.float32)


def exact_search(
    query: npt.ArrayLike,
    ids: npt.ArrayLike,
    matrix: npt.ArrayLike,
    k: int,
    *,
    normalized: bool = False,
) -> Hits:
    """Brute-force top-k by cosine similarity: [(id, similarity)], best first.

    Pass `normalized=True` with rows from `normalize_rows` to skip normalising the matrix on
    every call (100k × 768 f32: ~14 ms per query; normalising costs as much again).
    A zero query has no direction and returns [].
    """
    mat = np.asarray(matrix, dtype=np.float32)
    id_arr = np.asarray(ids)
    if mat.ndim != 2 or len(id_arr) != len(mat):
        raise ValueError(f"{len(id_arr)} ids for a matrix of shape {mat.shape}")
    q = as_query(query, mat.shape[1])
    k = min(k, len(mat))
    if q is None or k <= 0:
        return []
    rows = mat if normalized else normalize_rows(mat)
    sims = rows @ q
    top = np.argpartition(-sims, k - 1)[:k]
    top = top[np.argsort(-sims[top], kind="stable")]
    return [(int(id_arr[i]), float(sims[i])) for i in top]
