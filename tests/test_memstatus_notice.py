"""Headroom notices: announced on escalation only, remembered across restarts."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory.memstatus_notice import (
    LEVELS,
    Level,
    announce,
    count_turn,
    format_size,
    load_last_announced,
    next_announcement,
    notice_text,
    reset_turns,
    save_last_announced,
    turns_since,
)
from store.clock import Clock
from store.database import Database, open_database

MIB = 2**20
WARN = 256 * MIB
CRIT = 512 * MIB
RANK = {"ok": 0, "warn": 1, "critical": 2}

# (last announced, level now) → (announced, new last announced): all nine pairs.
TABLE: dict[tuple[Level, Level], tuple[Level | None, Level]] = {
    ("ok", "ok"): (None, "ok"),
    ("ok", "warn"): ("warn", "warn"),
    ("ok", "critical"): ("critical", "critical"),
    ("warn", "ok"): (None, "ok"),
    ("warn", "warn"): (None, "warn"),
    ("warn", "critical"): ("critical", "critical"),
    ("critical", "ok"): (None, "ok"),
    ("critical", "warn"): (None, "critical"),
    ("critical", "critical"): (None, "critical"),
}


def test_the_table_covers_every_pair() -> None:
    assert set(TABLE) == set(itertools.product(LEVELS, LEVELS))


@pytest.mark.parametrize(("pair", "expected"), TABLE.items(), ids=lambda v: str(v))
def test_every_pair_against_the_table(
    pair: tuple[Level, Level], expected: tuple[Level | None, Level]
) -> None:
    assert next_announcement(*pair) == expected


def reference_announcements(initial: Level, levels: tuple[Level, ...]) -> list[Level | None]:
    """An independent model, from the whole history instead of one remembered level: a level
    is announced when it is worse than everything seen since the last ok (or, before any ok,
    than everything seen and the level announced before the sequence began)."""
    said: list[Level | None] = []
    for index, level in enumerate(levels):
        earlier = list(levels[:index])
        oks = [i for i, seen in enumerate(earlier) if seen == "ok"]
        run = earlier[oks[-1] + 1 :] if oks else [initial, *earlier]
        worst = max((RANK[seen] for seen in run), default=0)
        said.append(level if level != "ok" and RANK[level] > worst else None)
    return said


def simulate(initial: Level, levels: tuple[Level, ...]) -> list[Level | None]:
    last = initial
    said: list[Level | None] = []
    for level in levels:
        announced, last = next_announcement(last, level)
        said.append(announced)
    return said


def all_sequences(max_length: int) -> list[tuple[Level, ...]]:
    return [
        combo
        for length in range(max_length + 1)
        for combo in itertools.product(LEVELS, repeat=length)
    ]


def test_every_sequence_up_to_five_matches_the_reference_model() -> None:
    checked = 0
    for initial in LEVELS:
        for levels in all_sequences(5):
            assert simulate(initial, levels) == reference_announcements(initial, levels), (
                initial,
                levels,
            )
            checked += 1
    assert checked == 3 * sum(3**n for n in range(6))


def test_no_level_is_announced_twice_without_an_ok_between() -> None:
    for levels in all_sequences(5):
        said = simulate("ok", levels)
        previous: Level | None = None
        for level, announced in zip(levels, said, strict=True):
            if level == "ok":
                previous = None
            if announced is not None:
                assert announced != previous, levels
                previous = announced


def test_every_escalation_is_announced() -> None:
    """The first non-ok level after an ok (or the start), and the first critical after an
    ok, are always announced — and a notice always names the level of that moment."""
    for levels in all_sequences(5):
        said = simulate("ok", levels)
        armed_warn, armed_critical = True, True
        for level, announced in zip(levels, said, strict=True):
            if level == "ok":
                armed_warn, armed_critical = True, True
                assert announced is None
                continue
            assert announced in (None, level), levels
            if armed_warn or (level == "critical" and armed_critical):
                assert announced == level, levels
            armed_warn = False
            if level == "critical":
                armed_critical = False


def test_the_documented_walk() -> None:
    levels: tuple[Level, ...] = ("ok", "warn", "warn", "critical", "warn", "critical", "ok", "warn")
    assert simulate("ok", levels) == [None, "warn", None, "critical", None, None, None, "warn"]


def test_notice_texts_are_one_dry_line() -> None:
    warn = notice_text("warn", {"ram_estimate_bytes": 300 * MIB}, warn_bytes=WARN, crit_bytes=CRIT)
    assert warn == (
        "Memory is at 300 MiB, past the warn line (256 MiB). "
        "/memstatus (straylight status) shows where it goes."
    )
    critical = notice_text(
        "critical", {"ram_estimate_bytes": 600 * MIB}, warn_bytes=WARN, crit_bytes=CRIT
    )
    assert critical == (
        "Memory is at 600 MiB, past the critical line (512 MiB): "
        "forget or retire what you no longer need."
    )
    assert "\n" not in warn + critical
    with pytest.raises(ValueError, match="no notice"):
        notice_text("ok", {"ram_estimate_bytes": 0}, warn_bytes=WARN, crit_bytes=CRIT)


def test_sizes_read_as_mib() -> None:
    assert format_size(300 * MIB) == "300 MiB"
    assert format_size(int(1.5 * MIB)) == "1.5 MiB"
    assert format_size(int(300.4 * MIB)) == "300 MiB"
    assert format_size(300 * 1024) == "300 KiB"
    assert format_size(1) == "1 B"


# ---- persistence ------------------------------------------------------------------------

NOW = datetime(2026, 11, 29, 21, 4, 38, tzinfo=UTC)


def open_db(tmp_path: Path) -> Database:
    return open_database(tmp_path / "data" / "straylight.duckdb", clock=Clock(NOW))


def test_last_announced_survives_a_reopen(tmp_path: Path) -> None:
    with open_db(tmp_path) as db:
        assert load_last_announced(db) == "ok"
        save_last_announced(db, "critical")
        assert load_last_announced(db) == "critical"
    with open_db(tmp_path) as db:
        assert load_last_announced(db) == "critical"
        save_last_announced(db, "ok")
    with open_db(tmp_path) as db:
        assert load_last_announced(db) == "ok"


def test_an_unreadable_stored_level_counts_as_ok(tmp_path: Path) -> None:
    with open_db(tmp_path) as db:
        with db.transaction() as cur:
            cur.execute("INSERT INTO meta VALUES ('memstatus.last_announced', 'panic')")
        assert load_last_announced(db) == "ok"
        with pytest.raises(ValueError, match="unknown headroom"):
            save_last_announced(db, "panic")  # type: ignore[arg-type]


def test_announce_remembers_across_restarts(tmp_path: Path) -> None:
    status = {"ram_estimate_bytes": 300 * MIB, "headroom": "warn"}
    with open_db(tmp_path) as db:
        text = announce(db, "warn", status, warn_bytes=WARN, crit_bytes=CRIT)
        assert text is not None and text.startswith("Memory is at 300 MiB, past the warn line")
        assert announce(db, "warn", status, warn_bytes=WARN, crit_bytes=CRIT) is None
    with open_db(tmp_path) as db:  # a restart does not re-announce the same level
        assert announce(db, "warn", status, warn_bytes=WARN, crit_bytes=CRIT) is None
        big = {"ram_estimate_bytes": 600 * MIB, "headroom": "critical"}
        assert announce(db, "critical", big, warn_bytes=WARN, crit_bytes=CRIT) is not None
        assert announce(db, "warn", status, warn_bytes=WARN, crit_bytes=CRIT) is None
        assert load_last_announced(db) == "critical"
        assert (
            announce(db, "ok", {"ram_estimate_bytes": 0}, warn_bytes=WARN, crit_bytes=CRIT) is None
        )
    with open_db(tmp_path) as db:
        assert load_last_announced(db) == "ok"
        assert announce(db, "warn", status, warn_bytes=WARN, crit_bytes=CRIT) is not None


def test_the_turn_counter_counts_resets_and_persists(tmp_path: Path) -> None:
    with open_db(tmp_path) as db:
        assert turns_since(db) == 0
        assert [count_turn(db) for _ in range(3)] == [1, 2, 3]
    with open_db(tmp_path) as db:
        assert turns_since(db) == 3
        assert count_turn(db) == 4
        reset_turns(db)
        assert turns_since(db) == 0
        assert count_turn(db) == 1
        with db.transaction() as cur:  # a damaged value restarts the count
            cur.execute("UPDATE meta SET value = 'x' WHERE key = 'memstatus.turns_since'")
        assert count_turn(db) == 1
