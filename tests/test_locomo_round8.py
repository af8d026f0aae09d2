"""The eighth recall round's bench (`bench/locomo_round8.py`): its features are the
product's (the word index's traits), its simulated re-rank is what `recall` does with the
same model, and a model weighing the fused score alone keeps the product's ten."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np

from bench.locomo_round8 import BEFORE, BLOCK, TOP, Round, extract, product_recall
from memory.recall import TUNING
from memory.recall_rerank import FEATURES, LinearModel
from tests.test_locomo_round3 import _conversation, _loaded


def _by(feature: str, sign: float = 1.0) -> LinearModel:
    width = len(FEATURES)
    weight = [sign if name == feature else 0.0 for name in FEATURES]
    return LinearModel((0.0,) * width, (1.0,) * width, tuple(weight))


def test_the_simulated_re_rank_is_what_recall_does_with_the_model(tmp_path: Path) -> None:
    raw = _conversation()
    raw["qa"] = [  # type: ignore[index]
        *raw["qa"],  # type: ignore[index]
        {"question": "When did Bob go sailing?", "evidence": ["D1:2"], "category": 2},
        {"question": "How many times does Ann clap?", "evidence": ["D1:1"], "category": 4},
    ]
    conversation, cache = _loaded(tmp_path, raw)
    conv, home, asked = extract(conversation, cache)
    try:
        simulated = Round({conversation.sample_id: asked})
        for model in (_by("fused"), _by("length"), _by("fused", -1.0)):
            for learned_set, count in ((BLOCK, BLOCK), (TOP, TOP)):  # its best five, or ten
                tuning = replace(TUNING, learned=model, learned_set=learned_set, speaker=None)
                for item in asked:
                    top, _block = product_recall(conv, item.index, item.question, tuning)
                    assert top == simulated.ranked(item, model, count), item.question.question
        for item in asked:
            assert item.product == simulated.ranked(item, None)
            top, _ = product_recall(conv, item.index, item.question, BEFORE)
            assert top == item.product  # the product before the round
            assert item.features.shape == (len(item.turns), len(FEATURES))
            assert np.array_equal(np.delete(item.features, 13, 1), np.delete(item.exact, 13, 1))
            assert item.labels.sum() == len(set(item.question.evidence) & set(item.turns))
    finally:
        conv.memory.close()
        shutil.rmtree(home, ignore_errors=True)
