"""The eleventh recall round's bench (`bench/locomo_round11.py`): its `top 50` pool is round
10's candidates and columns, and a speaker pool adds only the named speaker's points, with
the two pool columns saying which and where."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from bench.locomo_round10 import extract as extract10
from bench.locomo_round11 import BASE_POOL, NARROW, POOLS, WIDE, extract
from tests.test_locomo_round3 import _conversation, _loaded


def test_the_base_pool_is_round_10s(tmp_path: Path) -> None:
    conversation, cache = _loaded(tmp_path)
    pools = extract(conversation, cache)
    conv, home, items = extract10(conversation, cache)
    try:
        for ours, theirs in zip(pools[BASE_POOL], items, strict=True):
            assert ours.turns == theirs.turns
            assert np.array_equal(ours.features[:, :NARROW], theirs.features)
            assert ours.features.shape[1] == WIDE
    finally:
        conv.memory.close()
        shutil.rmtree(home, ignore_errors=True)


def test_a_speaker_pool_adds_the_named_speakers_points_only(tmp_path: Path) -> None:
    raw = _conversation()
    raw["qa"] = [  # type: ignore[index]
        *raw["qa"],  # type: ignore[index]
        {"question": "When did Ann clap twice?", "evidence": ["D1:1"], "category": 2},
    ]
    conversation, cache = _loaded(tmp_path, raw)
    spoken = {t.dia_id: t.speaker for t in conversation.turns}
    pools = extract(conversation, cache, depth=1)  # each ranking's top 1, then the pool
    for pool in POOLS[1:]:
        for item, base in zip(pools[pool], pools[BASE_POOL], strict=True):
            question = item.question.question
            named = {"Ann", "Bob"} & set(question.replace("'s", " ").replace("?", "").split())
            asks_when = question.startswith("When")
            added = set(item.turns) - set(base.turns)
            assert {spoken[t] for t in added} <= named, (pool, question)
            inside = dict(zip(item.turns, item.features[:, NARROW], strict=True))
            rank = dict(zip(item.turns, item.features[:, NARROW + 1], strict=True))
            if asks_when and not pool.endswith(", when"):  # no pool for "when"
                assert not added and not any(inside.values())
                continue
            for turn in item.turns:  # in the pool exactly when spoken by a named speaker
                assert inside[turn] == (spoken[turn] in named), (pool, question, turn)
                assert rank[turn] < np.log1p(float(pool.split()[1].rstrip(","))) or not inside[turn]
            if question.startswith("Where did Bob"):  # the top 1 is Ann's "Hi Bob!" turn;
                assert base.turns == ["D1:1"] and added == {"D1:2"}  # his own comes in
