"""The lexical index (BM25 over DuckDB tables) and its tokenizer, on real DuckDB files."""

from __future__ import annotations

import math
import random
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest

from store import lexical_index as li
from store import schema
from store.text_terms import Analyzer, detect_language, identifier_parts, query_terms, terms

ROOT = Path(__file__).resolve().parent.parent
Search = Callable[..., list[tuple[int, float]]]


def migrate(con: duckdb.DuckDBPyConnection) -> None:
    """Create the schema the way the database module will: every statement of every step."""
    con.execute(schema.VERSION_TABLE)
    for step in schema.MIGRATIONS:
        for statement in step:
            schema.run_statement(con, statement)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "straylight.duckdb"


@pytest.fixture
def con(db_path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    connection = duckdb.connect(str(db_path))
    migrate(connection)
    yield connection
    connection.close()


@pytest.fixture(params=["sql", "cache"])
def search(request: pytest.FixtureRequest) -> Search:
    """Both read paths must give the same answers."""
    if request.param == "sql":
        return li.search
    cache = li.LexicalCache()

    def cached(con: duckdb.DuckDBPyConnection, query: str, k: int, **kw: object):
        return li.search(con, query, k, cache=cache, **kw)  # type: ignore[arg-type]

    return cached


def add(con: duckdb.DuckDBPyConnection, docs: dict[int, str], **kw: object) -> None:
    con.begin()
    for point_id, text in docs.items():
        li.index_point(con, point_id, text, **kw)  # type: ignore[arg-type]
    con.commit()


def ids(hits: list[tuple[int, float]]) -> list[int]:
    return [point_id for point_id, _ in hits]


def rows_of(con: duckdb.DuckDBPyConnection, point_id: int) -> tuple[list[tuple], list[tuple]]:
    postings = con.execute(
        "SELECT term, tf FROM lexical_postings WHERE point_id = ? ORDER BY term", [point_id]
    ).fetchall()
    docs = con.execute("SELECT length FROM lexical_docs WHERE point_id = ?", [point_id]).fetchall()
    return postings, docs


# --- tokenizer ------------------------------------------------------------------------------


def test_terms_split_identifiers_and_keep_the_whole_token():
    assert identifier_parts("HTTPError") == ["HTTP", "Error"]
    assert identifier_parts("readTimeout2") == ["read", "Timeout", "2"]
    assert identifier_parts("read_timeout") == ["read", "timeout"]
    assert identifier_parts("Word") == ["Word"]
    got = terms("httpx.ReadTimeout in read_timeout_ms, llama3")
    for term in ("httpx", "readtimeout", "read", "timeout", "read_timeout_m", "ms", "llama3"):
        assert term in got
    assert "in" not in got  # stopword


def test_terms_lowercase_stem_and_drop_stopwords():
    assert terms("The Timeouts were RUNNING") == ["timeout", "run"]
    assert terms("the and of I you") == []
    assert terms("") == []
    assert terms("2023 was 7 years") == ["2023", "7", "year"]


def test_terms_are_the_same_from_many_threads():
    text = "running timeouts, Zeitüberschreitungen beim Speichern"
    with ThreadPoolExecutor(4) as pool:
        results = set(map(tuple, pool.map(terms, [text] * 200)))
    assert results == {tuple(terms(text))}
    assert terms("__init__ _ __ x_") == ["__init__", "init"]


def test_language_detection_is_cheap_and_per_text():
    assert detect_language(["ich", "habe", "das", "nicht", "gespeichert"]) == "de"
    assert detect_language(["i", "did", "not", "save", "that"]) == "en"
    assert detect_language(["zeitüberschreitung"]) == "de"
    assert detect_language([]) == "en"
    # German text gets German stems and stopwords; a query word is stemmed both ways
    assert terms("Die Erinnerungen sind nicht gespeichert") == ["erinner", "gespeichert"]
    assert query_terms("paintings") == [("paint", "painting")]


def test_unicode_and_odd_text_does_not_crash(con, search):
    text = "Straße ÄRGER naïve café 東京 🙂 e\u0301 ⟨x⟩ \x00 — ½ ²"
    got = terms(text)
    assert "strass" in got or "straße" in got
    assert "東京" in got
    add(con, {1: text, 2: "Die Zeitüberschreitungen beim Speichern sind behoben", 3: "ok"})
    assert ids(search(con, "Zeitüberschreitung", 5)) == [2]
    assert ids(search(con, "cafe\u0301", 5)) == [1]  # NFC: é composed or not
    assert ids(search(con, "東京", 5)) == [1]
    assert search(con, "🙂 — ½", 5) == []


# --- ranking ---------------------------------------------------------------------------------


def test_bm25_rare_matching_term_beats_common_one(con, search):
    docs = {i: f"coffee with milk again number {i}" for i in range(1, 21)}
    docs[50] = "coffee on the zeppelin"
    docs[51] = "coffee coffee coffee and more coffee"
    add(con, docs)
    hits = search(con, "coffee zeppelin", 5)
    assert hits[0][0] == 50
    assert hits[0][1] > 2 * hits[1][1]
    # the rare term alone outweighs repeats of the common one
    assert ids(search(con, "zeppelin coffee", 1)) == [50]


def test_bm25_score_matches_the_formula(con, search):
    add(con, {1: "alpha beta", 2: "alpha gamma delta", 3: "epsilon"})
    n, avgdl = 3, (2 + 3 + 1) / 3

    def part(df: int, tf: int, length: int) -> float:
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        return idf * tf * 2.2 / (tf + 1.2 * (1 - 0.75 + 0.75 * length / avgdl))

    hits = dict(search(con, "alpha gamma", 10))
    assert hits[1] == pytest.approx(part(2, 1, 2))
    assert hits[2] == pytest.approx(part(2, 1, 3) + part(1, 1, 3))


def test_stemming_matches_plural_and_singular(con, search):
    add(con, {1: "the request timeouts keep happening", 2: "timeout of five seconds", 3: "tea"})
    assert sorted(ids(search(con, "timeout", 5))) == [1, 2]
    assert sorted(ids(search(con, "timeouts", 5))) == [1, 2]


def test_symptom_and_mechanism_words_both_find_the_memory(con, search):
    add(
        con,
        {
            1: "httpx ReadTimeout gives an empty error envelope",
            2: "the weather was nice and we went hiking",
            3: "error budgets and SLOs for the gateway",
            4: "an empty fridge means shopping today",
            5: "read the docs before you ask",
        },
    )
    assert ids(search(con, "empty error message", 1)) == [1]
    assert ids(search(con, "read timeout", 1)) == [1]
    assert ids(search(con, "ReadTimeout", 1)) == [1]
    assert ids(search(con, "leerer Error Envelope bei httpx", 1)) == [1]


def test_k_limit_empty_query_and_candidates(con, search):
    add(con, {i: f"shared word plus extra{i}" for i in range(1, 11)})
    assert len(search(con, "shared", 3)) == 3
    assert len(search(con, "shared", 100)) == 10
    assert search(con, "shared", 0) == []
    assert search(con, "", 5) == []
    assert search(con, "   ?! ", 5) == []
    assert search(con, "the and of", 5) == []  # only stopwords
    assert search(con, "nothingmatches", 5) == []
    assert ids(search(con, "shared extra7", 3))[0] == 7
    assert sorted(ids(search(con, "shared", 5, candidate_ids=[2, 4, 99]))) == [2, 4]
    assert search(con, "shared", 5, candidate_ids=[]) == []
    # ties are broken by point id
    assert ids(search(con, "shared", 3)) == [1, 2, 3]


def test_empty_index(con, search):
    assert search(con, "anything", 5) == []


# --- writing ---------------------------------------------------------------------------------


def test_removal(con, search):
    add(con, {1: "keep this note", 2: "forget this note"})
    assert sorted(ids(search(con, "note", 5))) == [1, 2]
    con.begin()
    li.remove_point(con, 2)
    con.commit()
    assert ids(search(con, "note", 5)) == [1]
    assert search(con, "forget", 5) == []
    assert rows_of(con, 2) == ([], [])
    li.remove_point(con, 12345)  # unknown id: nothing happens


def test_index_point_is_incremental(con):
    add(con, {1: "first note about tea", 2: "second note about coffee"})
    before = (rows_of(con, 1), rows_of(con, 2))
    rowids = con.execute("SELECT rowid FROM lexical_postings WHERE point_id IN (1, 2)").fetchall()
    add(con, {3: "third note about tea and coffee"})
    assert (rows_of(con, 1), rows_of(con, 2)) == before
    assert (
        con.execute("SELECT rowid FROM lexical_postings WHERE point_id IN (1, 2)").fetchall()
        == rowids
    )  # not rewritten
    assert rows_of(con, 3)[1] == [(len(terms("third note about tea and coffee")),)]
    # re-indexing a point replaces its rows only
    add(con, {3: "replaced text"})
    assert [t for t, _ in rows_of(con, 3)[0]] == ["replac", "text"]
    assert (rows_of(con, 1), rows_of(con, 2)) == before


def test_rollback_leaves_no_postings(con, search):
    add(con, {100: "committed memory about gardening"})
    con.begin()
    (point_id,) = con.execute(
        "INSERT INTO points (role, content, source, content_hash, created_at) "
        "VALUES ('user', 'rolled back memory about gardening', 'tui', 'h', ?) RETURNING id",
        [datetime.now(UTC)],
    ).fetchall()[0]
    li.index_point(con, point_id, "rolled back memory about gardening")
    con.rollback()
    assert rows_of(con, point_id) == ([], [])
    assert con.execute("SELECT count(*) FROM points").fetchall() == [(0,)]
    assert ids(search(con, "gardening", 5)) == [100]
    assert li.check_consistency(con, [100]) == ([], [])


def test_cache_applies_only_what_is_committed(con):
    cache = li.LexicalCache()
    add(con, {1: "apples and pears"}, cache=cache)
    assert ids(cache.search(con, "apples", 5)) == [1]
    # a staged write that is rolled back never shows
    con.begin()
    li.index_point(con, 2, "apples in a pie", cache=cache)
    con.rollback()
    assert ids(cache.search(con, "apples", 5)) == [1]
    # a staged removal that is rolled back keeps the doc
    con.begin()
    li.remove_point(con, 1, cache=cache)
    con.rollback()
    assert ids(cache.search(con, "apples", 5)) == [1]
    # writes that bypass the cache are found by the fingerprint and loaded from SQL
    add(con, {3: "green apples"})
    con.begin()
    li.remove_point(con, 1)
    con.commit()
    assert ids(cache.search(con, "apples", 5)) == [3]
    assert cache.stats["diffs"] >= 1
    # a second connection (cursor) sees the same committed state
    other = con.cursor()
    assert ids(cache.search(other, "apples", 5)) == [3]
    other.close()


def test_cache_inside_the_callers_transaction(con):
    cache = li.LexicalCache()
    add(con, {1: "ripe pears"}, cache=cache)
    con.begin()
    li.index_point(con, 2, "more pears", cache=cache)
    # the cache answers from committed state; SQL search sees the open transaction's own rows
    assert ids(cache.search(con, "pears", 5)) == [1]
    assert sorted(ids(li.search(con, "pears", 5))) == [1, 2]
    con.commit()
    assert sorted(ids(cache.search(con, "pears", 5))) == [1, 2]
    con.begin()
    li.index_point(con, 3, "pears again", cache=cache)
    li.remove_point(con, 1, cache=cache)
    con.rollback()
    assert sorted(ids(cache.search(con, "pears", 5))) == [1, 2]
    assert cache.stats["diffs"] == 0  # staged changes never seen committed are not applied


def test_cache_equals_sql_through_random_writes(con):
    rng = random.Random(5)
    vocab = [f"w{i}" for i in range(60)] + ["rare", "zebra", "timeouts", "ReadTimeout"]
    weights = [1 / (i + 1) for i in range(len(vocab))]
    cache = li.LexicalCache()
    alive: set[int] = set()
    next_id = 1
    for round_ in range(6):
        con.begin()
        for _ in range(40):
            text = " ".join(rng.choices(vocab, weights, k=rng.randint(1, 12)))
            li.index_point(con, next_id, text, cache=cache if round_ % 2 else None)
            alive.add(next_id)
            next_id += 1
        for victim in rng.sample(sorted(alive), 8):
            li.remove_point(con, victim, cache=cache)
            alive.discard(victim)
        con.commit()
        for _ in range(8):
            query = " ".join(rng.choices(vocab, weights, k=rng.randint(1, 5)))
            want = li.search(con, query, 10)
            got = cache.search(con, query, 10)
            assert ids(got) == ids(want), query
            assert [s for _, s in got] == pytest.approx([s for _, s in want])
    assert li.check_consistency(con, alive) == ([], [])
    assert cache.doc_count == len(alive)


def test_cache_is_shared_by_threads_with_their_own_cursors(con):
    cache = li.LexicalCache()
    add(con, {i: f"shared topic note {i}" for i in range(1, 21)}, cache=cache)

    def reader(_: int) -> int:
        cursor = con.cursor()
        try:
            return sum(len(cache.search(cursor, "topic note", 5)) for _ in range(30))
        finally:
            cursor.close()

    with ThreadPoolExecutor(3) as pool:
        readers = [pool.submit(reader, i) for i in range(3)]
        writer = con.cursor()
        for i in range(21, 61):
            writer.begin()
            li.index_point(writer, i, f"another topic note {i}", cache=cache)
            writer.commit()
        writer.close()
        assert all(r.result() == 150 for r in readers)
    assert ids(cache.search(con, "topic", 100)) == ids(li.search(con, "topic", 100))
    assert cache.doc_count == 60


# --- repair ----------------------------------------------------------------------------------


def test_check_consistency(con):
    add(con, {1: "one", 2: "two", 3: "three"})
    con.execute("INSERT INTO lexical_postings VALUES ('orphan', 9, 1)")
    assert li.check_consistency(con, [1, 2, 4]) == ([4], [3, 9])
    assert li.check_consistency(con, []) == ([], [1, 2, 3, 9])


def test_reindex_all_rebuilds_and_cache_reloads(con):
    cache = li.LexicalCache()
    add(con, {1: "old text", 2: "stale entry"}, cache=cache)
    assert ids(cache.search(con, "stale", 5)) == [2]
    con.begin()
    assert li.reindex_all(con, [(1, "fresh text"), (3, "brand new")]) == 2
    con.commit()
    assert cache.search(con, "stale", 5) == []
    assert ids(cache.search(con, "fresh brand", 5)) == [1, 3]
    assert cache.stats["loads"] == 2
    assert li.check_consistency(con, [1, 3]) == ([], [])
    with pytest.raises(ValueError):
        li.reindex_all(con, [(1, "a"), (1, "b")])


def test_ensure_analyzer(con):
    assert li.ensure_analyzer(con)  # empty index: claimed
    add(con, {1: "some words"})
    assert li.ensure_analyzer(con)
    other = Analyzer("other", {}, detect=False)
    assert not li.ensure_analyzer(con, analyzer=other)
    con.begin()
    li.reindex_all(con, [(1, "some words")], analyzer=other)
    con.commit()
    assert li.ensure_analyzer(con, analyzer=other)


def test_a_killed_process_keeps_committed_and_loses_uncommitted(db_path: Path, con):
    con.close()
    child = textwrap.dedent(
        f"""
        import os, signal, duckdb
        from store import lexical_index as li
        con = duckdb.connect({str(db_path)!r})
        con.begin(); li.index_point(con, 1, "committed before the crash"); con.commit()
        con.begin(); li.index_point(con, 2, "in flight when the crash came")
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    done = subprocess.run([sys.executable, "-c", child], cwd=ROOT, timeout=60, check=False)
    assert done.returncode == -9
    reopened = duckdb.connect(str(db_path))
    try:
        assert li.check_consistency(reopened, [1]) == ([], [])
        assert ids(li.search(reopened, "crash", 5)) == [1]
        assert ids(li.LexicalCache().search(reopened, "crash", 5)) == [1]
    finally:
        reopened.close()


def test_one_pass_gives_the_ranking_and_the_subset_ranking(con):
    docs = {
        i: f"note {i} about the {'staging' if i % 3 else 'prod'} deploy key rotation"
        for i in range(1, 40)
    }
    add(con, docs)
    cache = li.LexicalCache()
    cache.load(con)
    pinned = [3, 6, 7, 30]
    overall, within = cache.search_and_subset(con, "prod deploy key", 10, pinned)
    assert overall == li.search(con, "prod deploy key", 10)
    assert within == li.search(con, "prod deploy key", 4, candidate_ids=pinned)
    assert cache.search_and_subset(con, "the", 10, pinned) == ([], [])


def test_a_load_asked_to_stop_leaves_an_empty_cache_and_a_later_load_works(con):
    """Closing the store stops a word-index load between batches instead of waiting for it
    (quitting took ~2 s at 100k points, ~70 s at 1M)."""
    docs = {i: f"term{i % 7} word{i} shared" for i in range(1, 5_001)}
    add(con, docs)
    cache = li.LexicalCache()
    with pytest.raises(li.LoadStopped):
        cache.load(con, stop=lambda: True)
    assert cache.doc_count == 0 and cache.postings_bytes() == 0
    cache.load(con)
    assert cache.doc_count == len(docs)
