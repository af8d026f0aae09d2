"""DuckDB's checkpoint runs in the index-upkeep job, not inside a save's commit (issue 18).

DuckDB checkpoints inside the commit that pushes its write-ahead log past
`checkpoint_threshold` (16 MiB by default): ~1 save in 3,000 at 100k points took ~225 ms.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from memory.memory_store import MemoryConfig, MemoryStore
from store.clock import Clock
from store.database import (
    CHECKPOINT_THRESHOLD_BYTES,
    database_path,
    open_database,
)
from store.point_store import NewPoint, PointStore

DIM = 768
OLD_THRESHOLD = 16 * 2**20  # DuckDB's default
MODEL = "nomic-embed-text"


def wal_bytes(home: Path) -> int:
    wal = database_path(home).with_name("straylight.duckdb.wal")
    return wal.stat().st_size if wal.exists() else 0


def vectors(n: int, seed: int) -> np.ndarray:
    found = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    return found / np.linalg.norm(found, axis=1, keepdims=True)


def test_a_save_past_the_old_threshold_leaves_the_checkpoint_to_the_upkeep_job(
    home: Path,
) -> None:
    config = MemoryConfig(embed_model=MODEL)
    with MemoryStore.open(home, config, clock=Clock()) as store:
        store.wait_until_ready(timeout=30)
        with store.db.cursor() as cur:
            threshold = cur.execute("SELECT current_setting('checkpoint_threshold')").fetchall()
        assert threshold[0][0] == f"{CHECKPOINT_THRESHOLD_BYTES / 2**20:.1f} MiB"
        first = store.save("user", "the first point, saved before the log grew", use_filter=False)
        batches = 0
        rng = np.random.default_rng(5)
        while wal_bytes(home) < OLD_THRESHOLD + 2**20:  # 8 KiB of text a point
            PointStore(store.db).add_many(
                [NewPoint("doc", rng.bytes(4096).hex(), "s") for _ in range(500)]
            )
            batches += 1
            assert batches < 40, "the log never passed 17 MiB: DuckDB checkpointed in a commit"
        before = wal_bytes(home)
        text = "a saved message after the log passed DuckDB's default threshold"
        saved = store.save("user", text, vector=vectors(1, seed=99)[0], use_filter=False)
        assert saved.point_id is not None
        assert wal_bytes(home) > before  # no checkpoint inside that save's commit
        report = store.upkeep_index()
        assert report["checkpointed"] is True
        assert wal_bytes(home) < 2**20  # folded into the database file
        assert store.upkeep_index()["checkpointed"] is False  # nothing worth it left
        points = store.points.counts()
    with open_database(database_path(home), clock=Clock(), read_only=True) as db:
        with db.cursor() as cur:
            found = cur.execute(
                "SELECT id, content FROM points WHERE id IN (?, ?) ORDER BY id",
                [first.point_id, saved.point_id],
            ).fetchall()
        assert [row[1] for row in found] == [
            "the first point, saved before the log grew",
            text,
        ]
        assert db.checkpoint() is False  # a read-only database never writes
    with MemoryStore.open(home, config, clock=Clock()) as store:
        assert store.points.counts() == points
        store.wait_until_ready(timeout=30)
        assert [hit.id for hit in store.recall("threshold", mode="lexical").hits] == [
            saved.point_id
        ]
