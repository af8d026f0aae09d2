"""The memory's open, started ahead (issue 18): the vector file's check in a thread before
the open reaches it (store/vector_index_ahead.py), and the facts' sidebar line read by the
opener itself. A damaged file is refused as before, a replaced one checked again, and
nothing is left mapped."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from agent.settings import Settings
from memory.memory_store import MemoryStore
from memory.open_ahead import start_open_ahead
from store import file_checks_ahead, lexical_ahead, lexical_persist, meta, vector_index_ahead
from store.clock import Clock
from store.database import DatabaseError
from store.vector_index import VectorIndex, sorted_unique
from tests.support.ollama_standin import OllamaStandIn
from tests.support.pilot_helpers import wait_until
from tests.test_lexical_file import DAMAGES, QUERIES, cache_of, written
from tests.test_lexical_file import con as con  # the word-index tables (a fixture)
from tests.test_lexical_postings import same
from tests.test_vector_index import (
    CORRUPT_CASES,
    NDIM,
    _write_corrupt,
    clustered,
    open_damaged_in_a_child,
    saved_index,
)
from tui.app import StraylightApp
from tui.app_memory import MemoryOpened

ROOT = Path(__file__).resolve().parent.parent


def opened_with_check_ahead(path: Path) -> VectorIndex:
    vector_index_ahead.start_check(path)
    index = VectorIndex(path, NDIM)
    index.open()
    assert not vector_index_ahead.pending(path)  # taken by the open
    return index


def test_a_file_checked_ahead_loads_as_one_checked_by_the_open(tmp_path: Path) -> None:
    good, data = saved_index(tmp_path)
    index = opened_with_check_ahead(good.path)
    assert index.state == "in_sync"
    assert len(index) == 200
    assert index.search(data[7], 1)[0][0] == 7
    assert [k for k, _ in index.search(data[9], 10)] == [k for k, _ in good.search(data[9], 10)]


@pytest.mark.parametrize("case", sorted(CORRUPT_CASES))
def test_a_damaged_file_checked_ahead_is_refused_with_the_same_reason(
    tmp_path: Path, case: str
) -> None:
    good, _ = saved_index(tmp_path)
    _write_corrupt(good.path, case, good.path.read_bytes())
    index = opened_with_check_ahead(good.path)
    assert index.state == "stale"
    assert CORRUPT_CASES[case] in index.reason
    assert len(index) == 0


def test_a_file_replaced_after_the_check_started_is_checked_again(tmp_path: Path) -> None:
    good, _ = saved_index(tmp_path)
    vector_index_ahead.start_check(good.path)
    vector_index_ahead.wait(good.path)
    other = VectorIndex(tmp_path / "other.usearch", NDIM)
    other.add(np.arange(50), clustered(50, seed=3))
    other.save()
    (tmp_path / "other.usearch").replace(good.path)  # a new file where the checked one was
    index = opened_with_check_ahead(good.path)
    assert (index.state, len(index)) == ("in_sync", 50)


def test_a_file_damaged_in_place_after_its_check_is_refused(tmp_path: Path) -> None:
    good, _ = saved_index(tmp_path)
    vector_index_ahead.start_check(good.path)
    vector_index_ahead.wait(good.path)  # (damaging it while it is read would be a SIGBUS)
    _write_corrupt(good.path, "flipped_body", good.path.read_bytes())
    index = opened_with_check_ahead(good.path)
    assert (index.state, len(index)) == ("stale", 0)
    assert "checksum mismatch" in index.reason


def test_a_check_nobody_takes_is_dropped(tmp_path: Path) -> None:
    good, _ = saved_index(tmp_path)
    vector_index_ahead.start_check(good.path)
    vector_index_ahead.start_check(good.path)  # a second start: the same check
    vector_index_ahead.drop_check(good.path)
    assert not vector_index_ahead.pending(good.path)
    assert VectorIndex(good.path, NDIM).open() == "in_sync"  # checked by the open itself
    vector_index_ahead.start_check(tmp_path / "missing.usearch")
    assert not vector_index_ahead.pending(tmp_path / "missing.usearch")


def test_damaged_files_checked_ahead_never_kill_the_process(tmp_path: Path) -> None:
    """In a child: every damaged file checked ahead, then opened, added to and searched;
    the child must exit normally."""
    before = "from memory.open_ahead import start_open_ahead\nfor f in folders: start_open_ahead(f)"
    states = open_damaged_in_a_child(tmp_path, before)
    assert states == dict.fromkeys(CORRUPT_CASES, "stale")


def _store_with_vectors(settings: Settings) -> None:
    store = MemoryStore.open(settings.home, settings.memory, clock=Clock())
    try:
        rng = np.random.default_rng(5)
        for i in range(30):
            vector = rng.standard_normal(768).tolist()
            store.save("doc", f"note {i}: the ferry leaves at {i}:15", vector=vector)
        store.wait_until_ready()
    finally:
        store.close()  # writes vectors.usearch


def test_the_store_open_takes_or_drops_its_check(
    make_settings: Callable[..., Settings], standin: OllamaStandIn
) -> None:
    settings = make_settings(ollama_host=standin.host)
    _store_with_vectors(settings)
    path = settings.home / "vectors.usearch"
    words = settings.home / "lexical.idx"
    assert words.exists()
    start_open_ahead(settings.home)  # as the TUI's memory worker does before its imports
    store = MemoryStore.open(settings.home, settings.memory, clock=Clock())
    try:
        assert not vector_index_ahead.pending(path)
        assert store.index_state() == ("in_sync", 30)
        store.wait_until_ready()
        assert not file_checks_ahead.pending(words)
        assert store.lexical.loaded_from == "file"
    finally:
        store.close()
    _write_corrupt(path, "flipped_body", path.read_bytes())
    read_only = MemoryStore.open(settings.home, settings.memory, clock=Clock(), read_only=True)
    try:
        assert not vector_index_ahead.pending(path)
        assert read_only.index_state() == ("stale", 0)  # refused, not loaded
    finally:
        read_only.close()


async def test_the_facts_line_comes_with_the_opened_memory(
    make_settings: Callable[..., Settings], standin: OllamaStandIn, caplog
) -> None:
    """The sidebar's facts line is set when the app handles `MemoryOpened`, not after a
    second worker reads it (the line that tells the memory is open); once the word index
    is in too, the log says when (bench.scaling reads it)."""
    settings = make_settings(ollama_host=standin.host, jobs_enabled=False)
    _store_with_vectors(settings)
    seen: list[str] = []

    class App(StraylightApp):
        CSS_PATH = str(ROOT / "tui" / "app.tcss")  # (resolved beside this test otherwise)

        async def on_memory_opened(self, message: MemoryOpened) -> None:
            await super().on_memory_opened(message)
            seen.append(self.chat.sidebar_state.facts_line)

    app = App(settings)
    with caplog.at_level(logging.INFO, logger="straylight.tui"):
        async with app.run_test(size=(110, 32)) as pilot:
            await wait_until(pilot, lambda: bool(seen), timeout=30, what="the memory opened")
            assert seen[0].startswith("0 active, 0 stale")
            await wait_until(
                pilot, lambda: "memory usable after" in caplog.text, timeout=30, what="words"
            )


# ---------------------------------------------------------------- lexical.idx ahead


def test_a_word_index_file_checked_ahead_is_mapped_by_the_load(tmp_path, con) -> None:
    path = written(tmp_path, con)
    lexical_ahead.start_check(path)
    cache = cache_of(path, con)
    assert not file_checks_ahead.pending(path)  # taken by the load
    assert cache.loaded_from == "file"
    for query in QUERIES:
        same(con, cache, query)


@pytest.mark.parametrize("damage", DAMAGES, ids=lambda f: f.__name__)
def test_a_damaged_word_index_file_checked_ahead_is_rebuilt_from_the_tables(
    tmp_path, con, caplog, damage
) -> None:
    path = written(tmp_path, con)
    damage(path)
    lexical_ahead.start_check(path)
    with caplog.at_level(logging.INFO, logger="straylight.memory"):
        cache = cache_of(path, con)
    assert cache.loaded_from == "tables"
    lines = [r for r in caplog.records if str(path) in r.getMessage()]
    assert len(lines) == 1 and lines[0].exc_info is None
    for query in QUERIES:
        same(con, cache, query)


def test_a_word_index_file_of_another_database_checked_ahead_is_not_used(
    tmp_path, con, caplog
) -> None:
    path = written(tmp_path, con)
    meta.put(con, lexical_persist.DATABASE_ID_KEY, "database-two")
    lexical_ahead.start_check(path)
    with caplog.at_level(logging.INFO, logger="straylight.memory"):
        cache = cache_of(path, con)
    assert cache.loaded_from == "tables"
    assert "made for another database or tokenizer" in caplog.text


def test_a_store_open_that_fails_leaves_no_check_behind(
    make_settings: Callable[..., Settings], standin: OllamaStandIn
) -> None:
    settings = make_settings(ollama_host=standin.host)
    _store_with_vectors(settings)
    (settings.home / "straylight.duckdb").write_bytes(b"not a database " * 1000)
    (settings.home / "straylight.duckdb.wal").unlink(missing_ok=True)
    with pytest.raises(DatabaseError):
        MemoryStore.open(settings.home, settings.memory, clock=Clock())
    assert not vector_index_ahead.pending(settings.home / "vectors.usearch")
    assert not file_checks_ahead.pending(settings.home / "lexical.idx")


def test_sorted_unique_returns_ascending_keys_as_they_are() -> None:
    ascending = np.array([1, 5, 9, 200], dtype=np.uint64)
    assert sorted_unique(ascending) is ascending  # (no sort: the database's ids)
    mixed = np.array([9, 1, 5, 5, 200, 1], dtype=np.uint64)
    assert sorted_unique(mixed).tolist() == [1, 5, 9, 200]
