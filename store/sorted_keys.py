"""Distinct integer keys, ascending, without numpy's hashing `unique`: the vector index's
keys against the database's ids (`store.vector_index`), the word index's candidate slots
with the pins' (`store.lexical_topk`)."""

from __future__ import annotations

from typing import TypeVar

import numpy as np
import numpy.typing as npt

IntegerT = TypeVar("IntegerT", bound=np.integer)


def sorted_unique(keys: npt.NDArray[IntegerT]) -> npt.NDArray[IntegerT]:
    """The distinct keys, ascending. `np.unique` hashes (numpy 2): 21–51 ms for 100k keys;
    a sort of ids that come nearly in order and a neighbour compare take ~1 ms (10k
    candidate slots and 50 pins: 0.04 ms, where `np.union1d` took 0.67). Keys that are
    ascending already (the database's ids) are returned as they are (1M: 0.5 ms, not the
    sort's 47)."""
    if len(keys) < 2 or bool(np.all(keys[1:] > keys[:-1])):
        return keys
    ordered = np.sort(keys)
    keep = np.empty(len(ordered), dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]
