"""Issue 17, seventh round: a learned re-rank of the fused candidates — logistic regression
over features recall already has, measured leave-one-conversation-out with the loss, the L2
strength and the depth chosen inside the training conversations only.

    python -m bench.locomo_round7 /work/shared/data/locomo/locomo-dev.json [--json] [--only main]

Each conversation is replayed once through the real save path with the product's word
context (`bench.locomo_round6.environment6`). For every question the product's two rankings
and their fusion (`bench.locomo_round5_rankers.base`, lists at the product's vector weight)
give the candidates in fused order; `bench.locomo_round7_features.candidate_features` (from
what `recall` has at that point) turns the first 30, 50 or all of them into features; a candidate is
positive when its turn is evidence. The learner (`bench/locomo_round7_learn.py`) is trained
on four conversations and scores the fifth; which loss, L2 strength and depth it uses is
chosen by a leave-one-out inside those four (recall@10, ties by recall@5), the product
competing as one choice (ties go to it). Reported against the product (`recall` with
`TUNING`): mean and worst conversation, per category, @5/@10/MRR/in_block (the top 5);
every config trained on four and scored on the fifth (`configs`); each feature group left
out (`ablation`). `--only main`, `--only configs`, `--only ablation` run a part.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from bench.locomo_cache import CachedEmbedder, default_cache_dir
from bench.locomo_data import Conversation, Question, load_locomo, score_question
from bench.locomo_loo import KS, Scored, leave_one_out, progress
from bench.locomo_round5_rankers import base, product_ranker
from bench.locomo_round6 import environment6
from bench.locomo_round6_rankers import Conv6
from bench.locomo_round7_features import (
    FEATURES,
    Candidate,
    LinearModel,
    candidate_features,
    query_terms,
)
from bench.locomo_round7_learn import Config, Example, Train, choose, fit, nested
from memory.recall import TUNING
from memory.recall_fusion import fuse
from memory.text.answers import answer_types, question_names
from memory.text.dates import date_spans
from memory.text.shape import is_list_question
from store import point_reads

BLOCK = 5  # MEMORY_TOP_K
TOP = 10
DEPTHS = {"30": 30, "50": 50, "all": 10_000}
L2 = (0.1, 1.0, 10.0, 100.0, 1000.0)
LOSSES = ("pointwise", "balanced", "pairwise")
GROUPS = {
    "fusion": ("fused", "log_fused", "fused_rank", "both"),
    "vector": ("cosine", "in_vector", "vector_rank"),
    "words": ("words", "in_words", "words_rank"),
    "length": ("length", "log_length"),
    "date and answer": ("date", "answer"),
    "coverage": ("coverage",),
    "neighbours and day": ("neighbour", "same_day"),
}
"""The feature groups the ablation leaves out one at a time."""


@dataclass
class Asked:
    """One question: its candidates in fused order, their features at each depth, and the
    product's top 10 (dia ids)."""

    question: Question
    order: list[int]
    turns: list[str]
    examples: dict[str, Example]
    product: list[str]


def candidates(conv: Conv6, rows: dict[int, point_reads.HitRow], index: int, q: Question) -> Any:
    """The question's fused order and the inputs of `candidate_features`, as `recall`
    makes them (the list rule's vector weight; the floor is 0 in the bench)."""
    b = base(conv, index, q)
    fused = b.fused
    if TUNING.list_vector_weight is not None and is_list_question(q.question):
        fused = fuse(b.vector, b.lexical, replace(TUNING, vector_weight=TUNING.list_vector_weight))
    order = sorted(fused, key=lambda p: -fused[p])
    spans = date_spans(q.question, conv.memory.db.clock.now())
    kinds = answer_types(q.question)
    asked = (kinds, question_names(q.question) if "who" in kinds else frozenset())
    lexical = conv.memory.lexical
    terms = query_terms(lexical, lexical.analyzer.query_terms(q.question))
    made = [Candidate(p, rows[p].created_at, rows[p].content) for p in order]
    return order, fused, b, spans, asked, terms, made


def extract(
    conversation: Conversation, cache: CachedEmbedder, cost: dict[str, list[float]] | None = None
) -> list[Asked]:
    """Every question of `conversation` with its features at each depth (`cost`: each
    depth's feature time per question, ms, appended)."""
    conv, home = environment6(conversation, cache)
    try:
        rows = point_reads.hit_rows(conv.memory.db, sorted(conv.to_turn))
        product = product_ranker(replace(TUNING, learned=None))  # round 7's product
        asked: list[Asked] = []
        for i, q in enumerate(conversation.questions):
            order, fused, b, spans, kinds, terms, made = candidates(conv, rows, i, q)
            evidence = set(q.evidence)
            turns = [conv.to_turn.get(p, "") for p in order]
            examples = {}
            for name, depth in DEPTHS.items():
                began = time.perf_counter()
                x = candidate_features(
                    made[:depth], fused, b.vector, b.lexical, spans, kinds, terms, TUNING.candidates
                )
                if cost is not None:
                    cost[name].append((time.perf_counter() - began) * 1e3)
                y = np.array([t in evidence for t in turns[:depth]], bool)
                examples[name] = Example(x, y)
            top = [conv.to_turn[p] for p in product(conv, i, q) if p in conv.to_turn]
            asked.append(Asked(q, order, turns, examples, top))
        return asked
    finally:
        conv.memory.close()
        shutil.rmtree(home, ignore_errors=True)


FEATURE = {name: i for i, name in enumerate(FEATURES)}


def product_score(features: np.ndarray) -> np.ndarray:
    """The product's own score of each candidate from its features: fused × 2 inside a
    time the query names × 2 holding what it asks for × n / (n + 8) (`TUNING`'s boosts and
    prior, here on any candidate, not only the first 30)."""
    f = FEATURE
    return (
        features[:, f["fused"]]
        * (1 + TUNING.date_boost * features[:, f["date"]])
        * (1 + TUNING.answer_boost * features[:, f["answer"]])
        * features[:, f["length"]]
    )


def ranked(
    item: Asked, config: Config | None, model: LinearModel | None, order: str = "model"
) -> list[str]:
    """The question's top 10 (dia ids): the product's, or the model's best 10 of the first
    `config.depth` candidates (then the rest in fused order), in the model's order or
    (`order` "product") by the product's own score (`product_score`)."""
    if config is None or model is None:
        return item.product
    features = item.examples[config.depth].features
    best = model.order(features)[:TOP]
    if order == "product":
        score = product_score(features)
        best = sorted(best, key=lambda i: -score[i])
    head = [item.turns[i] for i in best]
    rest = [t for t in item.turns[len(features) :]]
    return (head + rest)[:TOP]


def scored(item: Asked, top: list[str]) -> Scored:
    evidence = set(item.question.evidence)
    return Scored(
        score_question(top, item.question, KS), len(evidence & set(top[:BLOCK])) / len(evidence)
    )


class Round:
    """The extracted questions of every conversation, and how to train and score on them;
    `order`: the chosen ten in the model's order, or by the product's own score."""

    def __init__(self, data: dict[str, list[Asked]], order: str = "model") -> None:
        self.data = data
        self.conversations = list(data)
        self.order = order

    def train(self, keep: Sequence[int]) -> Train:
        def train(convs: Sequence[str], config: Config) -> LinearModel:
            examples = [a.examples[config.depth] for c in convs for a in self.data[c]]
            return fit(examples, config.loss, config.l2, keep)

        return train

    def top(self, conv: str, config: Config | None, model: LinearModel | None) -> list[Scored]:
        return [scored(a, ranked(a, config, model, self.order)) for a in self.data[conv]]

    def criterion(self, conv: str, config: Config | None, model: LinearModel | None) -> list[float]:
        """recall@10, ties broken by recall@5 (round 5's families 1d, 6 and 7)."""
        return [
            r.score.recall[10] + 1e-4 * r.score.recall[5] for r in self.top(conv, config, model)
        ]

    def held_out(self, keep: Sequence[int], configs: Sequence[Config]) -> dict[str, Any]:
        """Nested leave-one-out over `configs` with the feature columns `keep`."""
        chosen = nested(self.conversations, configs, self.train(keep), self.criterion)
        table = {conv: self.top(conv, *chosen[conv]) for conv in self.conversations}
        result = leave_one_out({"learned": table}, self.conversations, name=str)
        result["chosen"] = {
            conv: "product" if config is None else config.label
            for conv, (config, _model) in chosen.items()
        }
        return result

    def product(self) -> dict[str, Any]:
        table = {c: self.top(c, None, None) for c in self.conversations}
        return leave_one_out({"product": table}, self.conversations, name=str)

    def plain(self, config: Config) -> dict[str, Any]:
        """`config` trained on four, scored on the fifth (no choice)."""
        train = self.train(range(len(FEATURES)))
        table = {}
        for conv in self.conversations:
            model = train([c for c in self.conversations if c != conv], config)
            table[conv] = self.top(conv, config, model)
        return leave_one_out({config.label: table}, self.conversations, name=str)

    def on_all(self, configs: Sequence[Config]) -> dict[str, Any]:
        """The config leave-one-out over all five chooses, and its weights trained on all
        five (what the product would ship as constants)."""
        train = self.train(range(len(FEATURES)))
        config = choose(self.conversations, configs, train, self.criterion)
        if config is None:
            return {"config": "product"}
        model = train(self.conversations, config)
        return {
            "config": config.label,
            "weights": {f: round(w, 3) for f, w in zip(FEATURES, model.weight, strict=True)},
        }


CONFIGS = [Config(loss, l2, depth) for loss in LOSSES for l2 in L2 for depth in DEPTHS]
BALANCED = [c for c in CONFIGS if c.loss == "balanced"]


def run(path: Path, cache_dir: Path, only: Sequence[str] = ()) -> dict[str, Any]:
    from bench.minilm_embedder import load_minilm

    conversations = [c for c in load_locomo(path) if c.questions]
    cache = CachedEmbedder(cache_dir / "minilm.npz", load_minilm)
    started = time.perf_counter()
    data: dict[str, list[Asked]] = {}
    cost: dict[str, list[float]] = {name: [] for name in DEPTHS}
    try:
        for conversation in conversations:
            data[conversation.sample_id] = extract(conversation, cache, cost)
            progress(conversation.sample_id, started)
    finally:
        cache.save()
    results = evaluate(data, only)
    results["feature_ms_p50_p95"] = {
        name: [round(float(np.percentile(ms, q)), 2) for q in (50, 95)] for name, ms in cost.items()
    }
    return results


def evaluate(data: dict[str, list[Asked]], only: Sequence[str] = ()) -> dict[str, Any]:
    """The product; the learned re-rank held out (every loss, the balanced loss, and the
    balanced loss with the product's order inside the chosen ten); every config alone; each
    feature group left out of the last form."""
    every = list(range(len(FEATURES)))
    by_model, by_product = Round(data), Round(data, order="product")
    results: dict[str, Any] = {"product": by_model.product()}
    if not only or "main" in only:
        results["learned, every loss"] = by_model.held_out(every, CONFIGS)
        results["learned, balanced"] = by_model.held_out(every, BALANCED)
        results["learned set, product order"] = by_product.held_out(every, BALANCED)
        results["on all five"] = {
            "model order": by_model.on_all(BALANCED),
            "product order": by_product.on_all(BALANCED),
        }
    if not only or "configs" in only:
        results["configs"] = {
            f"{c.label}, {r.order} order": r.plain(c)["mean"]
            for r in (by_model, by_product)
            for c in CONFIGS
        }
    if not only or "ablation" in only:
        results["ablation"] = {
            f"without {group}": by_product.held_out(
                [i for i, f in enumerate(FEATURES) if f not in names], BALANCED
            )
            for group, names in GROUPS.items()
        }
    return results


def _line(name: str, row: dict[str, Any], *, width: int = 34, in_block: bool = False) -> str:
    """One held-out row: mean / worst conversation at @5 and @10 (and the block's evidence
    with `in_block`), MRR, then per category."""
    mean, worst = row["mean"], row["worst"]
    cats = "  ".join(
        f"{c}:{mean['by_category'][c]['recall@5']:.3f}/{worst['by_category'][c]['recall@5']:.3f}"
        f",{mean['by_category'][c]['recall@10']:.3f}/{worst['by_category'][c]['recall@10']:.3f}"
        for c in ("1", "2", "3", "4")
    )
    block = f"  in_block {mean['in_block']:.3f}/{worst['in_block']:.3f}" if in_block else ""
    return (
        f"{name:<{width}} @5 {mean['recall@5']:.3f}/{worst['recall@5']:.3f}"
        f"  @10 {mean['recall@10']:.3f}/{worst['recall@10']:.3f}{block}"
        f"  MRR {mean['mrr']:.3f}  {cats}"
    )


def print_round(results: dict[str, Any]) -> None:
    """Mean / worst conversation; per category @5 and @10 (mean / worst); the folds' choices."""
    print("held out, mean / worst conversation; per category @5 and @10, mean / worst")
    rows = {k: v for k, v in results.items() if isinstance(v, dict) and "mean" in v}
    rows.update(results.get("ablation", {}))
    for name, row in rows.items():
        print(_line(name, row))
        print(
            f"{'':<34} "
            + " ".join(
                f"{c} {v['recall@5']:.3f}/{v['recall@10']:.3f}"
                for c, v in row["per_conversation"].items()
            )
        )
        if set(row["chosen"].values()) != {"learned"}:
            print(f"{'':<34} chosen: " + "; ".join(f"{c} {v}" for c, v in row["chosen"].items()))
    for name, mean in results.get("configs", {}).items():
        print(
            f"  {name:<46} @5 {mean['recall@5']:.3f} @10 {mean['recall@10']:.3f}"
            f" MRR {mean['mrr']:.3f}"
        )
    for key in ("on all five", "feature_ms_p50_p95"):
        if key in results:
            print(f"{key}: {results[key]}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--cache-dir", type=Path, default=default_cache_dir())
    parser.add_argument("--only", action="append", default=[], help="main, configs or ablation")
    args = parser.parse_args(argv)
    results = run(args.path, args.cache_dir, args.only)
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print_round(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
