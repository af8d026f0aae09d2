"""Issue 17, eighth round: the learned re-rank of round 7 with its features read as the
product reads them — from the word index's per-slot traits (`store.point_traits`), no row —
measured leave-one-conversation-out, then run through `recall` itself.

    python -m bench.locomo_round8 /work/shared/data/locomo/locomo-dev.json [--json] [--weights]

Each conversation is replayed once through the real save path (`bench.locomo_round6.
environment6`: the product's word context; every point gets its traits on save). For every
question, the candidates are every fused candidate in fused order (the union of both top
50s, the list rule's vector weight: what `recall` ranks); `memory.recall_rerank.
candidate_features` turns them into the product's 16 features from the mirror's traits
(`LexicalCache.traits_of`); a candidate is positive when its turn is evidence.

Nested leave-one-conversation-out, as round 7 with its chosen loss (balanced) and depth
(every candidate): for each held-out conversation the L2 strength is chosen by a
leave-one-out inside the other four (recall@10, ties by recall@5; the product competes and
keeps ties), the model trained on the four with it scores the fifth. Reported, mean / worst
conversation, per category:
- `product`: `recall` with `TUNING` without the re-rank (`BEFORE`), and its block
  (`TURN_TUNING`);
- `learned ten` (simulated from the features, as round 7): the model's best ten in the
  product's order (fused × the date and answer boosts × the length prior, from the rows);
- `learned ten, exact who`: the same with the answer feature computed from the row with
  the question's names left out (what the per-point "holds a name" bit approximates);
- `recall, learned ten` / `recall, learned k`: `recall` itself with each fold's model
  (`RecallTuning.learned`; `learned_set` 10: the model's ten for k = 5 too, or 5: its best
  five at k = 5, its ten at k = 10) — its top 5 (k = 5) and top 10, and the turn's block
  (`TURN_TUNING` with the model): what would reach the prompt (`in_block`).
`--turn` adds the same without the neighbour feature (`learned ten, no neighbour`, and
through recall: what the turn's block would hold). `--weights` prints the model trained on
all five with the L2 their leave-one-out chooses (the constants of
`memory.recall_models.MODEL`).
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from bench.locomo_cache import CachedEmbedder, default_cache_dir
from bench.locomo_data import Conversation, Question, load_locomo, score_question
from bench.locomo_loo import KS, Scored, leave_one_out, progress
from bench.locomo_round5_rankers import base
from bench.locomo_round6 import environment6
from bench.locomo_round6_rankers import Conv6
from bench.locomo_round7 import _line as round7_line
from bench.locomo_round7_learn import Config, Example, Train, choose, fit, nested
from memory.recall import TUNING, TURN_TUNING, RecallTuning
from memory.recall_fusion import fuse
from memory.recall_rerank import FEATURES, LinearModel, candidate_features
from memory.text.answers import AnswerType, answer_types, holds_answer, question_names
from memory.text.dates import DateSpan, date_spans
from memory.text.shape import content_words, is_list_question
from store import point_reads

BEFORE = replace(TUNING, learned=None, speaker=None)
"""The product before this round (`TUNING` without the re-rank)."""
BLOCK = 5  # MEMORY_TOP_K
TOP = 10
L2 = (0.1, 1.0, 10.0, 100.0, 1000.0)
CONFIGS = [Config("balanced", l2, "all") for l2 in L2]
ANSWER = FEATURES.index("answer")


@dataclass
class Asked:
    """One question: its candidates' turns (fused order), the features as the product
    computes them and with the exact answer check, the product's own score of each, the
    labels, and what the product's recall gives (top 10, the block's turns)."""

    question: Question
    index: int
    turns: list[str]
    features: np.ndarray
    exact: np.ndarray
    product_score: np.ndarray
    labels: np.ndarray
    product: list[str]
    product_block: set[str]


def extract(conversation: Conversation, cache: CachedEmbedder) -> tuple[Conv6, Path, list[Asked]]:
    """Every question of `conversation` (the store stays open for `recall` runs)."""
    conv, home = environment6(conversation, cache)
    memory = conv.memory
    rows = point_reads.hit_rows(memory.db, sorted(conv.to_turn))
    asked: list[Asked] = []
    for i, q in enumerate(conversation.questions):
        b = base(conv, i, q)
        fused = b.fused
        if TUNING.list_vector_weight is not None and is_list_question(q.question):
            fused = fuse(
                b.vector, b.lexical, replace(TUNING, vector_weight=TUNING.list_vector_weight)
            )
        order = sorted(fused, key=lambda p: -fused[p])
        spans = date_spans(q.question, memory.db.clock.now())
        kinds = answer_types(q.question)
        names = question_names(q.question) if "who" in kinds else frozenset()
        traits = memory.lexical.traits_of(order)
        assert traits is not None, "every replayed point has its traits"
        x = candidate_features(order, fused, b.vector, b.lexical, traits, spans, kinds, 50)
        held = answer_held(rows, order, kinds, names)
        exact = x.copy()
        exact[:, ANSWER] = held
        score = product_score(rows, order, fused, spans, held)
        turns = [conv.to_turn.get(p, "") for p in order]
        evidence = set(q.evidence)
        top, block = product_recall(conv, i, q, BEFORE)
        asked.append(
            Asked(
                q, i, turns, x, exact, score, np.array([t in evidence for t in turns]), top, block
            )
        )
    return conv, home, asked


def answer_held(
    rows: Mapping[int, point_reads.HitRow],
    order: Sequence[int],
    kinds: frozenset[AnswerType],
    names: frozenset[str],
) -> np.ndarray:
    """Whether each candidate holds what the question asks for (its row, the question's
    names left out: the product's answer boost)."""
    return np.array([bool(kinds) and holds_answer(rows[p].content, kinds, names) for p in order])


def product_score(
    rows: Mapping[int, point_reads.HitRow],
    order: Sequence[int],
    fused: Mapping[int, float],
    spans: Sequence[DateSpan],
    held: np.ndarray,
) -> np.ndarray:
    """The product's own score of each candidate: fused × the date and answer boosts × the
    length prior (from the rows), as `recall` orders the model's set."""
    dated = np.array([any(s.contains(rows[p].created_at) for s in spans) for p in order])
    n = np.array([content_words(rows[p].content) for p in order], np.float64)
    return (
        np.array([fused[p] for p in order])
        * (1 + TUNING.date_boost * dated)
        * (1 + TUNING.answer_boost * held)
        * n
        / (n + TUNING.length_prior)
    )


def product_recall(
    conv: Conv6, index: int, q: Question, tuning: RecallTuning
) -> tuple[list[str], set[str]]:
    """`recall` itself: its top 5 (k = 5), then the rest of its top 10 (k = 10), and the
    turns in the turn's block (`TURN_TUNING` with `tuning`'s re-rank)."""
    vector = conv.question_vectors["question"][index]
    memory = conv.memory
    top: list[str] = []
    for k in (BLOCK, TOP):
        result = memory.recall(q.question, vector=vector, k=k, tuning=tuning)
        top += [conv.to_turn[h.id] for h in result.hits if h.id in conv.to_turn]
    top = list(dict.fromkeys(top))
    turn = replace(TURN_TUNING, learned=tuning.learned, learned_set=tuning.learned_set)
    block = memory.recall(q.question, vector=vector, tuning=turn)
    return top, {conv.to_turn[h.id] for h in block.in_block() if h.id in conv.to_turn}


def scored(item: Asked, top: Sequence[str], block: set[str] | None = None) -> Scored:
    evidence = set(item.question.evidence)
    held = set(top[:BLOCK]) if block is None else block
    return Scored(
        score_question(list(top), item.question, KS), len(evidence & held) / len(evidence)
    )


class Round:
    """The extracted questions of every conversation; `exact`: the answer feature from
    the rows with the question's names left out, instead of the per-point bit."""

    def __init__(
        self,
        data: dict[str, list[Asked]],
        *,
        exact: bool = False,
        without: Sequence[str] = (),
    ) -> None:
        self.data = data
        self.conversations = list(data)
        self.exact = exact
        self.keep = [i for i, name in enumerate(FEATURES) if name not in without]

    def x(self, item: Asked) -> np.ndarray:
        return item.exact if self.exact else item.features

    def train(self, convs: Sequence[str], config: Config) -> LinearModel:
        examples = [Example(self.x(a), a.labels) for c in convs for a in self.data[c]]
        return fit(examples, config.loss, config.l2, self.keep)

    def ranked(self, item: Asked, model: LinearModel | None, count: int = TOP) -> list[str]:
        """The model's best `count` in the product's order, then the rest of its best ten
        (the product's top 10 without a model)."""
        if model is None:
            return item.product
        best = [int(i) for i in model.order(self.x(item))[:TOP]]
        head = sorted(best[:count], key=lambda i: -item.product_score[i])
        tail = sorted(best[count:], key=lambda i: -item.product_score[i])
        return [item.turns[i] for i in head + tail]

    def top(self, conv: str, config: Config | None, model: LinearModel | None) -> list[Scored]:
        return [scored(a, self.ranked(a, model)) for a in self.data[conv]]

    def criterion(self, conv: str, config: Config | None, model: LinearModel | None) -> list[float]:
        """recall@10, ties broken by recall@5 (round 7's)."""
        return [
            r.score.recall[10] + 1e-4 * r.score.recall[5] for r in self.top(conv, config, model)
        ]

    def folds(self) -> dict[str, tuple[Config | None, LinearModel | None]]:
        train: Train = self.train
        return dict(nested(self.conversations, CONFIGS, train, self.criterion))

    def held_out(
        self, chosen: dict[str, tuple[Config | None, LinearModel | None]], count: int = TOP
    ) -> dict[str, Any]:
        table = {
            c: [scored(a, self.ranked(a, chosen[c][1], count)) for a in self.data[c]]
            for c in self.conversations
        }
        result = leave_one_out({"learned": table}, self.conversations, name=str)
        result["chosen"] = {c: label(config) for c, (config, _m) in chosen.items()}
        return result

    def weights(self) -> dict[str, Any]:
        """The config leave-one-out over all five chooses, trained on all five."""
        train: Train = self.train
        config = choose(self.conversations, CONFIGS, train, self.criterion)
        if config is None:
            return {"config": "product"}
        model = self.train(self.conversations, config)
        return {"config": config.label, "model": model}


def label(config: Config | None) -> str:
    return "product" if config is None else config.label


def through_recall(
    convs: dict[str, Conv6],
    data: dict[str, list[Asked]],
    chosen: dict[str, tuple[Config | None, LinearModel | None]],
    learned_set: int,
) -> dict[str, Any]:
    """`recall` itself on each held-out conversation with its fold's model."""
    table: dict[str, list[Scored]] = {}
    for c, items in data.items():
        model = chosen[c][1]
        tuning = replace(TUNING, learned=model, learned_set=learned_set, speaker=None)
        rows = []
        for a in items:
            top, block = (
                (a.product, a.product_block)
                if model is None
                else product_recall(convs[c], a.index, a.question, tuning)
            )
            rows.append(scored(a, top, block))
        table[c] = rows
    result = leave_one_out({"recall": table}, list(data), name=str)
    result["chosen"] = {c: label(config) for c, (config, _m) in chosen.items()}
    return result


def run(path: Path, cache_dir: Path, weights: bool, turn: bool = False) -> dict[str, Any]:
    from bench.minilm_embedder import load_minilm

    conversations = [c for c in load_locomo(path) if c.questions]
    cache = CachedEmbedder(cache_dir / "minilm.npz", load_minilm)
    started = time.perf_counter()
    convs: dict[str, Conv6] = {}
    homes: list[Path] = []
    data: dict[str, list[Asked]] = {}
    try:
        for conversation in conversations:
            conv, home, asked = extract(conversation, cache)
            convs[conversation.sample_id], data[conversation.sample_id] = conv, asked
            homes.append(home)
            progress(conversation.sample_id, started)
        cache.save()
        product = {
            c: [scored(a, a.product, a.product_block) for a in items] for c, items in data.items()
        }
        results: dict[str, Any] = {
            "product": leave_one_out({"product": product}, list(data), name=str)
        }
        simulated, exact = Round(data), Round(data, exact=True)
        chosen = simulated.folds()
        results["learned ten"] = simulated.held_out(chosen)
        results["learned five in ten"] = simulated.held_out(chosen, count=BLOCK)
        results["learned ten, exact who"] = exact.held_out(exact.folds())
        results["recall, learned ten"] = through_recall(convs, data, chosen, TOP)
        results["recall, learned k"] = through_recall(convs, data, chosen, BLOCK)
        if turn:  # the turn's block without the feature that piles hits together
            alone = Round(data, without=("neighbour",))
            apart = alone.folds()
            results["learned ten, no neighbour"] = alone.held_out(apart)
            results["recall, learned k, no neighbour"] = through_recall(convs, data, apart, BLOCK)
        if weights:
            found = simulated.weights()
            model = found.pop("model", None)
            if model is not None:
                found["weights"] = dict(zip(FEATURES, model.weight, strict=True))
                found["literal"] = model_literal(model)
            results["on all five"] = found
        progress("evaluated", started)
        return results
    finally:
        for conv in convs.values():
            conv.memory.close()
        for home in homes:
            shutil.rmtree(home, ignore_errors=True)


def model_literal(model: LinearModel) -> str:
    """`MODEL = LinearModel(...)` as Python source."""

    def numbers(values: Sequence[float]) -> str:
        return "(" + ", ".join(f"{v:.6g}" for v in values) + ",)"

    return (
        "MODEL: Final = LinearModel(\n"
        f"    mean={numbers(model.mean)},\n"
        f"    scale={numbers(model.scale)},\n"
        f"    weight={numbers(model.weight)},\n"
        ")"
    )


def _line(name: str, row: dict[str, Any]) -> str:
    return round7_line(name, row, width=24, in_block=True)


def print_rows(results: dict[str, Any], *, block: bool = True, every_choice: bool = False) -> None:
    """Each held-out row of `results`, its conversations (@5 / @10, and `block`: in_block),
    and the folds' choices (`every_choice`: also when every fold kept the product)."""
    print("held out, mean / worst conversation; per category @5,@10 (mean/worst)")
    for name, row in results.items():
        if not isinstance(row, dict) or "mean" not in row:
            continue
        print(_line(name, row))
        print(
            f"{'':<24} "
            + " ".join(
                f"{c} {v['recall@5']:.3f}/{v['recall@10']:.3f}"
                + (f"/{v['in_block']:.3f}" if block else "")
                for c, v in row["per_conversation"].items()
            )
        )
        if "chosen" in row and (every_choice or set(row["chosen"].values()) != {"product"}):
            print(f"{'':<24} chosen: " + "; ".join(f"{c} {v}" for c, v in row["chosen"].items()))


def print_round(results: dict[str, Any]) -> None:
    print_rows(results)
    if "on all five" in results:
        found = results["on all five"]
        print(f"on all five: {found['config']}")
        if "literal" in found:
            print(found["literal"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--weights", action="store_true", help="print the model on all five")
    parser.add_argument("--turn", action="store_true", help="also a model without neighbour")
    parser.add_argument("--cache-dir", type=Path, default=default_cache_dir())
    args = parser.parse_args(argv)
    results = run(args.path, args.cache_dir, args.weights, args.turn)
    if args.json:
        print(json.dumps(results, indent=2, default=str))
    else:
        print_round(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
