"""Dropping what DuckDB's buffer pool keeps of the table files after a one-off read.

DuckDB keeps every block it read from the database file until its `memory_limit` (80 % of the
machine's RAM by default) forces it out. Reading the pinned points' vectors at open touches
nearly every block of the `embedding` column (the pins are spread over the table): 30 MB at
10k points, 312 MB at 100k, resident for the whole session though nothing reads them again
(docs/memory-scale.md). Lowering the limit for a moment evicts those blocks (they are clean:
the file still holds them); the limit then goes back to what it was.
"""

from __future__ import annotations

import contextlib
import logging

import duckdb

log = logging.getLogger(__name__)

# The limit for that moment: what is in use apart from the table blocks, plus this much.
# Whatever table blocks fit in it stay cached: 16 MiB kept ~14 MiB at 100k points after open
# and after the word index's load, 4 MiB ~3 (-10 MiB of RSS growth at 100k). The margin
# once had to leave room for a read running in another thread meanwhile: with 4 MiB a word
# search by SQL asked for 5.8 MiB with 3.5 free and failed with DuckDB's
# OutOfMemoryException (a CI run of tests/test_reindex_neighbours.py). No query runs beside
# a drop any more (`Database.drop_cached_blocks` runs it alone: `store.cursor_gate`;
# tests/test_cache_drop_race.py drops with 64 KiB beside reads), so the margin is only
# what is kept cached.
EVICT_MARGIN_BYTES = 4 * 2**20

_OTHER_MEMORY_SQL = (
    "SELECT coalesce(sum(memory_usage_bytes), 0) FROM duckdb_memory() WHERE tag <> 'BASE_TABLE'"
)


def drop_cached_blocks(con: duckdb.DuckDBPyConnection) -> None:
    """Evict DuckDB's clean cached table blocks now; keeps `memory_limit` as it was.

    Best effort: should DuckDB refuse the lower limit (too much memory in use that it cannot
    evict), nothing changes."""
    limit = str(con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0])
    in_use = int(con.execute(_OTHER_MEMORY_SQL).fetchall()[0][0])
    try:
        con.execute(f"SET memory_limit = '{in_use + EVICT_MARGIN_BYTES}B'")
    except duckdb.Error as error:
        log.info("DuckDB kept its cached blocks: %s", error)
    finally:
        with contextlib.suppress(duckdb.Error):
            _restore_limit(con, limit)


def _restore_limit(con: duckdb.DuckDBPyConnection, limit: str) -> None:
    """Put `memory_limit` back as `limit` (the setting's text). The text is rounded
    ("18.8 GiB"): setting it back lowered the default limit by 0.1 GiB at every drop, so the
    default is restored with RESET, and only another limit is set from its text."""
    con.execute("RESET memory_limit")
    if str(con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]) != limit:
        con.execute(f"SET memory_limit = '{limit}'")
