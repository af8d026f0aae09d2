"""The points' traits for the learned re-rank (store/point_traits.py, memory/point_traits.py):
computed from the point's own content and date on save, kept in `lexical_docs`, the word
index's per-slot arrays and `lexical.idx`, through saves, re-indexing, deletes, reopens from
the file and from the tables, and filled by the open of a store indexed without them."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from memory.memory_store import MemoryConfig, MemoryStore
from memory.point_traits import (
    ANSWER_BITS,
    answer_bits,
    day_number,
    fill_missing_traits,
    point_traits,
)
from memory.text.shape import content_words
from store import lexical_file, lexical_index
from store.clock import Clock
from store.lexical_file import LEXICAL_FILENAME
from store.point_traits import MISSING_WORDS, PointTraits

WHEN = datetime(2023, 5, 8, 13, 30, tzinfo=UTC)
LONG = "We flew to Lisbon on Sunday with Maria and stayed three nights near the old castle."
SHORT = "wow, great!"


def open_store(home: Path, *, read_only: bool = False) -> MemoryStore:
    store = MemoryStore.open(home, MemoryConfig(), clock=Clock(), read_only=read_only)
    store.wait_until_ready(timeout=30)
    return store


TableRow = tuple[int | None, int | None, int | None, int | None]


def table_traits(store: MemoryStore) -> dict[int, TableRow]:
    """(words, day, answers, speaker) of every row of `lexical_docs`."""
    with store.db.cursor() as cur:
        rows = cur.execute(
            "SELECT point_id, words, day, answers, speaker FROM lexical_docs"
        ).fetchall()
    return {int(pid): tuple(rest) for pid, *rest in rows}  # type: ignore[misc]


def mirror_traits(store: MemoryStore, ids: list[int]) -> list[tuple[int, int, int, int]] | None:
    """The traits the word index's mirror holds, once it applied what was committed."""
    with store.db.cursor() as cur:
        store.lexical.sync(cur)
    found = store.lexical.traits_of(ids)
    if found is None:
        return None
    words, days, answers, speakers = found
    return list(
        zip(words.tolist(), days.tolist(), answers.tolist(), speakers.tolist(), strict=True)
    )


@pytest.fixture
def saved(home: Path) -> Iterator[tuple[MemoryStore, list[int]]]:
    store = open_store(home)
    ids = [
        store.save("user", text, created_at=WHEN, use_filter=False, context="a neighbour").point_id
        for text in (LONG, SHORT)
    ]
    assert None not in ids
    yield store, [i for i in ids if i is not None]
    store.close()


def expected(text: str) -> tuple[int, int, int, int]:
    return point_traits(text, WHEN).as_row()


def test_the_traits_are_the_points_own_content_words_day_and_answer_kinds() -> None:
    traits = point_traits(LONG, WHEN)
    assert traits.words == content_words(LONG) > content_words(SHORT)
    assert traits.day == day_number(WHEN) == (WHEN.date() - datetime(1970, 1, 1).date()).days
    bits = ANSWER_BITS
    assert traits.answers == bits["when"] | bits["number"] | bits["where"] | bits["who"]
    assert answer_bits(SHORT) == 0
    assert answer_bits("I met Maria there") == bits["who"]  # any name, as a bit can hold
    assert PointTraits(10**6, 1, 0).as_row()[0] == MISSING_WORDS - 1  # capped, never "missing"


def test_a_save_keeps_its_traits_in_the_table_and_the_mirror(saved) -> None:
    store, ids = saved
    want = [expected(LONG), expected(SHORT)]
    assert [table_traits(store)[i] for i in ids] == want
    assert mirror_traits(store, ids) == want  # the indexed text has neighbour and date words


def test_a_reindexed_point_takes_its_new_traits_and_a_deleted_one_has_none(saved) -> None:
    store, ids = saved
    later = datetime(2024, 1, 2, tzinfo=UTC)
    with store.db.transaction() as cur:
        lexical_index.index_point(
            cur, ids[1], SHORT, cache=store.lexical, traits=point_traits(LONG, later)
        )
    store.recall("Lisbon castle", k=2)  # the search syncs the staged write
    assert mirror_traits(store, [ids[1]]) == [point_traits(LONG, later).as_row()]
    assert table_traits(store)[ids[1]] == point_traits(LONG, later).as_row()
    assert store.forget(ids[0])
    store.recall("Lisbon castle", k=2)
    assert mirror_traits(store, ids) is None  # one is gone: no traits for the set
    assert mirror_traits(store, [ids[1]]) is not None


def test_the_traits_survive_a_reopen_from_the_file_and_from_the_tables(home: Path, saved) -> None:
    store, ids = saved
    want = mirror_traits(store, ids)
    store.close()
    assert reopened_traits(home, ids, "file") == want
    (home / LEXICAL_FILENAME).unlink()
    assert reopened_traits(home, ids, "tables") == want


def reopened_traits(
    home: Path, ids: list[int], loaded_from: str
) -> list[tuple[int, int, int, int]] | None:
    """The mirror's traits of `ids` after a reopen whose word index came from `loaded_from`
    ("file" or "tables")."""
    store = open_store(home)
    try:
        assert store.lexical.loaded_from == loaded_from
        return mirror_traits(store, ids)
    finally:
        store.close()


def forget_traits(home: Path) -> None:
    """Make the store look indexed before schema 7: the traits NULL, no file."""
    store = open_store(home)
    with store.db.transaction() as cur:
        cur.execute(
            "UPDATE lexical_docs SET words = NULL, day = NULL, answers = NULL, speaker = NULL"
        )
    store.close()
    (home / LEXICAL_FILENAME).unlink()


def test_an_open_fills_the_traits_of_a_store_indexed_without_them(home: Path, saved) -> None:
    store, ids = saved
    want = mirror_traits(store, ids)
    store.close()
    forget_traits(home)
    read_only = open_store(home, read_only=True)  # cannot fill: recalls without them
    try:
        assert set(table_traits(read_only).values()) == {(None, None, None, None)}
        assert mirror_traits(read_only, ids) is None
        assert [hit.id for hit in read_only.recall("Lisbon castle", k=2).hits] == [ids[0]]
    finally:
        read_only.close()
    again = open_store(home)
    try:
        assert [table_traits(again)[i] for i in ids] == want
        assert mirror_traits(again, ids) == want
        with again.db.cursor() as cur:
            assert not lexical_index.traits_missing(cur)
    finally:
        again.close()


def test_the_fill_goes_page_by_page_and_misses_no_point(home: Path) -> None:
    store = open_store(home)
    try:
        texts = [f"{LONG} Day {i}." if i % 2 else SHORT + f" {i}" for i in range(7)]
        ids = [store.save("user", t, created_at=WHEN, use_filter=False).point_id for t in texts]
        want = table_traits(store)
        with store.db.cursor() as cur:
            cur.execute(
                "UPDATE lexical_docs SET words = NULL, day = NULL, answers = NULL, speaker = NULL"
            )
            assert fill_missing_traits(cur, page_size=3) == len(ids)  # pages of 3, 3 and 1
            assert not lexical_index.traits_missing(cur)
        assert table_traits(store) == want
    finally:
        store.close()


def test_a_file_without_the_traits_is_rebuilt_from_the_tables(
    home: Path, saved, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, ids = saved
    want = mirror_traits(store, ids)
    store.close()
    path = home / LEXICAL_FILENAME
    mapped = lexical_file.read_unbound(path)  # the file as written, rewritten in v2's layout
    arrays = {name: np.array(array) for name, array in mapped.arrays.items()}
    arrays["terms"] = lexical_file.encode_terms(mapped.terms)
    traits = ("words", "days", "answers", "speakers")
    layout = tuple(s for s in lexical_file.SECTIONS if s not in traits)
    monkeypatch.setattr(lexical_file, "VERSION", 2)  # the layout before the traits
    monkeypatch.setattr(lexical_file, "SECTIONS", layout)
    lexical_file.write_file(path, mapped.state, arrays)
    monkeypatch.undo()
    assert reopened_traits(home, ids, "tables") == want  # refused, as any stale file
    assert reopened_traits(home, ids, "file") == want  # the open wrote it again, in the new layout


def test_a_store_of_schema_6_gets_the_columns_and_its_points_traits_at_open(home: Path) -> None:
    from collections import Counter

    import duckdb

    from store.database import database_path
    from store.text_terms import default_analyzer
    from tests.test_database import build_at_version

    home.mkdir(parents=True)
    path = database_path(home)
    build_at_version(path, 6)  # plain DuckDB, as main's code indexed a point: no traits
    analyzer = default_analyzer()
    counts = Counter(analyzer.terms(LONG))
    con = duckdb.connect(str(path))
    try:
        con.execute(
            "INSERT INTO points (id, role, content, source, content_hash, created_at) "
            "VALUES (1, 'user', ?, 'turn', 'h', ?)",
            [LONG, WHEN],
        )
        con.execute("SELECT setval('point_id_seq', 1)")
        con.execute("INSERT INTO lexical_docs VALUES (1, ?)", [sum(counts.values())])
        for term, tf in counts.items():
            con.execute("INSERT INTO lexical_postings VALUES (?, 1, ?)", [term, tf])
        con.execute("INSERT INTO meta VALUES (?, ?)", [lexical_index.ANALYZER_KEY, analyzer.name])
    finally:
        con.close()
    store = open_store(home)
    try:
        assert table_traits(store)[1] == expected(LONG)
        assert mirror_traits(store, [1]) == [expected(LONG)]
        assert [hit.id for hit in store.recall("Lisbon castle", k=1).hits] == [1]
    finally:
        store.close()


def test_a_re_index_for_another_analyzer_keeps_the_traits(home: Path, saved) -> None:
    from store import meta

    store, ids = saved
    want = mirror_traits(store, ids)
    with store.db.transaction() as cur:
        meta.put(cur, lexical_index.ANALYZER_KEY, "an older tokenizer")
    store.close()
    again = open_store(home)  # re-indexes every point (`reindex_all` with their traits)
    try:
        assert [table_traits(again)[i] for i in ids] == want
        assert mirror_traits(again, ids) == want
    finally:
        again.close()
