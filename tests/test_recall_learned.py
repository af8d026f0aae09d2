"""The learned re-rank of recall (`RecallTuning.learned`, memory/recall_rerank.py) on real
stores: its features from the word index's traits, a long on-topic turn it brings into the
ten, the product's own order inside its set, and recall as without it when it cannot run."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from memory.memory_store import MemoryConfig, MemoryStore
from memory.point_traits import day_number
from memory.recall import TUNING, RecallTuning
from memory.recall_models import MODEL
from memory.recall_rerank import FEATURES, LinearModel, candidate_features, in_spans
from memory.text.dates import DateSpan
from store.clock import Clock
from store.lexical_file import LEXICAL_FILENAME
from tests.support.ollama_standin import embed_text

DIM = 64
WHEN = datetime(2023, 5, 8, 10, tzinfo=UTC)
QUERY = "Lisbon castle trip"
SHORT = [f"Lisbon castle trip, note {n}." for n in range(14)]
LONG = (
    "On the trip we climbed up to the Lisbon castle of Sao Jorge, ate grilled sardines in "
    "Alfama, and rode tram twenty-eight down to the river at sunset with Maria and Tomas."
)
OFF = replace(TUNING, learned=None)


def weights(**named: float) -> LinearModel:
    """A model weighing only the named features (standardised by nothing)."""
    n = len(FEATURES)
    return LinearModel((0.0,) * n, (1.0,) * n, tuple(named.get(f, 0.0) for f in FEATURES))


LENGTHY = weights(length=10.0, fused=1.0)


def open_store(home: Path, *, read_only: bool = False) -> MemoryStore:
    config = MemoryConfig(min_score=0.0)
    store = MemoryStore.open(home, config, clock=Clock(), read_only=read_only)
    store.wait_until_ready(timeout=30)
    return store


def fill(store: MemoryStore) -> int:
    """The short notes, then the long turn (its id returned), each a day apart."""
    for i, text in enumerate(SHORT):
        when = WHEN + timedelta(days=i)
        store.save("user", text, vector=embed_text(text, DIM), created_at=when, use_filter=False)
    long = store.save(
        "user", LONG, vector=embed_text(LONG, DIM), created_at=WHEN, use_filter=False
    ).point_id
    assert long is not None
    return long


def ids(store: MemoryStore, tuning: RecallTuning, k: int = 10) -> list[int]:
    result = store.recall(QUERY, vector=embed_text(QUERY, DIM), k=k, tuning=tuning)
    return [hit.id for hit in result.hits]


def test_the_model_brings_a_long_on_topic_turn_into_the_ten(home: Path) -> None:
    store = open_store(home)
    try:
        long = fill(store)
        assert long not in ids(store, OFF)  # the short notes fill the product's ten
        learned = ids(store, replace(TUNING, learned=LENGTHY))
        assert long in learned and len(learned) == 10
        assert set(learned) - {long} <= set(ids(store, OFF, k=15))
        five = ids(store, replace(TUNING, learned=LENGTHY), k=5)  # the model's own five
        assert long in five and len(five) == 5
        ten = ids(store, replace(TUNING, learned=LENGTHY, learned_set=10), k=10)
        assert ids(store, replace(TUNING, learned=LENGTHY, learned_set=10), k=5) == ten[:5]
    finally:
        store.close()


def test_without_traits_or_with_the_knob_off_recall_ranks_as_today(home: Path) -> None:
    store = open_store(home)
    fill(store)
    today = ids(store, OFF)
    assert ids(store, replace(TUNING, learned=LENGTHY)) != today
    assert ids(store, replace(TUNING, learned=LENGTHY), k=3) != today[:3]
    for mode in ("vector", "lexical"):  # one ranking alone: the model does not run
        vector = embed_text(QUERY, DIM)
        on, off = (
            [h.id for h in store.recall(QUERY, vector=vector, k=10, mode=mode, tuning=t).hits]
            for t in (replace(TUNING, learned=LENGTHY), OFF)
        )
        assert on == off
    with store.db.transaction() as cur:
        cur.execute("UPDATE lexical_docs SET words = NULL, day = NULL, answers = NULL")
    store.close()
    (home / LEXICAL_FILENAME).unlink()
    read_only = open_store(home, read_only=True)  # cannot fill them: no traits
    try:
        assert read_only.lexical.traits_of([1]) is None
        assert ids(read_only, replace(TUNING, learned=LENGTHY)) == today
        assert ids(read_only, TUNING) == today
    finally:
        read_only.close()


def test_an_excluded_content_leaves_the_model_s_next_pick_in_its_place(home: Path) -> None:
    store = open_store(home)
    try:
        long = fill(store)
        tuning = replace(TUNING, learned=LENGTHY)
        vector = embed_text(QUERY, DIM)
        result = store.recall(QUERY, vector=vector, k=10, tuning=tuning, exclude_contents=[LONG])
        hits = [hit.id for hit in result.hits]
        assert long not in hits and len(hits) == 10
    finally:
        store.close()


def test_the_features_read_the_traits_and_the_rankings() -> None:
    ids_ = [10, 11, 12, 30]
    fused = {10: 0.2, 11: 0.1, 12: 0.05, 30: 0.01}
    vector = [(10, 0.9), (30, 0.5)]
    lexical = [(11, 4.0), (10, 2.0), (12, 1.0)]
    day = day_number(WHEN)
    traits = (
        np.array([3, 12, 0, 5], np.uint16),
        np.array([day, day, day + 1, day], np.int32),
        np.array([0, 1, 8, 2], np.uint8),
    )
    spans = [DateSpan(WHEN.replace(hour=0), WHEN.replace(hour=0) + timedelta(days=1))]
    x = candidate_features(ids_, fused, vector, lexical, traits, spans, {"when"}, 50)
    f = {name: x[:, i].tolist() for i, name in enumerate(FEATURES)}
    assert f["fused"] == pytest.approx([1.0, 0.5, 0.25, 0.05])
    assert f["in_vector"] == [1, 0, 0, 1] and f["in_words"] == [1, 1, 1, 0]
    assert f["both"] == [1, 0, 0, 0]
    assert f["words"] == [0.5, 1.0, 0.25, 0.0]
    assert f["length"][1] == 12 / 20
    assert f["date"] == [1, 1, 0, 1]  # the day of 12 is the next one
    assert f["answer"] == [0, 1, 0, 0]  # "when": the time bit
    assert f["neighbour"] == [0.5, 1.0, 0.0, 0.0]  # 12 is on another day than 10 and 11
    assert f["same_day"] == [np.log(3), np.log(3), 0.0, np.log(3)]
    assert in_spans(traits[1], [DateSpan(month=5)]).all()


def test_the_shipped_model_has_a_weight_for_every_feature() -> None:
    assert len(MODEL.weight) == len(MODEL.mean) == len(MODEL.scale) == len(FEATURES)
    assert all(s > 0 for s in MODEL.scale)
