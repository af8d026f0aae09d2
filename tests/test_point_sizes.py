"""Vector sizes known without reading the vectors (store/point_sizes.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from memory.embedding_space import record_space
from store import meta, point_reads, point_sizes
from store.clock import Clock
from store.database import Database, database_path, open_database
from store.point_store import NewPoint, PointStore


def table_cache_bytes(db: Database) -> int:
    with db.cursor() as cur:
        rows = cur.execute(
            "SELECT coalesce(sum(memory_usage_bytes), 0) FROM duckdb_memory() "
            "WHERE tag = 'BASE_TABLE'"
        ).fetchall()
    return int(rows[0][0])


def sizes_key(db: Database, model: str) -> str | None:
    with db.cursor() as cur:
        return meta.get(cur, point_sizes.SIZES_CHECKED_KEY + model)


def test_mixed_sizes_are_checked_every_time_and_never_recorded(tmp_path: Path) -> None:
    with open_database(database_path(tmp_path), clock=Clock()) as db:
        store = PointStore(db)
        bare, small, big = store.add_many(
            [
                NewPoint("user", "a", "s"),
                NewPoint("user", "b", "s", embedding=np.ones(2, np.float32), embed_model="m"),
                NewPoint("user", "c", "s", embedding=np.ones(3, np.float32), embed_model="m"),
            ]
        )
        assert point_reads.vector_ids(db, "m", 3).tolist() == [big]
        assert sizes_key(db, "m") is None
        assert store.ids_without_vector("m", 3) == [bare, small]
        assert store.set_embedding(small, [1.0, 2.0, 3.0], "m")
        assert sorted(point_reads.vector_ids(db, "m", 3).tolist()) == [small, big]
        assert sizes_key(db, "m") == "3"  # every vector of m has 3 floats: recorded
        assert store.ids_without_vector("m", 3) == [bare]
        assert point_reads.vector_ids(db, "m", 2).tolist() == []  # another size: checked
        record_space(db, "m", 2)  # a new dimension: the sizes must be checked again
        assert sizes_key(db, "m") is None


def test_known_sizes_leave_the_vector_column_unread(tmp_path: Path) -> None:
    path = database_path(tmp_path)
    vectors = np.random.default_rng(3).standard_normal((3000, 768)).astype(np.float32)
    with open_database(path, clock=Clock()) as db:
        PointStore(db).add_many(
            [
                NewPoint("user", f"text {i}", "s", embedding=vec, embed_model="m")
                for i, vec in enumerate(vectors)
            ]
        )
    for _ in range(2):  # the first open checks the sizes (and records them), the second not
        with open_database(path, clock=Clock()) as db:
            assert len(point_reads.vector_ids(db, "m", 768)) == 3000
            assert len(PointStore(db).ids_without_vector("m", 768)) == 0
            cached = table_cache_bytes(db)
    assert cached < 2 * 2**20  # the 9 MB of vectors were not read


def test_a_read_only_process_records_nothing(tmp_path: Path) -> None:
    path = database_path(tmp_path)
    with open_database(path, clock=Clock()) as db:
        PointStore(db).add(
            NewPoint("user", "a", "s", embedding=np.ones(4, np.float32), embed_model="m")
        )
    with open_database(path, clock=Clock(), read_only=True) as db:
        assert len(point_reads.vector_ids(db, "m", 4)) == 1
        assert sizes_key(db, "m") is None
