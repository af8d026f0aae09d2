"""The `meta` table: small named values (`key VARCHAR PRIMARY KEY, value VARCHAR`).

The one home of its SQL. Every function takes a cursor, so a caller can read and write in
one transaction (`with db.transaction() as cur: ...`); `Database`-level callers wrap them.
Keys are owned by the modules that use them (`embed.model`, `memstatus.turns_since`, …).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # importing this module loads no DuckDB (the TUI's start-up path)
    from store.database import Cursor


def get(cur: Cursor, key: str) -> str | None:
    """The value of `key`, or None when it is not set."""
    rows = cur.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchall()
    return str(rows[0][0]) if rows else None


def get_int(cur: Cursor, key: str) -> int | None:
    """The value of `key` as an integer; None when it is not set or not a number."""
    rows = cur.execute("SELECT TRY_CAST(value AS BIGINT) FROM meta WHERE key = ?", [key]).fetchall()
    return int(rows[0][0]) if rows and rows[0][0] is not None else None


def put(cur: Cursor, key: str, value: str) -> None:
    """Set `key` to `value` (insert or replace)."""
    cur.execute(
        "INSERT INTO meta VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        [key, value],
    )


def delete(cur: Cursor, key: str) -> None:
    cur.execute("DELETE FROM meta WHERE key = ?", [key])


def bump(cur: Cursor, key: str, by: int = 1) -> int:
    """Add `by` to the counter `key` (a missing or unreadable value counts as 0); the new
    value."""
    rows = cur.execute(
        "INSERT INTO meta VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = "
        "CAST(coalesce(TRY_CAST(meta.value AS BIGINT), 0) + ? AS VARCHAR) RETURNING value",
        [key, str(by), by],
    ).fetchall()
    return int(rows[0][0])
