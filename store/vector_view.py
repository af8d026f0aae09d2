"""`vectors.usearch` searched where it lies, with the changes made since (issue 18).

Loading the file copies it: at 1M points usearch writes 1.7 GB of fresh memory and holds
the GIL for ~1 s doing so (docs/memory-scale.md), which delayed the memory's open by that
second and froze the chat for it. `ViewedIndex` instead maps the checked file (usearch's
`view`) and keeps what changed since beside it: vectors added since in a small in-memory
index (`added`), and the keys of the file's vectors removed or replaced since (`hidden`).
It answers the calls `VectorIndex` makes of a usearch index (`contains`, `keys`, `search`,
`get`, `add`, `remove`, `len`), so the two are used alike.

The view is never changed (DEPENDENCIES.md: changing a viewed index whose file has deleted
slots segfaults) and its file is never rewritten in place (saves replace it by rename; a
file truncated in place while mapped would be a SIGBUS, as for `lexical.idx`). Once the
changes outgrow `MAX_ADDED` or `MAX_HIDDEN`, or the index is saved, `VectorIndex` loads the
file after all and applies them (`materialize`): what the view saved was a second at the
open, and the load it defers comes, if ever, with a write.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import numpy as np
import numpy.typing as npt

from store.sorted_keys import sorted_unique
from store.vector_arrays import EXACT_BELOW

if TYPE_CHECKING:
    from collections.abc import Callable

    from usearch.index import Index

    from store.vector_index_file import CheckedIndexFile

MAX_ADDED: Final = 4096  # vectors added since the view before the file is loaded after all
MAX_HIDDEN: Final = 256  # the file's vectors removed or replaced since, likewise: a search
# asks the view for this many more neighbours than it returns (the hidden ones are dropped)


@dataclass(frozen=True)
class ViewMatches:
    """A search's keys and cosine distances, nearest first (usearch's `Matches` fields)."""

    keys: npt.NDArray[np.uint64]
    distances: npt.NDArray[np.float32]


class ViewedIndex:
    """A view of a checked index file and the changes since; `close` unmaps the file (only
    once no call can still reach the view)."""

    def __init__(self, view: Index, mapping: CheckedIndexFile, empty: Callable[[], Index]) -> None:
        self.view = view
        self.mapping = mapping
        self.added = empty()
        self._hidden: npt.NDArray[np.uint64] = np.empty(0, dtype=np.uint64)  # sorted

    # -- reading

    def __len__(self) -> int:
        return len(self.view) - len(self._hidden) + len(self.added)

    def outgrown(self) -> bool:
        """Whether the changes are more than a view should carry (`MAX_ADDED`, `MAX_HIDDEN`)."""
        return len(self.added) > MAX_ADDED or len(self._hidden) > MAX_HIDDEN

    def _in_view(self, keys: npt.NDArray[np.uint64]) -> npt.NDArray[np.bool_]:
        """Which keys the view holds and are not hidden."""
        held = np.asarray(self.view.contains(keys), dtype=bool).reshape(len(keys))
        if len(self._hidden):
            held &= ~np.isin(keys, self._hidden, assume_unique=False)
        return held

    def _in_added(self, keys: npt.NDArray[np.uint64]) -> npt.NDArray[np.bool_]:
        if not len(self.added):
            return np.zeros(len(keys), dtype=bool)
        return np.asarray(self.added.contains(keys), dtype=bool).reshape(len(keys))

    def contains(self, keys: int | npt.NDArray[np.uint64]) -> bool | npt.NDArray[np.bool_]:
        """usearch's `contains`: a bool for one key, an array of them for an array."""
        if isinstance(keys, int | np.integer):
            one = np.asarray([keys], dtype=np.uint64)
            return bool((self._in_view(one) | self._in_added(one))[0])
        arr = np.asarray(keys, dtype=np.uint64)
        return self._in_view(arr) | self._in_added(arr)

    @property
    def keys(self) -> npt.NDArray[np.uint64]:
        """Every key held: the view's not hidden, then the added ones."""
        viewed = np.asarray(self.view.keys, dtype=np.uint64)
        if len(self._hidden):
            viewed = viewed[~np.isin(viewed, self._hidden)]
        if not len(self.added):
            return viewed
        return np.concatenate([viewed, np.asarray(self.added.keys, dtype=np.uint64)])

    def search(self, query: npt.NDArray[np.float32], k: int, *, exact: bool) -> ViewMatches:
        """The k nearest of the view's vectors (hidden ones dropped) and the added ones."""
        found = self.view.search(query, k + len(self._hidden), exact=exact)
        keys = np.asarray(found.keys, dtype=np.uint64)
        distances = np.asarray(found.distances, dtype=np.float32)
        if len(self._hidden):
            kept = ~np.isin(keys, self._hidden)
            keys, distances = keys[kept], distances[kept]
        if len(self.added):
            near = self.added.search(query, k, exact=len(self.added) <= EXACT_BELOW)
            keys = np.concatenate([keys, np.asarray(near.keys, dtype=np.uint64)])
            distances = np.concatenate([distances, np.asarray(near.distances, np.float32)])
            order = np.argsort(distances, kind="stable")
            keys, distances = keys[order], distances[order]
        return ViewMatches(keys[:k], distances[:k])

    def get(
        self, keys: npt.NDArray[np.uint64], dtype: str = "f32"
    ) -> tuple[npt.NDArray[np.float32] | None, ...]:
        """usearch's `get` of a key array: one vector (or None) per key, in order."""
        in_added = self._in_added(keys)
        in_view = self._in_view(keys) & ~in_added
        found: list[npt.NDArray[np.float32] | None] = [None] * len(keys)
        for source, where in ((self.added, in_added), (self.view, in_view)):
            rows = np.flatnonzero(where)
            if not len(rows):
                continue
            got = source.get(keys[rows], dtype=dtype)
            vectors = got if isinstance(got, tuple) else (got,)
            for row, vector in zip(rows, vectors, strict=True):
                found[int(row)] = vector
        return tuple(found)

    # -- changing (the view itself never is)

    def add(self, keys: npt.NDArray[np.uint64], matrix: npt.NDArray[np.float32]) -> None:
        """Add vectors under keys this index does not hold (`_upsert` removes them first)."""
        self.added.add(keys, matrix)

    def remove(self, keys: npt.NDArray[np.uint64]) -> None:
        """Remove keys this index holds: from the added ones, or hidden in the view."""
        arr = np.asarray(keys, dtype=np.uint64)
        in_added = self._in_added(arr)
        if in_added.any():
            self.added.remove(arr[in_added])
        in_view = self._in_view(arr) & ~in_added
        if in_view.any():
            self._hidden = sorted_unique(np.concatenate([self._hidden, arr[in_view]]))

    def set_expansion_search(self, value: int) -> None:
        for index in (self.view, self.added):
            # usearch declares the setter apart from its getter, so type checkers miss it
            index.expansion_search = value  # type: ignore[misc]

    def materialize(self, fresh: Index) -> Index:
        """`fresh` loaded from the file and given the changes since: what this index holds,
        in memory. The view stays usable (and mapped) until `close`."""
        fresh.load(self.mapping.payload)  # usearch copies it
        if len(self._hidden):
            fresh.remove(self._hidden)
        if len(self.added):
            keys = np.asarray(self.added.keys, dtype=np.uint64)
            got = self.added.get(keys, dtype="f32")
            vectors = got if isinstance(got, tuple) else (got,)
            fresh.add(keys, np.vstack([np.asarray(v, dtype=np.float32) for v in vectors]))
        return fresh

    def close(self) -> None:
        """Unmap the file. The view must be unreachable by then: using it after is a crash."""
        self.mapping.close()
