"""The seventh recall round's bench (`bench/locomo_round7.py`): its candidates are `recall`'s
own, a model that weighs only the fused score ranks as `recall` without its re-ranks, the
product's order inside the chosen ten is `recall`'s, the features say what they claim, and
the learner ranks what it was shown first."""

from __future__ import annotations

import shutil
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import numpy as np

from bench.locomo_round5_rankers import product_ranker
from bench.locomo_round6 import environment6
from bench.locomo_round7 import CONFIGS, Asked, extract, ranked
from bench.locomo_round7_features import (
    FEATURES,
    Candidate,
    LinearModel,
    QueryTerms,
    candidate_features,
)
from bench.locomo_round7_learn import Config, Example, choose, fit
from memory.recall import TUNING
from memory.text.dates import date_spans
from tests.test_locomo_round3 import _conversation, _loaded

OFF = replace(TUNING, date_boost=0.0, answer_boost=0.0, length_prior=0.0)
"""`recall` with none of its re-ranks: the fused order."""


def _by(feature: str) -> LinearModel:
    """A model that ranks by one feature alone."""
    width = len(FEATURES)
    weight = [1.0 if name == feature else 0.0 for name in FEATURES]
    return LinearModel((0.0,) * width, (1.0,) * width, tuple(weight))


def _questions(tmp_path: Path) -> tuple[list[Asked], list[list[int]]]:
    raw = _conversation()
    raw["qa"] = [  # type: ignore[index]
        *raw["qa"],  # type: ignore[index]
        {"question": "When did Bob go sailing?", "evidence": ["D1:2"], "category": 2},
        {"question": "How many times does Ann clap?", "evidence": ["D1:1"], "category": 4},
    ]
    conversation, cache = _loaded(tmp_path, raw)
    asked = extract(conversation, cache)
    conv, home = environment6(conversation, cache)
    try:
        fused = [product_ranker(OFF)(conv, i, q) for i, q in enumerate(conversation.questions)]
        return asked, [[int(p) for p in top] for top in fused]
    finally:
        conv.memory.close()
        shutil.rmtree(home, ignore_errors=True)


def test_the_candidates_and_their_orders_are_recalls(tmp_path: Path) -> None:
    asked, fused = _questions(tmp_path)
    config = Config("balanced", 1.0, "all")
    for item, top in zip(asked, fused, strict=True):
        assert item.product, item.question.question
        order = {p: t for p, t in zip(item.order, item.turns, strict=True)}
        assert item.turns[: len(top)] == [order[p] for p in top]  # recall's fused order
        # the model that weighs only the fused score ranks as the fused order …
        assert ranked(item, config, _by("fused")) == item.turns[:10]
        # … and the product's order inside the chosen ten is recall's own (`TUNING`)
        assert ranked(item, config, _by("fused"), order="product") == item.product
        for depth, example in item.examples.items():
            assert example.features.shape == (
                min(len(item.order), int(depth) if depth != "all" else 10_000),
                len(FEATURES),
            )
            assert example.labels.sum() == len(set(item.question.evidence) & set(item.turns))


def test_the_features_say_what_they_claim() -> None:
    may = datetime(2023, 5, 8, 13, 56)
    june = datetime(2023, 6, 1, 9, 0)
    candidates = [
        Candidate(10, may, "Ann: We went sailing on the lake in May."),
        Candidate(11, may, "Bob: Wow!"),
        Candidate(30, june, "Bob: The garden is full of tomatoes, about twenty of them."),
    ]
    fused = {10: 0.2, 11: 0.1, 30: 0.05}
    vector = [(11, 0.8), (30, 0.4)]
    lexical = [(10, 6.0), (11, 3.0)]
    terms = QueryTerms(
        [("sail",), ("lake",)], [2.0, 1.0], lambda pid: ("sail", "lake") if pid == 10 else ()
    )
    spans = date_spans("What did Ann do in May 2023?", june)
    x = candidate_features(
        candidates, fused, vector, lexical, spans, (frozenset({"number"}), frozenset()), terms, 50
    )
    column = {name: x[:, i] for i, name in enumerate(FEATURES)}
    assert column["fused"].tolist() == [1.0, 0.5, 0.25]
    assert column["both"].tolist() == [0.0, 1.0, 0.0]
    assert column["words"].tolist() == [1.0, 0.5, 0.0]
    assert column["cosine"].tolist() == [0.0, 0.8, 0.4]
    assert column["vector_rank"][0] == np.log1p(50)  # not in the vector ranking
    assert column["date"].tolist() == [1.0, 1.0, 0.0]  # inside "May 2023"
    assert column["answer"].tolist() == [0.0, 0.0, 1.0]  # "how many": holds a number
    assert column["coverage"].tolist() == [1.0, 0.0, 0.0]
    assert column["neighbour"].tolist() == [0.5, 1.0, 0.0]  # ids one apart, the same day
    assert column["same_day"].tolist() == [np.log(2), np.log(2), 0.0]
    assert column["length"][1] < column["length"][0]  # "Wow!" has fewer content words


def test_the_learner_ranks_what_it_was_shown_first() -> None:
    rng = np.random.default_rng(7)
    examples = []
    for _ in range(40):
        x = rng.normal(size=(12, len(FEATURES)))
        labels = np.zeros(12, bool)
        labels[rng.integers(12)] = True
        x[labels, FEATURES.index("words")] += 4.0  # evidence: a better word match
        examples.append(Example(x, labels))
    for loss in ("pointwise", "balanced", "pairwise"):
        model = fit(examples, loss, 1.0, range(len(FEATURES)))
        firsts = [e.labels[model.order(e.features)[0]] for e in examples]
        assert np.mean(firsts) >= 0.9, loss
        assert max(model.weight, key=abs) == model.weight[FEATURES.index("words")]
    without = fit(examples, "balanced", 1.0, [i for i, f in enumerate(FEATURES) if f != "words"])
    assert without.weight[FEATURES.index("words")] == 0.0


def test_a_fold_keeps_the_product_when_nothing_is_better() -> None:
    def score(conv: str, config: Config | None, model: LinearModel | None) -> list[float]:
        return [1.0 if config is None or config.l2 == 10.0 else 0.5]

    def train(convs: object, config: Config) -> LinearModel:
        return _by("fused")

    assert choose(["a", "b"], CONFIGS, train, score) is None
