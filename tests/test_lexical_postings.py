"""The word index's flat-array mirror (store/lexical_postings.py) against the SQL path, on real
DuckDB files: adds after a load, merges, deletes, re-adds, an empty index, a term in every
document, orphan postings, and the load's fallback when two terms share a hash."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from store import lexical_dense, lexical_postings, lexical_tables
from store import lexical_index as li
from store.lexical_postings import CompactPostings
from tests.test_lexical_index import add, ids, migrate


@pytest.fixture
def con(tmp_path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    connection = duckdb.connect(str(tmp_path / "straylight.duckdb"))
    migrate(connection)
    yield connection
    connection.close()


@pytest.fixture
def small_merges(monkeypatch: pytest.MonkeyPatch) -> None:
    """Merge the append buffers every few postings, so the tests cross many merges."""
    monkeypatch.setattr(lexical_postings, "MERGE_MIN_POSTINGS", 7)
    monkeypatch.setattr(lexical_postings, "MERGE_FRACTION", 10**9)


def _ranked(hits: list[tuple[int, float]]) -> list[tuple[float, int]]:
    """Ties by lower id, where a tie is a score equal to 9 places: SQL's sums may differ from
    numpy's in the last bit, which would reorder exact ties."""
    return sorted((-round(score, 9), point_id) for point_id, score in hits)


def same_hits(got: list[tuple[int, float]], want: list[tuple[int, float]]) -> None:
    assert len(got) == len(want)
    cut = min([-s for s, _ in _ranked(want)], default=0.0)  # ties at the cut may differ
    assert [h for h in _ranked(got) if -h[0] > cut + 1e-9] == [
        h for h in _ranked(want) if -h[0] > cut + 1e-9
    ]
    assert [s for _, s in got] == pytest.approx([s for _, s in want])


def same(con: duckdb.DuckDBPyConnection, cache: li.LexicalCache, query: str, k: int = 10) -> None:
    """The mirror ranks and scores like the SQL path (the tables are the truth)."""
    same_hits(cache.search(con, query, k), li.search(con, query, k))


def remove(con: duckdb.DuckDBPyConnection, cache: li.LexicalCache, *point_ids: int) -> None:
    con.begin()
    for point_id in point_ids:
        li.remove_point(con, point_id, cache=cache)
    con.commit()


def test_an_empty_index_answers_nothing_and_holds_nothing(con):
    cache = li.LexicalCache()
    cache.load(con)
    assert cache.search(con, "anything at all", 10) == []
    assert cache.doc_count == 0 and cache.postings_bytes() == 0 and cache.term_count == 0
    assert cache.terms_of(1) == () and cache.document_frequency("anything") == 0
    empty = CompactPostings()
    assert lexical_dense.totals(empty, [("word",)]) is None and empty.slot_of(3) is None


def test_adds_after_a_load_cross_merges_and_score_like_sql(con, small_merges):
    add(con, {i: f"alpha beta{i % 3} gamma{i}" for i in range(1, 21)})
    cache = li.LexicalCache()
    cache.load(con)
    con.begin()
    for i in range(21, 61):
        li.index_point(con, i, f"alpha beta{i % 4} delta{i % 5} fresh", cache=cache)
    con.commit()
    for query in ("alpha", "beta1 delta2", "fresh gamma7", "gamma40 beta3", "nothing"):
        same(con, cache, query)
    assert cache.doc_count == 60
    assert cache._index.merges > 0
    assert cache.document_frequency("fresh") == 40
    assert set(cache.terms_of(33)) == set(li.analyse("alpha beta1 delta3 fresh").counts)


def test_deletes_and_re_adds_keep_scores_and_frequencies_exact(con, small_merges):
    add(con, {i: f"shared topic{i % 4} word{i}" for i in range(1, 41)})
    cache = li.LexicalCache()
    cache.load(con)
    remove(con, cache, 2, 6, 10, 39)
    same(con, cache, "topic2 shared")
    assert cache.document_frequency("topic2") == 7  # 10 of 40, three removed
    assert cache.terms_of(6) == ()
    con.begin()
    li.index_point(con, 6, "topic2 reborn", cache=cache)  # re-add a removed point
    li.index_point(con, 7, "reborn again", cache=cache)  # replace a live point
    con.commit()
    for query in ("topic2", "reborn", "word7", "topic3 again", "shared"):
        same(con, cache, query)
    assert cache.document_frequency("reborn") == 2
    assert cache.document_frequency("word7") == 0
    remove(con, cache, 6)
    same(con, cache, "reborn topic2")
    assert cache.doc_count == 36


def test_a_term_in_every_document_still_ranks(con):
    add(con, {i: "common " + ("rare" if i == 7 else f"w{i}") for i in range(1, 101)})
    cache = li.LexicalCache()
    cache.load(con)
    same(con, cache, "common", k=100)
    hits = cache.search(con, "common rare", 3)
    assert hits[0][0] == 7 and all(score > 0 for _, score in hits)
    assert cache.document_frequency("common") == 100


def test_random_writes_with_merges_equal_sql(con, small_merges):
    rng = random.Random(18)
    vocab = [f"v{i}" for i in range(40)]
    weights = [1 / (i + 1) for i in range(len(vocab))]
    cache = li.LexicalCache()
    alive: set[int] = set()
    next_id = 1
    for round_ in range(8):
        if round_ == 4:
            cache = li.LexicalCache()  # a load of a store that saw removals and replacements
            cache.load(con)
        con.begin()
        for _ in range(25):
            if alive and rng.random() < 0.2:  # a replacement of a live point
                point_id = rng.choice(sorted(alive))
            else:
                point_id, next_id = next_id, next_id + 1
            text = " ".join(rng.choices(vocab, weights, k=rng.randint(1, 9)))
            li.index_point(con, point_id, text, cache=cache)
            alive.add(point_id)
        for victim in rng.sample(sorted(alive), 5):
            li.remove_point(con, victim, cache=cache)
            alive.discard(victim)
        con.commit()
        for _ in range(6):
            same(con, cache, " ".join(rng.choices(vocab, weights, k=rng.randint(1, 4))))
        subset = rng.sample(sorted(alive), 10)
        same_hits(
            cache.search(con, "v1 v2", 10, candidate_ids=subset),
            li.search(con, "v1 v2", 10, candidate_ids=subset),
        )
    assert cache.doc_count == len(alive)


def test_orphan_postings_are_left_out_of_the_load(con):
    add(con, {1: "kept apple", 2: "kept pear"})
    con.execute("INSERT INTO lexical_postings VALUES ('apple', 99, 1), ('ghost', 99, 2)")
    cache = li.LexicalCache()
    cache.load(con)
    assert ids(cache.search(con, "apple", 5)) == [1]
    assert cache.search(con, "ghost", 5) == []
    assert cache.document_frequency(li.analyse("apple").terms[0]) == 1


def test_the_load_falls_back_to_the_join_when_two_terms_share_a_hash(con, monkeypatch):
    add(con, {1: "zulu alpha", 2: "alpha mike", 3: "mike zulu zulu"})
    want = {q: li.search(con, q, 5) for q in ("zulu", "alpha mike", "mike")}
    colliding = "SELECT term, 0::UBIGINT AS h FROM (SELECT DISTINCT term FROM lexical_postings)"
    monkeypatch.setattr(lexical_tables, "_LOAD_TERMS_SQL", colliding)
    cache = li.LexicalCache()
    cache.load(con)
    for query, hits in want.items():
        same_hits(cache.search(con, query, 5), hits)
    assert set(cache.terms_of(3)) == {"mike", "zulu"}


def test_compact_postings_merge_keeps_every_posting():
    index = CompactPostings()
    for point_id in range(1, 30):
        index.add(point_id, 3, Counter({"all": 1, f"t{point_id % 4}": 2}))
        if point_id % 10 == 0:
            index.merge()
    index.remove(5)
    index.merge()
    index.merge()  # nothing buffered: a no-op
    assert index.doc_count == 28 and index.posting_count == 58
    assert index.document_frequency("all") == 28
    assert index.document_frequency("t1") == 7  # 1, 5, 9, … 29 without 5
    assert index.terms_of(8) == ("all", "t0")


def test_live_slots_of_many_points_agree_with_slot_of_each(con, small_merges):
    add(con, {i: f"shared topic{i % 4} word{i}" for i in range(1, 61)})
    cache = li.LexicalCache()
    cache.load(con)
    remove(con, cache, 2, 6, 10, 39)
    con.begin()
    li.index_point(con, 6, "topic2 reborn", cache=cache)  # re-added: a new slot
    li.index_point(con, 7, "reborn again", cache=cache)  # replaced: a new slot, the old dead
    li.index_point(con, 80, "brand new", cache=cache)  # after the load
    con.commit()
    cache.search(con, "reborn", 1)  # applies the staged writes
    index = cache._index
    rng = random.Random(4)
    for wanted in ([], [999], [2, 6, 7, 80], *(rng.sample(range(0, 90), 25) for _ in range(20))):
        one_by_one = sorted(s for s in (index.slot_of(p) for p in wanted) if s is not None)
        assert index.live_slots_of(wanted).tolist() == one_by_one
    assert CompactPostings().live_slots_of([1, 2]).tolist() == []
