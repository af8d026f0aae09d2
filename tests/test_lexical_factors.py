"""The postings' stored factors (`lexical.idx` version 5, `bm25.factors`): the MaxScore walk
reads them instead of computing each value from its slot's length, and ranks exactly as the
dense pass still — as mapped, after adds and removes, after a merge, from an older file."""

from __future__ import annotations

import random

import numpy as np
import pytest

from store import (
    bm25,
    lexical_file,
    lexical_persist,
    lexical_postings,
    lexical_query,
    lexical_topk,
    meta,
)
from store import lexical_index as li
from store.lexical_file import LEXICAL_FILENAME, FileState, factor_sections
from tests.test_lexical_index import add
from tests.test_lexical_postings import con as con  # the fixture
from tests.test_lexical_postings import remove
from tests.test_lexical_topk import both, off_by_parity, ties_hold_at_the_cut, zipf_text


def mapped_cache(con, tmp_path, docs: dict[int, str]) -> li.LexicalCache:
    """A cache mapped from the file written for `docs`."""
    meta.put(con, lexical_persist.DATABASE_ID_KEY, "factors")
    add(con, docs)
    path = tmp_path / LEXICAL_FILENAME
    first = li.LexicalCache(file=path)
    first.load(con)
    assert first.save_file()
    cache = li.LexicalCache(file=path)
    cache.load(con)
    assert cache.loaded_from == "file"
    return cache


def walks_stored_factors(cache: li.LexicalCache, query: str) -> bool:
    prepared = lexical_query.prepare(cache._index, cache.analyzer.query_terms(query))
    assert prepared is not None
    return any(a.factors is not None for g in prepared.groups for a in g.alternatives)


def same_as_dense(con, cache: li.LexicalCache, rng: random.Random, monkeypatch, n: int) -> None:
    pinned = rng.sample(sorted(cache._index.point_ids().tolist()), 25)
    for _ in range(n):
        query, k = zipf_text(rng, rng.randint(1, 12)), rng.choice((1, 10, 40))
        pruned, dense = both(
            cache, lambda c, q=query, k=k: c.search_and_subset(con, q, k, pinned), monkeypatch
        )
        assert pruned == dense, query


def test_stored_factors_times_idf_stay_within_their_stated_error() -> None:
    """The walk's margins assume a stored factor times idf is within `FACTOR_ERROR` of the
    exact contribution, widened by how far the average length moved since it was stored."""
    rng = np.random.default_rng(11)
    lengths = rng.integers(1, 3_000, size=50_000).astype(np.int32)
    slots = np.arange(len(lengths), dtype=np.intp)
    tfs = rng.integers(1, 200, size=len(lengths)).astype(np.uint16)
    for basis, idf in ((37.3, 2.5), (812.9, 13.8), (2_999.0, 0.04)):
        stored = bm25.factors(slots, tfs, basis, lengths)
        assert stored is not None and stored.dtype == np.float16
        for now in (basis, basis * 1.04, basis / 1.04):
            values = stored.astype(np.float32) * np.float32(idf)
            exact = bm25.contributions(slots, tfs, idf, now, lengths)
            allowed = (1 + bm25.factor_drift(now, basis)) * (1 + bm25.FACTOR_ERROR) - 1
            assert float(np.max(np.abs(values / exact - 1))) <= allowed
            assert float(np.max(np.abs(values / exact - 1))) > bm25.ROUGH_ERROR  # not float32's
    huge = np.array([1, 200_000], dtype=np.int32)  # a factor below float16's normal numbers
    assert bm25.factors(np.arange(2), np.ones(2, np.uint16), 1.0, huge) is None


def test_a_file_holds_every_postings_factor_and_the_walk_ranks_as_the_dense_pass(
    con, tmp_path, monkeypatch
):
    rng = random.Random(5)
    cache = mapped_cache(
        con, tmp_path, {i: zipf_text(rng, rng.randint(2, 40)) for i in range(1, 1201)}
    )
    index = cache._index
    assert index._factors is not None and len(index._factors) == len(index._slots)
    want = bm25.factors(index._slots, index._tfs, index.factor_avgdl, index.doc_lengths())
    assert want is not None and np.array_equal(index._factors, want)
    assert index.factor_avgdl == pytest.approx(index.total_length / index.doc_count)
    assert walks_stored_factors(cache, "w1 w7 paintings")
    same_as_dense(con, cache, rng, monkeypatch, 150)


def test_factors_are_carried_through_adds_removes_and_a_merge(con, tmp_path, monkeypatch):
    rng = random.Random(9)
    cache = mapped_cache(
        con, tmp_path, {i: zipf_text(rng, rng.randint(5, 30)) for i in range(1, 1201)}
    )
    index = cache._index
    remove(con, cache, *rng.sample(range(1, 1201), 60))
    add(con, {i: zipf_text(rng, rng.randint(5, 30)) for i in range(1201, 1241)}, cache=cache)
    assert walks_stored_factors(cache, "w0 w3 w11")  # the merged lists', beside the appended
    same_as_dense(con, cache, rng, monkeypatch, 100)
    monkeypatch.setattr(lexical_postings, "MERGE_MIN_POSTINGS", 1)
    monkeypatch.setattr(lexical_postings, "MERGE_FRACTION", 10**9)
    add(con, {1241: "w2 w5 lindau ferry"}, cache=cache)
    cache.search(con, "w0", 1)  # applies the staged add: the buffers are merged
    monkeypatch.undo()
    assert cache._index is index and index.merges >= 1 and index._factors is not None
    want = bm25.factors(index._slots, index._tfs, index.factor_avgdl, index.doc_lengths())
    assert want is not None and np.array_equal(index._factors, want)
    assert walks_stored_factors(cache, "lindau w2")
    same_as_dense(con, cache, rng, monkeypatch, 100)


def test_factors_stored_for_another_average_length_are_left_unread(con, tmp_path, monkeypatch):
    """Once the average length moved more than `MAX_FACTOR_DRIFT` from the factors', the walk
    computes every value again (and ranks as before)."""
    rng = random.Random(12)
    cache = mapped_cache(
        con, tmp_path, {i: zipf_text(rng, rng.randint(2, 12)) for i in range(1, 601)}
    )
    long_ones = {i: zipf_text(rng, rng.randint(60, 90)) for i in range(601, 701)}
    add(con, long_ones, cache=cache)
    index = cache._index
    cache.search(con, "w0", 1)
    drift = bm25.factor_drift(index.total_length / index.doc_count, index.factor_avgdl)
    assert drift > lexical_query.MAX_FACTOR_DRIFT
    assert not walks_stored_factors(cache, "w0 w3 w11")
    same_as_dense(con, cache, rng, monkeypatch, 80)


def test_the_stored_factors_rounding_never_prunes_a_tie_at_the_cut(con, tmp_path, monkeypatch):
    """300 points tie; the ten best are the ten lowest ids. Stored factors may be off by up to
    `FACTOR_ERROR` either way: here the even slots' (odd ids') a little high and the odd
    slots' a little low. With the walk's allowance for them left out (float32's only), the
    even ids were pruned (1, 3, 5, …)."""
    cache = mapped_cache(con, tmp_path, {i: f"common filler{i % 7} tie" for i in range(1, 301)})
    real = lexical_topk._values

    def factors_off(alternative, part, tfs, slots, query):
        values = real(alternative, part, tfs, slots, query)
        return off_by_parity(values, slots, bm25.FACTOR_ERROR)

    monkeypatch.setattr(lexical_topk, "_values", factors_off)
    assert walks_stored_factors(cache, "tie common")
    ties_hold_at_the_cut(con, cache, monkeypatch)


def test_a_version_4_file_is_walked_without_factors_then_written_with_them(
    con, tmp_path, monkeypatch
):
    rng = random.Random(4)
    monkeypatch.setattr(lexical_file, "VERSION", 4)  # the layout before the factors
    cache = mapped_cache(
        con, tmp_path, {i: zipf_text(rng, rng.randint(2, 30)) for i in range(1, 801)}
    )
    monkeypatch.undo()
    mapped = lexical_file.read_unbound(tmp_path / LEXICAL_FILENAME)
    assert "factors" not in mapped.arrays  # not rebuilt: a version-4 file is read as it is
    assert cache._index._factors is None and not walks_stored_factors(cache, "w0 w1")
    same_as_dense(con, cache, rng, monkeypatch, 80)
    assert cache.save_file()  # unchanged, but written once more: in format 5, with factors
    assert "factors" in lexical_file.read_unbound(tmp_path / LEXICAL_FILENAME).arrays
    assert cache._index._factors is not None and walks_stored_factors(cache, "w0 w1")
    assert not cache.save_file()  # and then only when enough changed, as before


def test_a_factor_below_float16s_range_leaves_the_file_without_factors() -> None:
    arrays = {
        "slots": np.array([0, 1], dtype=np.int32),
        "tfs": np.array([1, 1], dtype=np.uint16),
        "lengths": np.array([1, 200_000], dtype=np.int32),
    }
    state = FileState("x", None, doc_count=2, total_length=2, id_sum=3)  # average length 1
    found = factor_sections(arrays, state)
    assert len(found["factors"]) == 0 and float(found["factor_avgdl"][0]) == 0.0
    state = FileState("x", None, doc_count=2, total_length=200_001, id_sum=3)
    found = factor_sections(arrays, state)
    assert len(found["factors"]) == 2 and float(found["factor_avgdl"][0]) == 100_000.5


def test_a_store_upgraded_from_format_4_maps_its_file_then_writes_it_with_factors(
    tmp_path, monkeypatch
):
    """What a user upgrading sees: the store opens on its format-4 `lexical.idx` (mapped, not
    loaded from the tables), recall finds the same points, and the open writes the file once
    more in format 5, in the background; the next open walks the factors."""
    from memory.memory_store import MemoryConfig, MemoryStore
    from store.clock import Clock

    home = tmp_path / "home"

    def opened() -> MemoryStore:
        store = MemoryStore.open(home, MemoryConfig(), clock=Clock())
        store.wait_until_ready(timeout=30)
        return store

    rng = random.Random(21)
    store = opened()
    for _ in range(60):
        store.save("user", zipf_text(rng, rng.randint(4, 20)), use_filter=False)
    want = store.recall("w3 w17 paintings", k=5, mode="lexical").hits
    store.close()
    path = home / LEXICAL_FILENAME
    mapped = lexical_file.read_unbound(path)  # the file as written, rewritten in format 4
    arrays = {name: np.array(array) for name, array in mapped.arrays.items()}
    arrays["terms"] = lexical_file.encode_terms(mapped.terms)
    monkeypatch.setattr(lexical_file, "VERSION", 4)
    lexical_file.write_file(path, mapped.state, arrays)
    monkeypatch.undo()
    assert "factors" not in lexical_file.read_unbound(path).arrays

    store = opened()
    try:
        assert store.lexical.loaded_from == "file"  # mapped as it was, no load from the tables
        assert [h.id for h in store.recall("w3 w17 paintings", k=5, mode="lexical").hits] == [
            h.id for h in want
        ]
        assert "factors" in lexical_file.read_unbound(path).arrays  # the open wrote format 5
    finally:
        store.close()
    store = opened()
    try:
        assert store.lexical.loaded_from == "file" and store.lexical._index._factors is not None
        assert [h.id for h in store.recall("w3 w17 paintings", k=5, mode="lexical").hits] == [
            h.id for h in want
        ]
    finally:
        store.close()


@pytest.mark.parametrize("bad", [np.nan, np.inf, 0.0, -1.0, 3.0])
def test_a_file_whose_factors_are_garbage_is_refused_and_loaded_from_the_tables(
    con, tmp_path, monkeypatch, bad
):
    """Garbage factors under right CRCs (a buggy writer) would prune silently: the file is
    refused like a corrupt one and the index loads from the tables."""
    rng = random.Random(30)
    real = lexical_file.factor_sections

    def garbage(arrays, state):
        found = real(arrays, state)
        found["factors"] = found["factors"].copy()
        found["factors"][len(found["factors"]) // 2] = bad
        return found

    monkeypatch.setattr(lexical_file, "factor_sections", garbage)
    meta.put(con, lexical_persist.DATABASE_ID_KEY, "garbage")
    add(con, {i: zipf_text(rng, rng.randint(2, 20)) for i in range(1, 301)})
    path = tmp_path / LEXICAL_FILENAME
    first = li.LexicalCache(file=path)
    first.load(con)
    assert first.save_file()
    monkeypatch.undo()
    with pytest.raises(lexical_file.LexicalFileError, match="do not fit together"):
        lexical_file.read_unbound(path)
    cache = li.LexicalCache(file=path)
    cache.load(con)
    assert cache.loaded_from == "tables"
    same_as_dense(con, cache, rng, monkeypatch, 20)
