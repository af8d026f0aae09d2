"""The models screen's loaded column says where a model sits, as `ollama ps` does."""

from __future__ import annotations

import pytest

from agent.model_catalog import ModelRecord, RunningModel
from tui.screens.model_rows import loaded_text

GB = 10**9


def record(loaded: bool | None, size: int | None = None, vram: int | None = None) -> ModelRecord:
    running = None if size is None else RunningModel(size, vram, 8192, None)
    return ModelRecord("qwen3:8b", 5 * GB, None, None, None, None, None, None, loaded, running)


@pytest.mark.parametrize(
    ("model", "shown"),
    [
        (record(True, 4 * GB, 4 * GB), "4.0 GB GPU"),
        (record(True, 4 * GB, 0), "4.0 GB CPU"),
        (record(True, 4 * GB, None), "4.0 GB CPU"),
        (record(True, 4 * GB, GB), "4.0 GB 25% GPU"),
        (record(True, 4 * GB, 4 * GB - 1), "4.0 GB 99% GPU"),
        (record(False), "no"),
        (record(None), "-"),
    ],
)
def test_loaded_memory_and_where_it_sits(model: ModelRecord, shown: str) -> None:
    assert loaded_text(model) == shown
