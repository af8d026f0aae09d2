"""The recall's vector search runs in the store's search thread while the recall ranks the
words (`VectorKeeper.search_ahead`, `store.vector_search_thread`): the same hits as the
search in the recall's own thread, a point saved just before is found, saves in another
thread go on meanwhile, and a close waits for the search in flight and leaves later ones to
their callers."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from memory.memory_store import MemoryConfig, MemoryStore
from store import vector_upkeep
from store.clock import Clock
from store.vector_search_thread import CoreCheck, SearchThread
from tests.support.ollama_standin import embed_text

DIM = 64
SPARE = CoreCheck(margin=float("-inf"))  # a core always free, however busy the machine
WORDS = [
    "amber",
    "basil",
    "cedar",
    "delta",
    "ember",
    "fjord",
    "garnet",
    "harbor",
    "indigo",
    "juniper",
    "kestrel",
    "lantern",
]


def vec(text: str) -> list[float]:
    return embed_text(text, DIM)


def text_of(i: int) -> str:
    a, b, c = WORDS[i % 12], WORDS[(i // 12) % 12], WORDS[(i * 7) % 12]
    return f"Note {i}: the {a} crate went to the {b} dock beside the {c} shed, logged twice."


def open_store(home: Path, points: int) -> MemoryStore:
    store = MemoryStore.open(home, MemoryConfig(), clock=Clock())
    store.wait_until_ready(timeout=30)
    for i in range(points):
        text = text_of(i)
        store.save("user", text, conversation_id=f"c{i % 5}", vector=vec(text), use_filter=False)
    return store


def always_ahead(store: MemoryStore) -> None:
    """The store's search thread takes every search, however busy the machine is."""
    store.vectors._searcher.start_wait = 5.0
    store.vectors._searcher.cores = SPARE


def hits(store: MemoryStore, query: str) -> list[tuple[int, float, str]]:
    result = store.recall(query, vector=vec(query))
    return [(hit.id, hit.score, hit.content) for hit in result.hits]


def test_a_job_runs_in_the_thread_and_its_answer_or_error_comes_back() -> None:
    searcher = SearchThread("test-search", 5.0, SPARE)
    ran_in: list[str] = []

    def work() -> int:
        ran_in.append(threading.current_thread().name)
        return 42

    pending = searcher.submit(work)
    assert pending is not None and pending.result() == 42 and ran_in == ["test-search"]

    def fails() -> int:
        raise ValueError("no")

    failing = searcher.submit(fails)
    assert failing is not None
    with pytest.raises(ValueError, match="no"):
        failing.result()
    searcher.stop()
    assert searcher.submit(work) is None  # stopped: the caller runs it


def test_a_busy_thread_is_not_queued_behind() -> None:
    searcher = SearchThread("test-search", 5.0, SPARE)
    release = threading.Event()
    first = searcher.submit(lambda: release.wait(10))
    assert first is not None
    assert searcher.submit(lambda: 1) is None  # busy: run it yourself
    assert searcher.stats["busy"] == 1
    release.set()
    assert first.result() is True
    again = searcher.submit(lambda: 2)
    assert again is not None and again.result() == 2
    searcher.stop()


def test_a_job_not_taken_up_in_time_comes_back_to_the_caller() -> None:
    searcher = SearchThread("test-search", 0.0, SPARE)
    outcomes = [searcher.submit(lambda: 3) for _ in range(50)]
    # a job the thread took up runs there; one it did not is handed back (None)
    assert all(pending is None or pending.result() == 3 for pending in outcomes)
    assert searcher.stats["late"] + searcher.stats["ahead"] == 50
    searcher.stop()


def test_no_spare_core_leaves_the_job_to_the_caller() -> None:
    searcher = SearchThread("test-search", 5.0, CoreCheck(margin=float("inf")))
    assert searcher.submit(lambda: 1) is None
    assert searcher.stats["no_core"] == 1 and searcher._thread is None  # never started
    assert CoreCheck(margin=float("-inf")).free()
    searcher.stop()


def test_stop_lets_the_job_in_flight_finish() -> None:
    searcher = SearchThread("test-search", 5.0, SPARE)
    release = threading.Event()
    pending = searcher.submit(lambda: release.wait(10))
    assert pending is not None
    threading.Timer(0.1, release.set).start()
    searcher.stop()  # returns after the job
    assert release.is_set() and pending.result() is True


def test_recall_gives_the_same_hits_as_the_search_in_its_own_thread(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_store(home, 60)
    always_ahead(store)
    queries = [f"where did the {a} crate go, near {b}?" for a in WORDS for b in WORDS[:3]]
    ahead = [hits(store, q) for q in queries]
    assert store.vectors._searcher.stats["ahead"] == len(queries)  # all ran in the thread
    monkeypatch.setattr(vector_upkeep, "SEARCH_AHEAD", False)
    assert [hits(store, q) for q in queries] == ahead
    query = np.asarray(vec(queries[0]), dtype=np.float32)
    monkeypatch.setattr(vector_upkeep, "SEARCH_AHEAD", True)
    assert store.vectors.search_ahead(query, 20)() == store.vectors.search(query, 20)
    store.close()


def test_recall_during_saves_in_another_thread_finds_each_point_just_saved(home: Path) -> None:
    store = open_store(home, 20)
    always_ahead(store)
    errors: list[BaseException] = []
    stop = threading.Event()

    def recall_meanwhile() -> None:
        try:
            while not stop.is_set():
                hits(store, "which crate went to the harbor dock?")
        except BaseException as error:  # noqa: BLE001 - the test reports it
            errors.append(error)

    other = threading.Thread(target=recall_meanwhile)
    other.start()
    try:
        for i in range(20, 50):
            text = text_of(i) + f" Tag zq{i}x."
            saved = store.save("user", text, vector=vec(text), use_filter=False).point_id
            found = store.vectors.search_ahead(np.asarray(vec(text), np.float32), 5)()
            assert found and found[0][0] == saved  # its own vector is the nearest
    finally:
        stop.set()
        other.join(30)
    assert not other.is_alive() and errors == []
    store.close()


def test_close_while_recalling_waits_for_the_search_and_later_ones_run_in_the_caller(
    home: Path,
) -> None:
    store = open_store(home, 40)
    always_ahead(store)
    query = np.asarray(vec("the amber crate"), dtype=np.float32)
    expected = store.vectors.search(query, 10)
    results: list[list[tuple[int, float]]] = []
    errors: list[BaseException] = []
    running = threading.Event()

    def search_until_closed() -> None:
        try:
            for _ in range(2000):
                results.append(store.vectors.search_ahead(query, 10)())
                running.set()
        except BaseException as error:  # noqa: BLE001 - the test reports it
            errors.append(error)

    worker = threading.Thread(target=search_until_closed)
    worker.start()
    assert running.wait(30)
    store.close()
    worker.join(60)
    assert not worker.is_alive() and errors == []
    assert results and all(found == expected for found in results)
    assert store.vectors._searcher.submit(lambda: 1) is None  # stopped
    assert store.vectors.search_ahead(query, 10)() == expected  # in the caller's thread
