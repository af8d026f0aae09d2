"""Is an embedding server's vector usable? NaN, infinity, absurd sizes and zero vectors are not.

A vector that fails here is an embedding failure like Ollama being down: the point is stored
without a vector (backfill tries again later) and recall falls back to words. Checked where
vectors enter memory (`TurnMemory.embed_texts`, `MemoryStore.save`, backfill, recall's query),
so no caller can store one or rank with one.

"Absurd": more than `MAX_DIMENSIONS` numbers, or a component above `MAX_COMPONENT` in size. Real
embedding models give components well below 10 (unit-length ones below 1); at 1e38 the float32
cosine overflows and recall shows "nan" scores. A zero vector has no direction, so no cosine;
nor, in the index, has one whose largest component is below `MIN_COMPONENT`: `vectors.usearch`
keeps f16, which turns such components into zeros (or a few bits), so the index could never
match the database's vector and every open would find it stale. A real model's vector is far
above it (a unit vector of any dimension below 16,384 has a component of at least 1/128).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

MAX_COMPONENT = 1e6
MIN_COMPONENT = 1e-4
MAX_DIMENSIONS = 16_384
"""More numbers than any embedding model gives (the largest common ones give 4,096): a
server's 3,000,000-number vectors were adopted by the backfill, ~6 MB of index a point."""


def vector_problem(vector: Sequence[float] | None) -> str | None:
    """Why `vector` cannot be stored or searched with, or None when it can.

    One numpy pass (~10 µs for 768 floats; the loop over the components it replaces took
    ~0.4 ms a save for a numpy vector); anything numpy cannot read as one row of floats
    goes through the component loop, which says what is wrong or raises as before."""
    if vector is None:
        return "no vector"
    if len(vector) == 0:
        return "an empty vector"
    if len(vector) > MAX_DIMENSIONS:
        most = f"{MAX_DIMENSIONS:,}"
        return f"a vector of {len(vector):,} numbers (no embedding model gives more than {most})"
    values = np.asarray(vector)
    if values.ndim != 1 or values.dtype.kind not in "biuf":  # strings, None, nested: loop
        return _problem_by_component(vector)
    values = values.astype(np.float64, copy=False)
    if not bool(np.isfinite(values).all()):
        return "NaN or infinity in the vector"
    return _size_problem(float(np.abs(values).max()))


def _problem_by_component(vector: Sequence[float]) -> str | None:
    largest = 0.0
    for value in vector:
        number = float(value)
        if not math.isfinite(number):
            return "NaN or infinity in the vector"
        largest = max(largest, abs(number))
    return _size_problem(largest)


def _size_problem(largest: float) -> str | None:
    if largest > MAX_COMPONENT:
        return f"a component of size {largest:.3g} (more than {MAX_COMPONENT:.0e})"
    if largest == 0.0:
        return "a zero vector (no direction)"
    if largest < MIN_COMPONENT:
        return f"a vector whose largest component is {largest:.3g} (less than {MIN_COMPONENT:.0e})"
    return None


def usable_vector(vector: Sequence[float] | None) -> bool:
    """True when `vector` may be stored and searched with."""
    return vector_problem(vector) is None
