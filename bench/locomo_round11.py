"""Issue 17, eleventh round: the named speaker's own points as a pool — each ranking's best
N among the points whose speaker trait is a name the question holds, added to the fused
candidates, measured leave-one-conversation-out (nested, as rounds 8–10).

    python -m bench.locomo_round11 /work/shared/data/locomo/locomo-dev.json [--json]

Each conversation is replayed once (`bench.locomo_round6.environment6`: the product's save
path, every point with its traits, the speaker among them). For every question:
- the product's candidates (`top 50`): both top 50s fused (the list rule's vector weight),
  round 10's 17 columns (`memory.recall_rerank.candidate_features` and `speaker_column`);
- a speaker pool (`speaker N`, `speaker N, when`): the words' and the vectors' best N
  among the points spoken by a name the question holds (`asked_speakers`: none for a
  "when" question; `, when`: `named_speakers` also for "when"), appended to each ranking
  after its top 50 (a point already there keeps its place); the fusion runs over the
  longer rankings (RRF: the top 50s' scores do not change), the features with depth
  50 + N. Two more columns: the candidate is in a speaker top N, log(1 + its best rank
  there) (log(1 + N) when not). The words' speaker top N is the word search restricted to
  those points (`candidate_ids`), the vectors' an over-fetch of every point, filtered.

Forms: `round 10` (pool `top 50`, 17 columns: the shipped form; it competes in every run
and wins ties), and for each pool the 17 columns (`, no columns`) or the 19. Each form
alone runs the nested leave-one-out against round 10 (config = form × L2 of `L2`, chosen
by a leave-one-out inside the four training conversations on recall@10, ties by @5;
trained on the four, scored on the fifth: the model's best five in the product's order,
then the rest of its ten); `all` lets the inner leave-one-out choose among every config.
`pool` reports how much of the evidence each pool holds (round 9's table). `--forced`: each
form's own configs only, in every fold (a diagnostic added after seeing the held-out rows).
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
from bench.locomo_data import Conversation, Question, load_locomo
from bench.locomo_loo import Scored, leave_one_out, progress
from bench.locomo_round6 import environment6
from bench.locomo_round7_learn import Example, fit
from bench.locomo_round8 import answer_held, print_rows, product_score
from bench.locomo_round9 import pool_coverage
from bench.locomo_round10 import ASKING, scored
from memory.recall import TUNING
from memory.recall_fusion import fuse
from memory.recall_rerank import (
    SPEAKER_FEATURES,
    LinearModel,
    asked_speakers,
    candidate_features,
    speaker_column,
)
from memory.text.answers import answer_types, question_names
from memory.text.dates import date_spans
from memory.text.shape import is_list_question
from memory.text.speakers import named_speakers
from store import point_reads

L2 = (0.1, 1.0, 10.0, 100.0)
BLOCK, TOP = 5, 10
SIZES = (25, 50, 100)
BASE_POOL = "top 50"
POOLS = (BASE_POOL, *(f"speaker {n}{w}" for n in SIZES for w in ("", ", when")))
NARROW, WIDE = len(SPEAKER_FEATURES), len(SPEAKER_FEATURES) + 2


@dataclass
class Item:
    """One question under one pool: candidates' turns (fused order), 19 columns (round 10's
    17, in a speaker pool, log speaker rank), the product's own score, the labels."""

    question: Question
    turns: list[str]
    features: np.ndarray
    product_score: np.ndarray
    labels: np.ndarray


@dataclass(frozen=True, slots=True)
class Config11:
    pool: str
    width: int
    l2: float

    @property
    def form(self) -> str:
        if self.pool == BASE_POOL:
            return "round 10"
        return self.pool + ("" if self.width == WIDE else ", no columns")

    @property
    def label(self) -> str:
        return f"{self.form} l2={self.l2:g}"


def extract(
    conversation: Conversation, cache: CachedEmbedder, depth: int = TUNING.candidates
) -> dict[str, list[Item]]:
    """Every question of `conversation` under every pool (`depth`: each ranking's length
    before the speaker pool; the product's 50, smaller in the tests)."""
    conv, home = environment6(conversation, cache)
    memory = conv.memory
    try:
        every = sorted(conv.to_turn)
        rows = point_reads.hit_rows(memory.db, every)
        with memory.db.cursor() as cur:
            memory.lexical.search(cur, "sync", 1)  # the mirror catches up with the saves
        all_traits = memory.lexical.traits_of(every)
        assert all_traits is not None
        speaker_of = np.asarray(all_traits[3])
        ids = np.asarray(every, np.int64)
        out: dict[str, list[Item]] = {pool: [] for pool in POOLS}
        for i, q in enumerate(conversation.questions):
            query = np.asarray(conv.question_vectors["question"][i], np.float32)
            tuning = TUNING
            if TUNING.list_vector_weight is not None and is_list_question(q.question):
                tuning = replace(TUNING, vector_weight=TUNING.list_vector_weight)
            vector_all = memory.vectors.search(query, len(every) + 10)
            vector = vector_all[:depth]
            spans = date_spans(q.question, memory.db.clock.now())
            kinds = answer_types(q.question)
            names = question_names(q.question) if "who" in kinds else frozenset()
            asked = asked_speakers(q.question, ASKING)
            with memory.db.cursor() as cur:
                lexical = memory.lexical.search(cur, q.question, depth)
                named_sets = {"": asked, ", when": named_speakers(q.question)}
                restricted: dict[str, list[tuple[int, float]]] = {}
                for tag, named in named_sets.items():
                    allowed = ids[np.isin(speaker_of, np.fromiter(named, np.int64, len(named)))]
                    restricted[tag] = (
                        memory.lexical.search(
                            cur, q.question, max(SIZES), candidate_ids=allowed.tolist()
                        )
                        if len(allowed)
                        else []
                    )
            for pool in POOLS:
                if pool == BASE_POOL:
                    v, lx, n, tops = vector, lexical, 0, ([], [])
                else:
                    size, _, tag = pool.removeprefix("speaker ").partition(",")
                    n = int(size)
                    tag = ", when" if tag else ""
                    named = named_sets[tag]
                    allowed_set = set(
                        ids[np.isin(speaker_of, np.fromiter(named, np.int64, len(named)))].tolist()
                    )
                    sv = [(p, s) for p, s in vector_all if p in allowed_set][:n]
                    sl = restricted[tag][:n]
                    have_v, have_l = {p for p, _ in vector}, {p for p, _ in lexical}
                    v = vector + [(p, s) for p, s in sv if p not in have_v]
                    lx = lexical + [(p, s) for p, s in sl if p not in have_l]
                    tops = (sv, sl)
                fused = fuse(v, lx, tuning)
                order = sorted(fused, key=lambda p: -fused[p])
                traits = memory.lexical.traits_of(order)
                assert traits is not None, "every replayed point has its traits"
                x = candidate_features(order, fused, v, lx, traits, spans, kinds, depth + n)
                column = speaker_column(traits[3], asked)
                assert column is not None, "every replayed point has its speaker"
                rank = np.full(len(order), float(np.log1p(max(n, 1))))
                inside = np.zeros(len(order))
                at = {p: j for j, p in enumerate(order)}
                for top in tops:
                    for r, (p, _s) in enumerate(top):
                        inside[at[p]] = 1.0
                        rank[at[p]] = min(rank[at[p]], float(np.log1p(r)))
                held = answer_held(rows, order, kinds, names)
                score = product_score(rows, order, fused, spans, held)
                turns = [conv.to_turn.get(p, "") for p in order]
                evidence = set(q.evidence)
                labels = np.array([t in evidence for t in turns])
                features = np.hstack([x, column[:, None], inside[:, None], rank[:, None]])
                out[pool].append(Item(q, turns, features, score, labels))
        return out
    finally:
        memory.close()
        shutil.rmtree(home, ignore_errors=True)


class Round11:
    def __init__(self, data: dict[str, dict[str, list[Item]]]) -> None:
        self.data = data  # pool → conversation → items
        self.conversations = list(data[BASE_POOL])
        self.cache: dict[tuple[str, int, float, tuple[str, ...]], LinearModel] = {}

    def train(self, convs: Sequence[str], config: Config11) -> LinearModel:
        key = (config.pool, config.width, config.l2, tuple(sorted(convs)))
        if key not in self.cache:
            examples = [
                Example(a.features[:, : config.width], a.labels)
                for c in convs
                for a in self.data[config.pool][c]
            ]
            self.cache[key] = fit(examples, "balanced", config.l2, range(config.width))
        return self.cache[key]

    def ranked(self, item: Item, model: LinearModel, width: int) -> list[str]:
        """The model's best five in the product's order, then the rest of its ten."""
        order = np.argsort(-model.scores(item.features[:, :width]), kind="stable")
        best = [int(i) for i in order[:TOP]]
        head = sorted(best[:BLOCK], key=lambda i: -item.product_score[i])
        tail = sorted(best[BLOCK:], key=lambda i: -item.product_score[i])
        return [item.turns[i] for i in head + tail]

    def scores(self, conv: str, config: Config11, model: LinearModel) -> list[Scored]:
        return [
            scored(a, self.ranked(a, model, config.width)) for a in self.data[config.pool][conv]
        ]

    def choose(self, training: Sequence[str], configs: Sequence[Config11]) -> Config11:
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

    def held_out(self, configs: Sequence[Config11]) -> dict[str, Any]:
        table: dict[str, list[Scored]] = {}
        chosen: dict[str, str] = {}
        for held in self.conversations:
            training = [c for c in self.conversations if c != held]
            config = self.choose(training, configs)
            table[held] = self.scores(held, config, self.train(training, config))
            chosen[held] = config.label
        result = leave_one_out({"x": table}, self.conversations, name=str)
        result["chosen"] = chosen
        return result


def added_evidence(round11: Round11, l2: float = 1.0) -> dict[str, Any]:
    """For each speaker pool with its columns (L2 `l2`, each conversation scored by the
    model of the other four): the evidence turns of multi-hop and open-domain questions
    that the pool adds to the top 50s, how many the model puts in its ten, and their
    median rank in its order (a diagnostic added after seeing the held-out rows)."""
    out: dict[str, Any] = {}
    for pool in POOLS[1:]:
        config = Config11(pool, WIDE, l2)
        added = in_ten = 0
        ranks: list[int] = []
        for held in round11.conversations:
            model = round11.train([c for c in round11.conversations if c != held], config)
            for a, b in zip(round11.data[pool][held], round11.data[BASE_POOL][held], strict=True):
                if a.question.category not in (1, 3):
                    continue
                fresh = set(a.question.evidence) & (set(a.turns) - set(b.turns))
                if not fresh:
                    continue
                order = np.argsort(-model.scores(a.features[:, :WIDE]), kind="stable")
                at = {a.turns[int(i)]: r for r, i in enumerate(order)}
                for turn in fresh:
                    added += 1
                    in_ten += at[turn] < TOP
                    ranks.append(at[turn])
        out[pool] = {
            "added": added,
            "in the ten": in_ten,
            "median rank": float(np.median(ranks)) if ranks else None,
        }
    return out


def forms(forced: bool = False) -> dict[str, list[Config11]]:
    """Each form's configs with round 10's first (it wins ties), and `all`; `forced`: each
    form's own configs only (a diagnostic: the pool in every fold, the L2 still chosen)."""
    base = [Config11(BASE_POOL, NARROW, l2) for l2 in L2]
    out: dict[str, list[Config11]] = {"round 10": base}
    every = list(base)
    for pool in POOLS[1:]:
        for width in (NARROW, WIDE):
            configs = [Config11(pool, width, l2) for l2 in L2]
            out[configs[0].form] = configs if forced else base + configs
            every += configs
    if not forced:
        out["all"] = every
    return out


def run(path: Path, cache_dir: Path, only: Sequence[str], forced: bool) -> dict[str, Any]:
    from bench.minilm_embedder import load_minilm

    conversations = [c for c in load_locomo(path) if c.questions]
    cache = CachedEmbedder(cache_dir / "minilm.npz", load_minilm)
    started = time.perf_counter()
    data: dict[str, dict[str, list[Item]]] = {pool: {} for pool in POOLS}
    for conversation in conversations:
        for pool, items in extract(conversation, cache).items():
            data[pool][conversation.sample_id] = items
        progress(conversation.sample_id, started)
    cache.save()
    results: dict[str, Any] = {"pool": pool_coverage(data)}  # type: ignore[arg-type]
    round11 = Round11(data)
    results["added evidence"] = added_evidence(round11)
    for name, configs in forms(forced).items():
        if only and name not in only and name != "round 10":
            continue
        results[name] = round11.held_out(configs)
        progress(name, started)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--only", nargs="*", default=[], help="forms to run (round 10 always)")
    parser.add_argument(
        "--forced", action="store_true", help="each pool in every fold (no round 10 competitor)"
    )
    parser.add_argument("--cache-dir", type=Path, default=default_cache_dir())
    args = parser.parse_args(argv)
    results = run(args.path, args.cache_dir, args.only, args.forced)
    if args.json:
        print(json.dumps(results, indent=2, default=str))
    else:
        print("evidence in the pool:", json.dumps(results["pool"]))
        print("evidence the pool adds:", json.dumps(results["added evidence"]))
        print_rows(results, block=False, every_choice=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
