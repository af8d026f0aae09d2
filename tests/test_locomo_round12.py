"""The twelfth recall round's bench (`bench/locomo_round12.py`, `bench/locomo_round12_trees.py`):
the boosted trees learn what a line cannot and score as they were fitted, the mood form's
simulated re-rank is what `recall` does with its model, and `both_scores` fills what the
rankings' top 50s leave at 0."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np

from bench.locomo_round10 import TURNS, Pair, extract, product_recall
from bench.locomo_round12 import Config12, Model12, Round12, both_scores, configs, extra_columns
from bench.locomo_round12_trees import fit_trees
from memory.recall import TUNING
from memory.recall_rerank import FEATURES, MOOD_FEATURES, SPEAKER_FEATURES, LinearModel
from tests.test_locomo_round3 import _conversation, _loaded


def _by(names: tuple[str, ...], **weights: float) -> LinearModel:
    width = len(names)
    return LinearModel((0.0,) * width, (1.0,) * width, tuple(weights.get(n, 0.0) for n in names))


def test_the_trees_learn_an_interaction_and_score_as_fitted() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4000, 5))
    y = ((x[:, 0] > 0) == (x[:, 1] > 0)).astype(np.float64)  # no line separates it
    trees = fit_trees(x, y, np.ones(len(y)), depth=2, rounds=30, shrinkage=0.3)
    assert trees.feature.shape == (30, 3) and trees.leaf.shape == (30, 4)
    assert float(((trees.scores(x) > 0) == (y > 0)).mean()) > 0.95
    start = rng.normal(size=len(y))  # boosted from a margin: the trees add to it
    more = fit_trees(x, y, np.ones(len(y)), depth=1, rounds=5, shrinkage=0.1, init=start)
    assert more.scores(x).shape == (len(y),)


def test_the_grids_list_round_10_first_so_it_wins_ties() -> None:
    for form in ("mood", "trees", "trees on the logistic", "both scores"):
        listed = configs(form)
        assert [c.form for c in listed[:4]] == ["round 10"] * 4
        assert {c.form for c in listed[4:]} == {form}


def test_the_mood_form_is_what_recall_does_with_its_model(tmp_path: Path) -> None:
    raw = _conversation()
    raw["qa"] = [  # type: ignore[index]
        *raw["qa"],  # type: ignore[index]
        {"question": "Would Bob likely enjoy sailing?", "evidence": ["D1:2"], "category": 3},
    ]
    conversation, cache = _loaded(tmp_path, raw)
    conv, home, items = extract(conversation, cache)
    try:
        plain = _by(FEATURES, fused=1.0)
        mood = _by(MOOD_FEATURES, fused=1.0, hypothetical_words=-5.0, hypothetical_speaker=3.0)
        round12 = Round12({"c": items}, {"c": {a.index: both_scores(conv, a) for a in items}})
        model = Model12(plain, mood, False, lambda a: mood.scores(round12.features("mood", a)))
        search = replace(TUNING, learned=plain, speaker=mood)
        turn = TURNS["turn as shipped"](Pair(plain, mood, False))
        for item in items:
            extra = extra_columns("mood", item)
            assert extra.shape == (len(item.turns), len(MOOD_FEATURES) - len(SPEAKER_FEATURES))
            assert extra.any() == item.question.question.startswith("Would")
            top, _block = product_recall(conv, item, search, turn)
            assert top == round12.ranked(item, model), item.question.question
            both = round12.complete["c"][item.index]
            cosine, words = both[:, 0], both[:, 1]
            inside = item.features[:, FEATURES.index("in_words")] == 1.0
            assert np.allclose(words[inside], item.features[inside, FEATURES.index("words")])
            assert np.all((cosine >= -1.0) & (cosine <= 1.0 + 1e-6))
        assert round12.train(["c"], Config12("mood", 1.0)).speaker is not None
    finally:
        conv.memory.close()
        shutil.rmtree(home, ignore_errors=True)
