"""Quitting a large memory does not rewrite `vectors.usearch` for a few saves: from
`LAZY_SAVE_FROM` vectors on, close (and the open's reconcile) save the file only once
`SAVE_EVERY` changes are unsaved; the next open adds the few it lacks back from the database,
so nothing is lost. A smaller memory saves at close as before."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from memory.memory_store import MemoryConfig, MemoryStore
from store import vector_upkeep
from store.clock import Clock
from store.vector_index_file import INDEX_FILENAME
from tests.support.ollama_standin import embed_text

DIM = 32


def open_store(home: Path) -> MemoryStore:
    store = MemoryStore.open(home, MemoryConfig(), clock=Clock())
    store.wait_until_ready(timeout=30)
    return store


def save(store: MemoryStore, text: str) -> int:
    point_id = store.save("user", text, vector=embed_text(text, DIM), use_filter=False).point_id
    assert point_id is not None
    return point_id


def found_by_vector(store: MemoryStore, text: str) -> list[int]:
    return [
        pid for pid, _ in store.vectors.search(np.asarray(embed_text(text, DIM), np.float32), 3)
    ]


@pytest.fixture
def large(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A memory of 40 points whose index file is current, 'large' from 30 vectors on."""
    monkeypatch.setattr(vector_upkeep, "LAZY_SAVE_FROM", 30)
    monkeypatch.setattr(vector_upkeep, "SAVE_EVERY", 10)
    store = open_store(home)
    for i in range(40):
        save(store, f"note {i}: the {i}th ferry to Lindau leaves at {i % 24} o'clock")
    store.close()  # 40 changes unsaved: saved
    return home / INDEX_FILENAME


def test_a_few_saves_leave_the_large_file_as_it_was_and_the_next_open_adds_them(
    home: Path, large: Path, caplog: pytest.LogCaptureFixture
) -> None:
    before = large.read_bytes()
    store = open_store(home)
    texts = [f"a later note {i} about the harbour master's cat" for i in range(3)]
    ids = [save(store, text) for text in texts]
    store.close()
    assert large.read_bytes() == before  # quitting did not rewrite the file
    with caplog.at_level(logging.INFO, logger="straylight.memory"):
        store = open_store(home)
    try:
        assert "index reconciled: +3" in caplog.text
        for point_id, text in zip(ids, texts, strict=True):
            assert found_by_vector(store, text)[0] == point_id  # added back, nothing lost
        assert large.read_bytes() == before  # still too few to rewrite the file for
    finally:
        store.close()


def test_a_forget_counts_as_a_change_and_enough_changes_are_saved_at_close(
    home: Path, large: Path
) -> None:
    before = large.read_bytes()
    store = open_store(home)
    ids = [save(store, f"the {i}th reminder to water the basil") for i in range(6)]
    assert store.forget(ids[0])
    store.close()  # 7 changes: still lazy
    assert large.read_bytes() == before
    store = open_store(home)  # the open adds 5 back (the forgotten one is not in the database)
    for i in range(5):
        save(store, f"the {i}th note on the bakery's opening hours")
    store.close()  # 5 reconciled + 5 saved: 10 unsaved, saved
    assert large.read_bytes() != before
    store = open_store(home)
    try:
        assert len(store.vectors.index or []) == 40 + 6 - 1 + 5
    finally:
        store.close()


def test_a_small_memory_saves_its_index_at_every_close(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_upkeep, "LAZY_SAVE_FROM", 10_000)
    store = open_store(home)
    save(store, "the first note")
    store.close()
    path = home / INDEX_FILENAME
    before = path.read_bytes()
    store = open_store(home)
    save(store, "a second note, about tide tables")
    store.close()
    assert path.read_bytes() != before


def test_the_upkeep_job_saves_a_large_index_only_once_enough_changed(
    home: Path, large: Path
) -> None:
    before = large.read_bytes()
    store = open_store(home)
    try:
        for i in range(4):
            save(store, f"the {i}th line of the packing list")
        report = store.vectors.upkeep()
        assert report["saved"] is False and large.read_bytes() == before
        for i in range(6):
            save(store, f"the {i}th stop on the tram line")
        store.vectors.upkeep()  # 10 unsaved: saved here, or by the saves' own rule on the way
        store.vectors.wait()
        assert large.read_bytes() != before
    finally:
        store.close()


def test_an_open_that_adds_many_back_rewrites_a_large_file_in_the_background(
    home: Path, large: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = large.read_bytes()
    monkeypatch.setattr(vector_upkeep, "SAVE_EVERY", 1_000)  # this session's close stays lazy
    store = open_store(home)
    ids = [save(store, f"the {i}th entry in the logbook") for i in range(12)]
    store.close()
    assert large.read_bytes() == before
    monkeypatch.setattr(vector_upkeep, "SAVE_EVERY", 10)
    store = open_store(home)  # reconciles +12: enough to rewrite the file, not in the open
    try:
        assert store.vectors._saving is not None  # the index-save thread took it
        store.vectors.wait()
        assert large.read_bytes() != before
        assert found_by_vector(store, "the 3th entry in the logbook")[0] == ids[3]
    finally:
        store.close()
