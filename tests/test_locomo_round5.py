"""The fifth recall round's bench (`bench/locomo_round5.py`): its prototypes, set to the
product's values before the round, rank as `MemoryStore.recall` did, the prototype of what
the round shipped ranks as `recall` with `ROUND5`, and family 7 as the sixth round shipped
it (`DATED`)."""

from __future__ import annotations

import shutil
from pathlib import Path

from bench.locomo_round5 import environment, families
from bench.locomo_round5_rankers import (
    DATED,
    ROUND5,
    agreement,
    coverage,
    dated_prior,
    dedupe_ranker,
    list_same_day,
    list_weights,
    neighbour_evidence,
    prior_floor,
    prior_multiplier,
    product_ranker,
    proximity,
    same_as_product,
    third_vector,
)
from tests.test_locomo_round3 import _conversation, _loaded


def test_the_prototypes_at_the_products_values_rank_as_recall(tmp_path: Path) -> None:
    conversation, cache = _loaded(tmp_path)
    conv, home = environment(conversation, cache)
    try:
        same = [
            same_as_product(),
            prior_multiplier(0.0),
            prior_multiplier(0.0, depth=10, lists_at=0.5),
            prior_floor(0),
            list_weights(0.5),
            list_same_day(1.0),
            dedupe_ranker(1.01, lists_only=False),
            neighbour_evidence(0.0, 2, "max", pull_in=False),
            third_vector("content", 0.0),
            agreement(0.0),
            coverage(0.0),
            proximity(0.0),
        ]
        shipped = prior_multiplier(8.0, depth=10, lists_at=0.75)
        for index, question in enumerate(conversation.questions):
            expected = product_ranker()(conv, index, question)
            assert expected, question.question
            for ranker in same:
                assert ranker(conv, index, question) == expected
            now = product_ranker(ROUND5)(conv, index, question)
            assert shipped(conv, index, question) == now
            assert dated_prior(0.0)(conv, index, question) == now
            dated = product_ranker(DATED)(conv, index, question)
            assert dated_prior(DATED.date_boost)(conv, index, question) == dated
    finally:
        conv.memory.close()
        shutil.rmtree(home, ignore_errors=True)


def test_the_length_prior_puts_a_long_turn_before_a_short_one(tmp_path: Path) -> None:
    raw = _conversation()
    session = raw["conversation"]["session_1"]  # type: ignore[index]
    session.append({"speaker": "Bob", "dia_id": "D1:4", "text": "Sailing!"})
    raw["qa"] = [{"question": "Who went sailing?", "evidence": ["D1:2"], "category": 4}]
    conversation, cache = _loaded(tmp_path, raw)
    conv, home = environment(conversation, cache)
    try:
        question = conversation.questions[0]
        turns = [conv.to_turn[p] for p in prior_multiplier(8.0)(conv, 0, question)]
        assert turns.index("D1:2") < turns.index("D1:4")
    finally:
        conv.memory.close()
        shutil.rmtree(home, ignore_errors=True)


def test_every_family_is_named_once_and_compares_against_the_product() -> None:
    for name, family in families().items():
        labels = [variant.label for variant in family]
        assert len(set(labels)) == len(labels) > 2, name
        assert labels[0] == "product", name
