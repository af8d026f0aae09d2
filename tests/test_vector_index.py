"""store.vector_index: real usearch files in tmp_path, corrupt files, threads, crashes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from usearch.index import Index

from store import vector_index_file
from store.read_write_lock import ReadWriteLock
from store.vector_arrays import MAX_KEY, exact_search, normalize_rows
from store.vector_index import EXACT_BELOW, ReconcileReport, VectorIndex, estimate_index_bytes

ROOT = Path(__file__).resolve().parent.parent
NDIM = 32


def clustered(n: int, seed: int = 0, ndim: int = NDIM) -> np.ndarray:
    """Normalised points around 20 centres: neighbours exist, unlike uniform noise."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((20, ndim))
    x = centres[rng.integers(0, 20, n)] + 0.6 * rng.standard_normal((n, ndim))
    return normalize_rows(x)


def make_index(tmp_path: Path, ndim: int = NDIM, **kwargs) -> VectorIndex:
    index = VectorIndex(tmp_path / "vectors.usearch", ndim, **kwargs)
    index.open()
    return index


def saved_index(tmp_path: Path, n: int = 200) -> tuple[VectorIndex, np.ndarray]:
    data = clustered(n)
    index = make_index(tmp_path)
    index.add(np.arange(n), data)
    index.save()
    return index, data


# ---------------------------------------------------------------- round trips


def test_add_search_remove_round_trip_matches_exact_search(tmp_path: Path) -> None:
    data = clustered(300)
    ids = np.arange(1000, 1300)
    index = make_index(tmp_path)
    assert index.state == "missing"
    index.add(ids, data)
    assert len(index) == 300
    queries = clustered(20, seed=1)
    for q in queries:
        got = index.search(q, 5)
        want = exact_search(q, ids, data, 5)
        assert [k for k, _ in got] == [k for k, _ in want]
        assert np.allclose([s for _, s in got], [s for _, s in want], atol=2e-3)
    top = index.search(queries[0], 1)[0][0]
    assert index.remove([top, 5]) == 1
    assert top not in index
    assert top not in {k for k, _ in index.search(queries[0], 50)}
    assert len(index) == 299


def test_graph_search_above_the_exact_threshold_has_high_recall(tmp_path: Path) -> None:
    n = EXACT_BELOW + 1000
    data = clustered(n, seed=2)
    index = make_index(tmp_path)
    index.add(np.arange(n), data)
    ids = np.arange(n)
    hits = 0
    queries = clustered(50, seed=3)
    for q in queries:
        want = {k for k, _ in exact_search(q, ids, data, 10, normalized=True)}
        hits += len(want & {k for k, _ in index.search(q, 10)})
    assert hits / (10 * len(queries)) >= 0.95


def test_readding_a_key_replaces_its_vector(tmp_path: Path) -> None:
    data = clustered(50)
    index = make_index(tmp_path)
    index.add(np.arange(50), data)
    index.add([7], data[20])
    assert len(index) == 50
    assert index.churn == 1
    best = index.search(data[20], 2)
    assert {k for k, _ in best} == {7, 20}
    assert all(s > 0.999 for _, s in best)
    # duplicates inside one batch: the last row wins
    index.add([8, 8], np.stack([data[1], data[30]]))
    assert {k for k, _ in index.search(data[30], 2)} == {8, 30}


def test_keys_membership_and_the_full_key_range(tmp_path: Path) -> None:
    index = make_index(tmp_path)
    data = clustered(3)
    index.add(np.array([0, MAX_KEY, 12], dtype=np.int64), data)
    assert index.keys() == {0, MAX_KEY, 12}
    assert MAX_KEY in index and 13 not in index and -1 not in index and "x" not in index
    assert index.search(data[1], 1)[0][0] == MAX_KEY
    index.save()
    again = make_index(tmp_path)
    assert again.state == "in_sync"
    assert again.keys() == {0, MAX_KEY, 12}
    assert again.search(data[1], 1)[0][0] == MAX_KEY
    for bad in ([-1], [MAX_KEY + 1], [2**64 - 1]):
        with pytest.raises(ValueError):
            index.add(bad, data[:1])
    with pytest.raises(TypeError):
        index.add(np.array([1.5]), data[:1])


def test_bad_vectors_are_rejected(tmp_path: Path) -> None:
    index = make_index(tmp_path)
    with pytest.raises(ValueError):
        index.add([1], np.ones(NDIM + 1, dtype=np.float32))
    with pytest.raises(ValueError):
        index.add([1, 2], np.ones((1, NDIM), dtype=np.float32))
    with pytest.raises(ValueError):
        index.add([1], np.full(NDIM, np.nan, dtype=np.float32))
    assert len(index) == 0
    assert index.search(np.zeros(NDIM, dtype=np.float32), 3) == []


def test_exact_search_edges() -> None:
    data = clustered(10)
    ids = np.arange(10) * 3
    assert len(exact_search(data[0], ids, data, 50)) == 10
    assert exact_search(np.zeros(NDIM), ids, data, 5) == []
    assert exact_search(data[0], ids, data, 0) == []
    raw = data * 7.0
    assert exact_search(data[4], ids, raw, 3) == exact_search(
        data[4], ids, normalize_rows(raw), 3, normalized=True
    )
    assert exact_search(data[4], ids, data, 1)[0][0] == 12


# ---------------------------------------------------------------- saving


def test_save_then_load_gives_the_same_index_and_mode_0600(tmp_path: Path) -> None:
    index, data = saved_index(tmp_path)
    assert (index.path.stat().st_mode & 0o777) == 0o600
    assert not index.dirty
    again = make_index(tmp_path)
    assert again.state == "in_sync", again.reason
    assert again.keys() == set(range(200))
    assert again.search(data[3], 5) == index.search(data[3], 5)
    assert not list(tmp_path.glob("*.tmp-*"))


def test_a_failed_save_leaves_the_old_file_and_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index, _ = saved_index(tmp_path)
    before = index.path.read_bytes()
    index.add(np.arange(200, 260), clustered(60, seed=5))

    def half_then_die(fd: int, payload: bytes | bytearray) -> None:
        os.write(fd, bytes(payload[: len(payload) // 2]))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(vector_index_file, "write_all", half_then_die)
    with pytest.raises(OSError):
        index.save()
    assert index.path.read_bytes() == before
    assert not list(tmp_path.glob("*.tmp-*"))
    assert make_index(tmp_path).keys() == set(range(200))


def test_a_process_killed_mid_save_leaves_the_good_file(tmp_path: Path) -> None:
    _, data = saved_index(tmp_path)
    before = (tmp_path / "vectors.usearch").read_bytes()
    # A child adds more, then dies (os._exit) right after writing its temp file, before
    # the rename: what kill -9 or a power cut at that moment leaves behind.
    child = f"""
import os, numpy as np
from pathlib import Path
from store import vector_index as vi, vector_index_file
index = vi.VectorIndex(Path({str(tmp_path)!r}) / "vectors.usearch", {NDIM})
index.open()
index.add(np.arange(200, 400), np.ones((200, {NDIM}), dtype=np.float32))
real_write = vector_index_file.write_all
def write_then_die(fd, data):
    real_write(fd, bytes(data[: len(data) // 3]))
    os._exit(9)
vector_index_file.write_all = write_then_die
index.save()
"""
    done = subprocess.run([sys.executable, "-c", child], cwd=ROOT, timeout=60, check=False)
    assert done.returncode == 9
    leftovers = list(tmp_path.glob("vectors.usearch.tmp-*"))
    assert len(leftovers) == 1
    assert (tmp_path / "vectors.usearch").read_bytes() == before
    index = make_index(tmp_path)
    assert index.state == "in_sync", index.reason
    assert index.keys() == set(range(200))
    assert not list(tmp_path.glob("vectors.usearch.tmp-*"))  # the dead child's temp is gone
    assert index.search(data[0], 1)[0][0] == 0


# ---------------------------------------------------------------- damaged files


def _write_corrupt(path: Path, case: str, good: bytes) -> None:
    rng = np.random.default_rng(11)
    if case == "empty":
        path.write_bytes(b"")
    elif case == "zeroed":
        path.write_bytes(bytes(len(good)))
    elif case == "random":
        path.write_bytes(rng.bytes(len(good)))
    elif case == "truncated_half":
        path.write_bytes(good[: len(good) // 2])
    elif case == "truncated_tail":
        path.write_bytes(good[:-10])
    elif case == "tiny":
        path.write_bytes(good[:7])
    elif case == "flipped_body":
        damaged = bytearray(good)
        for i in rng.integers(200, len(good) - 100, 64):
            damaged[i] ^= 0xFF
        path.write_bytes(bytes(damaged))
    elif case == "plain_usearch":
        plain = Index(ndim=NDIM, metric="cos", dtype="f16")
        plain.add(np.arange(5), clustered(5))
        plain.save(str(path))
    elif case == "other_ndim":
        other = VectorIndex(path, NDIM // 2)
        other.add([1, 2], clustered(2, ndim=NDIM // 2))
        other.save()
    elif case == "other_dtype":
        other = VectorIndex(path, NDIM, dtype="f32")
        other.add([1, 2], clustered(2))
        other.save()
    else:
        raise AssertionError(case)


CORRUPT_CASES = {
    "empty": "empty file",
    "zeroed": "footer",
    "random": "footer",
    "truncated_half": "footer: truncated, or not written by Straylight",
    "truncated_tail": "footer",
    "tiny": "truncated",
    "flipped_body": "checksum mismatch",
    "plain_usearch": "footer",
    "other_ndim": "ndim 16 in file, expected 32",
    "other_dtype": "dtype F32 in file, expected f16",
}


@pytest.mark.parametrize("case", sorted(CORRUPT_CASES))
def test_a_damaged_file_makes_the_index_stale_not_a_crash(tmp_path: Path, case: str) -> None:
    good_index, data = saved_index(tmp_path)
    _write_corrupt(good_index.path, case, good_index.path.read_bytes())
    index = make_index(tmp_path)
    assert index.state == "stale"
    assert CORRUPT_CASES[case] in index.reason
    assert len(index) == 0
    index.add([1], data[0])  # still usable, and rebuildable
    assert index.search(data[0], 1)[0][0] == 1
    index.rebuild(np.arange(200), data)
    assert index.state == "in_sync"
    assert make_index(tmp_path).state == "in_sync"


def test_a_missing_file_is_missing_and_a_folder_is_stale(tmp_path: Path) -> None:
    assert make_index(tmp_path).state == "missing"
    (tmp_path / "vectors.usearch").mkdir()
    index = make_index(tmp_path)
    assert index.state == "stale"
    assert index.reason == "not a regular file"


def test_loading_damaged_files_never_kills_the_process(tmp_path: Path) -> None:
    """In a child: open every damaged file, then add and search; it must exit normally."""
    assert open_damaged_in_a_child(tmp_path) == dict.fromkeys(CORRUPT_CASES, "stale")


def open_damaged_in_a_child(tmp_path: Path, before: str = "") -> dict[str, str]:
    """Every damaged file in a folder of its own, each opened in one child process (after
    `before`, code run on the folders first), then added to and searched: the states."""
    good_index, _ = saved_index(tmp_path)
    good = good_index.path.read_bytes()
    for case in CORRUPT_CASES:
        folder = tmp_path / case
        folder.mkdir()
        _write_corrupt(folder / "vectors.usearch", case, good)
    child = f"""
import json, numpy as np
from pathlib import Path
from store.vector_index import VectorIndex
folders = sorted(f for f in Path({str(tmp_path)!r}).iterdir() if f.is_dir())
{before}
states = {{}}
for folder in folders:
    index = VectorIndex(folder / "vectors.usearch", {NDIM})
    states[folder.name] = index.open()
    index.add(np.arange(100), np.random.default_rng(0).random((100, {NDIM}), dtype=np.float32))
    index.search(np.ones({NDIM}, dtype=np.float32), 5)
print(json.dumps(states))
"""
    done = subprocess.run(
        [sys.executable, "-c", child], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


# ---------------------------------------------------------------- reconcile and rebuild


def test_reconcile_adds_and_drops_the_right_ids(tmp_path: Path) -> None:
    data = clustered(30)
    index = make_index(tmp_path)
    index.add(np.arange(1, 11), data[1:11])
    asked: list[list[int]] = []

    def fetch(ids: np.ndarray) -> np.ndarray:
        assert ids.dtype == np.int64
        asked.append(ids.tolist())
        return data[ids]

    report = index.reconcile(np.arange(5, 16, dtype=np.int64), fetch)
    assert report == ReconcileReport(added=5, removed=4)
    assert asked == [[11, 12, 13, 14, 15]]
    assert index.keys() == set(range(5, 16))
    assert index.state == "in_sync"
    assert index.search(data[13], 1)[0][0] == 13
    assert index.reconcile(np.arange(5, 16), fetch) == ReconcileReport(0, 0)
    with pytest.raises(ValueError):
        index.reconcile([20, 21], lambda ids: data[:1])


def test_reconcile_fills_a_missing_index(tmp_path: Path) -> None:
    data = clustered(100)
    index = make_index(tmp_path)
    assert index.state == "missing"
    assert index.reconcile(np.arange(100), lambda ids: data[ids]) == ReconcileReport(100, 0)
    assert index.state == "in_sync"
    assert len(index) == 100


def test_rebuild_swaps_in_a_new_index_while_other_threads_search(tmp_path: Path) -> None:
    old = clustered(3000, seed=1)
    new = clustered(3000, seed=2)
    index = make_index(tmp_path)
    index.add(np.arange(3000), old)
    old_keys, new_keys = set(range(3000)), set(range(10_000, 13_000))
    stop = threading.Event()
    errors: list[Exception] = []
    seen: set[str] = set()

    def searcher(seed: int) -> None:
        queries = clustered(50, seed=seed)
        try:
            while not stop.is_set():
                for q in queries:
                    keys = {k for k, _ in index.search(q, 5)}
                    assert len(keys) == 5
                    assert keys <= old_keys or keys <= new_keys, keys
                    seen.add("new" if keys <= new_keys else "old")
        except (AssertionError, RuntimeError, ValueError) as exc:
            errors.append(exc)

    threads = [threading.Thread(target=searcher, args=(s,)) for s in (7, 8)]
    for t in threads:
        t.start()
    index.rebuild(np.arange(10_000, 13_000), new)
    while "new" not in seen and not errors:
        stop.wait(0.01)
    stop.set()
    for t in threads:
        t.join()
    assert not errors, errors
    assert seen == {"old", "new"}
    assert index.state == "in_sync" and index.keys() == new_keys
    assert make_index(tmp_path).keys() == new_keys  # rebuild saved


def test_writes_during_a_rebuild_are_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = clustered(300)
    index = make_index(tmp_path)
    index.add(np.arange(100), data[:100])
    building = threading.Event()
    proceed = threading.Event()
    real_finish = VectorIndex._finish_rebuild

    def paused_finish(self: VectorIndex, fresh: Index) -> None:
        building.set()
        assert proceed.wait(10)
        real_finish(self, fresh)

    monkeypatch.setattr(VectorIndex, "_finish_rebuild", paused_finish)
    worker = threading.Thread(target=index.rebuild, args=(np.arange(200), data[:200]))
    worker.start()
    assert building.wait(10)
    assert index.state == "rebuilding"
    with pytest.raises(RuntimeError):
        index.rebuild([1], data[:1])
    index.add([250], data[250])  # arrives during the rebuild
    index.remove([0, 150])  # 0 is in both indexes, 150 only in the new one
    index.add([5], data[299])  # a replacement
    assert 250 in index and 0 not in index  # the old index still answers
    proceed.set()
    worker.join(10)
    assert index.state == "in_sync"
    assert index.keys() == (set(range(200)) - {0, 150}) | {250}
    best = index.search(data[299], 1)[0]
    assert best[0] == 5 and best[1] > 0.999


def test_a_failed_rebuild_keeps_the_old_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, data = saved_index(tmp_path)
    index = make_index(tmp_path)

    def boom(self: VectorIndex, fresh: Index) -> None:
        raise MemoryError("out of memory")

    monkeypatch.setattr(VectorIndex, "_finish_rebuild", boom)
    with pytest.raises(MemoryError):
        index.rebuild(np.arange(10), data[:10])
    assert index.state == "in_sync" and len(index) == 200
    monkeypatch.undo()
    index.rebuild(np.arange(10), data[:10])
    assert len(index) == 10


def test_searches_run_while_another_thread_adds(tmp_path: Path) -> None:
    data = clustered(4000, seed=4)
    index = make_index(tmp_path)
    index.add(np.arange(500), data[:500])
    errors: list[Exception] = []
    done = threading.Event()
    counts = [0]

    def searcher() -> None:
        try:
            while not done.is_set():
                hits = index.search(data[counts[0] % 500], 3)
                assert len(hits) == 3 and all(0 <= k < 4000 for k, _ in hits)
                counts[0] += 1
        except (AssertionError, RuntimeError, ValueError) as exc:
            errors.append(exc)

    threads = [threading.Thread(target=searcher) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        index.add(np.arange(500, 3000), data[500:3000])  # one batch, many chunks
        for key in range(3000, 3300):  # single adds, as after each turn
            index.add([key], data[key])
        index.remove(np.arange(0, 200))
        index.add(np.arange(3300, 4000), data[3300:4000])
    finally:
        done.set()
        for t in threads:
            t.join()
    assert not errors, errors
    assert counts[0] > 0
    assert len(index) == 3800


def test_readers_that_waited_through_a_write_go_before_the_next_writer() -> None:
    lock = ReadWriteLock()
    order: list[str] = []

    def reader() -> None:
        with lock.read():
            order.append("read")

    with lock.write():
        thread = threading.Thread(target=reader)
        thread.start()
        while lock._readers_waiting == 0:
            threading.Event().wait(0.001)
    with lock.write():  # back to back, as a chunked add does
        order.append("write")
    thread.join()
    assert order == ["read", "write"]


# ---------------------------------------------------------------- memory estimate


def test_memory_estimate_matches_resident_memory_for_10k_vectors() -> None:
    """Within 25 % of the RSS growth of a 10k × 768 f16 index; usearch's memory_usage is its
    reserved arena capacity, which doubles, so it lies between the estimate and ~2.2× it."""
    child = """
import json, numpy as np
from usearch.index import Index
def rss():
    with open('/proc/self/status') as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith('VmRSS'))
x = np.random.default_rng(0).standard_normal((10_000, 768), dtype=np.float32)
before = rss()
index = Index(ndim=768, metric='cos', dtype='f16', connectivity=16, expansion_add=16)
index.add(np.arange(10_000), x)
print(json.dumps({"rss": rss() - before, "memory_usage": index.memory_usage}))
"""
    done = subprocess.run(
        [sys.executable, "-c", child], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    measured = json.loads(done.stdout)
    estimate = estimate_index_bytes(10_000, 768, "f16", 16)
    assert abs(estimate - measured["rss"]) <= 0.25 * measured["rss"], (estimate, measured)
    assert estimate <= measured["memory_usage"] <= 2.2 * estimate, (estimate, measured)
    assert estimate_index_bytes(10_000, 768, "f32", 16) > estimate


def test_a_file_with_the_older_sha256_footer_still_loads(tmp_path: Path) -> None:
    import hashlib
    import struct

    good_index, data = saved_index(tmp_path)
    payload = good_index._index.save()
    identity = bytes(range(32))
    old_footer = struct.pack(
        "<8sQ32s32s", b"STRAYVX2", len(payload), hashlib.sha256(payload).digest(), identity
    )
    good_index.path.write_bytes(bytes(payload) + old_footer)
    index = VectorIndex(good_index.path, NDIM, identity=identity)
    assert index.open() == "in_sync", index.reason
    assert index.search(data[3], 1)[0][0] == 3
    damaged = bytearray(payload)
    damaged[len(damaged) // 2] ^= 0xFF
    good_index.path.write_bytes(bytes(damaged) + old_footer)
    assert VectorIndex(good_index.path, NDIM, identity=identity).open() == "stale"


def test_sorted_unique_is_numpys_unique() -> None:
    from store.vector_index import sorted_unique

    rng = np.random.default_rng(4)
    for size in (0, 1, 2, 50, 5000):
        keys = rng.integers(0, 300, size).astype(np.uint64)
        assert np.array_equal(sorted_unique(keys), np.unique(keys))
