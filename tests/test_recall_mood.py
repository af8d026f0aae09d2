"""The question's mood (issue 17, twelfth round; memory/text/shape.py, memory/recall_rerank.py):
a question asking for an inference ("Would Caroline likely …?") is told apart by its
grammar, and the re-rank of a transcript's candidates (`RecallTuning.speaker` with
`MOOD_MODEL`) weighs the rankings and the asked person otherwise for it."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from memory.memory_store import MemoryConfig, MemoryStore
from memory.recall import TUNING, RecallTuning
from memory.recall_models import MOOD_MODEL, SPEAKER_MODEL
from memory.recall_rerank import (
    MOOD_FEATURES,
    MOOD_PRODUCTS,
    SPEAKER_FEATURES,
    LinearModel,
    mood_columns,
)
from memory.text.shape import is_hypothetical
from store.clock import Clock
from tests.support.ollama_standin import embed_text

DIM = 64
WHEN = datetime(2023, 5, 8, 10, tzinfo=UTC)


def weights(names: tuple[str, ...], **named: float) -> LinearModel:
    """A model over `names` weighing only the named features (standardised by nothing)."""
    n = len(names)
    return LinearModel((0.0,) * n, (1.0,) * n, tuple(named.get(f, 0.0) for f in names))


@pytest.mark.parametrize(
    "question",
    [
        "Would Caroline likely pursue writing as a career?",
        "What might John's degree be in?",
        "Is it likely that Nate has friends besides Joanna?",
        "What could John do after his basketball career?",
        "Wouldn't Tim enjoy a book by C. S. Lewis?",
        "What fields would Caroline be likely to pursue?",
        "Does Melanie probably like hiking?",
        "may Jon open a second studio?",
        "May Jon open a second studio?",
        "What should Gina try next for her store?",
    ],
)
def test_a_question_asking_for_an_inference_is_hypothetical(question: str) -> None:
    assert is_hypothetical(question)


@pytest.mark.parametrize(
    "question",
    [
        "What did Melanie paint in May?",
        "When did Caroline go to the LGBTQ support group?",
        "What books has Melanie read?",
        "Which cities has John been to?",
        "How many screenplays has Joanna written?",
        "Where did Caroline move from 4 years ago?",
        "",
    ],
)
def test_a_question_about_what_was_said_is_not(question: str) -> None:
    assert not is_hypothetical(question)


def test_the_mood_columns_are_the_flag_and_its_products() -> None:
    rows = np.arange(2 * len(SPEAKER_FEATURES), dtype=np.float64).reshape(2, -1)
    wide = mood_columns(rows, True)
    assert wide.shape == (2, len(MOOD_FEATURES))
    assert wide[:, : len(SPEAKER_FEATURES)].tolist() == rows.tolist()
    at = [SPEAKER_FEATURES.index(name) for name in MOOD_PRODUCTS]
    assert wide[:, len(SPEAKER_FEATURES)].tolist() == [1.0, 1.0]
    assert wide[:, len(SPEAKER_FEATURES) + 1 :].tolist() == rows[:, at].tolist()
    plain = mood_columns(rows, False)
    assert not plain[:, len(SPEAKER_FEATURES) :].any()


def test_the_shipped_mood_model_has_a_weight_for_every_column() -> None:
    model = MOOD_MODEL
    assert TUNING.speaker is MOOD_MODEL
    assert len(model.weight) == len(model.mean) == len(model.scale) == len(MOOD_FEATURES)
    assert all(s > 0 for s in model.scale)
    assert model.mean[: len(SPEAKER_FEATURES)] == SPEAKER_MODEL.mean  # the same rows


def open_store(home: Path) -> MemoryStore:
    store = MemoryStore.open(home, MemoryConfig(min_score=0.0), clock=Clock())
    store.wait_until_ready(timeout=30)
    return store


def save(store: MemoryStore, text: str, vector: list[float], minutes: int) -> int:
    point = store.save(
        "user", text, vector=vector, created_at=WHEN + timedelta(minutes=minutes), use_filter=False
    )
    assert point.point_id is not None
    return point.point_id


def ids(
    store: MemoryStore, tuning: RecallTuning, query: str, vector: list[float], k: int
) -> list[int]:
    return [hit.id for hit in store.recall(query, vector=vector, k=k, tuning=tuning).hits]


ASKED = "Would Caroline likely enjoy a pottery class with her friends?"
PLAIN_ASKED = "Did Caroline enjoy a pottery class with her friends?"  # the same, no inference
CAROLINE = (
    "Caroline: I spent the whole weekend painting canvases, sketching portraits and making "
    "little clay figures with my art group."
)
OTHERS = [f"Caroline: pottery class with friends {n}, so fun!" for n in range(10)]


def fill(store: MemoryStore) -> int:
    """Caroline's short turns holding the question's words, then the one that says what
    she likes doing, in other words (its id)."""
    for i, text in enumerate(OTHERS):
        save(store, text, embed_text(text, DIM), i)
    return save(store, CAROLINE, embed_text(CAROLINE, DIM), 60)


def test_an_inference_question_brings_what_the_person_does_into_the_ten(home: Path) -> None:
    """What the mood buys a user: asked whether Caroline would like something, her turn
    about what she does reaches the ten, where round 10's model kept her turns that repeat
    the question's words; asked what she did, the shipped model keeps them too."""
    store = open_store(home)
    try:
        caroline = fill(store)
        before = replace(TUNING, speaker=SPEAKER_MODEL)
        vector = embed_text(ASKED, DIM)
        assert caroline not in ids(store, before, ASKED, vector, 10)
        assert caroline in ids(store, TUNING, ASKED, vector, 10)
        assert caroline in ids(store, TUNING, ASKED, vector, 5)
        plain = embed_text(PLAIN_ASKED, DIM)
        assert caroline not in ids(store, TUNING, PLAIN_ASKED, plain, 10)
    finally:
        store.close()


MOODY = weights(MOOD_FEATURES, fused=1.0, hypothetical_words=-10.0)
"""Weighs the words down only for an inference question: the mood reaches the model."""


def test_the_mood_columns_reach_the_model_from_the_query(home: Path) -> None:
    store = open_store(home)
    try:
        fill(store)
        fused = replace(TUNING, speaker=weights(SPEAKER_FEATURES, fused=1.0))
        moody = replace(TUNING, speaker=MOODY)
        for query, moved in ((ASKED, True), (PLAIN_ASKED, False)):
            vector = embed_text(query, DIM)
            want = ids(store, fused, query, vector, 5)
            got = ids(store, moody, query, vector, 5)
            assert (got != want) is moved, query
    finally:
        store.close()
