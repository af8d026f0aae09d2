"""The pinned points' matrix recall scores is kept between recalls and follows every change."""

from __future__ import annotations

import numpy as np

from memory.pinned_points import PinnedPoints
from store.vector_arrays import normalize_rows


def test_the_kept_matrix_follows_every_change_of_the_pins() -> None:
    pins = PinnedPoints()
    pins.add(1, [3.0, 4.0, 0.0])
    ids, rows = pins.normalized(3)
    assert ids.tolist() == [1]
    assert np.array_equal(rows, normalize_rows(pins.matrix(3)[1]))
    assert pins.normalized(3)[1] is rows  # kept while nothing changed
    pins.add(2, [0.0, 0.0, 2.0])
    assert pins.normalized(3)[0].tolist() == [1, 2]
    pins.set_vectors({1: np.asarray([0.0, 5.0, 0.0], np.float32)})
    assert pins.normalized(3)[1][0].tolist() == [0.0, 1.0, 0.0]
    pins.discard(1)
    ids, rows = pins.normalized(3)
    assert ids.tolist() == [2]
    assert rows.tolist() == [[0.0, 0.0, 1.0]]
    pins.add(3)  # pinned without a vector: not in the matrix
    assert pins.normalized(3)[0].tolist() == [2]
    assert pins.normalized(4)[0].tolist() == []  # another dimension
