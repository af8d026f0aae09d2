"""`lexical.idx`, the word index's arrays persisted and memory-mapped (store/lexical_file.py,
store/lexical_persist.py): written, reopened without a load from the tables, replayed after
outside changes, and never trusted when stale, foreign, corrupt, truncated or a link."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from memory.memory_store import MemoryConfig, MemoryStore
from store import bm25, lexical_file, lexical_persist, lexical_postings, meta
from store import lexical_index as li
from store.clock import Clock
from store.data_dir_check import check_data_dir
from store.lexical_file import LEXICAL_FILENAME
from store.private_files import SymlinkRefused
from tests.test_lexical_index import add, migrate
from tests.test_lexical_postings import same

QUERIES = ("alpha", "beta1 delta2", "fresh gamma7", "gamma40 beta3", "topic2 shared", "nothing")


@pytest.fixture
def con(tmp_path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    connection = duckdb.connect(str(tmp_path / "straylight.duckdb"))
    migrate(connection)
    meta.put(connection, lexical_persist.DATABASE_ID_KEY, "database-one")
    add(connection, {i: f"alpha beta{i % 3} gamma{i} topic{i % 4} shared" for i in range(1, 61)})
    yield connection
    connection.close()


def cache_of(path: Path, con: duckdb.DuckDBPyConnection, **kw: bool) -> li.LexicalCache:
    cache = li.LexicalCache(file=path, **kw)
    cache.load(con)
    return cache


def written(tmp_path: Path, con: duckdb.DuckDBPyConnection) -> Path:
    path = tmp_path / LEXICAL_FILENAME
    first = cache_of(path, con)
    assert first.loaded_from == "tables"
    assert first.save_file()
    return path


def test_a_written_file_is_mapped_at_the_next_load_and_ranks_like_sql(tmp_path, con):
    path = written(tmp_path, con)
    assert path.stat().st_mode & 0o777 == 0o600
    cache = cache_of(path, con)
    assert cache.loaded_from == "file"
    assert cache.stats["loads"] == 0 and cache.stats["file_opens"] == 1
    assert cache.stats["diffs"] == 0  # nothing changed since: no replay
    for query in QUERIES:
        same(con, cache, query)
    assert not cache.save_file()  # nothing to write


def test_after_the_first_load_the_arrays_are_the_file_mapped(tmp_path, con):
    path = tmp_path / LEXICAL_FILENAME
    cache = cache_of(path, con)
    assert cache.save_file()
    assert cache._index._slots.base is not None  # a view of the mapped file, not a copy
    assert not cache._index._slots.flags.writeable
    same(con, cache, "alpha topic3")


def test_adds_and_removes_after_open_are_seen_and_replayed_at_the_next_open(tmp_path, con):
    path = written(tmp_path, con)
    cache = cache_of(path, con)
    con.begin()
    for i in range(61, 91):
        li.index_point(con, i, f"alpha fresh beta{i % 4} delta{i % 5}", cache=cache, new=True)
    for i in (2, 7, 30):
        li.remove_point(con, i, cache=cache)
    con.commit()
    for query in QUERIES:
        same(con, cache, query)
    assert not cache.save_file()  # 33 changes: fewer than REWRITE_MIN_CHANGES
    reopened = cache_of(path, con)
    assert reopened.loaded_from == "file" and reopened.stats["diffs"] == 1
    assert reopened.doc_count == 87
    for query in QUERIES:
        same(con, reopened, query)
    assert reopened.save_file(force=True)
    again = cache_of(path, con)
    assert again.loaded_from == "file" and again.stats["diffs"] == 0
    for query in QUERIES:
        same(con, again, query)


def test_points_added_since_the_file_are_replayed_without_the_whole_doc_list(tmp_path, con):
    """Only adds since the file was written (a session's saves): the docs up to its highest
    id agree with the tables, so only the newer ones are read; a removal among the older
    ones still makes the full diff run."""
    path = written(tmp_path, con)
    add(con, {i: f"alpha fresh beta{i % 4} delta{i % 5}" for i in range(61, 91)})
    reopened = cache_of(path, con)
    assert reopened.stats["diffs"] == 1 and reopened.stats["diffs_of_added_only"] == 1
    assert reopened.doc_count == 90
    for query in (*QUERIES, "fresh delta2", "delta4 beta1"):
        same(con, reopened, query)
    con.execute("DELETE FROM lexical_postings WHERE point_id = 7")
    con.execute("DELETE FROM lexical_docs WHERE point_id = 7")
    full = cache_of(path, con)
    assert full.stats["diffs"] == 1 and full.stats["diffs_of_added_only"] == 0
    assert full.doc_count == 89 and full.terms_of(7) == ()
    for query in (*QUERIES, "gamma7", "fresh delta2"):
        same(con, full, query)


def test_enough_changes_rewrite_the_file(tmp_path, con, monkeypatch):
    monkeypatch.setattr(lexical_persist, "REWRITE_MIN_CHANGES", 5)
    path = written(tmp_path, con)
    cache = cache_of(path, con)
    add(con, {i: f"late{i} alpha" for i in range(100, 103)}, cache=cache)
    cache.search(con, "late100", 3)  # applies the staged adds
    assert not cache.save_file()
    add(con, {i: f"late{i} alpha" for i in range(103, 106)}, cache=cache)
    cache.search(con, "late100", 3)
    assert cache.save_file()
    assert cache_of(path, con).stats["diffs"] == 0


def test_a_change_to_the_tables_behind_the_cache_is_replayed(tmp_path, con):
    path = written(tmp_path, con)
    con.execute("DELETE FROM lexical_postings WHERE point_id = 5")
    con.execute("DELETE FROM lexical_docs WHERE point_id = 5")
    add(con, {200: "alpha outsider gamma5", 3: "rewritten with another length entirely"})
    cache = cache_of(path, con)
    assert cache.loaded_from == "file"
    assert cache.terms_of(5) == ()
    for query in (*QUERIES, "outsider", "rewritten length", "gamma5", "gamma3"):
        same(con, cache, query)


def test_a_rebuilt_index_makes_the_file_stale(tmp_path, con, caplog):
    path = written(tmp_path, con)
    li.reindex_all(con, [(1, "only one point now")])
    with caplog.at_level(logging.INFO, logger="straylight.memory"):
        cache = cache_of(path, con)
    assert cache.loaded_from == "tables"
    assert "made before the word index was last rebuilt" in caplog.text
    same(con, cache, "point")
    assert cache.save_file()  # stale: rewritten
    assert cache_of(path, con).loaded_from == "file"


@pytest.mark.parametrize("database_id", ["database-two", None])
def test_a_file_of_another_database_is_not_used(tmp_path, con, database_id):
    path = written(tmp_path, con)
    if database_id is None:
        meta.delete(con, lexical_persist.DATABASE_ID_KEY)
    else:
        meta.put(con, lexical_persist.DATABASE_ID_KEY, database_id)
    cache = cache_of(path, con)
    assert cache.loaded_from == "tables"
    assert cache.save_file() is (database_id is not None)  # no id yet: no file


def damage_middle(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x55
    path.write_bytes(bytes(data))


def damage_truncate(path: Path) -> None:
    os.truncate(path, path.stat().st_size - 100)


def damage_garbage(path: Path) -> None:
    path.write_bytes(b"garbage " * 100)


def damage_empty(path: Path) -> None:
    path.write_bytes(b"")


DAMAGES = [damage_middle, damage_truncate, damage_garbage, damage_empty]


@pytest.mark.parametrize("damage", DAMAGES, ids=lambda f: f.__name__)
def test_a_damaged_file_is_rebuilt_from_the_tables_with_one_line(tmp_path, con, caplog, damage):
    path = written(tmp_path, con)
    damage(path)
    with caplog.at_level(logging.INFO, logger="straylight.memory"):
        cache = cache_of(path, con)
    assert cache.loaded_from == "tables"
    lines = [r for r in caplog.records if str(path) in r.getMessage()]
    assert len(lines) == 1 and lines[0].exc_info is None
    assert "\n" not in lines[0].getMessage()
    for query in QUERIES:
        same(con, cache, query)
    assert cache.save_file()
    assert cache_of(path, con).loaded_from == "file"


def test_a_linked_file_is_neither_read_nor_written(tmp_path, con, caplog):
    path = written(tmp_path, con)
    target = tmp_path / "elsewhere.idx"
    path.rename(target)
    before = target.read_bytes()
    path.symlink_to(target)
    with caplog.at_level(logging.INFO, logger="straylight.memory"):
        cache = cache_of(path, con)
    assert cache.loaded_from == "tables"
    assert "symbolic link" in caplog.text
    same(con, cache, "alpha")
    assert not cache.save_file(force=True)
    assert path.is_symlink() and target.read_bytes() == before
    with pytest.raises(SymlinkRefused, match=r"lexical\.idx"):
        check_data_dir(tmp_path)  # every command names it before opening anything


def test_a_reading_cache_uses_the_file_but_never_writes_it(tmp_path, con):
    path = tmp_path / LEXICAL_FILENAME
    reader = cache_of(path, con, write_file=False)
    assert reader.loaded_from == "tables" and not reader.save_file(force=True)
    assert not path.exists()
    written(tmp_path, con)
    assert cache_of(path, con, write_file=False).loaded_from == "file"


def test_the_store_writes_the_file_and_the_next_open_maps_it(tmp_path):
    home = tmp_path / "home"
    store = MemoryStore.open(home, MemoryConfig(), clock=Clock())
    try:
        store.remember("the ferry to Lindau leaves at noon", vector=[1.0, 0.0, 0.0])
        store.wait_until_ready()
    finally:
        store.close()
    assert (home / LEXICAL_FILENAME).exists()
    store = MemoryStore.open(home, MemoryConfig(), clock=Clock())
    try:
        store.wait_until_ready()
        assert store.lexical.loaded_from == "file" and store.lexical_ready
        second = store.remember("the ferry back is at six", vector=[0.0, 1.0, 0.0])
        hits = store.recall("ferry Lindau", vector=None)
        assert {hit.id for hit in hits.hits} >= {second}
    finally:
        store.close()


def test_a_re_indexed_point_is_compacted_into_the_file(tmp_path, con):
    """A point indexed again takes a new slot out of id order: the file is written compacted."""
    path = written(tmp_path, con)
    cache = cache_of(path, con)
    add(con, {4: "alpha rewritten entirely", 7: "gamma7 once more"}, cache=cache)
    li.remove_point(con, 9, cache=cache)
    same(con, cache, "rewritten gamma7")
    assert cache.save_file(force=True)
    reopened = cache_of(path, con)
    assert reopened.loaded_from == "file" and reopened.stats["diffs"] == 0
    assert reopened._index.slot_count == reopened.doc_count == 59  # no dead slot kept
    for query in (*QUERIES, "rewritten", "gamma7 once"):
        same(con, reopened, query)


def test_the_file_holds_every_terms_impact_bound_as_computed_from_the_tables(tmp_path, con):
    path = written(tmp_path, con)
    mapped = cache_of(path, con)._index
    loaded = li.LexicalCache()
    loaded.load(con)
    avgdl = mapped.total_length / mapped.doc_count
    assert len(mapped._file_impacts) == mapped.term_count
    for term in mapped._terms:
        got = mapped.impact(term, avgdl)
        assert got == loaded._index.impact(term, avgdl) > 0  # the same float
        assert mapped._impacts[mapped._term_id[term]][1] == got  # taken from the file
    assert mapped.impact("alpha", avgdl * 1.2) == loaded._index.impact("alpha", avgdl * 1.2)


def test_the_files_impact_bounds_stay_bounds_after_adds_are_merged(tmp_path, con, monkeypatch):
    path = written(tmp_path, con)
    cache = cache_of(path, con)
    index = cache._index
    monkeypatch.setattr(lexical_postings, "MERGE_MIN_POSTINGS", 1)
    monkeypatch.setattr(lexical_postings, "MERGE_FRACTION", 10**9)
    con.begin()  # a short point with the common words scores them higher than any before
    li.index_point(con, 61, "alpha shared", cache=cache, new=True)
    con.commit()
    same(con, cache, "alpha shared topic1")
    assert (
        cache._index is index and index.merges == 1 and len(index._file_impacts) == index.term_count
    )
    avgdl = index.total_length / index.doc_count
    assert "alpha" in index.terms_of(61)
    for term in index._terms:
        slots, tfs, _ = index.postings(term)  # type: ignore[misc]
        true_max = float(bm25.contributions(slots, tfs, 1.0, avgdl, index.doc_lengths()).max())
        assert index.impact(term, avgdl) >= true_max
    assert index.impact("alpha", avgdl) > float(index._file_impacts[index._term_id["alpha"]])


def test_a_file_of_an_older_format_is_rebuilt_from_the_tables(tmp_path, con, caplog, monkeypatch):
    monkeypatch.setattr(lexical_file, "VERSION", 1)  # as the format before the impacts
    path = written(tmp_path, con)
    monkeypatch.undo()
    with caplog.at_level(logging.INFO, logger="straylight.memory"):
        cache = cache_of(path, con)
    assert cache.loaded_from == "tables"
    assert f"version 1, expected {lexical_file.VERSION}" in caplog.text
    assert cache.save_file()
    assert cache_of(path, con).loaded_from == "file"
