"""The rankers of the third recall round (`bench/locomo_round3.py`): one question of one
conversation → its top 10 turn ids.

`product_ranker` runs `MemoryStore.recall` itself. The others are prototypes of what the
product cannot express (their labels start with "proto:"): they take the product's vector
and word rankings (or exact cosines, which the product's index reproduces exactly:
docs/recall-quality.md) and fuse them with the product's RRF (`memory.recall_fusion.fuse`) — with
no pins, the floor at 0 and nothing excluded, that is what `recall` does (checked: the
"(= product)" variants score exactly the product's numbers).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from bench.locomo_data import Question
from bench.locomo_texts import unit_rows
from memory.memory_store import MemoryStore
from memory.recall import TUNING, RecallTuning
from memory.recall_fusion import fuse
from store import bm25, lexical_dense

TOP = 10
ROUND3 = replace(
    TUNING, length_prior=0.0, list_vector_weight=None, date_boost=0.0, answer_boost=0.0
)
"""The product as this round measured it (the fifth round's length prior and list weight
came later): its prototypes rank as `recall` with this tuning."""
Store = tuple[MemoryStore, dict[int, str]]
"""A replayed store and its point id → turn id."""


@dataclass
class Env:
    """One conversation: its stores (by word context), its questions' vectors (by query
    form), and for the cosine prototypes its turns' unit vectors (named "Speaker: text"
    and plain), sessions, turn ids and sentence pieces (label → unit rows, turn index)."""

    stores: dict[str, Store]
    vectors: dict[str, list[list[float]]]
    turns: np.ndarray
    plain_turns: np.ndarray
    sessions: np.ndarray
    dias: list[str]
    pieces: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)


Ranker = Callable[[Env, int, Question], list[str]]


def _dia(store: Store, ids: Sequence[int]) -> list[str]:
    return [store[1][pid] for pid in ids if pid in store[1]]


def _query(env: Env, index: int) -> np.ndarray:
    return np.asarray(env.vectors["question"][index], np.float32)


def _word_ranking(memory: MemoryStore, query: str) -> list[tuple[int, float]]:
    with memory.db.cursor() as cur:
        return memory.lexical.search(cur, query, TUNING.candidates)


def _fused_top(store: Store, fused: dict[int, float]) -> list[str]:
    return _dia(store, sorted(fused, key=lambda p: -fused[p])[:TOP])


def product_ranker(
    store: str = "product", form: str = "question", tuning: RecallTuning = ROUND3
) -> Ranker:
    """`MemoryStore.recall` of the store with this word context, the query vector of `form`."""

    def rank(env: Env, index: int, question: Question) -> list[str]:
        memory, to_turn = env.stores[store]
        vector = env.vectors[form][index]
        result = memory.recall(question.question, vector=vector, k=TOP, tuning=tuning)
        return [to_turn[h.id] for h in result.hits if h.id in to_turn]

    return rank


def mixed_ranker(weight: float) -> Ranker:
    """The query vector as the unit mean of the question's and its stripped form's (both
    would ride in one embed request), `weight` on the stripped one."""

    def rank(env: Env, index: int, question: Question) -> list[str]:
        a = np.asarray(env.vectors["question"][index], np.float32)
        b = np.asarray(env.vectors["stripped"][index], np.float32)
        mixed = unit_rows((1 - weight) * a + weight * b)
        memory, to_turn = env.stores["product"]
        result = memory.recall(question.question, vector=mixed.tolist(), k=TOP, tuning=ROUND3)
        return [to_turn[h.id] for h in result.hits if h.id in to_turn]

    return rank


Pooling = Literal["off", "max", "mean", "only", "centroid"]


def cosine_ranker(
    *,
    smooth: float = 0.0,
    sentences: Pooling = "off",
    pieces: str = "sent",
    vector_only: bool = False,
    tuning: RecallTuning = TUNING,
    plain: bool = False,
) -> Ranker:
    """Prototype: the vector ranking as exact cosines, with
    - `smooth`: each turn's cosine raised by this × the best cosine of the turns two back
      and one ahead in its session (the vector side of the word context);
    - `sentences`: the turn's sentence pieces `pieces` — "max": the better of the turn and
      its best piece; "mean": their mean; "only": the best piece; "centroid": one vector a
      turn, the unit mean of its pieces;
    - `plain`: the turns embedded without the speaker's name;
    then fused with the product's word ranking (`tuning`), or alone (`vector_only`)."""

    def rank(env: Env, index: int, question: Question) -> list[str]:
        store = env.stores["product"]
        q = unit_rows(_query(env, index))
        turns = env.plain_turns if plain else env.turns
        cos = turns @ q
        score = cos.copy()
        if sentences != "off":
            matrix, owner = env.pieces[pieces]
            best = np.full_like(cos, -1.0)
            np.maximum.at(best, owner, matrix @ q)
            has = best > -1.0
            if sentences == "max":
                score[has] = np.maximum(score[has], best[has])
            elif sentences == "centroid":
                sums = np.zeros_like(turns)
                np.add.at(sums, owner, matrix)
                score[has] = (unit_rows(sums) @ q)[has]
            elif sentences == "only":
                score[has] = best[has]
            else:
                score[has] = (score[has] + best[has]) / 2
        if smooth:
            score = score + smooth * np.maximum(_near_best(cos, env.sessions), 0.0)
        order = np.argsort(-score, kind="stable")[: TUNING.candidates]
        pid_of = {dia: pid for pid, dia in store[1].items()}
        vector = [(pid_of[env.dias[i]], float(score[i])) for i in order if env.dias[i] in pid_of]
        if vector_only:
            return _dia(store, [pid for pid, _ in vector[:TOP]])
        lexical = _word_ranking(store[0], question.question)
        return _fused_top(store, fuse(vector, lexical, tuning))

    return rank


def _near_best(cos: np.ndarray, sessions: np.ndarray) -> np.ndarray:
    """Each turn's best cosine among the turns two back and one ahead in its session."""
    near = np.full_like(cos, -1.0)
    n = len(cos)
    for offset in (-2, -1, 1):
        shifted = np.full_like(cos, -1.0)
        same = np.zeros(n, bool)
        if offset < 0:
            shifted[-offset:] = cos[:offset]
            same[-offset:] = sessions[-offset:] == sessions[:offset]
        else:
            shifted[:-offset] = cos[offset:]
            same[:-offset] = sessions[:-offset] == sessions[offset:]
        near = np.where(same, np.maximum(near, shifted), near)
    return near


def word_strength(memory: MemoryStore, query: str, lexical: Sequence[tuple[int, float]]) -> float:
    """How well the words matched, 0..1: the idf-weighted share of the query's words the
    word ranking's top hit holds (a query word no point has counts as missed)."""
    cache = memory.lexical
    groups = cache.analyzer.query_terms(query)
    n = cache.doc_count
    if not lexical or not groups or n == 0:
        return 0.0
    held = set(cache.terms_of(lexical[0][0]))
    total = matched = 0.0
    for group in groups:
        df = max(cache.document_frequency(term) for term in group)
        idf = bm25.idf(n, df)
        total += idf
        matched += idf if held.intersection(group) else 0.0
    return matched / total if total > 0 else 0.0


def adaptive_ranker(weak: float, strong: float) -> Ranker:
    """Prototype: the vector ranking's RRF weight `weak` when the word ranking's top hit
    holds none of the query's words, moving linearly to `strong` when it holds all."""

    def rank(env: Env, index: int, question: Question) -> list[str]:
        store = env.stores["product"]
        memory = store[0]
        lexical = _word_ranking(memory, question.question)
        strength = word_strength(memory, question.question, lexical)
        tuning = replace(TUNING, vector_weight=weak + (strong - weak) * strength)
        vector = memory.vectors.search(_query(env, index), TUNING.candidates)
        return _fused_top(store, fuse(vector, lexical, tuning))

    return rank


def vector_feedback_ranker(seeds: int, terms: int, weight: float) -> Ranker:
    """Prototype: a second word round (`LexicalCache.feedback_search`) seeded by the
    vector ranking's top `seeds` hits, whose terms may bridge to turns that share no word
    with the question; fused as a third ranking at `weight`."""

    def rank(env: Env, index: int, question: Question) -> list[str]:
        store = env.stores["product"]
        memory = store[0]
        lexical = _word_ranking(memory, question.question)
        vector = memory.vectors.search(_query(env, index), TUNING.candidates)
        fused = fuse(vector, lexical, TUNING)
        second = memory.lexical.feedback_search(
            question.question, [pid for pid, _ in vector[:seeds]], terms, TUNING.candidates
        )
        for r, (pid, _score) in enumerate(second, start=1):
            fused[pid] = fused.get(pid, 0.0) + weight / (TUNING.rrf_k + r)
        return _fused_top(store, fused)

    return rank


def _groups_with_words(memory: MemoryStore, query: str) -> list[tuple[tuple[str, ...], str]]:
    """Each query term group with the word it came from (first occurrence)."""
    out: list[tuple[tuple[str, ...], str]] = []
    seen: set[tuple[str, ...]] = set()
    for raw in query.replace("?", " ").split():
        word = raw.strip(".,!\"'()")
        for group in memory.lexical.analyzer.query_terms(word):
            if group not in seen:
                seen.add(group)
                out.append((group, word))
    return out


def _is_name_or_number(word: str, first: bool) -> bool:
    core = word.removesuffix("'s")
    return any(c.isdigit() for c in core) or (not first and core[:1].isupper())


def weighted_ranker(name_weight: float, common_weight: float, common_share: float) -> Ranker:
    """Prototype: BM25 with a weight per query word — names and numbers (a capitalised
    word not first, a word with a digit) `name_weight`, a term in more than `common_share`
    of the points (the speakers' names) `common_weight`. Reads the word index's mirror
    (store/ has no per-term weights)."""

    def rank(env: Env, index: int, question: Question) -> list[str]:
        store = env.stores["product"]
        memory = store[0]
        _word_ranking(memory, question.question)  # syncs the mirror
        mirror = memory.lexical._index
        n = mirror.doc_count
        first = question.question.split()[0] if question.question.split() else ""
        total: np.ndarray | None = None
        for group, word in _groups_with_words(memory, question.question):
            df = max(mirror.document_frequency(t) for t in group)
            if n and df / n > common_share:
                weight = common_weight
            elif _is_name_or_number(word, word == first):
                weight = name_weight
            else:
                weight = 1.0
            part = lexical_dense.totals(mirror, [group])
            if part is not None:
                total = part * weight if total is None else total + part * weight
        lexical = [] if total is None else lexical_dense.top(mirror, total, TUNING.candidates, None)
        vector = memory.vectors.search(_query(env, index), TUNING.candidates)
        return _fused_top(store, fuse(vector, lexical, TUNING))

    return rank


def two_lexical_ranker(own_weight: float) -> Ranker:
    """Prototype: the word ranking of the product's store (own + neighbour words) and of a
    store of own words only (at `own_weight`), fused with the vector ranking."""

    def rank(env: Env, index: int, question: Question) -> list[str]:
        scores: dict[str, float] = {}
        product, to_turn = env.stores["product"]
        own, own_turn = env.stores["none"]
        wide = _word_ranking(product, question.question)
        narrow = _word_ranking(own, question.question)
        vector = product.vectors.search(_query(env, index), TUNING.candidates)
        for weight, ranking, mapping in (
            (TUNING.vector_weight, vector, to_turn),
            (TUNING.lexical_weight, wide, to_turn),
            (own_weight, narrow, own_turn),
        ):
            for r, (pid, _s) in enumerate(ranking, start=1):
                dia = mapping[pid]
                scores[dia] = scores.get(dia, 0.0) + weight / (TUNING.rrf_k + r)
        return sorted(scores, key=lambda d: -scores[d])[:TOP]

    return rank
