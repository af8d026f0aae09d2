"""`store.point_store`: round trips, audits, counts, vectors, threads and a kill -9 mid-write."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import duckdb
import numpy as np
import pytest

from store.clock import Clock
from store.database import Database, database_path, open_database
from store.lexical_index import PointWords, analyse
from store.point_records import Point
from store.point_store import NewPoint, PointStore, content_hash

ROOT = Path(__file__).resolve().parent.parent
NOW = datetime(2026, 11, 29, 21, 4, 38, 123456, tzinfo=UTC)
UNICODE = "Grüße 👋 — naïve café, 日本語, \u200b zero-width, 'quotes' \"and\" \\backslash\n### user"


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return database_path(tmp_path / "home")


@pytest.fixture
def db(db_path: Path) -> Iterator[Database]:
    with open_database(db_path, clock=Clock(NOW)) as database:
        yield database


@pytest.fixture
def store(db: Database) -> PointStore:
    return PointStore(db)


def vector(*values: float) -> np.ndarray:
    return np.asarray(values, dtype=np.float32)


def assert_same_point(point: Point | None, new: NewPoint, point_id: int) -> None:
    assert point is not None
    assert point.id == point_id
    assert (point.role, point.content, point.source) == (new.role, new.content, new.source)
    assert (point.conversation_id, point.channel) == (new.conversation_id, new.channel)
    assert (point.pinned, point.tags, point.embed_model) == (new.pinned, new.tags, new.embed_model)
    assert point.content_hash == hashlib.sha256(new.content.encode()).hexdigest()
    assert point.created_at == (new.created_at or NOW)
    assert point.created_at.tzinfo is UTC
    if new.embedding is None:
        assert point.embedding is None
    else:
        assert point.embedding is not None and point.embedding.dtype == np.float32
        assert point.embedding.tobytes() == new.embedding.tobytes()


# --- round trips -----------------------------------------------------------------------------

EXTREMES = vector(1e-45, -0.0, 1 / 3, 3.4e38, -1.5, 0.1)
SAMPLES = [
    NewPoint("user", "hello", "tui:2026-11-29"),
    NewPoint(
        "assistant",
        UNICODE,
        "tui:2026-11-29",
        conversation_id="c-ü-1",
        channel="cli",
        pinned=True,
        tags=["ärger", "", "tag with space", "🏷"],
        created_at=datetime(2026, 3, 29, 2, 30, 0, 1, tzinfo=timezone(timedelta(hours=-7))),
        embedding=EXTREMES,
        embed_model="nomic-embed-text",
    ),
    NewPoint(
        "doc",
        "",
        "doc:/tmp/ä.md#3",
        tags=("x",),
        embedding=np.arange(768, dtype=np.float64),  # type: ignore[arg-type]  # made float32
        embed_model="m",
    ),
]


@pytest.mark.parametrize("index", range(len(SAMPLES)))
def test_add_then_get_round_trips_every_field(store: PointStore, index: int) -> None:
    new = SAMPLES[index]
    point_id = store.add(new)
    assert_same_point(store.get(point_id), new, point_id)


def test_add_many_round_trips_the_same_as_add_and_keeps_order(store: PointStore) -> None:
    ids = store.add_many(SAMPLES * 3)
    assert ids == sorted(ids) and len(set(ids)) == 9
    for point_id, new in zip(ids, SAMPLES * 3, strict=True):
        assert_same_point(store.get(point_id), new, point_id)
    assert store.add_many([]) == []


def test_add_many_with_vectors_only_late_in_a_large_batch(store: PointStore) -> None:
    """Bulk inserts must not guess column types from the first rows."""
    batch = [NewPoint("user", f"m{i}", "s") for i in range(3000)]
    batch.append(NewPoint("user", "late", "s", tags=["t"], embedding=vector(1), embed_model="e"))
    ids = store.add_many(batch)
    last = store.get(ids[-1])
    assert last is not None and last.tags == ("t",) and last.embed_model == "e"
    assert store.counts()["without_vector"] == 3000


def test_points_survive_close_and_reopen(db_path: Path) -> None:
    with open_database(db_path, clock=Clock(NOW)) as db:
        ids = PointStore(db).add_many(SAMPLES)
    with open_database(db_path, clock=Clock(NOW)) as db:
        store = PointStore(db)
        for point_id, new in zip(ids, SAMPLES, strict=True):
            assert_same_point(store.get(point_id), new, point_id)


def test_created_at_defaults_to_the_clock_and_naive_times_are_refused(store: PointStore) -> None:
    point = store.get(store.add(NewPoint("user", "x", "s")))
    assert point is not None and point.created_at == NOW
    with pytest.raises(ValueError, match="naive"):
        NewPoint("user", "x", "s", created_at=datetime(2026, 1, 1))


def test_times_stay_utc_when_the_session_zone_is_not(db_path: Path) -> None:
    script = """
import sys
from datetime import datetime, timezone, timedelta
from pathlib import Path
from store.clock import Clock
from store.database import open_database
from store.point_store import NewPoint, PointStore
when = datetime(2026, 7, 1, 12, 0, tzinfo=timezone(timedelta(hours=9)))
with open_database(Path(sys.argv[1]), clock=Clock(when)) as db:
    store = PointStore(db)
    point = store.get(store.add(NewPoint("user", "x", "s", created_at=when)))
    event = store.audit_events(1)[0]
    print(point.created_at.isoformat(), event.at.isoformat())
"""
    env = {**os.environ, "TZ": "America/New_York"}
    result = subprocess.run(
        [sys.executable, "-c", script, str(db_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert result.stdout.split() == ["2026-07-01T03:00:00+00:00"] * 2


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"role": "system"}, "role must be one of"),
        ({"embedding": vector(1.0)}, "both or neither"),
        ({"embed_model": "m"}, "both or neither"),
        ({"embedding": vector(1.0, float("nan")), "embed_model": "m"}, "NaN"),
        ({"embedding": np.zeros((2, 2)), "embed_model": "m"}, "1-D"),
        ({"tags": "one string"}, "sequence of strings"),
    ],
)
def test_bad_new_points_are_refused(kwargs: dict[str, object], message: str) -> None:
    fields: dict[str, object] = {"role": "user", "content": "x", "source": "s"} | kwargs
    with pytest.raises((ValueError, TypeError), match=message):
        NewPoint(**fields)  # type: ignore[arg-type]


def test_a_points_vector_cannot_be_changed_in_place(store: PointStore) -> None:
    point = store.get(store.add(NewPoint("user", "x", "s", embedding=vector(1), embed_model="m")))
    assert point is not None and point.embedding is not None
    with pytest.raises(ValueError, match="read-only"):
        point.embedding[0] = 2.0


def test_get_of_an_unknown_id_is_none(store: PointStore) -> None:
    assert store.get(12345) is None


# --- audited changes -------------------------------------------------------------------------


def test_add_writes_a_save_audit_row(store: PointStore) -> None:
    point_id = store.add(SAMPLES[0], audit_reason="turn 3")
    [event] = store.audit_events()
    assert (event.event, event.point_id, event.reason, event.at) == (
        "save",
        point_id,
        "turn 3",
        NOW,
    )


def test_add_with_words_writes_point_audit_and_word_rows_together(
    store: PointStore, db: Database
) -> None:
    point_id = store.add(SAMPLES[0], words=analyse("deploy the blyck deploy"), audit_reason="r")
    with db.cursor() as cur:
        postings = cur.execute(
            "SELECT term, tf FROM lexical_postings WHERE point_id = ? ORDER BY term", [point_id]
        ).fetchall()
        docs = cur.execute("SELECT point_id, length FROM lexical_docs").fetchall()
    assert postings == [("blyck", 1), ("deploy", 2)]
    assert docs == [(point_id, 3)]
    assert [(e.event, e.point_id) for e in store.audit_events()] == [("save", point_id)]


def test_a_failed_add_leaves_no_point_no_audit_and_no_word_rows(
    store: PointStore, db: Database
) -> None:
    # a NULL term: the word rows' insert fails after the point's and the audit row's, inside
    # the one statement the save is (committed by itself: all three or none)
    broken = PointWords(Counter({"alpha": 1, None: 1}))  # type: ignore[dict-item]
    with pytest.raises(duckdb.ConstraintException):
        store.add(SAMPLES[0], words=broken)
    assert store.counts()["total"] == 0 and store.audit_events() == []
    with db.cursor() as cur:
        assert cur.execute("SELECT count(*) FROM lexical_postings").fetchall() == [(0,)]
        assert cur.execute("SELECT count(*) FROM lexical_docs").fetchall() == [(0,)]
    assert store.add(SAMPLES[0], words=analyse("alpha beta")) > 0  # the store still writes


def test_delete_forgets_audits_and_drops_the_lexical_rows(store: PointStore, db: Database) -> None:
    keep, gone = store.add_many(SAMPLES[:2])
    with db.transaction() as cur:
        for point_id in (keep, gone):
            cur.execute("INSERT INTO lexical_docs (point_id, length) VALUES (?, 1)", [point_id])
            cur.execute("INSERT INTO lexical_postings VALUES ('hello', ?, 1)", [point_id])
    assert store.delete(gone, reason="user pressed f") is True
    assert store.get(gone) is None and store.get(keep) is not None
    event = store.audit_events(1)[0]
    assert (event.event, event.point_id, event.reason) == ("forget", gone, "user pressed f")
    with db.cursor() as cur:
        assert cur.execute("SELECT point_id FROM lexical_docs").fetchall() == [(keep,)]
        assert cur.execute("SELECT point_id FROM lexical_postings").fetchall() == [(keep,)]


def test_deleting_an_unknown_id_is_false_and_not_audited(store: PointStore) -> None:
    assert store.delete(999, reason="x") is False
    assert store.audit_events() == []


def test_pin_and_unpin_are_audited(store: PointStore) -> None:
    point_id = store.add(SAMPLES[0])
    assert store.set_pinned(point_id, True, reason="/remember") is True
    assert store.get(point_id).pinned is True  # type: ignore[union-attr]
    assert store.set_pinned(point_id, False, reason="sidebar") is True
    assert store.get(point_id).pinned is False  # type: ignore[union-attr]
    assert store.set_pinned(777, True, reason="x") is False
    events = [(e.event, e.point_id, e.reason) for e in store.audit_events(2)]
    assert events == [("unpin", point_id, "sidebar"), ("pin", point_id, "/remember")]


def test_skips_and_other_events(store: PointStore) -> None:
    store.record_skip("assistant", "code_dominance", "c1", "```py …")
    store.record_skip("user", "too_short", "c1", "ok")
    store.record_skip("user", "too_short", "c2", "ja")
    assert store.skip_counts() == {"code_dominance": 1, "too_short": 2}
    ingest_id = store.record_event("ingest", 5, "import-doc", '{"file": "a.md"}')
    newest = store.audit_events(1)[0]
    assert (newest.id, newest.event, newest.point_id, newest.detail) == (
        ingest_id,
        "ingest",
        5,
        '{"file": "a.md"}',
    )
    skip = store.audit_events(10, event="skip")[-1]
    assert skip.rule == "code_dominance" and skip.point_id is None
    assert json.loads(skip.detail or "") == {
        "role": "assistant",
        "conversation_id": "c1",
        "preview": "```py …",
    }
    assert [e.event for e in store.audit_events(10, point_id=5)] == ["ingest"]
    assert store.counts()["total"] == 0


# --- reads -----------------------------------------------------------------------------------


def test_counts(store: PointStore) -> None:
    assert store.counts() == dict.fromkeys(
        ("total", "user", "assistant", "doc", "pinned", "without_vector"), 0
    )
    store.add_many(SAMPLES)
    store.add(NewPoint("user", "u2", "s", pinned=True))
    assert store.counts() == {
        "total": 4,
        "user": 2,
        "assistant": 1,
        "doc": 1,
        "pinned": 2,
        "without_vector": 2,
    }


def test_ids_without_vector_follows_model_and_dimension(store: PointStore) -> None:
    bare, small, other = store.add_many(
        [
            NewPoint("user", "a", "s"),
            NewPoint("user", "b", "s", embedding=vector(1, 2), embed_model="m"),
            NewPoint("user", "c", "s", embedding=vector(1, 2), embed_model="old"),
        ]
    )
    assert store.ids_without_vector("m") == [bare, other]
    assert store.ids_without_vector("m", 2) == [bare, other]
    assert store.ids_without_vector("m", 3) == [bare, small, other]
    assert store.ids_without_vector("old") == [bare, small]
    assert store.set_embedding(bare, [0.5, 0.5, 0.5], "m") is True
    assert store.set_embeddings([(small, vector(1, 1, 1), "m"), (other, vector(2, 2, 2), "m")]) == 2
    assert store.ids_without_vector("m", 3) == []
    assert store.set_embedding(4242, vector(1), "m") is False
    assert store.set_embeddings([]) == 0


def test_vectors_for_an_index_rebuild(store: PointStore) -> None:
    rng = np.random.default_rng(7)
    matrix = rng.random((50, 8), dtype=np.float32)
    ids = store.add_many(NewPoint("user", f"p{i}", "s") for i in range(50))
    # Written in reverse, so storage order differs from id order.
    pairs = list(zip(ids, matrix, strict=True))
    store.set_embeddings((pid, row, "m") for pid, row in reversed(pairs))
    store.set_embedding(ids[0], vector(1, 2, 3), "other")
    got_ids, got = store.vectors("m")
    assert got_ids.dtype == np.int64 and got.dtype == np.float32
    assert got_ids.tolist() == ids[1:]
    assert np.array_equal(got, matrix[1:])
    empty_ids, empty = store.vectors("nobody", 8)
    assert empty_ids.shape == (0,) and empty.shape == (0, 8)


def test_vectors_of_mixed_dimensions_need_a_dim(store: PointStore) -> None:
    a, _ = store.add_many(
        [
            NewPoint("user", "a", "s", embedding=vector(1, 2), embed_model="m"),
            NewPoint("user", "b", "s", embedding=vector(1, 2, 3), embed_model="m"),
        ]
    )
    with pytest.raises(ValueError, match="several dimensions"):
        store.vectors("m")
    ids, matrix = store.vectors("m", 2)
    assert ids.tolist() == [a] and matrix.shape == (1, 2)


def test_list_and_iterate_with_filters(store: PointStore) -> None:
    roles = ["user", "assistant", "doc"] * 5
    ids = store.add_many(
        NewPoint(role, f"p{i}", "s", pinned=i % 2 == 0) for i, role in enumerate(roles)
    )
    assert [p.id for p in store.list_points(limit=4)] == ids[:4]
    assert [p.id for p in store.list_points(limit=4, offset=4)] == ids[4:8]
    assert [p.id for p in store.list_points(limit=2, newest_first=True)] == ids[::-1][:2]
    users = [p.id for p in store.list_points(role="user")]
    assert users == ids[0::3]
    pinned_docs = [p.id for p in store.list_points(role="doc", pinned=True)]
    assert pinned_docs == [pid for i, pid in enumerate(ids) if i % 3 == 2 and i % 2 == 0]
    assert [p.id for p in store.iter_points(batch_size=4)] == ids
    assert [p.id for p in store.iter_points(pinned=False, batch_size=3)] == ids[1::2]
    with pytest.raises(ValueError, match="role"):
        store.list_points(role="robot")


def test_by_source_prefix_and_find_by_hash(store: PointStore) -> None:
    a1, a2, b, odd = store.add_many(
        [
            NewPoint("doc", "chunk 1", "doc:a.md#1", pinned=True),
            NewPoint("doc", "chunk 2", "doc:a.md#2", pinned=True),
            NewPoint("doc", "chunk 1", "doc:b.md#1", pinned=True),
            NewPoint("doc", "x", "doc:a_md%#1"),
        ]
    )
    assert [p.id for p in store.by_source_prefix("doc:a.md#")] == [a1, a2]
    assert [p.id for p in store.by_source_prefix("doc:a_md%")] == [odd]
    assert [p.id for p in store.find_by_hash(content_hash("chunk 1"))] == [a1, b]
    assert store.find_by_hash(content_hash("nothing")) == []


# --- concurrency and crashes -----------------------------------------------------------------


def test_a_hundred_concurrent_adds_lose_nothing(store: PointStore) -> None:
    start = threading.Barrier(100)
    ids: list[int] = []
    errors: list[BaseException] = []

    def add(n: int) -> None:
        try:
            start.wait()
            ids.append(store.add(NewPoint("user", f"thread {n}", "s")))
        except BaseException as error:  # noqa: BLE001 - collected and asserted below
            errors.append(error)

    threads = [threading.Thread(target=add, args=(n,)) for n in range(100)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(set(ids)) == 100
    assert store.counts()["total"] == 100
    saves = store.audit_events(1000, event="save")
    assert sorted(e.point_id for e in saves if e.point_id is not None) == sorted(ids)
    contents = {p.content for p in store.iter_points()}
    assert contents == {f"thread {n}" for n in range(100)}


WRITER = """
import sys
from pathlib import Path
from store.clock import Clock
from store.database import open_database
from store.point_store import NewPoint, PointStore
store = PointStore(open_database(Path(sys.argv[1]), clock=Clock()))
n = 0
while True:
    new = NewPoint("user", f"msg {n}", "kill", embedding=[float(n)] * 64, embed_model="m")
    print(store.add(new), flush=True)
    n += 1
"""


def test_kill_9_while_adding_keeps_every_committed_point(db_path: Path) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(db_path)], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    printed: list[int] = []
    try:
        for line in child.stdout:
            printed.append(int(line))
            if len(printed) >= 150:
                break
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    printed += [int(line) for line in child.stdout.read().split()]
    assert len(printed) >= 150
    with open_database(db_path, clock=Clock(NOW)) as db:
        store = PointStore(db)
        for point_id in printed:
            point = store.get(point_id)
            assert point is not None and point.content == f"msg {point_id - 1}"
        assert store.counts()["total"] in (len(printed), len(printed) + 1)
        assert len(store.audit_events(10_000, event="save")) == store.counts()["total"]
        assert store.add(NewPoint("user", "after the crash", "s")) > max(printed)
        with db.cursor() as cur:  # every block of the table reads back
            rows = cur.execute(
                "SELECT count(*), sum(octet_length(embedding)) // 4 FROM points"
            ).fetchall()
        assert rows == [(store.counts()["total"], 64 * (store.counts()["total"] - 1))]
