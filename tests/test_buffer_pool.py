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


def test_a_vector_rebuild_leaves_no_cached_vectors(tmp_path: Path, monkeypatch):
    import numpy as np

    from store.clock import Clock
    from store.database import database_path, open_database
    from store.point_store import NewPoint, PointStore
    from store.vector_upkeep import VectorKeeper

    monkeypatch.setattr(buffer_pool, "EVICT_MARGIN_BYTES", 256 * 1024)
    vectors = np.random.default_rng(5).standard_normal((3000, 64)).astype(np.float32)
    vectors = np.repeat(vectors, 12, axis=1)  # 768-d: 9 MB of vectors in the table
    with open_database(database_path(tmp_path), clock=Clock()) as db:
        PointStore(db).add_many(
            [
                NewPoint("user", f"t{i}", "s", embedding=v, embed_model="m")
                for i, v in enumerate(vectors)
            ]
        )
    with open_database(database_path(tmp_path), clock=Clock()) as db:
        keeper = VectorKeeper(tmp_path, db, "m")
        keeper.open(768)  # no index file: rebuilt in the background from every vector
        keeper.wait()
        assert keeper.state() == ("in_sync", 3000)
        with db.cursor() as cur:
            assert table_cache_bytes(cur) < 2 * 2**20
        keeper.close()
