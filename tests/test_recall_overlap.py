"""Recall's two halves overlap: the vector search runs in the index thread while the
calling thread ranks words (usearch releases the GIL)."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from memory.memory_store import MemoryConfig, MemoryStore
from store.clock import Clock
from tests.support.ollama_standin import embed_text

DIM = 64


def vec(text: str) -> list[float]:
    return embed_text(text, DIM)


def test_the_vector_search_runs_in_the_index_thread(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with MemoryStore.open(home, MemoryConfig(), clock=Clock()) as store:
        store.wait_until_ready(timeout=30)
        texts = ["the lighthouse keeper painted the door blue", "pasta with garlic and basil"]
        ids = [
            store.save("user", text, vector=vec(text), use_filter=False).point_id for text in texts
        ]
        search = store.vectors.search
        threads: list[str] = []

        def recorded(query: np.ndarray, k: int) -> list[tuple[int, float]]:
            threads.append(threading.current_thread().name)
            return search(query, k)

        monkeypatch.setattr(store.vectors, "search", recorded)
        hits = store.recall("garlic pasta", vector=vec("garlic pasta")).hits
        assert hits[0].id == ids[1]
        assert threads and all(name.startswith("index") for name in threads)
        assert threading.current_thread().name not in threads
        query = np.asarray(vec("lighthouse"), np.float32)
        assert store.vectors.submit_search(query, 2).result() == search(query, 2)
