"""Issue 17, ninth round: what lifts multi-hop and open-domain recall@10 held out, on top of
round 8's learned re-rank — each idea alone, nested leave-one-conversation-out.

    python -m bench.locomo_round9 /work/shared/data/locomo/locomo-dev.json [--json]

Each conversation is replayed once through the real save path (`bench.locomo_round6.
environment6`). For every question and every candidate pool (`POOLS`) the candidates are
the fused candidates of that pool in fused order (the list rule's vector weight, as
`recall`), their 16 product features (`memory.recall_rerank.candidate_features`, from the
word index's traits) and the pool's own extra columns:
- `top 50` (round 8, the product): the union of both top 50s;
- `top 100`: the union of both top 100s (each ranking's depth 100);
- `feedback`: the top 50s and the word index's pseudo-relevance feedback round
  (`LexicalCache.feedback_search`, seeded by the fused top `FEEDBACK_SEEDS`) as a third
  ranking, added to the fusion at `FEEDBACK_WEIGHT` as `recall`'s own feedback does; its
  presence, log rank and relative BM25 score are three more features;
- `shape`: the top 50s with the question's shape (`is_list_question`) and its products
  with the 16 features as 17 more columns.
- `vector feedback`: a Rocchio vector round (the query vector plus the mean of the fused
  top 3's) as a third ranking, the same way;
- `speaker` / `speaker, not when`: whether the candidate's speaker (the "Name: " its text
  starts with: LoCoMo's layout, not the product's points) is a name the question holds
  (0 for a "when" question in the second); `mention, not when`: a name the question holds
  in its own text; `same author` (`, not when`): its role is the one most of the fused
  top 3 have; `seed cosine`: its best and mean cosine to the fused top 3.
`stacked` (on the top 50s): a second model over the first one's day context.
`spread` (on the top 50s): the model's scores, then a greedy pick of ten over its best 30
that takes `SPREAD[i]` (standardised logit units) off a candidate for every picked one of
its day (MMR-like diversity across sessions); the λ is chosen with the L2.

Each idea's nested run: for each held-out conversation the config (the idea's pool with
an L2 of `L2`, and for spread a λ; round 8's form, pool `top 50` without spread, competes
as one of them) is chosen by a leave-one-out inside the other four (recall@10, ties by
recall@5), trained on the four, and scores the fifth — the model's best five in the
product's order, then the rest of its ten (`learned_set` 5: what search returns at k = 5
and k = 10). `pool` reports how much of the evidence each pool holds at all.
"""

from __future__ import annotations

import argparse
import json
import re
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
from bench.locomo_round6 import environment6
from bench.locomo_round7_learn import Example, fit
from bench.locomo_round8 import print_rows
from memory.recall import TUNING
from memory.recall_fusion import fuse
from memory.recall_rerank import LinearModel, candidate_features
from memory.text.answers import answer_types, holds_answer, question_names
from memory.text.dates import date_spans
from memory.text.shape import content_words, is_list_question
from store import point_reads

POOLS = (
    "top 50",
    "top 100",
    "feedback",
    "shape",
    "vector feedback",
    "speaker",
    "speaker, not when",
    "seed cosine",
    "mention, not when",
    "same author",
    "same author, not when",
    "top 100, speaker not when",
)
L2 = (0.1, 1.0, 10.0, 100.0)
SPREAD = (0.25, 0.5, 1.0)
FEEDBACK_SEEDS, FEEDBACK_TERMS, FEEDBACK_WEIGHT = 3, 8, 0.5
BLOCK, TOP = 5, 10


@dataclass
class Item:
    """One question under one pool: candidates' turns (fused order), features, the
    product's own score of each (boosts × length prior), labels, days."""

    question: Question
    turns: list[str]
    features: np.ndarray
    product_score: np.ndarray
    labels: np.ndarray
    days: np.ndarray


@dataclass(frozen=True, slots=True)
class Config9:
    pool: str
    l2: float
    spread: float = 0.0
    stack: bool = False

    @property
    def label(self) -> str:
        return (
            f"{self.pool} l2={self.l2:g}"
            + (f" spread={self.spread:g}" if self.spread else "")
            + (" stacked" if self.stack else "")
        )


@dataclass(frozen=True, slots=True)
class Scorer:
    """A model, and optionally a second one over its scores' day context (`day_context`)."""

    first: LinearModel
    second: LinearModel | None = None

    def scores(self, item: Item) -> np.ndarray:
        s = self.first.scores(item.features)
        if self.second is None:
            return s
        return self.second.scores(np.hstack([item.features, day_context(s, item.days)]))


def day_context(s: np.ndarray, days: np.ndarray) -> np.ndarray:
    """Per candidate, from the first model's scores `s`: its score, the log of its rank,
    the best score of another candidate of its day (the lowest score when none), and the
    log of 1 + how many of the first model's ten share its day (itself left out)."""
    n = len(s)
    out = np.zeros((n, 4))
    if not n:
        return out
    order = np.argsort(-s, kind="stable")
    rank = np.empty(n)
    rank[order] = np.arange(n)
    out[:, 0] = s
    out[:, 1] = np.log1p(rank)
    low = float(s.min())
    top = rank < TOP
    for day in np.unique(days):
        at = np.flatnonzero(days == day)
        values = s[at]
        if len(at) > 1:
            first, second = np.sort(values)[::-1][:2]
            out[at, 2] = np.where(values == first, second, first)
        else:
            out[at, 2] = low
        count = int(top[at].sum())
        out[at, 3] = np.log1p(count - top[at])
    return out


def extract(
    conversation: Conversation, cache: CachedEmbedder
) -> tuple[dict[str, list[Item]], Path]:
    """Every question of `conversation` under every pool."""
    conv, home = environment6(conversation, cache)
    memory = conv.memory
    try:
        rows = point_reads.hit_rows(memory.db, sorted(conv.to_turn))
        words = {p: content_words(r.content) for p, r in rows.items()}
        out: dict[str, list[Item]] = {pool: [] for pool in POOLS}
        for i, q in enumerate(conversation.questions):
            query = np.asarray(conv.question_vectors["question"][i], np.float32)
            tuning = TUNING
            if TUNING.list_vector_weight is not None and is_list_question(q.question):
                tuning = replace(TUNING, vector_weight=TUNING.list_vector_weight)
            vector100 = memory.vectors.search(query, 100)
            with memory.db.cursor() as cur:
                lexical100 = memory.lexical.search(cur, q.question, 100)
            vector, lexical = vector100[:50], lexical100[:50]
            spans = date_spans(q.question, memory.db.clock.now())
            kinds = answer_types(q.question)
            names = question_names(q.question) if "who" in kinds else frozenset()
            fused50 = fuse(vector, lexical, tuning)
            seeds = sorted(fused50, key=lambda p: -fused50[p])[:FEEDBACK_SEEDS]
            second = memory.lexical.feedback_search(q.question, seeds, FEEDBACK_TERMS, 50)
            fused_fb = dict(fused50)
            for rank, (pid, _s) in enumerate(second, start=1):
                fused_fb[pid] = fused_fb.get(pid, 0.0) + FEEDBACK_WEIGHT / (tuning.rrf_k + rank)
            shaped = float(is_list_question(q.question))
            rocchio = query + sum(conv.unit[p] for p in seeds if p in conv.unit) / max(
                1, len(seeds)
            )
            third = memory.vectors.search(
                np.asarray(rocchio / np.linalg.norm(rocchio), np.float32), 50
            )
            fused_vf = dict(fused50)
            for rank, (pid, _s) in enumerate(third, start=1):
                fused_vf[pid] = fused_vf.get(pid, 0.0) + FEEDBACK_WEIGHT / (tuning.rrf_k + rank)
            named = {w.lower() for w in re.findall(r"[A-Z][a-z]+", q.question)}
            for pool in POOLS:
                if pool in ("top 100", "top 100, speaker not when"):
                    fused, v, lx, depth = (
                        fuse(vector100, lexical100, tuning),
                        vector100,
                        lexical100,
                        100,
                    )
                elif pool == "feedback":
                    fused, v, lx, depth = fused_fb, vector, lexical, 50
                elif pool == "vector feedback":
                    fused, v, lx, depth = fused_vf, vector, lexical, 50
                else:
                    fused, v, lx, depth = fused50, vector, lexical, 50
                order = sorted(fused, key=lambda p: -fused[p])
                traits = memory.lexical.traits_of(order)
                assert traits is not None, "every replayed point has its traits"
                x = candidate_features(order, fused, v, lx, traits, spans, kinds, depth)
                if pool == "feedback":
                    x = np.hstack([x, _ranking_columns(order, second, 50)])
                elif pool == "vector feedback":
                    x = np.hstack([x, _ranking_columns(order, third, 50)])
                elif pool == "speaker":
                    who = [_speaker(rows[p].content) in named for p in order]
                    x = np.hstack([x, np.array(who, np.float64)[:, None]])
                elif pool in ("same author", "same author, not when"):
                    gate = pool == "same author" or "when" not in kinds
                    author = _top_author([rows[p].role for p in order[:3]])
                    same = np.array([rows[p].role == author for p in order], np.float64)
                    x = np.hstack([x, same[:, None] * gate])
                elif pool == "mention, not when":
                    said = [_mentions(rows[p].content, named) for p in order]
                    gate = "when" not in kinds
                    x = np.hstack([x, np.array(said, np.float64)[:, None] * gate])
                elif pool == "seed cosine":
                    x = np.hstack([x, _seed_cosines(order, seeds, conv.unit)])
                elif pool in ("speaker, not when", "top 100, speaker not when"):
                    who = [_speaker(rows[p].content) in named for p in order]
                    asks_when = "when" in kinds
                    x = np.hstack([x, np.array(who, np.float64)[:, None] * (not asks_when)])
                elif pool == "shape":
                    x = np.hstack([x, np.full((len(order), 1), shaped), x * shaped])
                held = np.array(
                    [bool(kinds) and holds_answer(rows[p].content, kinds, names) for p in order]
                )
                dated = np.array(
                    [any(s.contains(rows[p].created_at) for s in spans) for p in order]
                )
                n = np.array([words[p] for p in order], np.float64)
                score = (
                    np.array([fused[p] for p in order])
                    * (1 + TUNING.date_boost * dated)
                    * (1 + TUNING.answer_boost * held)
                    * n
                    / (n + TUNING.length_prior)
                )
                turns = [conv.to_turn.get(p, "") for p in order]
                evidence = set(q.evidence)
                labels = np.array([t in evidence for t in turns])
                out[pool].append(Item(q, turns, x, score, labels, traits[1].copy()))
        return out, home
    finally:
        memory.close()


def _speaker(content: str) -> str:
    """The "Name: " a LoCoMo turn's stored text starts with, lower-cased ("" without)."""
    head = re.match(r"^([A-Z][\w'-]{0,40}): ", content)
    return head.group(1).lower() if head else ""


def _top_author(roles: Sequence[str]) -> str:
    """The role most of the fused top 3 have (the first one's on a tie)."""
    return max(roles, key=roles.count) if roles else ""


def _mentions(content: str, named: set[str]) -> bool:
    """The turn's own text (after its "Name: ") holds a name the question holds."""
    own = content.split(": ", 1)[1] if _speaker(content) else content
    return bool(named & {w.lower() for w in re.findall(r"[A-Z][a-z]+", own)})


def _seed_cosines(
    order: Sequence[int], seeds: Sequence[int], unit: dict[int, np.ndarray]
) -> np.ndarray:
    """Per candidate, the best and the mean cosine to the fused top seeds (itself left
    out): how near it lies to what the first round found (vector pseudo-relevance)."""
    cols = np.zeros((len(order), 2))
    found = [s for s in seeds if s in unit]
    if not found:
        return cols
    seed_vectors = np.stack([unit[s] for s in found])
    for i, pid in enumerate(order):
        if pid not in unit:
            continue
        cos = seed_vectors @ unit[pid]
        others = cos[[s != pid for s in found]]
        if len(others):
            cols[i] = (others.max(), others.mean())
    return cols


def _ranking_columns(
    order: Sequence[int], ranking: Sequence[tuple[int, float]], depth: int
) -> np.ndarray:
    """In the ranking, the log of its rank (depth when absent), its score relative to the best."""
    cols = np.zeros((len(order), 3))
    cols[:, 1] = np.log1p(depth)
    best = max((s for _, s in ranking), default=0.0)
    at = {p: i for i, p in enumerate(order)}
    for rank, (pid, s) in enumerate(ranking):
        if pid in at:
            cols[at[pid]] = (1.0, np.log1p(rank), s / best if best > 0 else 0.0)
    return cols


def scored(item: Item, top: Sequence[str]) -> Scored:
    evidence = set(item.question.evidence)
    return Scored(
        score_question(list(top), item.question, KS),
        len(evidence & set(top[:BLOCK])) / len(evidence),
    )


class Round9:
    def __init__(self, data: dict[str, dict[str, list[Item]]]) -> None:
        self.data = data  # pool → conversation → items
        self.conversations = list(data[POOLS[0]])
        self.cache: dict[tuple[Config9, tuple[str, ...]], Scorer] = {}

    def train(self, convs: Sequence[str], config: Config9) -> Scorer:
        key = (replace(config, spread=0.0), tuple(sorted(convs)))
        if key not in self.cache:
            items = [a for c in convs for a in self.data[config.pool][c]]
            width = items[0].features.shape[1]
            first = fit(
                [Example(a.features, a.labels) for a in items], "balanced", config.l2, range(width)
            )
            second = None
            if config.stack:
                wide = [
                    Example(
                        np.hstack([a.features, day_context(first.scores(a.features), a.days)]),
                        a.labels,
                    )
                    for a in items
                ]
                second = fit(wide, "balanced", config.l2, range(width + 4))
            self.cache[key] = Scorer(first, second)
        return self.cache[key]

    def ranked(self, item: Item, model: Scorer, spread: float) -> list[str]:
        """The model's best five in the product's order, then the rest of its ten."""
        scores = model.scores(item)
        if spread:
            best = _spread_pick(scores, item.days, spread)
        else:
            best = [int(i) for i in np.argsort(-scores, kind="stable")[:TOP]]
        head = sorted(best[:BLOCK], key=lambda i: -item.product_score[i])
        tail = sorted(best[BLOCK:], key=lambda i: -item.product_score[i])
        return [item.turns[i] for i in head + tail]

    def scores(self, conv: str, config: Config9, model: Scorer) -> list[Scored]:
        return [
            scored(a, self.ranked(a, model, config.spread)) for a in self.data[config.pool][conv]
        ]

    def criterion(self, conv: str, config: Config9, model: Scorer) -> float:
        rows = self.scores(conv, config, model)
        return float(np.mean([r.score.recall[10] + 1e-4 * r.score.recall[5] for r in rows]))

    def choose(self, training: Sequence[str], configs: Sequence[Config9]) -> Config9:
        """The config of the best mean criterion over leave-one-out inside `training` (the
        first on ties: round 8's form is listed first)."""
        best, best_value = configs[0], -1.0
        for config in configs:
            values = []
            for held in training:
                model = self.train([c for c in training if c != held], config)
                values += [
                    r.score.recall[10] + 1e-4 * r.score.recall[5]
                    for r in self.scores(held, config, model)
                ]
            value = float(np.mean(values))
            if value > best_value + 1e-12:
                best, best_value = config, value
        return best

    def nested(self, configs: Sequence[Config9]) -> dict[str, Any]:
        table: dict[str, list[Scored]] = {}
        chosen: dict[str, str] = {}
        for held in self.conversations:
            training = [c for c in self.conversations if c != held]
            config = self.choose(training, configs)
            chosen[held] = config.label
            table[held] = self.scores(held, config, self.train(training, config))
        result = leave_one_out({"x": table}, self.conversations, name=str)
        result["chosen"] = chosen
        return result


def _spread_pick(scores: np.ndarray, days: np.ndarray, spread: float, depth: int = 30) -> list[int]:
    """Ten of the best `depth` by score minus `spread` for each picked one of the same day."""
    pool = [int(i) for i in np.argsort(-scores, kind="stable")[:depth]]
    picked: list[int] = []
    per_day: dict[int, int] = {}
    while pool and len(picked) < TOP:
        at = max(
            range(len(pool)),
            key=lambda j: scores[pool[j]] - spread * per_day.get(int(days[pool[j]]), 0),
        )
        i = pool.pop(at)
        picked.append(i)
        per_day[int(days[i])] = per_day.get(int(days[i]), 0) + 1
    return picked


def pool_coverage(data: dict[str, dict[str, list[Item]]]) -> dict[str, Any]:
    """The share of the evidence each pool holds (mean over questions, per category), and
    its mean size."""
    out: dict[str, Any] = {}
    for pool, convs in data.items():
        per: dict[str, list[float]] = {}
        sizes: list[int] = []
        for items in convs.values():
            for a in items:
                ev = set(a.question.evidence)
                share = len(ev & set(a.turns)) / len(ev)
                per.setdefault("all", []).append(share)
                per.setdefault(str(a.question.category), []).append(share)
                sizes.append(len(a.turns))
        out[pool] = {k: round(float(np.mean(v)), 3) for k, v in sorted(per.items())}
        out[pool]["size"] = round(float(np.mean(sizes)), 1)
    return out


def ideas() -> dict[str, list[Config9]]:
    base = [Config9("top 50", l2) for l2 in L2]
    return {
        "round 8 (top 50)": base,
        "top 100": base + [Config9("top 100", l2) for l2 in L2],
        "feedback": base + [Config9("feedback", l2) for l2 in L2],
        "shape": base + [Config9("shape", l2) for l2 in L2],
        "vector feedback": base + [Config9("vector feedback", l2) for l2 in L2],
        "speaker": base + [Config9("speaker", l2) for l2 in L2],
        "speaker, not when": base + [Config9("speaker, not when", l2) for l2 in L2],
        "top 100, speaker not when": [Config9("speaker, not when", l2) for l2 in L2]
        + [Config9("top 100, speaker not when", l2) for l2 in L2],
        "same author": base + [Config9("same author", l2) for l2 in L2],
        "same author, not when": base + [Config9("same author, not when", l2) for l2 in L2],
        "mention, not when": base + [Config9("mention, not when", l2) for l2 in L2],
        "seed cosine": base + [Config9("seed cosine", l2) for l2 in L2],
        "stacked": base + [Config9("top 50", l2, stack=True) for l2 in L2],
        "spread": base + [Config9("top 50", l2, s) for l2 in L2 for s in SPREAD],
    }


def run(path: Path, cache_dir: Path, only: Sequence[str] = ()) -> dict[str, Any]:
    from bench.minilm_embedder import load_minilm

    conversations = [c for c in load_locomo(path) if c.questions]
    cache = CachedEmbedder(cache_dir / "minilm.npz", load_minilm)
    started = time.perf_counter()
    data: dict[str, dict[str, list[Item]]] = {pool: {} for pool in POOLS}
    for conversation in conversations:
        per_pool, home = extract(conversation, cache)
        shutil.rmtree(home, ignore_errors=True)
        for pool, items in per_pool.items():
            data[pool][conversation.sample_id] = items
        progress(conversation.sample_id, started)
    cache.save()
    results: dict[str, Any] = {"pool": pool_coverage(data)}
    round9 = Round9(data)
    for name, configs in ideas().items():
        if only and name not in only and name != "round 8 (top 50)":
            continue
        results[name] = round9.nested(configs)
        progress(name, started)
    return results


def print_round(results: dict[str, Any]) -> None:
    print("evidence in the pool:", json.dumps(results["pool"]))
    print_rows(results, block=False, every_choice=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--only", nargs="*", default=(), help="ideas to run (round 8 always)")
    parser.add_argument("--cache-dir", type=Path, default=default_cache_dir())
    args = parser.parse_args(argv)
    results = run(args.path, args.cache_dir, args.only)
    if args.json:
        print(json.dumps(results, indent=2, default=str))
    else:
        print_round(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
