"""The models screen's loaded column says where a model sits, as `ollama ps` does."""

from __future__ import annotations

import pytest

from agent.model_catalog import ModelRecord, RunningModel
from tui.screens.model_rows import capabilities_text, loaded_text

GB = 10**9


def record(loaded: bool | None, size: int | None = None, vram: int | None = None) -> ModelRecord:
    running = None if size is None else RunningModel(size, vram, 8192, None)
    return ModelRecord("qwen3:8b", 5 * GB, None, None, None, None, None, None, loaded, running)


@pytest.mark.parametrize(
    ("model", "shown"),
    [
        (record(True, 4_200_000_000, 4_200_000_000), "4.2 GB GPU"),
        (record(True, 12 * GB, 12 * GB), "12 GB GPU"),
        (record(True, 4_200_000_000, 0), "4.2 GB CPU"),
        (record(True, 4_200_000_000, None), "4.2 GB CPU"),
        (record(True, 4_200_000_000, 1_050_000_000), "4.2 GB 25% GPU"),
        (record(True, 4_200_000_000, 4_199_999_999), "4.2 GB 99% GPU"),
        (record(False), "no"),
        (record(None), "-"),
    ],
)
def test_loaded_memory_and_where_it_sits(model: ModelRecord, shown: str) -> None:
    assert loaded_text(model) == shown


def test_the_short_capabilities_leave_out_only_completion_beside_others() -> None:
    assert capabilities_text(("completion", "tools", "thinking")) == "completion,tools,thinking"
    assert capabilities_text(("completion", "tools", "thinking"), short=True) == "tools,thinking"
    assert capabilities_text(("completion",), short=True) == "completion"
    assert capabilities_text(("embedding",), short=True) == "embedding"
    assert capabilities_text(None) == capabilities_text((), short=True) == "-"
