"""Issue 17, tenth round: the speaker trait in product form — round 9's "speaker, not when"
column computed as the product computes it (`store.point_traits`' speaker hash, the
question's `memory.text.speakers.named_speakers`), measured leave-one-conversation-out,
then run through `recall` itself.

    python -m bench.locomo_round10 /work/shared/data/locomo/locomo-dev.json [--json] [--weights]

Each conversation is replayed once through the real save path (`bench.locomo_round6.
environment6`: every point gets its traits, the speaker among them, on save). For every
question the candidates are every fused candidate in fused order (the list rule's vector
weight: what `recall` ranks), their 16 features (`memory.recall_rerank.
candidate_features`) and the 17th column (`speaker_column` of the mirror's speakers and
`asked_speakers`: 0 for a "when" question).

Forms (each config an L2 of `L2`; round 8's form competes in every run and wins ties; the
config is chosen by a leave-one-out inside the four training conversations, recall@10,
ties by recall@5, then trained on the four and scored on the fifth: the model's best five
in the product's order, then the rest of its ten — the shipped `learned_set` 5):
- `round 8`: the 16 features (reproduces round 8's held-out numbers);
- `speaker` (the product's `RecallTuning.speaker`, round 9's form): the 17-column model
  ranks a question whose candidates carry speakers (on LoCoMo every one), round 8's
  16-column model (same L2) the others;
- `speaker, gated on a name`: the 17-column model only where a candidate's speaker is
  named (measured first, not shipped: it loses 0.002 @10).
`recall, …` rows run `recall` itself on each held-out conversation with its fold's models:
top 5 (k = 5), top 10, and the turn's block (`in_block`: `TURN_TUNING` as shipped — no
re-rank —, with round 8's model, and with the model and the speaker). `names` counts what
the query-side rule sees (first words that are a speaker, hash collisions). `--weights`
prints the 17-column model trained on all five with the L2 their leave-one-out chooses
(the constants of `memory.recall_models.SPEAKER_MODEL`).
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from collections.abc import Callable, Sequence
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
from bench.locomo_round7_learn import Example, fit
from bench.locomo_round8 import answer_held, model_literal, print_rows, product_score
from memory.recall import TUNING, TURN_TUNING, RecallTuning
from memory.recall_fusion import fuse
from memory.recall_models import MODEL
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
from memory.text.speakers import speaker_hash
from store import point_reads

L2 = (0.1, 1.0, 10.0, 100.0)
BLOCK, TOP = 5, 10
FORMS = ("round 8", "speaker", "speaker, gated on a name")
ASKING = replace(TUNING, speaker=MODEL)  # any model: `asked_speakers` only asks "is it on"


@dataclass
class Item:
    """One question: its candidates' turns (fused order), the 17 columns, the product's
    own score of each (boosts × length prior), the labels."""

    question: Question
    index: int
    turns: list[str]
    features: np.ndarray
    product_score: np.ndarray
    labels: np.ndarray
    speakers: bool
    """The candidates carry speakers (the product's gate for the 17-column model)."""

    @property
    def named(self) -> bool:
        """A candidate's speaker is a name the question holds (the gate)."""
        return bool(self.features[:, -1].any())


@dataclass(frozen=True, slots=True)
class Config10:
    form: str
    l2: float

    @property
    def label(self) -> str:
        return f"{self.form} l2={self.l2:g}"


@dataclass(frozen=True, slots=True)
class Pair:
    """A fold's models: round 8's 16 columns, and the 17-column one (None: round 8)."""

    plain: LinearModel
    speaker: LinearModel | None
    gated: bool  # on a named speaker, else on speakers present (the product)

    def scores(self, item: Item) -> np.ndarray:
        if self.speaker is not None and (item.named if self.gated else item.speakers):
            return self.speaker.scores(item.features)
        return self.plain.scores(item.features[:, :-1])


def extract(conversation: Conversation, cache: CachedEmbedder) -> tuple[Conv6, Path, list[Item]]:
    """Every question of `conversation` (the store stays open for `recall` runs)."""
    conv, home = environment6(conversation, cache)
    memory = conv.memory
    rows = point_reads.hit_rows(memory.db, sorted(conv.to_turn))
    items: list[Item] = []
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
        column = speaker_column(traits[3], asked_speakers(q.question, ASKING))
        assert column is not None, "every replayed point has its speaker"
        held = answer_held(rows, order, kinds, names)
        score = product_score(rows, order, fused, spans, held)
        turns = [conv.to_turn.get(p, "") for p in order]
        evidence = set(q.evidence)
        labels = np.array([t in evidence for t in turns])
        present = bool(np.any(traits[3] != 0))
        items.append(Item(q, i, turns, np.hstack([x, column[:, None]]), score, labels, present))
    return conv, home, items


def scored(item: Item, top: Sequence[str], block: set[str] | None = None) -> Scored:
    evidence = set(item.question.evidence)
    held = set(top[:BLOCK]) if block is None else block
    return Scored(
        score_question(list(top), item.question, KS), len(evidence & held) / len(evidence)
    )


class Round10:
    def __init__(self, data: dict[str, list[Item]]) -> None:
        self.data = data
        self.conversations = list(data)
        self.cache: dict[tuple[str, float, tuple[str, ...]], LinearModel] = {}

    def _fit(self, convs: Sequence[str], width: int, l2: float) -> LinearModel:
        key = (str(width), l2, tuple(sorted(convs)))
        if key not in self.cache:
            examples = [
                Example(a.features[:, :width], a.labels) for c in convs for a in self.data[c]
            ]
            self.cache[key] = fit(examples, "balanced", l2, range(width))
        return self.cache[key]

    def train(self, convs: Sequence[str], config: Config10) -> Pair:
        width = len(SPEAKER_FEATURES)
        plain = self._fit(convs, width - 1, config.l2)
        if config.form == "round 8":
            return Pair(plain, None, False)
        gated = config.form == "speaker, gated on a name"
        return Pair(plain, self._fit(convs, width, config.l2), gated)

    def ranked(self, item: Item, model: Pair) -> list[str]:
        """The model's best five in the product's order, then the rest of its ten."""
        best = [int(i) for i in np.argsort(-model.scores(item), kind="stable")[:TOP]]
        head = sorted(best[:BLOCK], key=lambda i: -item.product_score[i])
        tail = sorted(best[BLOCK:], key=lambda i: -item.product_score[i])
        return [item.turns[i] for i in head + tail]

    def scores(self, conv: str, model: Pair) -> list[Scored]:
        return [scored(a, self.ranked(a, model)) for a in self.data[conv]]

    def choose(self, training: Sequence[str], configs: Sequence[Config10]) -> Config10:
        """The config of the best mean criterion over leave-one-out inside `training` (the
        first on ties: round 8's form is listed first)."""
        best, best_value = configs[0], -1.0
        for config in configs:
            values = []
            for held in training:
                model = self.train([c for c in training if c != held], config)
                values += [
                    r.score.recall[10] + 1e-4 * r.score.recall[5] for r in self.scores(held, model)
                ]
            value = float(np.mean(values))
            if value > best_value + 1e-12:
                best, best_value = config, value
        return best

    def folds(self, configs: Sequence[Config10]) -> dict[str, tuple[Config10, Pair]]:
        chosen: dict[str, tuple[Config10, Pair]] = {}
        for held in self.conversations:
            training = [c for c in self.conversations if c != held]
            config = self.choose(training, configs)
            chosen[held] = (config, self.train(training, config))
        return chosen

    def held_out(self, chosen: dict[str, tuple[Config10, Pair]]) -> dict[str, Any]:
        table = {c: self.scores(c, pair) for c, (_config, pair) in chosen.items()}
        result = leave_one_out({"x": table}, self.conversations, name=str)
        result["chosen"] = {c: config.label for c, (config, _p) in chosen.items()}
        return result


def configs(form: str) -> list[Config10]:
    base_ = [Config10("round 8", l2) for l2 in L2]
    return base_ if form == "round 8" else base_ + [Config10(form, l2) for l2 in L2]


def product_recall(
    conv: Conv6, item: Item, search: RecallTuning, turn: RecallTuning
) -> tuple[list[str], set[str]]:
    """`recall` itself: its top 5 (k = 5), then the rest of its top 10 (k = 10) with
    `search`, and the turns in the turn's block with `turn`."""
    vector = conv.question_vectors["question"][item.index]
    memory = conv.memory
    query = item.question.question
    top: list[str] = []
    for k in (BLOCK, TOP):
        result = memory.recall(query, vector=vector, k=k, tuning=search)
        top += [conv.to_turn[h.id] for h in result.hits if h.id in conv.to_turn]
    top = list(dict.fromkeys(top))
    block = memory.recall(query, vector=vector, tuning=turn)
    return top, {conv.to_turn[h.id] for h in block.in_block() if h.id in conv.to_turn}


TurnOf = Callable[[Pair], RecallTuning]
TURNS: dict[str, TurnOf] = {
    "turn as shipped": lambda pair: TURN_TUNING,
    "turn with round 8's model": lambda pair: replace(TURN_TUNING, learned=pair.plain),
    "turn with the model and the speaker": lambda pair: replace(
        TURN_TUNING, learned=pair.plain, speaker=pair.speaker
    ),
}


def through_recall(
    convs: dict[str, Conv6],
    data: dict[str, list[Item]],
    chosen: dict[str, tuple[Config10, Pair]],
    turn: TurnOf,
) -> dict[str, Any]:
    """`recall` itself on each held-out conversation with its fold's models."""
    table: dict[str, list[Scored]] = {}
    for c, items in data.items():
        pair = chosen[c][1]
        search = replace(TUNING, learned=pair.plain, speaker=pair.speaker)
        table[c] = [scored(a, *product_recall(convs[c], a, search, turn(pair))) for a in items]
    result = leave_one_out({"recall": table}, list(data), name=str)
    result["chosen"] = {c: config.label for c, (config, _p) in chosen.items()}
    return result


def name_counts(conversations: Sequence[Conversation]) -> dict[str, Any]:
    """What the query side sees: questions naming a speaker, those whose first word is one,
    "when" questions among them, and question words whose hash meets a speaker's."""
    out = {"questions": 0, "name a speaker": 0, "first word a speaker": 0, "collisions": 0}
    for conversation in conversations:
        speakers = {t.speaker.lower() for t in conversation.turns}
        hashes = {speaker_hash(s): s for s in speakers}
        for q in conversation.questions:
            words = [w.strip("?,.!'\"").removesuffix("'s") for w in q.question.split()]
            lowered = [w.lower() for w in words if w[:1].isupper()]
            out["questions"] += 1
            out["name a speaker"] += any(w in speakers for w in lowered)
            out["first word a speaker"] += bool(words) and words[0].lower() in speakers
            out["collisions"] += sum(
                1 for w in lowered if w not in speakers and speaker_hash(w) in hashes
            )
    return out


def run(path: Path, cache_dir: Path, weights: bool, turn: bool) -> dict[str, Any]:
    from bench.minilm_embedder import load_minilm

    conversations = [c for c in load_locomo(path) if c.questions]
    cache = CachedEmbedder(cache_dir / "minilm.npz", load_minilm)
    started = time.perf_counter()
    convs: dict[str, Conv6] = {}
    homes: list[Path] = []
    data: dict[str, list[Item]] = {}
    try:
        for conversation in conversations:
            conv, home, items = extract(conversation, cache)
            convs[conversation.sample_id], data[conversation.sample_id] = conv, items
            homes.append(home)
            progress(conversation.sample_id, started)
        cache.save()
        results: dict[str, Any] = {"names": name_counts(conversations)}
        round10 = Round10(data)
        chosen = {form: round10.folds(configs(form)) for form in FORMS}
        for form in FORMS:
            results[form] = round10.held_out(chosen[form])
        progress("simulated", started)
        results["recall, round 8"] = through_recall(
            convs, data, chosen["round 8"], TURNS["turn with round 8's model"]
        )
        results["recall, speaker"] = through_recall(
            convs, data, chosen["speaker"], TURNS["turn with the model and the speaker"]
        )
        if turn:
            results["recall, round 8, turn as shipped"] = through_recall(
                convs, data, chosen["round 8"], TURNS["turn as shipped"]
            )
        progress("through recall", started)
        if weights:
            config = round10.choose(round10.conversations, configs("speaker"))
            pair = round10.train(round10.conversations, config)
            found: dict[str, Any] = {"config": config.label}
            if pair.speaker is not None:
                found["weights"] = dict(zip(SPEAKER_FEATURES, pair.speaker.weight, strict=True))
                found["literal"] = model_literal(pair.speaker).replace(
                    "MODEL: Final", "SPEAKER_MODEL: Final"
                )
                found["plain is MODEL"] = bool(
                    np.allclose(pair.plain.weight, MODEL.weight, rtol=1e-4, atol=1e-5)
                )
            results["on all five"] = found
        return results
    finally:
        for conv in convs.values():
            conv.memory.close()
        for home in homes:
            shutil.rmtree(home, ignore_errors=True)


def print_round(results: dict[str, Any]) -> None:
    print("names:", json.dumps(results["names"]))
    print_rows(results, every_choice=True)
    if "on all five" in results:
        found = results["on all five"]
        print(f"on all five: {found['config']}; its 16-column model is MODEL: ", end="")
        print(found.get("plain is MODEL"))
        if "literal" in found:
            print(found["literal"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--weights", action="store_true", help="print the model on all five")
    parser.add_argument("--turn", action="store_true", help="also the turn's block as shipped")
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
