"""`rows.dat` (store/row_file.py): recall's hit rows from the file are the database's rows,
whatever happened to the file — saves, ingest replaces, forgets, reopens, a torn or damaged
file, a planted link, a foreign file, a file behind the database; a forgotten point's text
is gone from the file."""

from __future__ import annotations

import logging
import os
import random
import shutil
import struct
import tracemalloc
import zlib
from pathlib import Path

import pytest

from memory.ingest import apply_ingest, plan_ingest
from memory.memory_store import MemoryStore
from store import point_reads
from store.clock import Clock
from store.data_dir_check import check_data_dir
from store.private_files import SymlinkRefused
from store.row_file import ROWS_FILENAME, RowFile
from store.row_file_format import HEADER, RECORD
from store.row_file_snapshot import SNAPSHOT_FILENAME, read_snapshot
from tests.test_memory_store import LONG, open_store, vec

TEXTS = [
    "Ünïcode note about the blyck pipeline ✓",
    "The tram to the depot leaves at 7:40",
    "Plain note on the backup keys",
    'Line one\nline two\ttabbed, and a quote " here',
]


def fill(store: MemoryStore, count: int, seed: int = 0) -> list[int]:
    """`count` points of both roles in three conversations (some pinned)."""
    rnd = random.Random(seed)
    ids: list[int] = []
    for n in range(count):
        text = f"{rnd.choice(TEXTS)} #{n} {rnd.random():.6f}{LONG}"
        role = "user" if n % 2 else "assistant"
        result = store.save(
            role,
            text,
            conversation_id=f"conv-{n % 3}" if n % 5 else "",
            vector=vec(text),
            pinned=n % 7 == 0,
            use_filter=False,
        )
        assert result.point_id is not None
        ids.append(result.point_id)
    return ids


def all_ids(store: MemoryStore) -> list[int]:
    with store.db.cursor() as cur:
        return [int(r[0]) for r in cur.execute("SELECT id FROM points ORDER BY id").fetchall()]


def assert_rows_as_database(store: MemoryStore, *, served: bool = True) -> None:
    """For random id lists (and ids no point has), the hit rows and the neighbour rows read
    with the file are those read from DuckDB alone; with `served`, the file itself answered
    for every id up to its largest (no query needed)."""
    ids = all_ids(store)
    rows = store.rows
    assert rows is not None and rows.ready
    rnd = random.Random(7)
    pins = store.pins.ids
    for _ in range(30):
        pick = [*rnd.sample(ids, min(len(ids), 12)), max(ids, default=0) + 3, -1]
        alone = point_reads.hit_rows(store.db, pick)
        assert point_reads.hit_rows(store.db, pick, rows=rows, pinned=pins) == alone
        if served:
            anchors = rnd.sample(ids, min(len(ids), 5))
            alone_near = point_reads.neighbour_rows(store.db, anchors, 3)
            near = point_reads.neighbour_rows(store.db, anchors, 3, rows=rows, pinned=pins)
            assert near == alone_near
    if served:
        reach = range(-2, rows.largest + 1)
        found, unknown = rows.lookup(reach)
        assert set(found) == set(ids) and unknown == []
        assert rows.covers() == len(ids)


def assert_reopened_from(home: Path, how: str) -> None:
    """A new open of `home` began its load from `how` and reads the database's rows."""
    store = open_store(home)
    try:
        assert store.rows is not None and store.rows.opened_from == how
        assert_rows_as_database(store)
    finally:
        store.close()


def file_bytes(home: Path) -> bytes:
    return (home / ROWS_FILENAME).read_bytes()


def test_the_files_rows_are_the_databases_after_saves_forgets_and_a_reopen(home: Path) -> None:
    store = open_store(home)
    try:
        ids = fill(store, 60)
        assert_rows_as_database(store)
        for pid in ids[::9]:
            assert store.forget(pid)
        assert store.set_pinned(ids[1], True)  # pinned comes from the pins, not the file
        assert_rows_as_database(store)
        hits = store.recall("tram depot", vector=vec("tram depot")).hits
        assert hits and any(hit.pinned for hit in hits)
        store.close()
        store = open_store(home)
        assert_rows_as_database(store)
        fill(store, 10, seed=1)  # after the reopen: appended to the file found
        assert_rows_as_database(store)
    finally:
        store.close()


def test_forget_zeroes_the_points_bytes_in_the_file(home: Path) -> None:
    store = open_store(home)
    try:
        fill(store, 5)
        secret = "The locker code is 9921-sesame" + LONG
        pid = store.save("user", secret, vector=vec(secret), use_filter=False).point_id
        assert pid is not None
        assert secret.encode() in file_bytes(home)
        assert store.forget(pid)
        assert b"9921-sesame" not in file_bytes(home)
        assert_rows_as_database(store)
        store.close()
        store = open_store(home)
        assert b"9921-sesame" not in file_bytes(home)
        assert_rows_as_database(store)
    finally:
        store.close()


def test_a_file_mostly_of_forgotten_points_is_made_anew_at_the_next_open(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Forgets zero records in place; once most of the file is holes, the next open makes it
    anew from the database, and the space comes back (a small file keeps its holes)."""
    store = open_store(home)
    try:
        ids = fill(store, 40)
        store.close()
        store = open_store(home)  # under the threshold: kept as it is
        assert store.rows is not None and store.rows.opened_from != "new"
        for pid in ids[:30]:
            assert store.forget(pid)
        full = len(file_bytes(home))
        store.close()
        monkeypatch.setattr("store.row_file_catchup.COMPACT_ABOVE", 1024)
        store = open_store(home)
        assert store.rows is not None and store.rows.opened_from == "new"
        assert len(file_bytes(home)) < full / 2
        assert_rows_as_database(store)
        store.close()
        store = open_store(home)  # now mostly live: kept
        assert store.rows is not None and store.rows.opened_from != "new"
        assert_rows_as_database(store)
    finally:
        store.close()


def test_an_ingest_replace_zeroes_the_old_sections_and_appends_the_new(home: Path) -> None:
    store = open_store(home)
    try:
        fill(store, 5)
        first = [("a", "Section alpha says the old port is 8080"), ("b", "Section beta")]
        apply_ingest(store, plan_ingest(store, "doc:x#", first), {})
        assert b"old port is 8080" in file_bytes(home)
        second = [("a", "Section alpha says the new port is 9090")]
        report = apply_ingest(store, plan_ingest(store, "doc:x#", second), {})
        assert (report.updated, report.removed) == (1, 1)
        data = file_bytes(home)
        assert b"old port is 8080" not in data and b"Section beta" not in data
        assert b"new port is 9090" in data
        assert_rows_as_database(store)
    finally:
        store.close()


def test_a_torn_or_damaged_file_is_cut_and_caught_up_from_the_database(home: Path) -> None:
    store = open_store(home)
    fill(store, 30)
    store.close()
    path = home / ROWS_FILENAME
    data = bytearray(path.read_bytes())
    middle = HEADER.size + (len(data) - HEADER.size) // 2
    data[middle] ^= 0xFF  # one record's byte damaged: its CRC fails
    path.write_bytes(bytes(data[:-7]))  # and the last record torn by a crash
    store = open_store(home)
    try:
        assert_rows_as_database(store)
        fill(store, 3, seed=2)
        assert_rows_as_database(store)
    finally:
        store.close()
    path.write_bytes(path.read_bytes()[: HEADER.size + 5])  # cut inside the first record
    store = open_store(home)
    try:
        assert_rows_as_database(store)
    finally:
        store.close()


def test_a_file_behind_the_database_is_read_from_it_then_caught_up(home: Path) -> None:
    store = open_store(home)
    try:
        fill(store, 10)
        rows, store.points.rows = store.rows, None  # saves the file misses (a crash's)
        late = fill(store, 5, seed=3)
        gone = late[0]
        store.points.rows = rows
        assert rows is not None and not set(rows.rows(late))
        assert_rows_as_database(store, served=False)  # those from DuckDB
        forgotten = fill(store, 1, seed=4)[0]
        with store.db.cursor() as cur:
            text = cur.execute("SELECT content FROM points WHERE id = ?", [forgotten]).fetchall()
        store.points.rows = None  # a forget the file misses (another version's)
        assert store.forget(forgotten) and store.forget(gone)
        store.points.rows = rows
        assert text[0][0].encode() in file_bytes(home)
        store.close()
        store = open_store(home)  # the open zeroes the one and appends the others
        assert text[0][0].encode() not in file_bytes(home)
        assert_rows_as_database(store)
    finally:
        store.close()


def test_rows_read_before_the_file_is_loaded_come_from_the_database(home: Path) -> None:
    store = open_store(home)
    try:
        ids = fill(store, 8)
        unloaded = RowFile(home / "other.dat")
        pick = ids[:5]
        assert point_reads.hit_rows(store.db, pick, rows=unloaded) == point_reads.hit_rows(
            store.db, pick
        )
    finally:
        store.close()


def test_a_planted_link_is_refused_and_its_target_left_alone(
    home: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = open_store(home)
    fill(store, 12)
    store.close()
    target = tmp_path / "important.txt"
    target.write_text("the user's own file\n")
    (home / ROWS_FILENAME).unlink()
    (home / ROWS_FILENAME).symlink_to(target)
    with pytest.raises(SymlinkRefused, match=r"rows\.dat"):
        check_data_dir(home)  # every command names it before opening anything
    with caplog.at_level(logging.WARNING, logger="straylight.memory"):
        store = open_store(home)
    try:
        lines = [r.getMessage() for r in caplog.records if ROWS_FILENAME in r.getMessage()]
        assert len(lines) == 1 and "symbolic link" in lines[0]
        assert store.rows is not None and not store.rows.ready
        ids = fill(store, 2, seed=5)
        assert store.forget(ids[0])
        pick = all_ids(store)
        assert point_reads.hit_rows(
            store.db, pick, rows=store.rows, pinned=store.pins.ids
        ) == point_reads.hit_rows(store.db, pick)
        assert target.read_text() == "the user's own file\n"
        assert (home / ROWS_FILENAME).is_symlink()
    finally:
        store.close()


def test_another_data_dirs_file_is_made_anew(
    home: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    other = tmp_path / "other"
    store = open_store(other)
    fill(store, 6, seed=9)
    store.close()
    store = open_store(home)
    fill(store, 6)
    store.close()
    shutil.copyfile(other / ROWS_FILENAME, home / ROWS_FILENAME)
    with caplog.at_level(logging.WARNING, logger="straylight.memory"):
        store = open_store(home)
    try:
        assert any("another database" in r.getMessage() for r in caplog.records)
        assert_rows_as_database(store)
    finally:
        store.close()


def test_a_reading_command_neither_makes_nor_writes_the_file(home: Path) -> None:
    store = open_store(home)
    fill(store, 4)
    store.save("user", "The tram to the depot" + LONG, vector=vec("tram depot"), use_filter=False)
    store.close()
    (home / ROWS_FILENAME).unlink()
    reader = MemoryStore.open(home, store.config, clock=Clock(), read_only=True)
    try:
        reader.wait_until_ready(timeout=30)
        assert reader.rows is None
        assert reader.recall("tram depot", vector=vec("tram depot")).hits
        assert not os.path.exists(home / ROWS_FILENAME)
    finally:
        reader.close()


def test_the_next_open_takes_the_offsets_from_the_snapshot_and_scans_only_what_followed(
    home: Path,
) -> None:
    store = open_store(home)
    assert store.rows is not None and store.rows.opened_from == "new"
    ids = fill(store, 20)
    store.close()
    assert (home / SNAPSHOT_FILENAME).exists()
    store = open_store(home)
    try:
        assert store.rows is not None and store.rows.opened_from == "snapshot"
        assert_rows_as_database(store)
        fill(store, 6, seed=6)
        assert store.forget(ids[3])
        snapshot = (home / SNAPSHOT_FILENAME).read_bytes()
    finally:
        store.close()
    (home / SNAPSHOT_FILENAME).write_bytes(snapshot)  # older than the file: as after a crash
    assert_reopened_from(home, "snapshot")


@pytest.mark.parametrize("damage", ["crc", "other file", "covers more", "link"])
def test_a_snapshot_that_does_not_fit_is_not_used(home: Path, tmp_path: Path, damage: str) -> None:
    store = open_store(home)
    fill(store, 15)
    store.close()
    path = home / SNAPSHOT_FILENAME
    data = bytearray(path.read_bytes())
    if damage == "crc":
        data[-3] ^= 0x01
        path.write_bytes(bytes(data))
    elif damage == "other file":  # rows.dat made anew: another nonce
        rows = home / ROWS_FILENAME
        head = bytearray(rows.read_bytes())
        head[40] ^= 0xFF
        rows.write_bytes(bytes(head))
    elif damage == "covers more":  # rows.dat lost its tail (never synced), the snapshot not
        rows = home / ROWS_FILENAME
        rows.write_bytes(rows.read_bytes()[:-40])
    else:
        target = tmp_path / "elsewhere.idx"
        path.rename(target)
        path.symlink_to(target)
    assert_reopened_from(home, "scan")
    if damage == "link":  # neither read nor written
        assert path.is_symlink() and target.read_bytes() == bytes(data)


def test_a_forget_before_the_file_is_loaded_is_zeroed_by_the_load_even_a_stopped_one(
    home: Path,
) -> None:
    store = open_store(home)
    fill(store, 6)
    secret = "The safe opens with 5150-tango" + LONG
    first = store.save("user", secret, vector=vec(secret), use_filter=False).point_id
    again = "The gate opens with 7788-kilo" + LONG
    second = store.save("user", again, vector=vec(again), use_filter=False).point_id
    assert first is not None and second is not None
    store.close()
    store = open_store(home)
    try:
        assert store.rows is not None
        store.rows.close()  # as a file whose load has not run yet
        unloaded = RowFile(home / ROWS_FILENAME)
        store.points.rows = unloaded
        assert store.forget(first)
        assert unloaded.forgets_pending and b"5150-tango" not in file_bytes(home)  # at once
        unloaded.load(store.db, stop=lambda: True)  # a store closing at once
        assert b"5150-tango" not in file_bytes(home)
    finally:
        store.close()
    store = MemoryStore.open(home, store.config, clock=Clock())  # no wait: forget, close
    try:
        assert store.forget(second)
    finally:
        store.close()
    assert b"7788-kilo" not in file_bytes(home)


def test_a_huge_sparse_snapshot_is_refused_without_reading_it(home: Path) -> None:
    """A `rows.idx` grown far past what its header says (a sparse file planted or made by a
    tool) is refused from its size: its bytes are never read into memory."""
    store = open_store(home)
    fill(store, 15)
    store.close()
    path = home / SNAPSHOT_FILENAME
    os.truncate(path, 256 << 20)  # a header that fits, then 256 MiB of holes
    data = (home / ROWS_FILENAME).read_bytes()
    identity, nonce = data[8:40], data[40:56]
    tracemalloc.start()
    try:
        assert read_snapshot(path, identity, nonce, len(data)) is None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20, f"read {peak} bytes of a snapshot it could not use"
    assert_reopened_from(home, "scan")


def test_temp_files_of_a_process_killed_writing_them_are_removed(home: Path) -> None:
    """`rows.dat.tmp-PID` (a file made anew) and `rows.idx.tmp-PID` (the snapshot written at
    close) of a process killed midway are removed by the next writable open; a live
    process's are left."""
    store = open_store(home)
    fill(store, 5)
    store.close()
    dead = home / f"{ROWS_FILENAME}.tmp-999999999", home / f"{SNAPSHOT_FILENAME}.tmp-999999999"
    live = home / f"{SNAPSHOT_FILENAME}.tmp-1"  # init: alive
    for path in (*dead, live):
        path.write_bytes(b"the killed writer's bytes")
    store = open_store(home)
    try:
        fill(store, 2, seed=2)
    finally:
        store.close()
    assert not any(path.exists() for path in dead)
    assert live.exists()


@pytest.mark.parametrize("snapshot", [True, False])
def test_a_forget_before_the_load_zeroes_the_record_at_once(home: Path, snapshot: bool) -> None:
    """A forget that runs before the file is loaded (a CLI `forget` on a big store) zeroes
    the point's record before the delete, found through `rows.idx` or a scan: a kill -9
    right after it, before any load ran, leaves no text in the file."""
    store = open_store(home)
    fill(store, 30)
    secret = "The vault opens with 9931-lima" + LONG
    first = store.save("user", secret, vector=vec(secret), use_filter=False).point_id
    store.close()
    older = (home / SNAPSHOT_FILENAME).read_bytes()
    store = open_store(home)
    later = "The shed opens with 4420-echo" + LONG  # after the snapshot: found by the scan
    second = store.save("user", later, vector=vec(later), use_filter=False).point_id
    assert first is not None and second is not None and store.rows is not None
    store.rows.close()
    if snapshot:  # the one before `later`, as after a kill -9
        (home / SNAPSHOT_FILENAME).write_bytes(older)
    else:
        (home / SNAPSHOT_FILENAME).unlink()
    try:
        unloaded = RowFile(home / ROWS_FILENAME)  # as a file whose load has not run yet
        store.points.rows = unloaded
        assert store.forget(first) and store.forget(second)
        data = file_bytes(home)  # what a kill -9 now would leave
        assert b"9931-lima" not in data and b"4420-echo" not in data
        some = all_ids(store)[:5]  # one by one, as a conversation's delete: offsets kept
        contents = point_reads.hit_rows(store.db, some)
        for pid in some:
            assert store.forget(pid)
        data = file_bytes(home)
        assert not any(row.content.encode() in data for row in contents.values())
        unloaded.load(store.db)
        store.rows = unloaded
        assert_rows_as_database(store)
    finally:
        store.close()


def _crafted(record: bytes, point_id: int, *, content: bytes | None, micros: int | None) -> bytes:
    """`record` with its content bytes or its date replaced and its CRC made to hold again
    (what a hand-made file can carry: a CRC is no signature)."""
    head = bytearray(record[: RECORD.size])
    body = bytearray(record[RECORD.size :])
    if content is not None:
        conv_len = struct.unpack_from("<H", head, RECORD.size - 2)[0]
        body[conv_len:] = content.ljust(len(body) - conv_len, b"x")
    if micros is not None:
        struct.pack_into("<q", head, 17, micros)
    after = bytes(head[16:]) + bytes(body)
    struct.pack_into("<I", head, 12, zlib.crc32(after, zlib.crc32(struct.pack("<q", point_id))))
    return bytes(head) + bytes(body)


@pytest.mark.parametrize("bad", ["utf-8", "date"])
def test_a_hand_made_record_whose_crc_holds_but_cannot_be_read_is_read_from_the_database(
    home: Path, bad: str
) -> None:
    store = open_store(home)
    try:
        ids = fill(store, 8)
        rows = store.rows
        assert rows is not None and rows.ready
        entry = int(rows._offsets[ids[3]])
        at, length = entry >> 24, entry & 0xFFFFFF
        path = home / ROWS_FILENAME
        data = bytearray(path.read_bytes())
        record = bytes(data[at : at + length])
        data[at : at + length] = _crafted(
            record,
            ids[3],
            content=b"\xff\xfe not UTF-8" if bad == "utf-8" else None,
            micros=2**62 if bad == "date" else None,
        )
        path.write_bytes(bytes(data))
        assert_rows_as_database(store, served=False)
    finally:
        store.close()
