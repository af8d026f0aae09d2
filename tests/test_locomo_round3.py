"""The third recall round's bench (`bench/locomo_round3.py`): its query texts, its sentence
pieces, and that its prototypes, set to the product's values, rank as `MemoryStore.recall`."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

from bench.locomo_cache import CachedEmbedder
from bench.locomo_data import Conversation, load_locomo
from bench.locomo_rankers import (
    adaptive_ranker,
    cosine_ranker,
    product_ranker,
    vector_feedback_ranker,
    weighted_ranker,
)
from bench.locomo_round2 import ctx_wide, replay
from bench.locomo_round3 import _environment, families
from bench.locomo_texts import embedding_pieces, sentence_texts, vector_query_text


def test_the_stripped_question_loses_its_scaffolding_and_nothing_else() -> None:
    assert vector_query_text("When did Melanie go to the pottery workshop?", "stripped") == (
        "Melanie go to the pottery workshop"
    )
    assert vector_query_text("What kind of fiction stories does Tim write?", "stripped") == (
        "fiction stories does Tim write"
    )
    assert vector_query_text("How many tournaments has Nate won?", "content") == (
        "tournaments Nate"
    )
    assert vector_query_text("I like pizza", "stripped") == "I like pizza"
    assert vector_query_text("When did it rain?", "question") == "When did it rain?"


def test_sentence_pieces_join_short_sentences_and_name_the_speaker_in_each(
    tmp_path: Path,
) -> None:
    conversation, _ = _loaded(tmp_path)
    texts, owners = sentence_texts(conversation, shortest=20)
    assert texts[:2] == [
        "Ann: Hi Bob! My dog learned a new trick.",
        "Ann: She rolls over when I clap twice.",
    ]
    assert owners[:2] == [0, 0]
    assert 1 not in owners  # one sentence: no pieces, the turn's own vector
    assert embedding_pieces("Just one sentence here.") == ["Just one sentence here."]


def test_the_prototypes_at_the_products_values_rank_as_recall(tmp_path: Path) -> None:
    conversation, cache = _loaded(tmp_path)
    turn_vectors = cache([f"{t.speaker}: {t.text}" for t in conversation.turns])
    store, to_turn, home = replay(conversation, turn_vectors, ctx_wide)
    try:
        env = _environment(conversation, cache, {"product": (store, to_turn)}, pieces=True)
        same = [
            cosine_ranker(),
            adaptive_ranker(0.5, 0.5),
            weighted_ranker(1.0, 1.0, 1.0),
            vector_feedback_ranker(3, 4, 0.0),
        ]
        for index, question in enumerate(conversation.questions):
            expected = product_ranker()(env, index, question)
            assert expected, question.question
            for ranker in same:
                assert ranker(env, index, question) == expected
    finally:
        store.close()
        shutil.rmtree(home, ignore_errors=True)


def test_every_family_is_named_once_and_compares_against_a_baseline() -> None:
    for name, family in families().items():
        labels = [variant.label for variant in family]
        assert len(set(labels)) == len(labels) > 1, name


def _bag_of_words(texts: list[str]) -> list[list[float]]:
    """A deterministic 64-d vector a text: its words hashed into buckets."""
    vectors = []
    for text in texts:
        vector = [0.0] * 64
        for word in re.findall(r"\w+", text.lower()):
            vector[hashlib.sha1(word.encode()).digest()[0] % 64] += 1.0
        vectors.append(vector)
    return vectors


def _conversation() -> dict[str, object]:
    return {
        "sample_id": "conv-a",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {
                    "speaker": "Ann",
                    "dia_id": "D1:1",
                    "text": "Hi Bob! My dog learned a new trick. She rolls over when I clap twice.",
                },
                {"speaker": "Bob", "dia_id": "D1:2", "text": "We went sailing on the lake."},
                {"speaker": "Ann", "dia_id": "D1:3", "text": "The garden is full of tomatoes."},
            ],
        },
        "qa": [
            {"question": "What did Ann's dog learn?", "evidence": ["D1:1"], "category": 4},
            {"question": "Where did Bob go sailing?", "evidence": ["D1:2"], "category": 1},
        ],
    }


def _loaded(
    tmp_path: Path, raw: dict[str, object] | None = None
) -> tuple[Conversation, CachedEmbedder]:
    """`raw` (`_conversation()` by default) as the bench loads it from a file, and a vector
    cache in `tmp_path` that embeds with `_bag_of_words`."""
    data = tmp_path / "one.json"
    data.write_text(json.dumps([raw or _conversation()]), encoding="utf-8")
    cache = CachedEmbedder(tmp_path / "vectors.npz", lambda: _bag_of_words)
    return load_locomo(data)[0], cache
