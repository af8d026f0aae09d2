"""DuckDB's cached table blocks are dropped once the word index's mirror is loaded."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory.memory_store import MemoryConfig, MemoryStore
from store import buffer_pool, lexical_index
from store.clock import Clock
from store.database import database_path, open_database
from store.point_store import NewPoint, PointStore

WORDS = [f"word{i}" for i in range(5000)]


def table_cache_bytes(store: MemoryStore) -> int:
    with store.db.cursor() as cur:
        rows = cur.execute(
            "SELECT coalesce(sum(memory_usage_bytes), 0) FROM duckdb_memory() "
            "WHERE tag = 'BASE_TABLE'"
        ).fetchall()
    return int(rows[0][0])


def test_the_tables_read_by_the_word_index_load_are_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = [" ".join(WORDS[(i * 7 + j * 13) % len(WORDS)] for j in range(80)) for i in range(4000)]
    with open_database(database_path(tmp_path), clock=Clock()) as db:
        ids = PointStore(db).add_many([NewPoint("user", text, "s") for text in texts])
        with db.transaction() as cur:
            lexical_index.reindex_all(cur, list(zip(ids, texts, strict=True)))
    monkeypatch.setattr(buffer_pool, "EVICT_MARGIN_BYTES", 256 * 1024)
    with MemoryStore.open(tmp_path, MemoryConfig(), clock=Clock()) as store:
        store.wait_until_ready()
        assert store.lexical_ready
        assert table_cache_bytes(store) < 1 * 2**20
        assert [hit.id for hit in store.recall(WORDS[13], mode="lexical").hits]  # still works
