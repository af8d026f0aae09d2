"""Dropping DuckDB's cached table blocks after a one-off read (store/buffer_pool.py)."""

from __future__ import annotations

from pathlib import Path

import duckdb

from store import buffer_pool


def table_cache_bytes(con: duckdb.DuckDBPyConnection) -> int:
    rows = con.execute(
        "SELECT coalesce(sum(memory_usage_bytes), 0) FROM duckdb_memory() WHERE tag = 'BASE_TABLE'"
    ).fetchall()
    return int(rows[0][0])


def test_cached_blocks_are_dropped_and_the_limit_is_kept(tmp_path: Path):
    path = str(tmp_path / "blobs.duckdb")
    with duckdb.connect(path) as con:  # 10k points with 3 KiB of incompressible bytes each
        con.execute(
            "CREATE TABLE points AS SELECT i AS id, i % 250 = 0 AS pinned, "
            "unhex(string_agg(md5(i::VARCHAR || '-' || j::VARCHAR), '')) AS embedding "
            "FROM range(10000) a(i), range(192) b(j) GROUP BY i"
        )
    with duckdb.connect(path) as con:
        con.execute("SET memory_limit = '3GiB'")
        con.execute("SELECT id, embedding FROM points WHERE pinned").fetchall()
        cached = table_cache_bytes(con)
        assert cached > 20 * 2**20  # 40 pins spread over the table: nearly all of it is read
        buffer_pool.drop_cached_blocks(con)
        assert table_cache_bytes(con) <= buffer_pool.EVICT_MARGIN_BYTES + 2**20
        limit = con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
        assert limit == "3.0 GiB"
        assert len(con.execute("SELECT id FROM points WHERE pinned").fetchall()) == 40
