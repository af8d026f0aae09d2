"""The thirteenth recall round's bench (`bench/locomo_round13.py`): the feedback query's
content words, and each form's items — round 10's own where the form changes nothing, the
feedback column only on the asked speaker's points."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bench.locomo_round13 import FORMS, content_terms, pools
from memory.text.words import ENGLISH_STOPWORDS
from tests.test_locomo_round3 import _conversation, _loaded


def test_the_feedback_terms_drop_the_prefix_names_and_stopwords() -> None:
    terms = content_terms("Ann: My dog Rex learned a trick in Paris, and the dog rolls over.")
    assert terms[:2] == ["dog", "learned"] and "trick" in terms and "rolls" in terms
    assert terms.count("dog") == 1  # once each
    assert not {"Ann", "Rex", "Paris", "My"} & set(terms)
    assert not {t.lower() for t in terms} & ENGLISH_STOPWORDS


def test_each_forms_items_and_the_feedback_column(tmp_path: Path) -> None:
    raw = _conversation()
    questions = raw["qa"]
    assert isinstance(questions, list)
    questions.append(
        {"question": "Would Ann like a dog show?", "evidence": ["D1:1"], "category": 3}
    )
    questions.append({"question": "When did Bob go sailing?", "evidence": ["D1:2"], "category": 2})
    conversation, cache = _loaded(tmp_path, raw)
    items, alt = pools(conversation, cache)
    assert set(alt) == set(FORMS) and all(len(v) == len(items) for v in alt.values())
    for a, wide in zip(items, alt["vector 100"], strict=True):
        flagged = a.question.question.startswith("Would")
        assert (wide is not a) == flagged  # only an inference question gets the wider pool
        assert sorted(wide.turns) == sorted(a.turns)  # three points: all in both top 50s
    fed = alt["speaker feedback"]
    assert fed[3] is items[3]  # "when": no speaker asked, no feedback search
    for a in fed[:3]:
        extra = getattr(a, "extra", None)
        assert extra is not None and extra.shape == (len(a.turns), 1)
        named = "Bob" if "Bob" in a.question.question else "Ann"
        spoken = {"D1:1": "Ann", "D1:2": "Bob", "D1:3": "Ann"}
        on = {t for t, v in zip(a.turns, extra[:, 0], strict=True) if v > 0}
        assert on and all(spoken[t] == named for t in on)
        assert np.array_equal(
            a.features[:, -1] > 0, np.array([spoken[t] == named for t in a.turns])
        )
