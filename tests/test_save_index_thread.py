"""A save returns once its point is committed; its vector reaches the index in the index
thread (`VectorKeeper.submit_add`). What reads or changes the index next waits for it: the
next recall finds the point by its vector, a forget is not undone by a late add, and a crash
before the add ran loses nothing. The index thread is held back with a job of our own, so
the add is certainly still queued when the test looks."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memory.memory_store import MemoryConfig, MemoryStore
from store.clock import Clock
from tests.support.ollama_standin import embed_text

DIM = 64
ROOT = Path(__file__).resolve().parent.parent
TEXT = "The blyck release train leaves on Thursdays from the staging branch, said Ana."


def vec(text: str) -> list[float]:
    return embed_text(text, DIM)


def open_store(home: Path) -> MemoryStore:
    store = MemoryStore.open(home, MemoryConfig(), clock=Clock())
    store.wait_until_ready(timeout=30)
    return store


@contextmanager
def index_thread_held(store: MemoryStore) -> Iterator[threading.Event]:
    """The index thread busy with a job that waits for the event (set on leaving)."""
    release = threading.Event()
    started = threading.Event()

    def hold() -> None:
        started.set()
        release.wait(30)

    store.vectors._worker.submit(hold)
    assert started.wait(10)
    try:
        yield release
    finally:
        release.set()


def seed(store: MemoryStore) -> None:
    """A first point fixes the dimension and makes the index exist."""
    first = "Pasta water should be as salty as the sea, my grandmother always said."
    store.save("user", first, conversation_id="seed", vector=vec(first))


@contextmanager
def saved_with_add_queued(home: Path) -> Iterator[tuple[MemoryStore, int]]:
    """A store with a seed point, and TEXT saved while the index thread is held; the thread
    is let go 0.2 s later, so what runs in the block must wait for the add to see it."""
    store = open_store(home)
    seed(store)
    with index_thread_held(store) as release:
        point_id = store.save("user", TEXT, conversation_id="c", vector=vec(TEXT)).point_id
        assert point_id is not None
        threading.Timer(0.2, release.set).start()
        yield store, point_id


def test_the_save_returns_before_its_vector_is_added(home: Path) -> None:
    store = open_store(home)
    seed(store)
    with index_thread_held(store):
        point_id = store.save("user", TEXT, conversation_id="c", vector=vec(TEXT)).point_id
        assert point_id is not None and store.points.get(point_id) is not None
        assert store.vectors._index is not None and point_id not in store.vectors._index
    store.close()


def test_the_next_recall_finds_the_point_by_its_vector(home: Path) -> None:
    with saved_with_add_queued(home) as (store, point_id):
        by_vector = store.recall("zzz qqq", vector=vec(TEXT), mode="vector").hits
    assert by_vector and by_vector[0].id == point_id
    by_words = store.recall("blyck release train", mode="lexical").hits
    assert by_words and by_words[0].id == point_id
    store.close()


def test_a_forget_is_not_undone_by_a_late_add(home: Path) -> None:
    with saved_with_add_queued(home) as (store, point_id):
        assert store.forget(point_id)  # waits for the queued add, then removes
    store.vectors._worker.submit(lambda: None).result()  # whatever was queued has run
    index = store.vectors._index
    assert index is not None and point_id not in index
    assert not store.recall("blyck release train", vector=vec(TEXT)).hits
    store.close()


def test_status_counts_the_point_at_once(home: Path) -> None:
    with saved_with_add_queued(home) as (store, _point_id):
        assert store.index_state() == ("in_sync", 2)
    store.close()


CRASH_BEFORE_ADD = """
import os, sys, threading
from pathlib import Path
from memory.memory_store import MemoryConfig, MemoryStore
from store.clock import Clock
from tests.support.ollama_standin import embed_text
store = MemoryStore.open(Path(sys.argv[1]), MemoryConfig(), clock=Clock())
store.wait_until_ready(timeout=30)
first = "Pasta water should be as salty as the sea, my grandmother always said."
store.save("user", first, conversation_id="seed", vector=embed_text(first, 64))
store.close()
store = MemoryStore.open(Path(sys.argv[1]), MemoryConfig(), clock=Clock())
store.wait_until_ready(timeout=30)
store.vectors._worker.submit(threading.Event().wait)  # the add never runs
text = sys.argv[2]
print(store.save("user", text, conversation_id="c", vector=embed_text(text, 64)).point_id)
sys.stdout.flush()
os._exit(9)  # no close, no index save, the queued add lost: a crash
"""


def test_a_crash_before_the_add_ran_loses_nothing(home: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CRASH_BEFORE_ADD, str(home), TEXT],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 9, done.stderr
    point_id = int(done.stdout.split()[-1])
    store = open_store(home)
    assert store.points.get(point_id) is not None
    assert store.index_state() == ("in_sync", 2)  # the open reconciled the index
    hits = store.recall("zzz qqq", vector=vec(TEXT), mode="vector").hits
    assert hits and hits[0].id == point_id
    store.close()


def test_an_add_submitted_after_close_is_left_to_the_next_open(home: Path) -> None:
    store = open_store(home)
    seed(store)
    store.vectors.close()  # a save that committed just as the store closed
    point_id = store.save("user", TEXT, conversation_id="c", vector=vec(TEXT)).point_id
    assert point_id is not None  # its add found the index thread gone: no error
    assert store.vectors._index is not None and point_id not in store.vectors._index
    store.db.close()
    store = open_store(home)
    assert store.index_state() == ("in_sync", 2)  # the open reconciled the index
    hits = store.recall("zzz qqq", vector=vec(TEXT), mode="vector").hits
    assert hits and hits[0].id == point_id
    store.close()
