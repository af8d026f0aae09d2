"""The learned re-rank of recall's fused candidates (issue 17, eighth round;
docs/recall-quality.md): a logistic model over 16 features of every candidate picks the
best max(`RecallTuning.learned_set`, k), and the product's own order (date and answer
boosts, length prior) orders them.

Every feature comes from what `memory.recall.recall` already has — the two rankings and
their fusion, the query's time spans and answer kinds — and from the word index's per-slot
traits (`store.point_traits`: content words, day, answer-kind bits), numpy over ~100
candidates: no point's row is read for it. A "who" question's answer check leaves out the
names the question holds (`memory.text.answers`); a point's stored bit cannot, so the
feature says "holds a name" for "who".

The weights, means and scales are `memory.recall_models`' (`MODEL`, `SPEAKER_MODEL`,
`MOOD_MODEL`), trained on the five LoCoMo development conversations by the rounds' benches
(which print them).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Final

import numpy as np
import numpy.typing as npt

from memory.point_traits import day_number, kinds_mask
from memory.text.answers import AnswerType, answer_types
from memory.text.dates import DateSpan
from memory.text.shape import is_hypothetical
from memory.text.speakers import named_speakers
from store.point_traits import MISSING_SPEAKER, NO_SPEAKER

if TYPE_CHECKING:
    from memory.memory_store import MemoryStore
    from memory.recall import RecallTuning
    from store.lexical_posting_reads import Traits
    from store.point_reads import HitRow

FEATURES: Final = (
    "fused",
    "log_fused",
    "fused_rank",
    "cosine",
    "in_vector",
    "vector_rank",
    "words",
    "in_words",
    "words_rank",
    "both",
    "length",
    "log_length",
    "date",
    "answer",
    "neighbour",
    "same_day",
)
"""The columns of `candidate_features`, in order (round 7's without its coverage, which
bought nothing)."""
SPEAKER_FEATURES: Final = (*FEATURES, "speaker")
"""The columns `RecallTuning.speaker`'s model weighs: `FEATURES` and whether the
candidate's speaker is a name the question holds (`speaker_column`)."""

MOOD_PRODUCTS: Final = (
    "speaker",
    "cosine",
    "in_vector",
    "vector_rank",
    "words",
    "in_words",
    "words_rank",
)
"""The columns the question's mood multiplies (`mood_columns`): the speaker, the vector's
and the words' — so an inference question can weigh the two rankings and the asked person
otherwise than a question about what was said."""
MOOD_FEATURES: Final = (
    *SPEAKER_FEATURES,
    "hypothetical",
    *(f"hypothetical_{name}" for name in MOOD_PRODUCTS),
)
"""The columns `MOOD_MODEL` weighs: `SPEAKER_FEATURES`, whether the question asks for an
inference (`memory.text.shape.is_hypothetical`) and its products with `MOOD_PRODUCTS`."""

LENGTH_C: Final = 8.0
"""The length prior's c in n / (n + c) (`RecallTuning.length_prior`'s value)."""


@dataclass(frozen=True, slots=True)
class LinearModel:
    """score = Σ weight × (feature − mean) / scale over `FEATURES`."""

    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weight: tuple[float, ...]

    def scores(self, features: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        standard = (features - np.asarray(self.mean)) / np.asarray(self.scale)
        return standard @ np.asarray(self.weight)

    def order(self, features: npt.NDArray[np.float64]) -> npt.NDArray[np.intp]:
        """The candidates' indices, best first (ties keep the fused order)."""
        return np.argsort(-self.scores(features), kind="stable")


def in_spans(days: npt.NDArray[np.int32], spans: Sequence[DateSpan]) -> npt.NDArray[np.bool_]:
    """Whether each day lies in a time the query names: `DateSpan.contains` by whole UTC
    days (a span is cut at days; a month without a year matches the UTC month)."""
    inside = np.zeros(len(days), dtype=bool)
    for span in spans:
        if span.month is not None:
            months = days.astype("datetime64[D]").astype("datetime64[M]").astype(np.int64)
            inside |= months % 12 + 1 == span.month
        elif span.start is not None and span.end is not None:
            inside |= (days >= day_number(span.start)) & (days < _day_after(span.end))
    return inside


def _day_after(end: datetime) -> int:
    """The first day not touched by a span ending (exclusive) at `end`."""
    day = day_number(end)
    at_midnight = end.hour == end.minute == end.second == end.microsecond == 0
    return day if at_midnight else day + 1


def candidate_features(
    ids: Sequence[int],
    fused: Mapping[int, float],
    vector: Sequence[tuple[int, float]],
    lexical: Sequence[tuple[int, float]],
    traits: Traits,
    spans: Sequence[DateSpan],
    kinds: Iterable[AnswerType],
    depth: int,
) -> npt.NDArray[np.float64]:
    """One row of `FEATURES` per candidate (`ids` in fused order, `traits` theirs in that
    order). `depth`: each ranking's length (the rank given to a point it did not find)."""
    n = len(ids)
    out = np.zeros((n, len(FEATURES)), np.float64)
    if not n:
        return out
    pid = np.asarray(ids, dtype=np.int64)
    at = {p: i for i, p in enumerate(ids)}
    rel = np.fromiter(map(fused.__getitem__, ids), np.float64, n)
    rel /= rel.max() or 1.0
    out[:, 0] = rel
    out[:, 1] = np.log(np.maximum(rel, 1e-6))
    out[:, 2] = np.log1p(np.arange(n))
    for ranking, score, present, rank in ((vector, 3, 4, 5), (lexical, 6, 7, 8)):
        found_rows: list[int] = []  # (row, rank, score) of the candidates in ranking order
        found_ranks: list[int] = []
        found_scores: list[float] = []
        for place, (p, s) in enumerate(ranking):
            row = at.get(p)
            if row is not None:
                found_rows.append(row)
                found_ranks.append(place)
                found_scores.append(s)
        rows = np.array(found_rows, dtype=np.intp)
        ranked = np.array(found_ranks, dtype=np.float64)
        values = np.array(found_scores, dtype=np.float64)
        out[:, rank] = np.log1p(depth)  # the rank of a point the ranking did not find
        out[rows, rank] = np.log1p(ranked)
        out[rows, present] = 1.0
        if score == 6:  # the BM25 score relative to the query's best
            best = max((s for _, s in ranking), default=0.0)
            values = values / best if best > 0 else np.zeros_like(values)
        out[rows, score] = values
    out[:, 9] = out[:, 4] * out[:, 7]
    words, days, answers = traits[:3]
    length = words.astype(np.float64)
    floored = np.maximum(length, 0.5)
    out[:, 10] = length / (length + LENGTH_C)
    out[:, 11] = np.log(floored / (floored + LENGTH_C))
    if spans:
        out[:, 12] = in_spans(days, spans)
    mask = kinds_mask(kinds)
    if mask:
        out[:, 13] = (answers & mask) != 0
    out[:, 14] = _best_neighbour(pid, days, rel)
    day_list = days.tolist()
    per_day = Counter(day_list)  # ~80 candidates: cheaper than np.unique's sort and inverse
    out[:, 15] = np.log(np.fromiter(map(per_day.__getitem__, day_list), np.float64, n))
    return out


def _best_neighbour(
    pid: npt.NDArray[np.int64], days: npt.NDArray[np.int32], rel: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """The best relative fused score of a candidate one or two ids away on the same day
    (0 when none is): the four offsets looked up at once."""
    order = np.argsort(pid)
    sorted_ids = pid[order]
    wanted = pid[None, :] + _NEIGHBOUR_STEPS[:, None]  # one row per offset
    at = np.minimum(np.searchsorted(sorted_ids, wanted), len(pid) - 1)
    other = order[at]
    same = (sorted_ids[at] == wanted) & (days[other] == days[None, :])
    return np.where(same, rel[other], 0.0).max(axis=0)


_NEIGHBOUR_STEPS: Final = np.array([-2, -1, 1, 2], dtype=np.int64)


def speaker_column(
    speakers: npt.NDArray[np.uint16], named: frozenset[int]
) -> npt.NDArray[np.float64] | None:
    """Per candidate, 1 when its speaker (`store.point_traits`: a hash) is one of `named`
    (`asked_speakers`); None when the candidates carry no speaker (a chat's own messages)
    or one's is not known (indexed before schema 8): the caller ranks as without it."""
    if bool(np.any(speakers == MISSING_SPEAKER)) or not bool(np.any(speakers != NO_SPEAKER)):
        return None
    return np.isin(speakers, np.fromiter(named, np.int64, len(named))).astype(np.float64)


def mood_columns(features: npt.NDArray[np.float64], hypothetical: bool) -> npt.NDArray[np.float64]:
    """`SPEAKER_FEATURES`' rows widened to `MOOD_FEATURES`: the question's flag and its
    products with `MOOD_PRODUCTS` (all 0 for a question that asks for no inference)."""
    flag = float(hypothetical)
    at = [SPEAKER_FEATURES.index(name) for name in MOOD_PRODUCTS]
    extra = np.hstack([np.full((len(features), 1), flag), features[:, at] * flag])
    return np.hstack([features, extra])


def asked_speakers(query: str, tuning: RecallTuning) -> frozenset[int]:
    """The speaker hashes the query names (`memory.text.speakers.named_speakers`); none
    when `tuning.speaker` is off or the query asks "when" (the column is 0 for a "when"
    question: the tenth round's form)."""
    if tuning.speaker is None or "when" in answer_types(query):
        return frozenset()
    return named_speakers(query)


def learned_choice(
    ids: Sequence[int],
    fused: Mapping[int, float],
    vector: Sequence[tuple[int, float]],
    lexical: Sequence[tuple[int, float]],
    traits: Traits,
    spans: Sequence[DateSpan],
    kinds: Iterable[AnswerType],
    depth: int,
    model: LinearModel,
    speaker: LinearModel | None = None,
    named: frozenset[int] = frozenset(),
    hypothetical: bool = False,
) -> list[int]:
    """Every candidate of `ids` (fused order), the model's best first: `speaker`'s (over
    `SPEAKER_FEATURES`, the column from `named`, or over `MOOD_FEATURES` when it weighs
    them, the mood from `hypothetical`) when the candidates carry speakers, else
    `model`'s."""
    features = candidate_features(ids, fused, vector, lexical, traits, spans, kinds, depth)
    column = None if speaker is None else speaker_column(traits[3], named)
    if speaker is not None and column is not None:
        rows = np.hstack([features, column[:, None]])
        if len(speaker.weight) == len(MOOD_FEATURES):
            rows = mood_columns(rows, hypothetical)
        order = speaker.order(rows)
    else:
        order = model.order(features)
    return [ids[i] for i in order.tolist()]


def learned_order(
    store: MemoryStore,
    query: str,
    regular: Sequence[int],
    fused: Mapping[int, float],
    vector: Sequence[tuple[int, float]],
    lexical: Sequence[tuple[int, float]],
    spans: Sequence[DateSpan],
    kinds: frozenset[AnswerType],
    tuning: RecallTuning,
) -> LearnedOrder | None:
    """The regular candidates, the learned model's best first (`RecallTuning.learned`, or
    `RecallTuning.speaker` when the candidates carry speakers); None when it does not run:
    off, a ranking missing, or a candidate without traits."""
    if tuning.learned is None or not vector or not lexical or not store.lexical_ready:
        return None
    traits = store.lexical.traits_of(regular)
    if traits is None:
        return None
    order = learned_choice(
        regular,
        fused,
        vector,
        lexical,
        traits,
        spans,
        kinds,
        tuning.candidates,
        tuning.learned,
        tuning.speaker,
        asked_speakers(query, tuning) if bool(np.any(traits[3] != NO_SPEAKER)) else frozenset(),
        is_hypothetical(query),
    )
    return LearnedOrder(order, dict(zip(regular, traits[0].tolist(), strict=True)))


@dataclass(frozen=True, slots=True)
class LearnedOrder:
    """What `learned_order` gives recall: every candidate, the model's best first, and
    each one's content words (its traits: the length prior needs no `content_words`)."""

    ids: list[int]
    words: dict[int, int]


def first_picked(points: list[HitRow], chosen: Sequence[int], count: int, k: int) -> list[HitRow]:
    """Of the points left after the exclusions, the model's first `count` (at least k), in
    the order they came."""
    rank = {pid: i for i, pid in enumerate(chosen)}
    keep = {p.id for p in sorted(points, key=lambda p: rank[p.id])[: max(count, k)]}
    return [p for p in points if p.id in keep]
