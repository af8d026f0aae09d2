"""The pruned word search (store/lexical_topk.py) against the dense pass and the SQL path, on a
real DuckDB file: the same ids and the same scores bit for bit over many random queries (with
alternatives, removed points and points added after the load; from the tables and from a mapped
`lexical.idx` with its stored impact bounds), while skipping posting lists."""

from __future__ import annotations

import random

import duckdb
import numpy as np
import pytest

from store import (
    bm25,
    lexical_dense,
    lexical_persist,
    lexical_postings,
    lexical_query,
    lexical_topk,
    meta,
)
from store import lexical_index as li
from store.lexical_file import LEXICAL_FILENAME
from tests.test_lexical_index import add
from tests.test_lexical_postings import con as con  # the fixture
from tests.test_lexical_postings import remove, same

# Words whose English and German stems differ give a group of two alternatives.
WORDS = [f"w{i}" for i in range(300)] + [
    "paintings", "houses", "running", "gardens", "timeouts", "readtimeout", "lindau", "ferry",
]  # fmt: skip


def zipf_text(rng: random.Random, words: int) -> str:
    weights = [1 / (i + 1) for i in range(len(WORDS))]
    return " ".join(rng.choices(WORDS, weights=weights, k=words))


def both(cache: li.LexicalCache, run: object, monkeypatch: pytest.MonkeyPatch) -> list[object]:
    out = []
    for pruning in (True, False):
        monkeypatch.setattr(lexical_topk, "PRUNING", pruning)
        out.append(run(cache))  # type: ignore[operator]
    return out


def test_pruned_top_k_is_the_dense_ranking_bit_for_bit(con, monkeypatch):
    monkeypatch.setattr(lexical_postings, "MERGE_MIN_POSTINGS", 500)
    monkeypatch.setattr(lexical_postings, "MERGE_FRACTION", 10**9)
    rng = random.Random(18)
    add(con, {i: zipf_text(rng, rng.randint(2, 30)) for i in range(1, 1501)})
    cache = li.LexicalCache()
    cache.load(con)
    remove(con, cache, *rng.sample(range(1, 1501), 120))
    add(con, {i: zipf_text(rng, rng.randint(2, 30)) for i in range(1501, 1801)}, cache=cache)
    pinned = rng.sample(range(1, 1801), 40)
    for _ in range(300):
        query, k = zipf_text(rng, rng.randint(1, 10)), rng.choice((1, 5, 10, 50))
        pruned, dense = both(cache, lambda c, q=query, k=k: c.search(con, q, k), monkeypatch)
        assert pruned == dense, query
        # a query zeroes what it touched (slot by slot, or all at once when it touched many)
        assert not cache._index.scratch(0).any() and not cache._index.scratch(1).any(), query
        pruned, dense = both(
            cache, lambda c, q=query, k=k: c.search_and_subset(con, q, k, pinned), monkeypatch
        )
        assert pruned == dense, query
    for query in ("paintings w1 w250", "w0 w1 w2 w3", "houses running w299", "lindau"):
        same(con, cache, query, k=20)


def test_pruning_from_a_mapped_file_and_its_impacts_is_the_dense_ranking(
    con, tmp_path, monkeypatch
):
    monkeypatch.setattr(lexical_postings, "MERGE_MIN_POSTINGS", 400)
    monkeypatch.setattr(lexical_postings, "MERGE_FRACTION", 10**9)
    meta.put(con, lexical_persist.DATABASE_ID_KEY, "topk")
    rng = random.Random(1801)
    add(con, {i: zipf_text(rng, rng.randint(2, 40)) for i in range(1, 1201)})
    path = tmp_path / LEXICAL_FILENAME
    first = li.LexicalCache(file=path)
    first.load(con)
    assert first.save_file()
    cache = li.LexicalCache(file=path)
    cache.load(con)
    assert cache.loaded_from == "file" and len(cache._index._file_impacts) > 0
    pinned = rng.sample(range(1, 1201), 30)
    for round_ in range(3):  # as mapped, after removals and adds, after a merge
        if round_ == 1:
            remove(con, cache, *rng.sample(range(1, 1201), 100))
            fresh = {i: zipf_text(rng, rng.randint(2, 9)) for i in range(1201, 1261)}
            add(con, fresh, cache=cache)
        if round_ == 2:
            add(
                con,
                {i: zipf_text(rng, rng.randint(30, 60)) for i in range(1261, 1400)},
                cache=cache,
            )
            assert cache._index.merges and len(cache._index._file_impacts)  # still used
        for _ in range(100):
            query, k = zipf_text(rng, rng.randint(1, 12)), rng.choice((1, 10, 40))
            pruned, dense = both(
                cache, lambda c, q=query, k=k: c.search_and_subset(con, q, k, pinned), monkeypatch
            )
            assert pruned == dense, query


def test_the_common_words_posting_lists_are_not_walked(con, monkeypatch):
    add(con, {i: f"everywhere often{i % 2} rare{i % 97}" for i in range(1, 2001)})
    cache = li.LexicalCache()
    cache.load(con)
    walked: list[int] = []
    real = lexical_topk._accumulate

    def counting(
        index: object, partial: object, group: lexical_query.QueryGroup, q: object
    ) -> object:
        walked.append(group.size)
        return real(index, partial, group, q)  # type: ignore[arg-type]

    monkeypatch.setattr(lexical_topk, "_accumulate", counting)
    hits = cache.search(con, "everywhere often1 rare5", 3)
    assert sum(walked) == 42  # rare5 and its part 5 (21 each), not often1's 1000 nor the 2000
    assert [pid for pid, _ in hits] == [5, 199, 393]  # rare5 and odd: often1 too
    monkeypatch.setattr(lexical_topk, "PRUNING", False)
    assert cache.search(con, "everywhere often1 rare5", 3) == hits


def test_pruning_keeps_ties_at_the_cut_by_lower_id(con):
    add(con, {i: f"common filler{i % 7} tie" for i in range(1, 301)})
    cache = li.LexicalCache()
    cache.load(con)
    hits = cache.search(con, "tie common", 10)
    assert [pid for pid, _ in hits] == list(range(1, 11))  # all tied: lowest ids
    same(con, cache, "tie filler3", k=30)


def test_the_walks_float32_values_stay_within_their_stated_error() -> None:
    """The walk's partial scores are float32 (`bm25.rough_contributions`); the margins of
    its comparisons assume each value is within `ROUGH_ERROR` of the exact float64 one."""
    rng = np.random.default_rng(7)
    lengths = rng.integers(1, 5_000, size=50_000).astype(np.int32)
    slots = np.arange(len(lengths), dtype=np.intp)
    tfs = rng.integers(1, 300, size=len(lengths)).astype(np.uint16)
    for avgdl, idf in ((1.0, 1e-6), (37.3, 2.5), (812.9, 13.8), (4_999.0, 0.04)):
        exact = bm25.contributions(slots, tfs, idf, avgdl, lengths)
        rough = bm25.rough_contributions(slots, tfs, idf, avgdl, lengths)
        assert rough.dtype == np.float32
        assert float(np.max(np.abs(rough / exact - 1))) < bm25.ROUGH_ERROR


def test_the_walks_rounding_never_prunes_a_tie_at_the_cut(con, monkeypatch):
    """300 points tie; the ten best are the ten lowest ids. The walk's values may be off by
    up to `ROUGH_ERROR` either way: here the even slots' a little high and the odd ones' a
    little low, so the odd ids' partial scores fall below a threshold set by the even ones.
    Without the comparisons' allowance for that, the odd ids were pruned (2, 4, 6, …)."""
    add(con, {i: f"common filler{i % 7} tie" for i in range(1, 301)})
    cache = li.LexicalCache()
    cache.load(con)
    real = bm25.rough_contributions

    def rough_off(slots, tfs, idf, avgdl, lengths):
        return off_by_parity(real(slots, tfs, idf, avgdl, lengths), slots, bm25.ROUGH_ERROR)

    monkeypatch.setattr(lexical_topk, "rough_contributions", rough_off)
    ties_hold_at_the_cut(con, cache, monkeypatch)


def test_the_look_ups_narrow_the_hopeful_slots_and_keep_a_tie_at_the_cut(con, monkeypatch):
    """300 points hold "alpha beta", 300 "alpha gamma" (as long: alpha scores the same in
    all 600), 3,400 "beta" and a filler. The walk takes alpha's 600
    postings and stops, as walking beta's 3,700 costs more than looking beta up for 600
    slots. By beta's bound all 600 could still be among the ten best; looked up, the 300
    without beta fall short and are dropped, so `exact` scores 300 slots, not 600. The 300
    with both words tie, and their ten lowest ids are the hits — with the walk's values off
    by their stated error by slot parity, which the look-ups' lower bound must allow for
    (without it the odd ids among them were dropped)."""
    docs = {i: "alpha beta" for i in range(1, 301)}
    docs |= {i: "alpha gamma" for i in range(301, 601)}
    docs |= {i: f"beta filler{i % 13}" for i in range(601, 4001)}
    add(con, docs)
    cache = li.LexicalCache()
    cache.load(con)
    walked: list[int] = []
    scored: list[int] = []
    real_walk, real_exact, real_rough = (
        lexical_topk._accumulate,
        lexical_topk.exact,
        bm25.rough_contributions,
    )

    def walking(
        index: object, partial: object, group: lexical_query.QueryGroup, q: object
    ) -> object:
        walked.append(group.size)
        return real_walk(index, partial, group, q)  # type: ignore[arg-type]

    def scoring(query: lexical_query.PreparedQuery, slots: np.ndarray) -> np.ndarray:
        scored.append(len(slots))
        return real_exact(query, slots)

    def rough_off(slots, tfs, idf, avgdl, lengths):
        return off_by_parity(real_rough(slots, tfs, idf, avgdl, lengths), slots, bm25.ROUGH_ERROR)

    monkeypatch.setattr(lexical_topk, "_accumulate", walking)
    monkeypatch.setattr(lexical_topk, "exact", scoring)
    monkeypatch.setattr(lexical_topk, "rough_contributions", rough_off)
    hits = cache.search(con, "alpha beta", 10)
    assert [pid for pid, _ in hits] == list(range(1, 11))
    assert walked == [600] and scored == [300]  # without the look-ups' narrowing: 600
    monkeypatch.setattr(lexical_topk, "PRUNING", False)
    assert cache.search(con, "alpha beta", 10) == hits


def off_by_parity(values: np.ndarray, slots: np.ndarray, error: float) -> np.ndarray:
    """The walk's `values` half `error` high at even slots and half `error` low at odd ones."""
    pushed = values.astype(np.float64)
    pushed *= np.where(slots % 2 == 0, 1 + error / 2, 1 - error / 2)
    return pushed.astype(np.float32)


def ties_hold_at_the_cut(
    con: duckdb.DuckDBPyConnection, cache: li.LexicalCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The 300-way tie's ten best are the ten lowest ids, as the dense pass ranks them."""
    hits = cache.search(con, "tie common", 10)
    assert [pid for pid, _ in hits] == list(range(1, 11))
    monkeypatch.setattr(lexical_topk, "PRUNING", False)
    assert cache.search(con, "tie common", 10) == hits


def test_ranked_takes_the_k_best_with_every_tie_at_the_cut_by_lower_id(con):
    """`lexical_dense.ranked` partitions before it sorts when it keeps few: the k best are
    still those of a full sort by (score descending, point id), ties at the cut included."""
    add(con, {i: f"word{i % 5}" for i in range(1, 801)})
    cache = li.LexicalCache()
    cache.load(con)
    index = cache._index
    ids = index.point_ids()
    rng = np.random.default_rng(3)
    for k in (1, 5, 40, 99, 100, 101, 400):
        slots = np.sort(rng.choice(len(ids), size=800, replace=False)).astype(np.int64)
        scores = rng.integers(0, 12, size=len(slots)).astype(np.float64) / 4  # many ties, zeros
        positive = scores > 0
        want = sorted(zip(ids[slots][positive].tolist(), scores[positive].tolist(), strict=True),
                      key=lambda hit: (-hit[1], hit[0]))[:k]  # fmt: skip
        assert lexical_dense.ranked(index, slots, scores, k) == want, k


def test_a_words_appended_postings_are_scored_without_joining_its_list(con, monkeypatch):
    rng = random.Random(7)
    add(con, {i: zipf_text(rng, rng.randint(5, 20)) for i in range(1, 401)})
    cache = li.LexicalCache()
    cache.load(con)
    add(con, {i: zipf_text(rng, rng.randint(5, 20)) for i in range(401, 431)}, cache=cache)
    cache.search(con, "w0", 1)  # applies the staged adds: appended, not merged
    found = cache._index.posting_parts("w0")
    assert found is not None and len(found[0]) == 2  # the merged list, the appended postings
    pinned = rng.sample(range(1, 431), 20)
    for _ in range(100):
        query, k = zipf_text(rng, rng.randint(1, 8)), rng.choice((1, 10, 50))
        pruned, dense = both(
            cache, lambda c, q=query, k=k: c.search_and_subset(con, q, k, pinned), monkeypatch
        )
        assert pruned == dense, query


def test_top_and_within_in_one_pass_are_the_two_calls_bit_for_bit(con):
    rng = random.Random(606)
    add(con, {i: zipf_text(rng, rng.randint(2, 30)) for i in range(1, 801)})
    cache = li.LexicalCache()
    cache.load(con)
    remove(con, cache, *rng.sample(range(1, 801), 60))  # some pins among the removed
    add(con, {i: zipf_text(rng, rng.randint(2, 30)) for i in range(801, 901)}, cache=cache)
    cache.search(con, "w0", 1)  # applies the staged changes
    index = cache._index
    for _ in range(200):
        query = zipf_text(rng, rng.randint(1, 10))
        prepared = lexical_query.prepare(index, cache.analyzer.query_terms(query))
        if prepared is None:
            continue
        pins = rng.sample(range(1, 901), rng.choice((0, 1, 10, 50)))
        k = rng.choice((1, 5, 50))
        overall = lexical_topk.top(index, prepared, k)
        within = lexical_topk.within(index, prepared, pins) if pins and overall else []
        assert lexical_topk.top_and_within(index, prepared, k, pins) == (overall, within)


def test_the_walk_keeps_the_kth_best_partial_score_of_every_live_candidate(con):
    """After each group the walk knows the k-th best partial score over all live candidates
    from the old best and the slots the group raised (`_Best`), without ranking them all: the
    same value as ranking every candidate, through slots raised by several groups (counted
    once: counted twice, a slot pushed the k-th best above the truth) and removed points."""
    rng = random.Random(2212)
    add(con, {i: zipf_text(rng, rng.randint(2, 30)) for i in range(1, 1201)})
    cache = li.LexicalCache()
    cache.load(con)
    add(con, {i: zipf_text(rng, rng.randint(2, 30)) for i in range(1201, 1301)}, cache=cache)
    remove(con, cache, *rng.sample(range(1, 1301), 150))
    cache.search(con, "w0", 1)  # takes in the changes
    index = cache._index
    assert index.dead
    checked = 0
    for _ in range(60):
        query = lexical_query.prepare(
            index, cache.analyzer.query_terms(zipf_text(rng, rng.randint(2, 12)))
        )
        if query is None:
            continue
        k = rng.choice((1, 5, 20))
        partial = np.zeros(len(index.doc_lengths()) + 1, np.float32)
        best, live = lexical_topk._Best(k), []
        for group in query.groups:
            new, changed = lexical_topk._accumulate(index, partial, group, query)
            live.append(index.live(new))
            best.add(index, partial, changed)
            values = np.sort(partial.take(np.concatenate(live)))
            assert best.kth == (float(values[-k]) if len(values) >= k else 0.0)
            assert sorted(best.slots) == sorted(set(best.slots.tolist()))  # each slot once
            checked += 1
    assert checked > 200
