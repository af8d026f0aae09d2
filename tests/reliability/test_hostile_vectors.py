"""Issue 15 §3, §4, §5, §8: an embedding server that returns garbage, an index file from
somewhere else, read-only commands that must not write, and embedding-model changes.

Each case runs the real CLI against the stand-in (tests/reliability/fault_support.py) and
checks what the data dir holds afterwards.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

from tests.reliability import fault_support
from tests.reliability.fault_support import (
    Workspace,
    assert_ok,
    points,
    vectorless,
)
from tests.support.ollama_standin import embed_text

seeded_template = fault_support.seeded_template
world = fault_support.world

NOTE = "the spare key to the garden shed hangs behind the calendar"


def nan_embedder(texts: Sequence[str]) -> list[list[float]]:
    return [[math.nan] * 768 for _ in texts]


def inf_embedder(texts: Sequence[str]) -> list[list[float]]:
    return [[math.inf, *embed_text(text, 767)] for text in texts]


def huge_embedder(texts: Sequence[str]) -> list[list[float]]:
    """Finite, but the float32 cosine overflows: 1e38 in every component."""
    return [[1e38 * (1 if v >= 0 else -1) for v in embed_text(text, 768)] for text in texts]


# ------------------------------------------------------------------- §3 NaN and friends


def test_a_nan_embedding_is_a_failed_embedding_remember_keeps_the_point(
    world: Workspace,
) -> None:
    world.standin.embedder = nan_embedder
    proc = world.run("remember", NOTE)
    assert_ok(proc)
    assert "no vector yet" in proc.stdout
    assert [p[2] for p in points(world.home)][-1] == NOTE
    assert vectorless(world.home) == [3]
    world.standin.embedder = None
    assert "embedded 1 of 1" in world.run("jobs", "run", "backfill").stdout
    assert vectorless(world.home) == []


def test_an_infinite_embedding_does_not_stop_the_turn(world: Workspace) -> None:
    world.standin.embedder = inf_embedder
    world.standin.script_reply("The spare key hangs behind the calendar in the garden shed.")
    proc = world.run("ask", f"where is it? {NOTE}")
    assert_ok(proc)
    assert [p[1] for p in points(world.home)] == ["user", "assistant", "user", "assistant"]
    assert vectorless(world.home) == [3, 4]


def test_recall_with_a_nan_query_vector_falls_back_to_words(world: Workspace) -> None:
    assert_ok(world.run("remember", NOTE))
    world.standin.embedder = nan_embedder
    proc = world.run("recall", "spare key garden shed", "--json")
    assert_ok(proc)
    hits = json.loads(proc.stdout)["hits"]
    assert NOTE in [hit["content"] for hit in hits]


def test_absurd_components_never_put_nan_scores_into_recall(world: Workspace) -> None:
    assert_ok(world.run("remember", NOTE))
    world.standin.embedder = huge_embedder
    assert_ok(world.run("remember", "the blue notebook on the shelf holds the router password"))
    assert vectorless(world.home) == [4]
    proc = world.run("recall", "spare key garden shed")
    assert_ok(proc)
    assert "nan" not in proc.stdout.lower()
    data = json.loads(world.run("recall", "spare key garden shed", "--json").stdout)
    assert all(math.isfinite(hit["score"]) for hit in data["hits"]), data
