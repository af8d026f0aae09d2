"""The sixth recall round's bench (`bench/locomo_round6.py`): its prototype at the round's
starting point ranks as `MemoryStore.recall` with it, and the prototype of what the round
shipped (the answer boost) ranks as `recall` does now."""

from __future__ import annotations

import shutil
from pathlib import Path

from bench.locomo_round5_rankers import DATED, product_ranker
from bench.locomo_round6 import ALL_TYPES, environment6, families
from bench.locomo_round6_rankers import answer_type, asking_down, ends_asking, only_asks, shaped
from memory.recall import TUNING
from tests.test_locomo_round3 import _conversation, _loaded


def test_the_prototypes_rank_as_recall(tmp_path: Path) -> None:
    raw = _conversation()
    raw["qa"] = [  # type: ignore[index]
        *raw["qa"],  # type: ignore[index]
        {"question": "When did Bob go sailing?", "evidence": ["D1:2"], "category": 2},
        {"question": "How many times does Ann clap?", "evidence": ["D1:1"], "category": 4},
        {"question": "Who went sailing in May 2023?", "evidence": ["D1:2"], "category": 4},
    ]
    conversation, cache = _loaded(tmp_path, raw)
    conv, home = environment6(conversation, cache)
    try:
        for index, question in enumerate(conversation.questions):
            dated = product_ranker(DATED)(conv, index, question)
            assert dated, question.question
            assert shaped()(conv, index, question) == dated
            assert shaped(answer_type(ALL_TYPES, 0.0), depth=30)(conv, index, question) == dated
            assert shaped(asking_down(0.0, only=True), depth=10)(conv, index, question) == dated
            shipped = shaped(answer_type(ALL_TYPES, TUNING.answer_boost), depth=30)
            assert shipped(conv, index, question) == product_ranker(TUNING)(conv, index, question)
    finally:
        conv.memory.close()
        shutil.rmtree(home, ignore_errors=True)


def test_a_point_that_asks() -> None:
    assert only_asks("Ann: Did you go? Was it fun?")
    assert not only_asks("Ann: We went. Was it fun?")
    assert ends_asking("Ann: We went. Was it fun?")
    assert not ends_asking("Ann: Was it fun? We went.")


def test_every_family_is_named_once_and_starts_from_a_product() -> None:
    for name, family in families().items():
        labels = [variant.label for variant in family]
        assert len(set(labels)) == len(labels) >= 2, name
        assert not labels[0].startswith("proto"), name
