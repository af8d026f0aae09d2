"""The pruned word search (store/lexical_topk.py) against the dense pass and the SQL path, on a
real DuckDB file: the same ids and the same scores bit for bit over many random queries (with
alternatives, removed points and points added after the load), while skipping posting lists."""

from __future__ import annotations

import random

import pytest

from store import lexical_index as li
from store import lexical_postings, lexical_topk
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
        pruned, dense = both(
            cache, lambda c, q=query, k=k: c.search_and_subset(con, q, k, pinned), monkeypatch
        )
        assert pruned == dense, query
    for query in ("paintings w1 w250", "w0 w1 w2 w3", "houses running w299", "lindau"):
        same(con, cache, query, k=20)


def test_the_common_words_posting_lists_are_not_walked(con, monkeypatch):
    add(con, {i: f"everywhere often{i % 2} rare{i % 97}" for i in range(1, 2001)})
    cache = li.LexicalCache()
    cache.load(con)
    walked: list[int] = []
    real = lexical_topk._accumulate

    def counting(index: object, partial: object, group: lexical_topk._Group, q: object) -> object:
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
