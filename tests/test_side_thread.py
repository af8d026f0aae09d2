"""A recall ranks the words in the store's side thread while its own thread searches the
vectors (`store.side_thread`, `memory.recall`): the same hits as ranking them in its own
thread, saves in another thread go on meanwhile and are found, and a close waits for the
word ranking in flight and leaves later ones to their callers."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from functools import partial
from pathlib import Path

import pytest

from memory.memory_store import MemoryConfig, MemoryStore
from store.clock import Clock
from store.side_thread import CoreCheck, SideThread, runnable_now
from tests.support.ollama_standin import embed_text

DIM = 64
SPARE = CoreCheck(margin=float("-inf"))  # a core always free, however busy the machine
WORDS = [
    *("amber", "basil", "cedar", "delta", "ember", "fjord"),
    *("garnet", "harbor", "indigo", "juniper", "kestrel", "lantern"),
]


def vec(text: str) -> list[float]:
    return embed_text(text, DIM)


def text_of(i: int) -> str:
    a, b, c = WORDS[i % 12], WORDS[(i // 12) % 12], WORDS[(i * 7) % 12]
    return f"Note {i}: the {a} crate went to the {b} dock beside the {c} shed, logged twice."


def open_store(home: Path, points: int) -> MemoryStore:
    store = MemoryStore.open(home, MemoryConfig(), clock=Clock())
    store.side.cores = SPARE
    store.wait_until_ready(timeout=30)
    for i in range(points):
        text = text_of(i)
        store.save("user", text, conversation_id=f"c{i % 5}", vector=vec(text), use_filter=False)
    return store


def hits(store: MemoryStore, query: str) -> list[tuple[int, float, str]]:
    result = store.recall(query, vector=vec(query))
    return [(hit.id, hit.score, hit.content) for hit in result.hits]


def ran_beside(side: SideThread) -> int:
    return side.stats["beside"]


def test_handed_work_runs_in_the_side_thread_and_its_answer_or_error_comes_back() -> None:
    side = SideThread("test-side", SPARE)
    ran_in: list[str] = []
    started = threading.Event()
    release = threading.Event()

    def work() -> int:
        ran_in.append(threading.current_thread().name)
        started.set()
        release.wait(10)
        return 42

    handed = side.hand(work)
    assert handed is not None and started.wait(10)  # running there: not taken back
    release.set()
    assert handed.result() == 42 and ran_in == ["test-side"] and ran_beside(side) == 1

    def fails() -> int:
        started.set()
        raise ValueError("no")

    started.clear()
    failing = side.hand(fails)
    assert failing is not None and started.wait(10)
    with pytest.raises(ValueError, match="no"):
        failing.result()
    side.stop()
    assert side.hand(work) is None  # stopped: the caller runs it


def test_work_not_started_yet_is_taken_back_by_the_caller() -> None:
    side = SideThread("test-side", SPARE)
    release = threading.Event()
    first = side.hand(lambda: release.wait(10))
    assert first is not None
    assert side.hand(lambda: 1) is None and side.stats["busy"] == 1  # one job at a time
    release.set()
    assert first.result() is True
    before = side.stats["taken_back"]
    ran_in: list[str] = []
    for _ in range(50):
        handed = side.hand(lambda: ran_in.append(threading.current_thread().name) or 7)
        assert handed is not None and handed.result() == 7
    # whichever thread got to it first ran it, once
    assert len(ran_in) == 50
    taken_back = side.stats["taken_back"] - before
    assert taken_back == ran_in.count(threading.current_thread().name)
    side.stop()


def _started_then(started: threading.Event, value: int) -> int:
    started.set()
    return value


def test_the_side_thread_is_free_again_once_the_caller_has_the_answer() -> None:
    side = SideThread("test-side", SPARE)
    for i in range(200):
        started = threading.Event()
        handed = side.hand(partial(_started_then, started, i))
        assert handed is not None, f"busy at the {i}th job"  # the last one's answer was read
        assert started.wait(10) and handed.result() == i
    assert side.stats["busy"] == 0
    side.stop()


def test_a_disabled_side_thread_leaves_the_work_to_the_caller() -> None:
    side = SideThread("test-side", SPARE)
    side.enabled = False
    assert side.hand(lambda: 1) is None and side._thread is None  # never started
    side.stop()


def test_without_a_spare_core_the_work_stays_with_the_caller() -> None:
    side = SideThread("test-side", CoreCheck(margin=float("inf")))
    assert side.hand(lambda: 1) is None
    assert side.stats["no_core"] == 1 and side._thread is None
    assert CoreCheck(margin=float("-inf")).free()
    side.stop()


@pytest.mark.skipif(runnable_now() is None, reason="no /proc/loadavg: the load average decides")
def test_a_spare_core_is_judged_by_what_runs_now_not_by_the_last_minute() -> None:
    """Busy processes take the side thread's core while they spin — seconds, which move the
    1-minute load average by ~0.05 a process — and give it back as soon as they end, when
    the load average still holds them for a minute. On a machine something else keeps busy
    (a CI neighbour), "back" is as busy as before the spinners, not a spare core."""
    cores = len(os.sched_getaffinity(0))
    before = _fewest_runnable(seconds=1.0)
    had_spare = CoreCheck().free()  # (a check reads the machine once a second at most)
    spin = "import sys; print('spinning', flush=True)\nwhile True: pass"
    spinners = [
        subprocess.Popen([sys.executable, "-c", spin], stdout=subprocess.PIPE)
        for _ in range(cores + 1)
    ]
    try:
        for spinner in spinners:
            assert spinner.stdout is not None and spinner.stdout.readline() == b"spinning\n"
        during = runnable_now()
        assert during is not None and during >= len(spinners) + 1  # they and this thread
        assert not CoreCheck().free()
        side = SideThread("test-side")
        assert side.hand(lambda: 1) is None and side.stats["no_core"] == 1
        side.stop()
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    check, deadline = CoreCheck(), time.monotonic() + 30  # one idle moment is enough

    def back() -> bool:
        if had_spare:
            return check.free()
        now = runnable_now()  # no spare core before either: as busy as then
        return now is not None and now <= before

    while not back() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert back(), f"runnable now: {runnable_now()}, before the spinners: {before}"


def _fewest_runnable(seconds: float) -> int:
    """The fewest threads runnable at once over `seconds` (this one included)."""
    seen, deadline = [], time.monotonic() + seconds
    while time.monotonic() < deadline:
        now = runnable_now()
        if now is not None:
            seen.append(now)
        time.sleep(0.02)
    return min(seen, default=1)


def test_stop_lets_the_work_in_flight_finish_and_leaves_unstarted_work_to_its_caller() -> None:
    side = SideThread("test-side", SPARE)
    release = threading.Event()
    started = threading.Event()
    handed = side.hand(lambda: started.set() or release.wait(10))
    assert handed is not None and started.wait(10)
    threading.Timer(0.1, release.set).start()
    side.stop()  # returns after the work
    assert release.is_set() and handed.result() is True

    waiting = SideThread("test-side", SPARE)
    blocker = threading.Event()
    first = waiting.hand(lambda: blocker.wait(10))
    assert first is not None
    blocker.set()
    first.result()
    waiting.stop()
    assert waiting.hand(lambda: 3) is None


def test_recall_gives_the_same_hits_as_ranking_the_words_in_its_own_thread(home: Path) -> None:
    store = open_store(home, 60)
    queries = [f"where did the {a} crate go, near {b}?" for a in WORDS for b in WORDS[:3]]
    beside = [hits(store, q) for q in queries]
    stats = store.side.stats
    assert stats["beside"] + stats["taken_back"] == len(queries)  # every recall handed it
    store.side.enabled = False
    assert [hits(store, q) for q in queries] == beside
    assert stats["beside"] + stats["taken_back"] == len(queries)  # none handed now
    store.close()


def test_recall_during_saves_in_another_thread_finds_each_point_just_saved(home: Path) -> None:
    store = open_store(home, 20)
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
            tag = f"zq{i}x"
            text = text_of(i) + f" Tag {tag}."
            saved = store.save("user", text, vector=vec(text), use_filter=False).point_id
            assert hits(store, f"the tag {tag}")[0][0] == saved  # by its rare word
    finally:
        stop.set()
        other.join(30)
    assert not other.is_alive() and errors == []
    store.close()


def test_close_while_recalling_waits_for_the_word_ranking_in_flight(home: Path) -> None:
    """A recall overlapping the close may see the word index closing (as it could before
    the side thread: its mirror is switched off first); none hangs, and the side thread
    is gone after the close."""
    store = open_store(home, 40)
    expected = hits(store, "the amber crate")
    results: list[tuple[float, list[tuple[int, float, str]]]] = []
    running = threading.Event()

    def recall_until_closed() -> None:
        with contextlib.suppress(Exception):  # a recall on a closed store fails
            for _ in range(5000):
                found = hits(store, "the amber crate")
                results.append((time.monotonic(), found))  # when it returned, not began
                running.set()

    worker = threading.Thread(target=recall_until_closed)
    worker.start()
    assert running.wait(30)
    closing = time.monotonic()
    store.close()
    worker.join(60)
    assert not worker.is_alive()  # no recall hangs on the stopped side thread
    side = store.side._thread
    assert side is not None and not side.is_alive()
    before = [found for done, found in results if done < closing]
    assert before and all(found == expected for found in before)
    assert store.side.hand(lambda: 1) is None  # stopped
