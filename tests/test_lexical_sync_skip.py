"""The word index's mirror skips its sync check when it is the sole writer's
(`store.sole_writer`), and still sees every write it must see."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from memory.memory_store import MemoryConfig, MemoryStore
from store import lexical_cache
from store import lexical_index as li
from store.clock import Clock
from store.database import database_path, open_database
from tests.test_lexical_index import add, ids
from tests.test_lexical_index import con as con  # the fixtures
from tests.test_lexical_index import db_path as db_path

SECOND_PROCESS = textwrap.dedent(
    """
    import sys, duckdb
    try:
        duckdb.connect(sys.argv[1], read_only=sys.argv[2] == "ro").close()
    except duckdb.Error as error:
        print("refused:", error)
    else:
        print("opened")
    """
)


def checks(cache: li.LexicalCache) -> int:
    return cache.stats["sync_checks"]


def later(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    """The mirror's clock, `seconds` ahead (the full check's deadline passes)."""
    monotonic = time.monotonic
    fake = SimpleNamespace(monotonic=lambda: monotonic() + seconds)
    monkeypatch.setattr(lexical_cache, "time", fake)


@pytest.mark.parametrize("mode", ["rw", "ro"])
def test_no_other_process_can_open_a_file_this_one_holds_read_write(
    tmp_path: Path, mode: str
) -> None:
    """What the skip rests on: DuckDB's lock keeps every other process's writes out."""
    with open_database(database_path(tmp_path), clock=Clock()) as db:
        assert not db.read_only
        done = subprocess.run(
            [sys.executable, "-c", SECOND_PROCESS, str(db.path), mode],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
    assert done.stdout.startswith("refused:"), done.stdout
    assert "lock" in done.stdout.lower()


def test_the_sole_writers_mirror_checks_only_when_something_is_staged(con, db_path):
    cache = li.LexicalCache(sole_writer_of=db_path)
    add(con, {1: "apples and pears"}, cache=cache)
    for _ in range(2):  # loads, then applies what was staged before the load
        assert ids(cache.search(con, "apples", 5)) == [1]
    before = checks(cache)
    for _ in range(3):
        assert ids(cache.search(con, "apples", 5)) == [1]
    assert checks(cache) == before  # nothing staged, nothing committed since: no query
    # a write through a second connection of this process, staged in the mirror
    other = con.cursor()
    other.begin()
    li.index_point(other, 2, "green apples", cache=cache)
    other.commit()
    assert sorted(ids(cache.search(con, "apples", 5))) == [1, 2]
    other.begin()
    li.remove_point(other, 1, cache=cache)
    other.commit()
    assert ids(cache.search(con, "apples", 5)) == [2]
    after = checks(cache)
    assert ids(cache.search(con, "apples", 5)) == [2]
    assert checks(cache) == after
    # a staged write rolled back is never applied, and keeps the check on meanwhile
    other.begin()
    li.index_point(other, 3, "apples in a pie", cache=cache)
    other.rollback()
    assert ids(cache.search(con, "apples", 5)) == [2]
    assert checks(cache) == after + 1
    other.close()


def test_a_write_committed_before_its_staging_is_seen_while_in_flight(con, db_path):
    """A save commits by itself and learns its id only then (`PointStore.add`): between its
    commit and its staging, a search of the sole writer's mirror must still see it."""
    cache = li.LexicalCache(sole_writer_of=db_path)
    add(con, {1: "apples and pears"}, cache=cache)
    for _ in range(2):
        assert ids(cache.search(con, "apples", 5)) == [1]
    with cache.write_in_flight():
        add(con, {2: "green apples"})  # committed, not staged yet
        assert sorted(ids(cache.search(con, "apples", 5))) == [1, 2]
        counts = li.analyse("green apples", cache=cache).counts
        cache.stage_add(2, sum(counts.values()), counts)
    assert sorted(ids(cache.search(con, "apples", 5))) == [1, 2]  # applied once more: no harm
    before = checks(cache)
    assert sorted(ids(cache.search(con, "apples", 5))) == [1, 2]
    assert checks(cache) == before  # settled: the skip is back


def test_a_write_around_the_sole_writers_mirror_is_seen_at_the_full_check(
    con, db_path, monkeypatch
):
    cache = li.LexicalCache(sole_writer_of=db_path)
    add(con, {1: "apples and pears"}, cache=cache)
    assert ids(cache.search(con, "apples", 5)) == [1]
    add(con, {2: "green apples"})  # plain SQL, not staged: against the contract
    later(monkeypatch, lexical_cache.FULL_CHECK_SECONDS + 1)
    assert sorted(ids(cache.search(con, "apples", 5))) == [1, 2]


def test_two_mirrors_claiming_one_file_both_check(con, db_path):
    first = li.LexicalCache(sole_writer_of=db_path)
    second = li.LexicalCache(sole_writer_of=db_path)
    add(con, {1: "apples and pears"}, cache=first)
    assert ids(second.search(con, "apples", 5)) == [1]
    add(con, {2: "green apples"}, cache=first)  # staged in the first only
    assert sorted(ids(second.search(con, "apples", 5))) == [1, 2]
    first.close()  # the second is alone now: it skips again
    before = checks(second)
    assert sorted(ids(second.search(con, "apples", 5))) == [1, 2]
    assert checks(second) == before


def test_a_mirror_without_the_claim_checks_before_every_search(con):
    cache = li.LexicalCache()
    add(con, {1: "apples and pears"}, cache=cache)
    cache.search(con, "apples", 5)
    before = checks(cache)
    cache.search(con, "apples", 5)
    assert checks(cache) == before + 1
    add(con, {2: "green apples"})  # not staged: found by the check at once
    assert sorted(ids(cache.search(con, "apples", 5))) == [1, 2]


def test_a_writing_store_skips_the_check_and_a_reading_one_does_not(tmp_path: Path) -> None:
    config = MemoryConfig()
    with MemoryStore.open(tmp_path, config, clock=Clock()) as store:
        store.wait_until_ready()
        first = store.save(
            "user", "the lighthouse keeper painted the door blue", use_filter=False
        ).point_id
        assert [hit.id for hit in store.recall("lighthouse door", mode="lexical").hits] == [first]
        before = checks(store.lexical)
        store.recall("lighthouse door", mode="lexical")
        assert checks(store.lexical) == before
        second = store.save(
            "user", "a second lighthouse, the northern one", use_filter=False
        ).point_id
        found = [hit.id for hit in store.recall("lighthouse", mode="lexical").hits]
        assert sorted(found) == sorted([first, second])
        assert first is not None and store.forget(first)
        assert [hit.id for hit in store.recall("lighthouse", mode="lexical").hits] == [second]
    with MemoryStore.open(tmp_path, config, clock=Clock(), read_only=True) as reader:
        reader.wait_until_ready()
        assert [hit.id for hit in reader.recall("lighthouse", mode="lexical").hits] == [second]
        before = checks(reader.lexical)
        reader.recall("lighthouse", mode="lexical")
        assert checks(reader.lexical) == before + 1
