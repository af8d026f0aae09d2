"""Recall's date boost, on in the product (`TUNING.date_boost`): a question that names a time
ranks the points inside it up among the first 30, and the length prior then orders the first
10 on the boosted scores; a question that names no time ranks as without the boost."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory.memory_store import MemoryConfig, MemoryStore
from memory.recall import TUNING, TURN_TUNING, RecallTuning
from store.clock import Clock
from tests.support.ollama_standin import embed_text

DIM = 64
UNBOOSTED = replace(TUNING, date_boost=0.0)


def vec(text: str) -> list[float]:
    return embed_text(text, DIM)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    opened = MemoryStore.open(tmp_path / "home", MemoryConfig(min_score=0.0), clock=Clock())
    opened.wait_until_ready(timeout=30)
    yield opened
    opened.close()


def save(store: MemoryStore, text: str, days_ago: int) -> int:
    when = datetime.now(UTC) - timedelta(days=days_ago)
    point_id = store.save(
        "user", text, conversation_id="c", vector=vec(text), created_at=when, use_filter=False
    ).point_id
    assert point_id is not None
    return point_id


def garden(store: MemoryStore) -> tuple[int, int, int]:
    """Three points: by words alone `older` (garden three times, 200 days ago) ranks first,
    then `short`, then `long` (BM25 favours the short text); the two recent ones (10 days
    ago) are inside "last month"."""
    older = save(store, "The garden party had garden lights and garden music", 200)
    short = save(store, "Garden party!", 10)
    long = save(
        store,
        "The garden party at the lake house was lovely, with friends from work and my "
        "sister's band playing",
        10,
    )
    return older, short, long


def ids(store: MemoryStore, query: str, tuning: RecallTuning = TUNING) -> list[int]:
    result = store.recall(query, vector=vec(query), k=3, mode="lexical", tuning=tuning)
    return [hit.id for hit in result.hits]


def test_the_product_and_the_turn_boost_a_time_the_question_names() -> None:
    assert TUNING.date_boost == 1.0  # ×2, chosen by every fold (docs/recall-quality.md)
    assert TURN_TUNING.date_boost == TUNING.date_boost


def test_a_dated_point_ranks_up_and_the_length_prior_orders_the_boosted_hits(
    store: MemoryStore,
) -> None:
    older, short, long = garden(store)
    query = "What happened at the garden party last month?"
    # Without the boost the prior alone: the long statement, then the older one.
    assert ids(store, query, tuning=UNBOOSTED) == [long, older, short]
    # The boost lifts both recent points over `older`; the prior, weighing the boosted
    # scores, still puts the statement before "Garden party!" (a re-rank that replaced the
    # prior would give [short, long, older]).
    assert ids(store, query) == [long, short, older]
    assert ids(store, query, tuning=TURN_TUNING) == [long, short, older]
    scores = {hit.id: hit.score for hit in store.recall(query, vector=vec(query)).hits}
    unboosted = store.recall(query, vector=vec(query), tuning=UNBOOSTED).hits
    assert scores == {hit.id: hit.score for hit in unboosted}  # the hit's score is unchanged


def test_a_question_naming_no_time_ranks_as_without_the_boost(store: MemoryStore) -> None:
    older, short, long = garden(store)
    query = "What happened at the garden party?"
    assert ids(store, query) == ids(store, query, tuning=UNBOOSTED) == [long, older, short]
    hybrid = store.recall(query, vector=vec(query)).hits
    assert hybrid == store.recall(query, vector=vec(query), tuning=UNBOOSTED).hits


def test_a_time_no_point_falls_in_changes_nothing(store: MemoryStore) -> None:
    save(store, "The garden party had garden lights and garden music", 200)
    save(store, "Garden party!", 10)
    query = "What happened at the garden party in March 1999?"
    assert ids(store, query) == ids(store, query, tuning=UNBOOSTED)
