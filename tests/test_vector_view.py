"""store.vector_view: an index file opened where it lies answers like the file loaded, with
the changes made since (adds, replacements, removals), across a save and a reopen."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from store import vector_view
from store.vector_arrays import exact_search, normalize_rows
from store.vector_index import VectorIndex

NDIM = 32


def clustered(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((20, NDIM))
    return normalize_rows(centres[rng.integers(0, 20, n)] + 0.6 * rng.standard_normal((n, NDIM)))


def reopened(path: Path, n: int) -> tuple[VectorIndex, np.ndarray]:
    """An index of n vectors saved to `path`, then opened afresh from the file."""
    data = clustered(n)
    first = VectorIndex(path, NDIM)
    first.open()
    first.add(np.arange(n), data)
    first.save()
    first.close()
    index = VectorIndex(path, NDIM)
    assert index.open() == "in_sync"
    return index, data


def mapped(path: Path) -> bool:
    """Whether this process maps the file at `path` (`/proc/self/maps`)."""
    return str(path) in Path("/proc/self/maps").read_text()


def test_an_opened_file_is_searched_where_it_lies_until_it_is_closed(tmp_path: Path) -> None:
    path = tmp_path / "vectors.usearch"
    index, data = reopened(path, 300)
    assert mapped(path)  # viewed, not copied into memory
    assert len(index) == 300
    got = index.search(data[7], 1)
    assert got[0][0] == 7 and got[0][1] == pytest.approx(1.0, abs=1e-3)
    index.close()
    assert not mapped(path)
    assert index.search(data[7], 1) == []


def test_changes_after_the_open_are_searched_with_the_file(tmp_path: Path) -> None:
    path = tmp_path / "vectors.usearch"
    index, data = reopened(path, 400)
    fresh = clustered(50, seed=3)
    index.add(np.arange(1000, 1050), fresh)  # new points
    replaced = clustered(10, seed=5)
    index.add(np.arange(10, 20), replaced)  # points given another vector
    assert index.remove(np.arange(100, 130)) == 30
    assert index.remove(np.arange(1040, 1045)) == 5  # added since, removed again
    assert index.remove([100, 5000]) == 0  # already gone, never there

    ids = np.concatenate([np.arange(0, 100), np.arange(130, 400), np.arange(1000, 1040)])
    ids = np.concatenate([ids, np.arange(1045, 1050)])
    vectors = {int(i): data[i] for i in range(400)}
    vectors.update({1000 + i: fresh[i] for i in range(50)})
    vectors.update({10 + i: replaced[i] for i in range(10)})
    matrix = np.stack([vectors[int(i)] for i in ids])

    live = {int(i) for i in ids}
    assert len(index) == len(ids)
    assert index.keys() == live
    assert 105 not in index and 1003 in index and 12 in index
    for query in clustered(30, seed=9):
        got = index.search(query, 10)
        want = exact_search(query, ids.astype(np.int64), matrix, 10)
        # the exact top 10's scores (f16 storage: near-ties may swap), each of a live point
        assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=2e-3)
        for key, score in got:
            assert key in live
            assert float(query @ vectors[key]) == pytest.approx(score, abs=2e-3)
    stored = index.stored_vectors([12, 50, 1001, 120])
    assert set(stored) == {12, 50, 1001}
    assert float(stored[12] @ replaced[2]) == pytest.approx(1.0, abs=1e-3)
    assert float(stored[50] @ data[50]) == pytest.approx(1.0, abs=1e-3)

    index.save()  # loads the file after all, with the changes, and writes it anew
    index.close()
    again = VectorIndex(path, NDIM)
    assert again.open() == "in_sync"
    assert again.keys() == {int(i) for i in ids}
    assert float(again.stored_vectors([12])[12] @ replaced[2]) == pytest.approx(1.0, abs=1e-3)
    again.close()


def test_changes_beyond_what_a_view_carries_load_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_view, "MAX_HIDDEN", 8)
    path = tmp_path / "vectors.usearch"
    index, data = reopened(path, 300)
    index.remove(np.arange(0, 8))
    assert mapped(path)
    index.remove(np.arange(8, 20))  # more hidden than the view carries: the file is loaded
    assert not mapped(path)
    assert len(index) == 280 and 5 not in index and 25 in index
    got = index.search(data[250], 3)
    assert got[0][0] == 250
    index.close()


def test_a_reconcile_after_the_open_keeps_the_view(tmp_path: Path) -> None:
    path = tmp_path / "vectors.usearch"
    index, _ = reopened(path, 300)
    extra = clustered(5, seed=4)
    wanted = np.concatenate([np.arange(2, 300), np.arange(300, 305)])
    report = index.reconcile(wanted, lambda ids: extra[np.asarray(ids) - 300])
    assert (report.added, report.removed) == (5, 2)
    assert mapped(path)
    assert index.keys() == {int(i) for i in wanted}
    assert index.search(extra[3], 1)[0][0] == 303
    index.close()
