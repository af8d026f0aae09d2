"""The rankers of the fifth recall round (`bench/locomo_round5.py`): one question of one
conversation → its top 10 point ids.

Every prototype starts from the product's two rankings of the question (`Base`: the vector
top 50 from the index and the word top 50 from the word index, fused with the product's
RRF, `memory.recall_fusion.fuse`) and changes one thing — a prior on the point, a shape rule on
the question, the neighbours' fused scores, a third ranking, or a re-ranking of the top
`DEPTH` (what the product's re-rank reads: `RecallTuning.rerank_depth`). With no pins, the
floor at 0 and nothing excluded, sorting the fused scores is what `recall` does, so each
family's variant at the product's values ranks exactly as `MemoryStore.recall`
(tests/test_locomo_round5.py checks it, and `run` counts any question where it does not).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

import numpy as np

from bench.locomo_data import Question
from memory.memory_store import MemoryStore
from memory.recall import TUNING, RecallTuning
from memory.recall_fusion import fuse
from memory.text.dates import date_spans
from memory.text.shape import is_list_question
from store import bm25

TOP = 10
BEFORE = replace(
    TUNING, length_prior=0.0, list_vector_weight=None, date_boost=0.0, answer_boost=0.0
)
"""The product before this round (every prototype is a change of it)."""
ROUND5 = replace(TUNING, date_boost=0.0, answer_boost=0.0)
"""The product this round shipped (the sixth round turned the date and answer boosts on)."""
DATED = replace(TUNING, answer_boost=0.0)
"""Family 7 as the sixth round shipped it: `ROUND5` with the date boost on."""
DEPTH = TUNING.rerank_depth
"""How many fused candidates a re-ranking looks at (the product reads their rows)."""


@dataclass
class Conv:
    """One replayed conversation: its store, the point ↔ turn maps, and what the
    prototypes need of a point (its session, its own text's distinct content words and
    terms in order, its unit vector) and of a question (its vectors by form)."""

    memory: MemoryStore
    to_turn: dict[int, str]
    session: dict[int, int]
    content_words: dict[str, dict[int, int]]
    """By source ("content": the stored text, as the product counts it; "text": the turn
    without the speaker's name; "bare": without an image's caption too): point → its
    distinct content words (`memory.text.shape.content_words`)."""
    own_terms: dict[int, list[str]]
    unit: dict[int, np.ndarray]
    question_vectors: dict[str, list[list[float]]]
    when: dict[int, datetime] = field(default_factory=dict)
    base_cache: dict[int, Base] = field(default_factory=dict)


@dataclass
class Base:
    """The product's rankings of one question: vector, words, and their RRF fusion."""

    vector: list[tuple[int, float]]
    lexical: list[tuple[int, float]]
    fused: dict[int, float]


Ranker = Callable[[Conv, int, Question], list[int]]


def base(conv: Conv, index: int, question: Question) -> Base:
    """The question's two rankings, as `recall` makes them (kept per question)."""
    found = conv.base_cache.get(index)
    if found is None:
        memory = conv.memory
        query = np.asarray(conv.question_vectors["question"][index], np.float32)
        vector = memory.vectors.search(query, TUNING.candidates)
        with memory.db.cursor() as cur:
            lexical = memory.lexical.search(cur, question.question, TUNING.candidates)
        found = conv.base_cache[index] = Base(vector, lexical, fuse(vector, lexical, TUNING))
    return found


def _top(scores: dict[int, float], k: int = TOP) -> list[int]:
    return sorted(scores, key=lambda p: -scores[p])[:k]


def _rerank(
    conv: Conv, b: Base, score: Callable[[int, float], float], depth: int = DEPTH
) -> list[int]:
    """The top `depth` fused candidates re-scored by `score(pid, fused)`, then the rest."""
    order = _top(b.fused, len(b.fused))
    head = order[:depth]
    rescored = {pid: score(pid, b.fused[pid]) for pid in head}
    return (_top(rescored, len(head)) + order[depth:])[:TOP]


def product_ranker(tuning: RecallTuning = BEFORE) -> Ranker:
    """`MemoryStore.recall` itself, the product's tuning before this round (or `tuning`)."""

    def rank(conv: Conv, index: int, question: Question) -> list[int]:
        vector = conv.question_vectors["question"][index]
        result = conv.memory.recall(question.question, vector=vector, k=TOP, tuning=tuning)
        return [hit.id for hit in result.hits]

    return rank


def same_as_product() -> Ranker:
    """The prototype path with nothing changed: must rank as `product_ranker()`."""

    def rank(conv: Conv, index: int, question: Question) -> list[int]:
        return _top(base(conv, index, question).fused)

    return rank


# -- 1. a query-independent prior on a point: how many content words it has


def prior_multiplier(
    c: float, depth: int = DEPTH, words: str = "content", lists_at: float | None = None
) -> Ranker:
    """The fused score times n / (n + c), n the point's distinct content words (index
    terms of its `words` source): "wow, that's great!" (n = 1, c = 2) keeps a third of its
    score, a turn of 15 words nine tenths; over the top `depth` candidates (10: only the
    order inside the top 10 changes, so recall@10 cannot). c = 0: the product; c = inf:
    the fused score times n.
    `lists_at`: list questions fused at this vector weight first (`list_weights`)."""

    def rank(conv: Conv, index: int, question: Question) -> list[int]:
        counts = conv.content_words[words]
        b = base(conv, index, question)
        if lists_at is not None and is_list_question(question.question):
            b = Base(
                b.vector,
                b.lexical,
                fuse(b.vector, b.lexical, replace(TUNING, vector_weight=lists_at)),
            )

        def score(pid: int, fused: float) -> float:
            n = counts.get(pid, 0)
            if math.isinf(c):
                return fused * n
            return fused * n / (n + c) if n + c > 0 else fused  # as `recall` computes it

        return _rerank(conv, b, score, depth)

    return rank


def prior_floor(least: int) -> Ranker:
    """Candidates with fewer than `least` content words dropped (0: the product)."""

    def rank(conv: Conv, index: int, question: Question) -> list[int]:
        fused = base(conv, index, question).fused
        words = conv.content_words["content"]
        kept = {p: s for p, s in fused.items() if words.get(p, 0) >= least}
        return _top(kept)

    return rank


def prior_tie_break() -> Ranker:
    """Equal fused scores (RRF gives ties: vector rank 12 = word rank 1 at half weight)
    broken by more content words first."""

    def rank(conv: Conv, index: int, question: Question) -> list[int]:
        fused = base(conv, index, question).fused
        words = conv.content_words["content"]
        order = sorted(fused, key=lambda p: (-round(fused[p], 12), -words.get(p, 0)))
        return order[:TOP]

    return rank


# -- 2. the question's shape: lists ("what activities / books / places …",
# `memory.text.shape.is_list_question`, the rule the product would run)


def list_weights(vector_weight: float) -> Ranker:
    """For a list question, the vector ranking at `vector_weight` (the words' share of the
    slots up when it falls); other questions as the product."""

    def rank(conv: Conv, index: int, question: Question) -> list[int]:
        b = base(conv, index, question)
        if not is_list_question(question.question):
            return _top(b.fused)
        tuning = replace(TUNING, vector_weight=vector_weight)
        return _top(fuse(b.vector, b.lexical, tuning))

    return rank


def _dedupe(conv: Conv, order: Sequence[int], threshold: float) -> list[int]:
    """Greedy: a candidate whose vector has cosine ≥ `threshold` with a hit already taken
    goes after every other candidate (near-duplicates last, MMR with a hard cut)."""
    taken: list[int] = []
    later: list[int] = []
    for pid in order:
        vec = conv.unit.get(pid)
        if vec is not None and any(
            float(vec @ conv.unit[t]) >= threshold for t in taken if t in conv.unit
        ):
            later.append(pid)
        else:
            taken.append(pid)
    return [*taken, *later]


def dedupe_ranker(threshold: float, *, lists_only: bool) -> Ranker:
    """Near-duplicate hits (cosine ≥ `threshold` with a better hit) moved behind the top
    `DEPTH`'s others — for list questions only, or for every question."""

    def rank(conv: Conv, index: int, question: Question) -> list[int]:
        b = base(conv, index, question)
        order = _top(b.fused, len(b.fused))
        if lists_only and not is_list_question(question.question):
            return order[:TOP]
        return (_dedupe(conv, order[:DEPTH], threshold) + order[DEPTH:])[:TOP]

    return rank


def list_same_day(factor: float) -> Ranker:
    """For a list question, a hit's fused score times `factor` for every better hit of
    the same session (day): its answer is spread over several days."""

    def rank(conv: Conv, index: int, question: Question) -> list[int]:
        b = base(conv, index, question)
        order = _top(b.fused, len(b.fused))
        if not is_list_question(question.question):
            return order[:TOP]
        left = order[:DEPTH]
        per_day: dict[int, int] = {}
        picked: list[int] = []
        while left:
            best = max(
                range(len(left)),
                key=lambda i: (
                    b.fused[left[i]] * factor ** per_day.get(conv.session.get(left[i], -1), 0)
                ),
            )
            pid = left.pop(best)
            day = conv.session.get(pid, -1)
            per_day[day] = per_day.get(day, 0) + 1
            picked.append(pid)
        return (picked + order[DEPTH:])[:TOP]

    return rank


# -- 3. the neighbours' fused scores as evidence for a point


def neighbour_evidence(weight: float, window: int, how: str, *, pull_in: bool = False) -> Ranker:
    """A point's fused score plus `weight` × the max (or sum) of the fused scores of the
    candidates at most `window` ids away in its session (`window` 0: the whole session).
    `pull_in`: a point that is no candidate but sits next to one gets that share too."""

    def rank(conv: Conv, index: int, question: Question) -> list[int]:
        fused = base(conv, index, question).fused
        session = conv.session
        if window == 0:
            totals: dict[int, float] = {}
            for pid, s in fused.items():
                day = session.get(pid, -1)
                totals[day] = totals.get(day, 0.0) + s
            scores = {p: s + weight * (totals[session.get(p, -1)] - s) for p, s in fused.items()}
            return _top(scores)
        reach = set(fused)
        if pull_in:
            reach |= {p + d for p in fused for d in range(-window, window + 1) if p + d in session}
        scores = {}
        for pid in reach:
            near = [
                fused[pid + d]
                for d in range(-window, window + 1)
                if d and pid + d in fused and session.get(pid + d) == session.get(pid)
            ]
            extra = (max(near) if how == "max" else sum(near)) if near else 0.0
            scores[pid] = fused.get(pid, 0.0) + weight * extra
        return _top(scores)

    return rank


# -- 4. a second vector query: the question's content words alone


def third_vector(form: str, weight: float) -> Ranker:
    """The vector top 50 of the question's `form` ("content": no stopwords or question
    words; "stripped") fused as a third ranking at `weight` (it would ride in the same
    embed request as the question: one more input, no extra call)."""

    def rank(conv: Conv, index: int, question: Question) -> list[int]:
        b = base(conv, index, question)
        fused = dict(b.fused)
        query = np.asarray(conv.question_vectors[form][index], np.float32)
        for r, (pid, _cos) in enumerate(conv.memory.vectors.search(query, TUNING.candidates), 1):
            fused[pid] = fused.get(pid, 0.0) + weight / (TUNING.rrf_k + r)
        return _top(fused)

    return rank


# -- 5. from the retrieval literature, no model call


def agreement(bonus: float) -> Ranker:
    """CombMNZ's idea on RRF (Fox & Shaw 1994): a candidate both rankings found gets its
    fused score times (1 + `bonus`)."""

    def rank(conv: Conv, index: int, question: Question) -> list[int]:
        b = base(conv, index, question)
        both = {p for p, _ in b.vector} & {p for p, _ in b.lexical}
        return _rerank(conv, b, lambda p, s: s * (1 + bonus) if p in both else s)

    return rank


def _idf(memory: MemoryStore, term: str) -> float:
    n = memory.lexical.doc_count
    df = memory.lexical.document_frequency(term)
    return bm25.idf(n, df)


def coverage(gain: float) -> Ranker:
    """Coordination-level matching: the fused score times (1 + `gain` × the idf-weighted
    share of the question's words the point's indexed terms hold). BM25 rewards one rare
    word repeated; this rewards holding more of the question."""

    def rank(conv: Conv, index: int, question: Question) -> list[int]:
        memory = conv.memory
        groups = memory.lexical.analyzer.query_terms(question.question)
        weights = [max(_idf(memory, t) for t in g) for g in groups]
        total = sum(weights)
        b = base(conv, index, question)
        if total <= 0:
            return _top(b.fused)

        def score(pid: int, fused: float) -> float:
            held = set(memory.lexical.terms_of(pid))
            share = sum(w for g, w in zip(groups, weights, strict=True) if held.intersection(g))
            return fused * (1 + gain * share / total)

        return _rerank(conv, b, score)

    return rank


def proximity(gain: float, span: int = 3) -> Ranker:
    """Term proximity (the ordered window of the sequential dependence model, Metzler &
    Croft 2005): the fused score times (1 + `gain` × the share of the question's adjacent
    content-word pairs found in order within `span` terms in the point's own text)."""

    def rank(conv: Conv, index: int, question: Question) -> list[int]:
        groups = conv.memory.lexical.analyzer.query_terms(question.question)
        pairs = list(itertools.pairwise(groups))
        b = base(conv, index, question)
        if not pairs:
            return _top(b.fused)

        def score(pid: int, fused: float) -> float:
            terms = conv.own_terms.get(pid, [])
            where: dict[str, list[int]] = {}
            for i, t in enumerate(terms):
                where.setdefault(t, []).append(i)
            found = 0
            for first, second in pairs:
                a = [i for t in first for i in where.get(t, [])]
                z = [j for t in second for j in where.get(t, [])]
                found += any(0 < j - i <= span for i in a for j in z)
            return fused * (1 + gain * found / len(pairs))

        return _rerank(conv, b, score)

    return rank


# -- 7. the date boost and the length prior together


def dated_prior(boost: float, c: float = 8.0, lists_at: float = 0.75) -> Ranker:
    """The product now, with round 1's date boost first: the top `DEPTH` candidates' fused
    scores times (1 + `boost`) for a point inside a time the question names, re-ordered,
    then the top 10 weighed by n / (n + c) on those boosted scores. `boost` 0: the product
    this round shipped (`ROUND5`); `boost` 1: the sixth round's first step (`DATED`)."""

    def rank(conv: Conv, index: int, question: Question) -> list[int]:
        return boosted_prior(conv, index, question, boost, c, lists_at)

    return rank


def boosted_prior(
    conv: Conv,
    index: int,
    question: Question,
    boost: float,
    c: float,
    lists_at: float | None,
    factor: Callable[[int], float] | None = None,
    factor_depth: int = TOP,
) -> list[int]:
    """`dated_prior`'s ranking, with `factor(point)` on the boosted scores over the top
    `factor_depth` (`DEPTH`: before the re-order; `TOP`: beside the prior), for the sixth
    round's prototypes (`bench.locomo_round6_rankers.shaped`)."""
    b = base(conv, index, question)
    fused = b.fused
    if lists_at is not None and is_list_question(question.question):
        fused = fuse(b.vector, b.lexical, replace(TUNING, vector_weight=lists_at))
    spans = date_spans(question.question, conv.memory.db.clock.now()) if boost else []
    order = _top(fused, len(fused))
    head = order[:DEPTH]
    boosted = {
        p: fused[p] * (1 + boost)
        if p in conv.when and any(span.contains(conv.when[p]) for span in spans)
        else fused[p]
        for p in head
    }
    if factor is not None and factor_depth > TOP:
        boosted = {p: s * factor(p) for p, s in boosted.items()}
    counts = conv.content_words["content"]
    top = (_top(boosted, len(head)) + order[DEPTH:])[:TOP]

    def weighed(p: int) -> float:
        s = boosted.get(p, fused[p]) * counts.get(p, 0) / (counts.get(p, 0) + c)
        return s * factor(p) if factor is not None and factor_depth <= TOP else s

    return _top({p: weighed(p) for p in top})
