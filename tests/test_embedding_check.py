"""`vector_problem` answers the same for lists and numpy arrays of any number type, and for
what numpy cannot read as one row of floats, as the component-by-component check (the one it
replaced, kept for those) does."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from memory.embedding_check import _problem_by_component as by_component
from memory.embedding_check import vector_problem

CASES: list[Any] = [
    [0.1] * 768,
    np.random.default_rng(1).standard_normal(768).astype(np.float32),
    np.zeros(768, dtype=np.float32),
    [0.0, 0.0],
    [1e7, 1.0],
    np.array([1e7, 1.0], dtype=np.float32),
    [float("nan"), 1.0],
    np.array([1.0, np.inf], dtype=np.float16),
    [True, False],
    np.array([3, -4], dtype=np.int8),
    (1, 2),
    ["1.5", 2],
    [1e38, 1e38],
    [1e-30, -2e-30],
    np.full(768, 1e-5, dtype=np.float32),
]


@pytest.mark.parametrize("vector", CASES, ids=range(len(CASES)))
def test_same_verdict_as_the_component_check(vector: Any) -> None:
    assert vector_problem(vector) == by_component(vector)


@pytest.mark.parametrize("vector", [[None, 1.0], ["x", 1.0], [[1.0, 2.0]], [10**400, 1]])
def test_what_numpy_cannot_read_raises_as_before(vector: Any) -> None:
    with pytest.raises((TypeError, ValueError, OverflowError)) as expected:
        by_component(vector)
    with pytest.raises(expected.type):
        vector_problem(vector)


def test_empty_and_missing() -> None:
    assert vector_problem(None) == "no vector"
    assert vector_problem([]) == "an empty vector"
    assert vector_problem(np.empty(0, dtype=np.float32)) == "an empty vector"


def test_a_vector_below_what_f16_holds_is_refused() -> None:
    assert vector_problem([1e-30, -2e-30]) == (
        "a vector whose largest component is 2e-30 (less than 1e-04)"
    )
    assert vector_problem([1e-4, 0.0]) is None


def test_a_vector_longer_than_any_embedding_model_gives_is_refused() -> None:
    """A server's 3,000,000-number vectors were adopted by the backfill (~6 MB of index a
    point); more than 16,384 numbers is now an absurd vector like NaN."""
    assert vector_problem([0.01] * 16_384) is None
    assert vector_problem(np.full(3_000_000, 0.01)) == (
        "a vector of 3,000,000 numbers (no embedding model gives more than 16,384)"
    )
