"""Recall's hit rows: a pinned point's row is read once and kept with the pins until they
change, and a hit row's content hash is the stored column's (memory/recall.py `_hit_rows`,
store/point_reads.py)."""

from __future__ import annotations

from pathlib import Path

from memory.memory_store import MemoryStore
from store import point_reads
from store.clock import Clock
from tests.test_memory_store import LONG, open_store, vec


def recalled(store: MemoryStore, query: str) -> list[int]:
    return [hit.id for hit in store.recall(query, vector=vec(query)).hits]


def test_a_pinned_row_is_kept_after_a_recall_and_every_pin_change_drops_it(home: Path) -> None:
    store = open_store(home)
    try:
        pinned = store.remember("The kettle is descaled monthly", vector=vec("kettle descaled"))
        assert store.pins.kept_rows() == {}
        assert recalled(store, "kettle descaled") == [pinned]
        kept = store.pins.kept_rows()
        assert list(kept) == [pinned] and kept[pinned].pinned
        assert kept[pinned].content == "The kettle is descaled monthly"
        assert recalled(store, "kettle descaled") == [pinned]  # served from what was kept
        assert store.pins.kept_rows() is kept
        assert store.set_pinned(pinned, False)
        assert store.pins.kept_rows() == {}
        hits = store.recall("kettle descaled", vector=vec("kettle descaled")).hits
        assert [(hit.id, hit.pinned) for hit in hits] == [(pinned, False)]  # read again
        assert store.set_pinned(pinned, True)
        assert store.pins.kept_rows() == {}
        assert recalled(store, "kettle descaled") == [pinned]
        assert list(store.pins.kept_rows()) == [pinned]
    finally:
        store.close()


def test_a_forgotten_pin_never_comes_back_from_recall(home: Path) -> None:
    store = open_store(home)
    try:
        first = store.remember("Tyre pressure should be 2.4 bar", vector=vec("tyre pressure"))
        second = store.remember("Tyre pressure in winter: 2.6 bar", vector=vec("tyre winter"))
        assert set(recalled(store, "tyre pressure")) == {first, second}
        assert first in store.pins.kept_rows()
        assert store.forget(first)
        assert first not in store.pins.kept_rows()
        for _ in range(3):  # the first recall after the forget and the ones after it
            assert recalled(store, "tyre pressure") == [second]
        store.close()
        store = open_store(home)  # and after a reopen
        assert recalled(store, "tyre pressure") == [second]
    finally:
        store.close()


def test_a_row_a_concurrent_pin_change_outdated_is_not_kept(home: Path) -> None:
    """A recall keeps the rows it read in the dict it took before its query: a pin change
    meanwhile replaced that dict, so the row goes nowhere the next recall looks."""
    store = open_store(home)
    try:
        pinned = store.remember("The boiler code is 4471", vector=vec("boiler code"))
        before = store.pins.kept_rows()
        store.forget(pinned)
        before[pinned] = point_reads.HitRow(pinned, "user", True, Clock().now(), "stale")
        assert store.pins.kept_rows() == {}
        assert pinned not in recalled(store, "boiler code")
    finally:
        store.close()


def test_a_hit_rows_content_hash_is_the_stored_column(home: Path) -> None:
    store = open_store(home)
    try:
        texts = ["Ünïcode note about the blyck pipeline" + LONG, "Plain note on keys" + LONG]
        ids = [store.save("user", t, conversation_id="c", vector=vec(t)).point_id for t in texts]
        assert all(isinstance(pid, int) for pid in ids)
        rows = point_reads.hit_rows(store.db, [pid for pid in ids if pid is not None])
        with store.db.cursor() as cur:
            stored = dict(cur.execute("SELECT id, content_hash FROM points").fetchall())
        assert len(rows) == 2
        assert all(row.content_hash == stored[pid] for pid, row in rows.items())
    finally:
        store.close()
