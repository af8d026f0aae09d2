"""DuckDB runs a query on the thread that asked it (`store.database.DUCKDB_THREADS`): read-write
and read-only opens alike."""

from __future__ import annotations

from pathlib import Path

from store.clock import Clock
from store.database import DUCKDB_THREADS, database_path, open_database


def threads(path: Path, *, read_only: bool) -> int:
    with open_database(path, clock=Clock(), read_only=read_only) as db, db.cursor() as cur:
        return int(cur.execute("SELECT current_setting('threads')").fetchall()[0][0])


def test_duckdb_runs_on_one_thread_in_both_modes(home: Path) -> None:
    path = database_path(home)
    assert DUCKDB_THREADS == 1
    assert threads(path, read_only=False) == 1  # creates the file
    assert threads(path, read_only=True) == 1
