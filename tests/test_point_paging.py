"""`PointStore` reads for the memory browser: keyset pages of list rows, rows by id, and
counts, all under a `PointFilter` (role, pinned only, time range)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from store.clock import Clock
from store.database import Database, database_path, open_database
from store.point_records import PointFilter
from store.point_store import ROW_HEAD_CHARS, NewPoint, PointStore

NOW = datetime(2026, 11, 29, 21, 4, 38, tzinfo=UTC)
ROLES = ("user", "assistant", "doc")


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    with open_database(database_path(tmp_path / "home"), clock=Clock(NOW)) as database:
        yield database


@pytest.fixture
def store(db: Database) -> PointStore:
    """30 points, one a day back from NOW (id 1 oldest); every third pinned; roles cycle."""
    points = PointStore(db)
    points.add_many(
        NewPoint(
            role=ROLES[i % 3],
            content=f"point {i}\nsecond line",
            source="turn",
            pinned=i % 3 == 0,
            created_at=NOW - timedelta(days=29 - i),
        )
        for i in range(30)
    )
    return points


def test_pages_run_newest_first_and_join_without_gaps(store: PointStore) -> None:
    first = store.page_rows(limit=12)
    assert [row.id for row in first] == list(range(30, 18, -1))
    seen = [row.id for row in first]
    while True:
        page = store.page_rows(before_id=seen[-1], limit=12)
        if not page:
            break
        seen += [row.id for row in page]
    assert seen == list(range(30, 0, -1))


def test_a_row_carries_role_pin_time_and_the_start_of_the_content(store: PointStore) -> None:
    [row] = store.page_rows(limit=1)
    assert (row.id, row.role, row.pinned) == (30, "doc", False)
    assert row.created_at == NOW and row.created_at.tzinfo is UTC
    assert row.head == "point 29\nsecond line"


def test_the_head_is_cut(store: PointStore) -> None:
    point_id = store.add(NewPoint(role="user", content="x" * 1000, source="turn"))
    assert store.rows_of([point_id])[point_id].head == "x" * ROW_HEAD_CHARS


def test_filters_narrow_pages_and_counts(store: PointStore) -> None:
    users = PointFilter(role="user")
    assert {row.role for row in store.page_rows(users)} == {"user"}
    assert store.count_matching(users) == 10
    pinned = PointFilter(pinned_only=True)
    assert all(row.pinned for row in store.page_rows(pinned))
    assert store.count_matching(pinned) == 10
    assert store.count_matching(PointFilter(role="doc", pinned_only=True)) == 0
    assert store.count_matching() == 30


def test_the_time_range_is_half_open_and_zones_are_respected(store: PointStore) -> None:
    day = NOW - timedelta(days=2)  # point id 28 exactly
    window = PointFilter(since=day, until=NOW)
    assert [row.id for row in store.page_rows(window)] == [29, 28]
    plus_two = timezone(timedelta(hours=2))
    same = PointFilter(since=day.astimezone(plus_two), until=NOW.astimezone(plus_two))
    assert store.count_matching(same) == 2
    assert store.count_matching(PointFilter(since=NOW + timedelta(seconds=1))) == 0


def test_a_naive_bound_or_an_unknown_role_is_refused() -> None:
    with pytest.raises(ValueError, match="naive"):
        PointFilter(since=datetime(2026, 1, 1))
    with pytest.raises(ValueError, match="role"):
        PointFilter(role="system")


def test_rows_of_skips_unknown_ids(store: PointStore) -> None:
    rows = store.rows_of([3, 999, 5])
    assert sorted(rows) == [3, 5] and rows[3].head.startswith("point 2")
    assert store.rows_of([]) == {}


def test_rows_newer_than_are_the_nearest_ones_newest_first(store: PointStore) -> None:
    assert [row.id for row in store.rows_newer_than(20, limit=3)] == [23, 22, 21]
    assert [row.id for row in store.rows_newer_than(28)] == [30, 29]
    users = store.rows_newer_than(20, PointFilter(role="user"), limit=2)
    assert [row.id for row in users] == [25, 22]
