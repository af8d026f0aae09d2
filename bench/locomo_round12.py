"""Issue 17, twelfth round: the question's mood and a non-linear learner over round 10's
columns, each alone in round 10's nested leave-one-conversation-out.

    python -m bench.locomo_round12 /work/shared/data/locomo/locomo-dev.json [--json]
        [--only FORM …] [--forced] [--items PICKLE]
    python -m bench.locomo_round12 /work/shared/data/locomo/locomo-dev.json --recall

The candidates, their 17 columns, the product's own score and the labels are round 10's
(`bench.locomo_round10.extract`: every conversation replayed once through the save path,
MiniLM vectors, filter off). Forms (each with its own grid; round 10's shipped form — the
17-column balanced logistic, L2 of `L2` — competes in every run, listed first, and wins
ties; the config is chosen by a leave-one-out inside the four training conversations on
recall@10, ties by @5, then trained on the four and scored on the fifth: the model's best
five in the product's order, then the rest of its ten):

- `mood`: a query-side flag (`memory.text.shape.is_hypothetical`: the question holds a
  modal of possibility or a word of likelihood: "Would Caroline likely …", "What might …",
  "Is it likely …") and its products with the speaker column and the vector and word
  columns (`memory.recall_rerank.mood_columns`: 8 more columns);
- `mood × all`: the flag's products with all 17 columns;
- `products`: the 17 and the pairwise products of the four columns `SPEAKER_MODEL` weighs
  most (words, speaker, length, neighbour: 6 more);
- `trees`: gradient-boosted trees over the 17 (`bench.locomo_round12_trees`, balanced
  loss; depth × rounds of `TREES`, shrinkage 0.2, leaf L2 1, a child's hessian ≥ 5);
- `trees on the logistic`: the same boosted from the 17-column logistic's margin (its L2
  and the trees' depth from `STACKED`): the trees fit only what the linear model leaves;
- `both scores`: every candidate's cosine to the question and its BM25 relative to the
  query's best, also where its ranking's top 50 did not hold it (`both_scores`; the 17 put
  0 there): 2 more columns.

`moods` counts the questions the flag marks, per category. A flag constant over a
question's candidates cannot change its order alone: only its products can. `--forced`
adds each form with its own configs in every fold (round 10's not competing: a
diagnostic). `--items` keeps the replay in a pickle and reads it on the next run.
`--recall` replays with the stores open and runs the mood through `recall` itself (each
held-out conversation with its fold's models), then prints `MOOD_MODEL`: the mood form on
all five with the L2 their leave-one-out chooses.
"""

from __future__ import annotations

import argparse
import json
import pickle
import shutil
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench.locomo_cache import CachedEmbedder, default_cache_dir
from bench.locomo_data import load_locomo
from bench.locomo_loo import progress
from bench.locomo_round5_rankers import base
from bench.locomo_round6_rankers import Conv6
from bench.locomo_round7_learn import Example, fit
from bench.locomo_round8 import model_literal, print_rows
from bench.locomo_round10 import TURNS, Config10, Item, Pair, Round10, extract, through_recall
from bench.locomo_round12_trees import fit_trees
from memory.recall_rerank import MOOD_FEATURES, SPEAKER_FEATURES, mood_columns
from memory.text.shape import is_hypothetical

L2 = (0.1, 1.0, 10.0, 100.0)
TREES = tuple((depth, rounds) for depth in (1, 2, 3) for rounds in (20, 50))
STACKED = tuple((l2, depth) for l2 in (1.0, 10.0) for depth in (1, 2))
SHRINKAGE, LEAF_L2, MIN_HESSIAN, STACKED_ROUNDS = 0.2, 1.0, 5.0, 20
WIDTH = len(SPEAKER_FEATURES)
COLUMN = {name: i for i, name in enumerate(SPEAKER_FEATURES)}
STRONG = ("words", "speaker", "length", "neighbour")
FORMS = ("mood", "mood × all", "products", "trees", "trees on the logistic", "both scores")

Complete = dict[str, dict[int, np.ndarray]]
"""Per conversation and question index: `both_scores`' two columns of its candidates."""


def both_scores(conv: Conv6, item: Item) -> np.ndarray:
    """Each candidate's cosine to the question and its BM25 relative to the query's best,
    also where its ranking's top 50 did not hold it (the features put 0 there): the stored
    vectors (`VectorIndex.stored_vectors`) and the word score within the candidates
    (`LexicalCache.search(candidate_ids=…)`)."""
    memory = conv.memory
    point = {turn: pid for pid, turn in conv.to_turn.items()}
    ids = [point[t] for t in item.turns]
    query = np.asarray(conv.question_vectors["question"][item.index], np.float32)
    index = memory.vectors.index
    assert index is not None, "the replay's vectors are indexed"
    stored = index.stored_vectors(ids)
    matrix = np.stack([stored[p] for p in ids])
    cosine = matrix @ query / (np.linalg.norm(matrix, axis=1) * np.linalg.norm(query) + 1e-12)
    with memory.db.cursor() as cur:
        within = dict(
            memory.lexical.search(cur, item.question.question, len(ids), candidate_ids=ids)
        )
    lexical = base(conv, item.index, item.question).lexical
    best = max((s for _, s in lexical), default=0.0)
    words = np.array([within.get(p, 0.0) / best if best > 0 else 0.0 for p in ids])
    return np.stack([cosine, words], axis=1)


def extra_columns(form: str, item: Item, both: np.ndarray | None = None) -> np.ndarray:
    """The columns `form` adds to round 10's 17 for `item`'s candidates (`both`: its
    `both_scores`)."""
    x = item.features
    if form == "both scores":
        assert both is not None, "the replay's `both_scores`"
        return both
    if form == "mood":
        return mood_columns(x, is_hypothetical(item.question.question))[:, WIDTH:]
    if form == "mood × all":
        flag = float(is_hypothetical(item.question.question))
        return np.hstack([np.full((len(x), 1), flag), x * flag])
    if form == "products":
        pairs = [(a, b) for i, a in enumerate(STRONG) for b in STRONG[i + 1 :]]
        return np.stack([x[:, COLUMN[a]] * x[:, COLUMN[b]] for a, b in pairs], axis=1)
    return np.zeros((len(x), 0))


@dataclass(frozen=True, slots=True)
class Config12(Config10):
    """A form and its knobs: `l2` (the logistic's; round 10's form and `mood`, `products`,
    `trees on the logistic`), `depth` and `rounds` (the trees')."""

    depth: int = 0
    rounds: int = 0

    @property
    def label(self) -> str:
        if self.form == "trees":
            return f"trees depth={self.depth} rounds={self.rounds}"
        if self.form == "trees on the logistic":
            return f"trees on l2={self.l2:g} depth={self.depth}"
        return f"{self.form} l2={self.l2:g}"


@dataclass(frozen=True, slots=True)
class Model12(Pair):
    """A fold's model for a form other than round 10's: `rank` scores a question whose
    candidates carry speakers (on LoCoMo every one), round 8's `plain` the others."""

    rank: Callable[[Item], np.ndarray] | None = None

    def scores(self, item: Item) -> np.ndarray:
        if self.rank is not None and item.speakers:
            return self.rank(item)
        return Pair.scores(self, item)


class Round12(Round10):
    def __init__(self, data: dict[str, list[Item]], complete: Complete | None = None) -> None:
        super().__init__(data)
        self.complete = complete or {}
        self.owner = {id(a): c for c, items in data.items() for a in items}
        self.models: dict[tuple[Config12, tuple[str, ...]], Model12] = {}
        self.columns: dict[tuple[str, int], np.ndarray] = {}

    def features(self, form: str, item: Item) -> np.ndarray:
        key = (form, id(item))
        if key not in self.columns:
            both = self.complete.get(self.owner[id(item)], {}).get(item.index)
            self.columns[key] = np.hstack([item.features, extra_columns(form, item, both)])
        return self.columns[key]

    def train(self, convs: Sequence[str], config: Config10) -> Pair:
        if not isinstance(config, Config12) or config.form == "round 10":
            return super().train(convs, Config10("speaker", config.l2))
        key = (config, tuple(sorted(convs)))
        if key not in self.models:
            self.models[key] = self._train(convs, config)
        return self.models[key]

    def _train(self, convs: Sequence[str], config: Config12) -> Model12:
        plain = self._fit(convs, WIDTH - 1, config.l2)
        items = [a for c in convs for a in self.data[c]]
        form = config.form
        if form in ("mood", "mood × all", "products", "both scores"):
            examples = [Example(self.features(form, a), a.labels) for a in items]
            model = fit(examples, "balanced", config.l2, range(examples[0].features.shape[1]))
            mood = model if form == "mood" else None  # what `recall` runs (`MOOD_FEATURES`)
            return Model12(plain, mood, False, lambda a: model.scores(self.features(form, a)))
        x = np.vstack([a.features for a in items])
        y = np.concatenate([a.labels for a in items]).astype(np.float64)
        weight = np.concatenate(
            [np.full(len(a.labels), 1.0 / max(1, a.labels.sum())) for a in items]
        )
        linear = self._fit(convs, WIDTH, config.l2) if form == "trees on the logistic" else None
        trees = fit_trees(
            x,
            y,
            weight,
            depth=config.depth,
            rounds=config.rounds,
            shrinkage=SHRINKAGE,
            l2=LEAF_L2,
            min_hessian=MIN_HESSIAN,
            init=None if linear is None else linear.scores(x),
        )
        if linear is None:
            return Model12(plain, None, False, lambda a: trees.scores(a.features))
        return Model12(
            plain, None, False, lambda a: linear.scores(a.features) + trees.scores(a.features)
        )


def configs(form: str) -> list[Config12]:
    """Round 10's form first (it wins ties), then `form`'s grid."""
    out = [Config12("round 10", l2) for l2 in L2]
    if form == "round 10":
        return out
    if form == "trees":
        return out + [Config12(form, 10.0, d, r) for d, r in TREES]
    if form == "trees on the logistic":
        return out + [Config12(form, l2, d, STACKED_ROUNDS) for l2, d in STACKED]
    return out + [Config12(form, l2) for l2 in L2]


def moods(data: dict[str, list[Item]]) -> dict[str, Any]:
    """How many questions of each category the flag marks (of how many)."""
    marked: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for items in data.values():
        for a in items:
            total[str(a.question.category)] += 1
            marked[str(a.question.category)] += is_hypothetical(a.question.question)
    return {c: f"{marked[c]} of {total[c]}" for c in sorted(total)}


def replay(
    path: Path, cache_dir: Path, keep: dict[str, tuple[Conv6, Path]] | None = None
) -> tuple[dict[str, list[Item]], Complete]:
    """Round 10's items of every development conversation and their `both_scores`; the
    stores are closed after, or kept open in `keep` with their homes (the caller closes
    them)."""
    from bench.minilm_embedder import load_minilm

    cache = CachedEmbedder(cache_dir / "minilm.npz", load_minilm)
    started = time.perf_counter()
    data: dict[str, list[Item]] = {}
    complete: Complete = {}
    for conversation in [c for c in load_locomo(path) if c.questions]:
        conv, home, items = extract(conversation, cache)
        try:
            complete[conversation.sample_id] = {a.index: both_scores(conv, a) for a in items}
        finally:
            if keep is None:
                close(conv, home)
            else:
                keep[conversation.sample_id] = conv, home
        data[conversation.sample_id] = items
        progress(conversation.sample_id, started)
    cache.save()
    return data, complete


def close(conv: Conv6, home: Path) -> None:
    conv.memory.close()
    shutil.rmtree(home, ignore_errors=True)


def check(path: Path, cache_dir: Path) -> dict[str, Any]:
    """The mood through `recall` itself (each held-out conversation with its fold's
    models: `TUNING` with them, the turn as shipped), and `MOOD_MODEL`: the mood form on
    all five with the L2 their leave-one-out chooses."""
    keep: dict[str, tuple[Conv6, Path]] = {}
    try:
        data, complete = replay(path, cache_dir, keep)
        convs = {c: conv for c, (conv, _home) in keep.items()}
        round12 = Round12(data, complete)
        chosen = round12.folds(configs("mood"))
        results: dict[str, Any] = {"mood": round12.held_out(chosen)}
        results["recall, mood"] = through_recall(convs, data, chosen, TURNS["turn as shipped"])
        config = round12.choose(round12.conversations, configs("mood"))
        pair = round12.train(round12.conversations, config)
        found: dict[str, Any] = {"config": config.label}
        if pair.speaker is not None and len(pair.speaker.weight) == len(MOOD_FEATURES):
            found["weights"] = dict(zip(MOOD_FEATURES, pair.speaker.weight, strict=True))
            found["literal"] = model_literal(pair.speaker).replace(
                "MODEL: Final", "MOOD_MODEL: Final"
            )
        results["on all five"] = found
        return results
    finally:
        for conv, home in keep.values():
            close(conv, home)


def run(
    data: dict[str, list[Item]], complete: Complete, only: Sequence[str] = (), forced: bool = False
) -> dict[str, Any]:
    started = time.perf_counter()
    round12 = Round12(data, complete)
    results: dict[str, Any] = {"moods": moods(data)}
    results["round 10"] = round12.held_out(round12.folds(configs("round 10")))
    for form in [f for f in FORMS if not only or f in only]:
        results[form] = round12.held_out(round12.folds(configs(form)))
        if forced:  # the form's own configs in every fold (round 10's not competing)
            own = [c for c in configs(form) if c.form != "round 10"]
            results[f"{form}, forced"] = round12.held_out(round12.folds(own))
        progress(form, started)
    return results


def kept(items: Path | None, make: Callable[[], Any]) -> Any:
    """`make()`, kept in `items` (a pickle) when given: a later run reads it back instead of
    replaying the conversations (`--items`)."""
    if items is not None and items.exists():
        with items.open("rb") as f:
            return pickle.load(f)
    made = make()
    if items is not None:
        with items.open("wb") as f:
            pickle.dump(made, f)
    return made


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--only", nargs="*", default=(), choices=FORMS)
    parser.add_argument(
        "--recall", action="store_true", help="the mood through recall, and MOOD_MODEL"
    )
    parser.add_argument("--forced", action="store_true", help="also each form in every fold")
    parser.add_argument("--items", type=Path, help="keep the replayed items here (a pickle)")
    parser.add_argument("--cache-dir", type=Path, default=default_cache_dir())
    args = parser.parse_args(argv)
    if args.recall:
        results = check(args.path, args.cache_dir)
        if args.json:
            print(json.dumps(results, indent=2, default=str))
        else:
            print_rows(results, every_choice=True)
            print("on all five:", results["on all five"]["config"])
            print(results["on all five"].get("literal", "(round 10's form)"))
        return 0
    data, complete = kept(args.items, lambda: replay(args.path, args.cache_dir))
    results = run(data, complete, args.only, args.forced)
    if args.json:
        print(json.dumps(results, indent=2, default=str))
    else:
        print("moods:", json.dumps(results["moods"]))
        print_rows(results, every_choice=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
