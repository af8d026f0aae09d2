"""The tenth recall round's bench (`bench/locomo_round10.py`): its 17th column is the
product's speaker column (0 for "when"), its simulated re-rank is what `recall` does with
the same two models, and its name counts say what the query side sees."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

from bench.locomo_round10 import TURNS, Pair, Round10, extract, name_counts, product_recall
from memory.recall import TUNING
from memory.recall_rerank import FEATURES, SPEAKER_FEATURES, LinearModel
from tests.test_locomo_round3 import _conversation, _loaded


def _by(names: tuple[str, ...], **weights: float) -> LinearModel:
    width = len(names)
    return LinearModel((0.0,) * width, (1.0,) * width, tuple(weights.get(n, 0.0) for n in names))


def test_the_speaker_column_and_the_simulation_are_the_products(tmp_path: Path) -> None:
    raw = _conversation()
    raw["qa"] = [  # type: ignore[index]
        *raw["qa"],  # type: ignore[index]
        {"question": "When did Bob go sailing?", "evidence": ["D1:2"], "category": 2},
    ]
    conversation, cache = _loaded(tmp_path, raw)
    conv, home, items = extract(conversation, cache)
    try:
        width = len(FEATURES)
        for item in items:
            assert item.features.shape == (len(item.turns), len(SPEAKER_FEATURES))
            assert item.speakers  # every replayed turn is "Name: text"
            said = dict(zip(item.turns, item.features[:, width], strict=True))
            question = item.question.question
            if question.startswith("When"):  # "when": the column is off
                assert not item.features[:, width].any()
            elif "Bob" in question:  # Bob's turn, not Ann's
                assert said.get("D1:2") == 1.0 and said.get("D1:1", 0.0) == 0.0
        plain = _by(FEATURES, fused=1.0)
        for speaker in (_by(SPEAKER_FEATURES, speaker=5.0, fused=1.0), None):
            pair = Pair(plain, speaker, False)
            search = replace(TUNING, learned=plain, speaker=speaker)
            for item in items:
                top, _block = product_recall(conv, item, search, TURNS["turn as shipped"](pair))
                assert top == Round10({"c": items}).ranked(item, pair), item.question.question
    finally:
        conv.memory.close()
        shutil.rmtree(home, ignore_errors=True)


def test_the_name_counts_see_the_speakers_a_question_names(tmp_path: Path) -> None:
    conversation, _cache = _loaded(tmp_path)
    counts = name_counts([conversation])
    assert counts == {
        "questions": 2,
        "name a speaker": 2,  # Ann's dog, Bob sailing
        "first word a speaker": 0,
        "collisions": 0,
    }
