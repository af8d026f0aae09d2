"""The ninth recall round's bench (`bench/locomo_round9.py`): its `top 50` pool is round 8's
(the product's features), the other pools add what they say, and its pickers do what their
docstrings say."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from bench.locomo_round8 import extract as extract8
from bench.locomo_round9 import (
    POOLS,
    Config9,
    Round9,
    _speaker,
    _spread_pick,
    day_context,
    extract,
)
from memory.recall_rerank import FEATURES
from tests.test_locomo_round3 import _conversation, _loaded


def test_the_pools_hold_round_8s_features_and_their_own_columns(tmp_path: Path) -> None:
    raw = _conversation()
    raw["qa"] = [  # type: ignore[index]
        *raw["qa"],  # type: ignore[index]
        {"question": "When did Bob go sailing?", "evidence": ["D1:2"], "category": 2},
    ]
    conversation, cache = _loaded(tmp_path, raw)
    per_pool, home = extract(conversation, cache)
    shutil.rmtree(home, ignore_errors=True)
    conv8, home8, asked = extract8(conversation, cache)
    try:
        assert set(per_pool) == set(POOLS)
        width = len(FEATURES)
        for item, round8 in zip(per_pool["top 50"], asked, strict=True):
            assert item.turns == round8.turns
            assert np.array_equal(item.features, round8.features)
            assert np.allclose(item.product_score, round8.product_score)
        extra = {
            "feedback": 3,
            "shape": width + 1,
            "speaker": 1,
            "same author": 1,
            "seed cosine": 2,
        }
        for pool, columns in extra.items():
            for item in per_pool[pool]:
                assert item.features.shape[1] == width + columns, pool
        for item in per_pool["speaker"]:  # "Bob" asked: Bob's turn, not Ann's
            said = dict(zip(item.turns, item.features[:, width], strict=True))
            if "Bob" in item.question.question:
                assert said.get("D1:2") == 1.0 and said.get("D1:1", 0.0) == 0.0
        for item in per_pool["speaker, not when"]:  # "when" questions: the column is off
            if item.question.question.startswith("When"):
                assert not item.features[:, width].any()
        data = {pool: {conversation.sample_id: items} for pool, items in per_pool.items()}
        round9 = Round9(data)
        model = round9.train([conversation.sample_id], Config9("top 50", 1.0))
        for item in per_pool["top 50"]:
            assert len(round9.ranked(item, model, 0.0)) == min(10, len(item.turns))
    finally:
        conv8.memory.close()
        shutil.rmtree(home8, ignore_errors=True)


def test_speaker_is_the_name_a_turn_starts_with() -> None:
    assert _speaker("Melanie: We went camping.") == "melanie"
    assert _speaker("we went camping: it rained") == ""


def test_the_spread_pick_takes_off_for_each_picked_hit_of_the_same_day() -> None:
    scores = np.array([5.0, 4.9, 4.8, 4.0, 3.0, *[0.0] * 10])
    days = np.array([1, 1, 1, 2, 3, *range(10, 20)])
    assert _spread_pick(scores, days, 0.0)[:5] == [0, 1, 2, 3, 4]
    assert _spread_pick(scores, days, 1.0)[:4] == [0, 3, 1, 4]  # 4.9 - 1 < 4.0
    assert len(_spread_pick(scores, days, 1.0)) == 10


def test_the_day_context_is_the_best_other_score_of_the_day_and_the_ten_on_it() -> None:
    s = np.array([3.0, 2.0, 1.0, 0.5])
    days = np.array([7, 7, 8, 7])
    context = day_context(s, days)
    assert context[:, 0].tolist() == s.tolist()
    assert context[:, 2].tolist() == [2.0, 3.0, 0.5, 3.0]  # alone on its day: the lowest
    assert np.allclose(context[:, 3], np.log1p([2, 2, 0, 2]))  # the others of its day in ten
