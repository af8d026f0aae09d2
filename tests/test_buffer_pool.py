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


def test_the_store_drops_cached_blocks_only_between_write_transactions(tmp_path: Path, monkeypatch):
    """`Database.drop_cached_blocks` never runs during a write transaction: a save never
    meets the lowered limit. A transaction longer than the drop's wait leaves the drop to
    its end (the caller goes on), and the limit is back when the next one runs."""
    import threading

    from store.clock import Clock
    from store.database import DROP_WAIT_SECONDS, database_path, open_database

    monkeypatch.setattr(buffer_pool, "EVICT_MARGIN_BYTES", 256 * 1024)
    with open_database(database_path(tmp_path), clock=Clock()) as db:
        with db.transaction() as cur:
            cur.execute(
                "CREATE TABLE blobs AS SELECT i, unhex(string_agg(md5(i::VARCHAR || j::VARCHAR),"
                " '')) AS b FROM range(5000) a(i), range(128) c(j) GROUP BY i"
            )
        with db.cursor() as cur:
            cur.execute("CHECKPOINT")  # the table's blocks now come from the file
            assert cur.execute("SELECT count(b) FROM blobs WHERE i % 97 = 0").fetchall()
        dropped = threading.Event()
        dropping = threading.Thread(target=lambda: (db.drop_cached_blocks(), dropped.set()))
        with db.transaction() as cur:
            limit = cur.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
            cached = table_cache_bytes(cur)
            assert cached > 8 * 2**20
            dropping.start()
            assert dropped.wait(10)  # the caller did not wait for this transaction …
            assert table_cache_bytes(cur) == cached  # … and nothing was dropped under it
            cur.execute("CREATE TABLE t AS SELECT range AS i FROM range(10)")
        dropping.join()
        deadline = threading.Event()
        for _ in range(200):  # … the drop runs in its own thread once the transaction is over
            with db.cursor() as cur:
                if table_cache_bytes(cur) < cached // 2:
                    break
            deadline.wait(DROP_WAIT_SECONDS / 10)
        else:
            raise AssertionError("the drop left for the transaction's end never ran")
        with db.cursor() as cur:
            assert cur.execute("SELECT current_setting('memory_limit')").fetchall()[0][0] == limit
        with db.transaction() as cur:
            try:
                db.drop_cached_blocks()
            except RuntimeError as error:
                assert "inside a transaction" in str(error)
            else:
                raise AssertionError("a drop inside a transaction must refuse, not deadlock")


def test_the_default_limit_does_not_creep_down_drop_after_drop(tmp_path: Path):
    with duckdb.connect(str(tmp_path / "x.duckdb")) as con:
        default = con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
        for _ in range(3):
            buffer_pool.drop_cached_blocks(con)
        assert con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0] == default
