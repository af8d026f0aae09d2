"""How recall orders its candidates once both rankings are in (memory/recall.py): the fused
score (weighted RRF or scaled scores), the date and answer boosts with the diversity pick,
and the length prior over the first hits. Each follows a `RecallTuning`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from memory.text.answers import AnswerType, holds_answer
from memory.text.dates import DateSpan
from memory.text.shape import content_words
from store import point_reads

if TYPE_CHECKING:
    from memory.recall import RecallTuning


def fuse(
    vector: Sequence[tuple[int, float]],
    lexical: Sequence[tuple[int, float]],
    tuning: RecallTuning,
) -> dict[int, float]:
    """One score a candidate from the vector and the word ranking (`RecallTuning.fusion`)."""
    fused: dict[int, float] = {}
    if tuning.fusion == "score":
        for weight, ranking in (
            (tuning.vector_weight, vector),
            (1.0 - tuning.vector_weight, lexical),
        ):
            if not ranking:
                continue
            scores = [score for _, score in ranking]
            low, high = min(scores), max(scores)
            spread = high - low
            for pid, score in ranking:
                scaled = (score - low) / spread if spread > 0 else 1.0
                fused[pid] = fused.get(pid, 0.0) + weight * scaled
        return fused
    for weight, ranking in ((tuning.vector_weight, vector), (tuning.lexical_weight, lexical)):
        for rank, (pid, _score) in enumerate(ranking, start=1):
            fused[pid] = fused.get(pid, 0.0) + weight / (tuning.rrf_k + rank)
    return fused


def length_prior(
    points: list[point_reads.HitRow],
    fused: dict[int, float],
    tuning: RecallTuning,
    words: dict[int, int] | None = None,
) -> list[point_reads.HitRow]:
    """The first `length_prior_depth` points re-ordered by fused score × n / (n + c)
    (`RecallTuning.length_prior`), the rest as they were; n from `words` (the points'
    traits) when it holds the point."""
    depth, c = tuning.length_prior_depth, tuning.length_prior
    known = words or {}

    def weighed(point: point_reads.HitRow) -> float:
        n = known.get(point.id)
        if n is None:
            n = content_words(point.content)
        return fused.get(point.id, 0.0) * n / (n + c)

    head = sorted(points[:depth], key=lambda point: -weighed(point))
    return head + points[depth:]


def boosted(
    points: Sequence[point_reads.HitRow],
    fused: dict[int, float],
    spans: Sequence[DateSpan],
    asked: tuple[frozenset[AnswerType], frozenset[str]],
    tuning: RecallTuning,
) -> tuple[list[point_reads.HitRow], dict[int, float]]:
    """The date boost and the answer boost, then a greedy pick that lowers a hit's score for
    every better hit of the same day and every better hit next to it (diversity); and each
    point's score as it was taken (boosted, lowered by diversity), which the length prior
    weighs."""
    dated, answers = 1.0 + tuning.date_boost, 1.0 + tuning.answer_boost
    kinds, names = asked  # what the query asks for, and the names it holds itself
    score: dict[int, float] = {}
    for point in points:
        value = fused.get(point.id, 0.0)
        if any(span.contains(point.created_at) for span in spans):
            value *= dated
        if kinds and holds_answer(point.content, kinds, names):
            value *= answers
        score[point.id] = value
    left = sorted(points, key=lambda p: -score[p.id])
    if tuning.same_day_factor == 1.0 and tuning.neighbour_factor == 1.0:
        return left, score
    per_day: dict[object, int] = {}
    taken: set[int] = set()

    def diverse(point: point_reads.HitRow) -> float:
        near = (point.id - 1 in taken) + (point.id + 1 in taken)
        return (
            score[point.id]
            * tuning.same_day_factor ** per_day.get(point.created_at.date(), 0)
            * tuning.neighbour_factor**near
        )

    picked: list[point_reads.HitRow] = []
    at_pick: dict[int, float] = {}
    while left:
        point = left.pop(max(range(len(left)), key=lambda i: diverse(left[i])))
        at_pick[point.id] = diverse(point)
        per_day[point.created_at.date()] = per_day.get(point.created_at.date(), 0) + 1
        taken.add(point.id)
        picked.append(point)
    return picked, at_pick
