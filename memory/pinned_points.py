"""The pinned points recall always scores: their ids, vectors and the hit rows read for them,
kept in memory between recalls (pins are few)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from store import point_reads
from store.vector_arrays import normalize_rows


class PinnedPoints:
    """The ids of the pinned points and their vectors, kept in memory (pins are few; recall
    scores all of them exactly). Change them through the methods: the matrix recall scores
    is kept between recalls until they change."""

    def __init__(self) -> None:
        self.ids: set[int] = set()
        self.vectors: dict[int, npt.NDArray[np.float32]] = {}
        self._normalized: dict[int, tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]] = {}
        self._rows: dict[int, point_reads.HitRow] = {}

    def __bool__(self) -> bool:
        return bool(self.ids)

    def __contains__(self, point_id: object) -> bool:
        return point_id in self.ids

    def add(self, point_id: int, vector: Sequence[float] | None = None) -> None:
        self.ids.add(point_id)
        if vector is not None:
            self.vectors[point_id] = np.asarray(vector, dtype=np.float32)
        self._normalized = {}  # after the change: a recall meanwhile fills the old dict
        self._rows = {}

    def set_vectors(self, vectors: dict[int, npt.NDArray[np.float32]]) -> None:
        self.vectors.update(vectors)
        self._normalized = {}

    def discard(self, point_id: int) -> None:
        self.ids.discard(point_id)
        self.vectors.pop(point_id, None)
        self._normalized = {}
        self._rows = {}

    def matrix(self, dim: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """(ids, vectors) of the pinned points with a vector of `dim`, by id."""
        vectors = self.vectors
        ids = [pid for pid in sorted(self.ids) if pid in vectors and len(vectors[pid]) == dim]
        if not ids:
            return np.empty(0, np.int64), np.empty((0, dim), np.float32)
        return np.asarray(ids, dtype=np.int64), np.vstack([vectors[pid] for pid in ids])

    def normalized(self, dim: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """`matrix(dim)` with its rows scaled to unit length (`normalize_rows`), kept until
        the pins change: every recall scores it (~0.1 ms less a recall at 50 pins)."""
        kept = self._normalized  # the dict of this state of the pins (a change replaces it)
        found = kept.get(dim)
        if found is None:
            ids, matrix = self.matrix(dim)
            found = kept[dim] = (ids, normalize_rows(matrix))
        return found

    def kept_rows(self) -> dict[int, point_reads.HitRow]:
        """The hit rows of pinned points earlier recalls read, for this state of the pins:
        a pinned point's role, date and content never change (no statement updates them;
        an edit is a new point), and every pin, unpin or forget replaces the dict, so a
        row read meanwhile goes into the old one (`_hit_rows`)."""
        return self._rows
