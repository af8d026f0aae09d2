"""The features and the linear model of the seventh recall round's learned re-rank
(`bench/locomo_round7.py`; docs/recall-quality.md, "Seventh round").

`candidate_features` turns the first candidates of a query (in fused order) into one row of
numbers each, from what `memory.recall.recall` has at that point; `LinearModel.order` ranks
them by a weighted sum of the standardised features. Nothing here calls a model. It is not
wired into recall: held out it lifts recall@10 by 0.02, but at 100k points its inputs cost
about as much CPU as the whole recall (the rows of ~100 candidates and ~4 ms of features).

What each feature would cost at recall time:
- free (the two rankings and their fusion): the fused score relative to the best and its
  log, the log of its fused rank, the cosine and the log of its vector rank, the BM25 score
  relative to the query's best and the log of its word rank, whether each ranking has it,
  and both;
- the candidate's row (`created_at`, `content`): its content words' prior n / (n + 8) and
  its log, whether it lies inside a time the query names, whether it holds what the question
  asks for (`memory.text.answers`), the best fused score of a candidate one or two ids away
  on the same day, how many other candidates share its day;
- the word index's mirror: the idf-weighted share of the query's words among the point's
  indexed terms (`LexicalCache.terms_of`; 0 when the mirror is not loaded).
The logs of the fused score and the prior, with the date and answer flags, can express the
product's own score (fused × 2 × 2 × n / (n + 8)).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final, Protocol

import numpy as np
import numpy.typing as npt

from memory.recall_rerank import FEATURES as PRODUCT_FEATURES
from memory.recall_rerank import LENGTH_C as LENGTH_C  # the product's
from memory.recall_rerank import LinearModel as LinearModel  # the product's, shared
from memory.text.answers import AnswerType, holds_answer
from memory.text.dates import DateSpan
from memory.text.shape import content_words
from store import bm25

FEATURES: Final = (*PRODUCT_FEATURES[:14], "coverage", *PRODUCT_FEATURES[14:])
"""The columns of `candidate_features`, in order: the product's (`memory.recall_rerank`) with
round 7's coverage, which the product left out."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """What the features read of one candidate's row."""

    id: int
    created_at: datetime
    content: str


@dataclass(frozen=True, slots=True)
class QueryTerms:
    """The query's word groups with their idf weights, and the indexed terms of a point
    (`LexicalCache.terms_of`); no groups: coverage is 0 for every candidate."""

    groups: Sequence[tuple[str, ...]]
    weights: Sequence[float]
    terms_of: Callable[[int], Sequence[str]]


def candidate_features(
    candidates: Sequence[Candidate],
    fused: Mapping[int, float],
    vector: Sequence[tuple[int, float]],
    lexical: Sequence[tuple[int, float]],
    spans: Sequence[DateSpan],
    asked: tuple[frozenset[AnswerType], frozenset[str]],
    terms: QueryTerms,
    depth: int,
) -> npt.NDArray[np.float64]:
    """One row of `FEATURES` per candidate (`candidates` in fused order). `depth`: each
    ranking's length (the rank given to a point that ranking did not find)."""
    n = len(candidates)
    out = np.zeros((n, len(FEATURES)), np.float64)
    if not n:
        return out
    vector_rank = {pid: r for r, (pid, _) in enumerate(vector)}
    cosine = dict(vector)
    words_rank = {pid: r for r, (pid, _) in enumerate(lexical)}
    best_words = max((s for _, s in lexical), default=0.0)
    words = {pid: s / best_words for pid, s in lexical} if best_words > 0 else {}
    best_fused = max(fused.get(c.id, 0.0) for c in candidates) or 1.0
    rel = {c.id: fused.get(c.id, 0.0) / best_fused for c in candidates}
    day = {c.id: c.created_at.date() for c in candidates}
    per_day: dict[object, int] = {}
    for d in day.values():
        per_day[d] = per_day.get(d, 0) + 1
    kinds, names = asked
    total = math.fsum(terms.weights)
    missing = math.log1p(depth)
    for i, c in enumerate(candidates):
        pid = c.id
        in_vector, in_words = pid in vector_rank, pid in words_rank
        n_words = content_words(c.content)
        near = [
            rel[pid + step]
            for step in (-2, -1, 1, 2)
            if pid + step in rel and day[pid + step] == day[pid]
        ]
        covered = 0.0
        if total > 0:
            held = set(terms.terms_of(pid))
            covered = math.fsum(
                w for g, w in zip(terms.groups, terms.weights, strict=True) if held.intersection(g)
            )
        out[i] = (
            rel[pid],
            math.log(max(rel[pid], 1e-6)),
            math.log1p(i),
            cosine.get(pid, 0.0),
            in_vector,
            math.log1p(vector_rank[pid]) if in_vector else missing,
            words.get(pid, 0.0),
            in_words,
            math.log1p(words_rank[pid]) if in_words else missing,
            in_vector and in_words,
            n_words / (n_words + LENGTH_C),
            math.log(max(n_words, 0.5) / (max(n_words, 0.5) + LENGTH_C)),
            any(span.contains(c.created_at) for span in spans),
            bool(kinds) and holds_answer(c.content, kinds, names),
            covered / total if total > 0 else 0.0,
            max(near, default=0.0),
            math.log(per_day[day[pid]]),
        )
    return out


class _WordIndex(Protocol):
    """What `query_terms` reads of the word index's mirror (`store.lexical_cache`)."""

    @property
    def doc_count(self) -> int: ...

    def document_frequency(self, term: str) -> int: ...

    def terms_of(self, point_id: int) -> tuple[str, ...]: ...


def query_terms(index: _WordIndex | None, groups: Sequence[tuple[str, ...]]) -> QueryTerms:
    """The query's word groups (`Analyzer.query_terms`) weighted by BM25's idf of their
    rarest form in `index` (None: the mirror is not loaded, no coverage)."""
    if index is None or not groups:
        return QueryTerms((), (), lambda _pid: ())
    n = index.doc_count

    def idf(term: str) -> float:
        df = index.document_frequency(term)
        return bm25.idf(n, df)

    return QueryTerms(groups, [max(idf(t) for t in g) for g in groups], index.terms_of)
