"""Recall: the points a message brings back, ranked by words and by vectors (the block they
make in the prompt is `memory.recall_block`'s, the pins are `memory.pinned_points`).

Hybrid recall fuses the vector top-k (cosine ≥ `min_score`) with the BM25 word ranking by
weighted reciprocal rank (a question asking for a list gives the vectors more weight); among
the first 30, a question that names a time ("in May 2023") doubles the score of the points
inside it, and one that asks "when", "how many", "where" or "who" doubles the score of the
points holding a time, a number, a place or a name; the first 10 are then weighed by their
content words, so a statement goes before chit-chat; pinned points come first, ranked by
relevance without the floor.
A word match counts on its own; a vector-only match needs the floor.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Literal

import numpy as np
import numpy.typing as npt

from memory.recall_block import RecallHit, RecallResult, join_recall_block, placed_entries
from memory.recall_fusion import boosted, fuse, length_prior
from memory.recall_models import MODEL, MOOD_MODEL
from memory.recall_rerank import LinearModel, first_picked, learned_order
from memory.text.answers import answer_types, question_names
from memory.text.dates import date_spans
from memory.text.shape import is_list_question
from store import lexical_index, point_reads
from store.point_store import content_hash
from store.vector_arrays import exact_search

if TYPE_CHECKING:
    from memory.memory_store import MemoryStore

# Reciprocal rank fusion, weighted: Σ weight / (RRF_K + rank). Measured on LoCoMo (dev
# split, MiniLM vectors, `python bench/locomo.py`): words found evidence better than
# vectors (recall@10 0.717 vs 0.494), and the textbook k = 60 with equal weights fused them
# to 0.682 — below words alone; k = 10 with vectors at half weight gave 0.748. Every knob
# of the ranking is in `RecallTuning`, chosen leave-one-conversation-out
# (`bench/locomo.py --loo`, docs/recall-quality.md).
RRF_K = 10
VECTOR_WEIGHT = 0.5
LEXICAL_WEIGHT = 1.0
CANDIDATES = 50  # candidates taken from each ranking before fusion
PIN_FLOOR_FACTOR = 0.5  # pinned points need only half of MEMORY_MIN_SCORE (or a word match)

RecallMode = Literal["hybrid", "vector", "lexical"]
Fusion = Literal["rrf", "score"]


@dataclass(frozen=True, slots=True)
class RecallTuning:
    """The knobs of the ranking. The product runs `TUNING`; `bench/locomo.py --loo` runs
    the same code with other values to choose them (docs/recall-quality.md)."""

    fusion: Fusion = "rrf"
    """"rrf": weighted reciprocal rank; "score": a convex combination of the cosine and
    the BM25 score, each scaled to 0..1 over its candidates (`vector_weight` is the
    vector's share)."""
    rrf_k: int = RRF_K
    vector_weight: float = VECTOR_WEIGHT
    lexical_weight: float = LEXICAL_WEIGHT
    candidates: int = CANDIDATES
    feedback_seeds: int = 0
    """Pseudo-relevance feedback: the first round's top hits whose shared terms seed a
    second word round (0: off)."""
    feedback_terms: int = 8
    feedback_weight: float = 0.5
    """The second round's weight in the fusion (a ranking like the other two)."""
    same_day_factor: float = 1.0
    """Diversity: a hit's fused score times this for every better hit of the same day
    (1: off), so the hits are not all neighbours of one conversation."""
    neighbour_factor: float = 1.0
    """Diversity: a hit's fused score times this for every better hit next to it (point ids
    one apart: the turn it answers or its reply), so ten hits are not five pairs (1: off)."""
    date_boost: float = 1.0
    """Fused score times (1 + this) for a point among the first `rerank_depth` inside a time
    the query names ("in May 2023", "last week": `memory.text.dates`), before the length
    prior weighs the first 10 on the boosted scores; 0: off. A query that names no time
    ranks as without it (and reads no more rows). LoCoMo, chosen by every fold (×2):
    recall@5 0.696 → 0.701, recall@10 0.773 → 0.779 (docs/recall-quality.md, "Sixth
    round")."""
    answer_boost: float = 1.0
    """Fused score times (1 + this) for a point among the first `rerank_depth` that holds
    what the question asks for (`memory.text.answers`: "when" a time, "how many" a number,
    "where" a place, "who" a name), before the length prior; 0: off. A question that asks
    for none ranks as without it. LoCoMo, chosen by every fold (×2 four, ×1.5 one):
    recall@5 0.701 → 0.710, recall@10 0.779 → 0.784 (docs/recall-quality.md, "Sixth
    round")."""
    rerank_depth: int = 30
    """How many of the fused candidates diversity and the date and answer boosts look at."""
    neighbour_window: int = 0
    """Query-side neighbour window: after the k hits, the turns of the same conversation
    at most this many points away from the first `neighbour_anchors` hits, nearest first,
    as extra hits the block takes while `MEMORY_MAX_CHARS` has room (0: off)."""
    neighbour_anchors: int = 3
    length_prior: float = 8.0
    """The first `length_prior_depth` regular hits re-ordered by fused score × n / (n + this),
    n the point's content words (`memory.text.shape.content_words`), so a turn that states
    something goes before "wow, that's great!" (0: off). Only the order inside those hits
    changes; after the date boost (and diversity, when on) it weighs their scores. LoCoMo, chosen
    leave-one-conversation-out by every fold: recall@5 0.663 → 0.692, MRR 0.527 → 0.572,
    recall@10 unchanged (docs/recall-quality.md, "Fifth round")."""
    length_prior_depth: int = 10
    learned: LinearModel | None = MODEL
    """The learned re-rank (`memory.recall_rerank`): a logistic model picks the best
    `max(learned_set, k)` of every fused candidate (both top 50s) from the rankings and the
    word index's traits (`store.point_traits`, no row read), then the product's own order
    (the boosts, the length prior) ranks them. None: off. It runs in hybrid mode with both
    rankings and the word index's mirror loaded, when every candidate has its traits; else
    recall ranks as without it. LoCoMo, nested leave-one-conversation-out: recall@10 0.785 →
    0.810 (worst conversation 0.727 → 0.752), recall@5 0.710 → 0.729 with the model's own
    five; ~+0.4 ms a recall at 100k (docs/recall-quality.md, "Eighth round"). Off in
    `TURN_TUNING`: the evidence in the turn's block fell (0.808 → 0.800)."""
    speaker: LinearModel | None = MOOD_MODEL
    """The learned re-rank with who said it (`memory.recall_rerank.SPEAKER_FEATURES`: the
    16 and whether a candidate's speaker — the "Name: " its content starts with,
    `memory.text.speakers` — is a name the query holds, 0 for a "when" question): this
    model picks instead of `learned` when the candidates carry speakers (an imported
    transcript); when none does (a chat's own messages) or one's is not known (indexed
    before schema 8), `learned` as before. None: off. LoCoMo, nested leave-one-conversation-
    out: recall@5 0.729 → 0.748, recall@10 0.810 → 0.816 (worst conversation 0.752 →
    0.759), multi-hop @10 0.472 → 0.493, open-domain 0.438 → 0.462 (docs/recall-quality.md,
    "Tenth round"). A model over `MOOD_FEATURES` (the shipped `MOOD_MODEL`) also weighs the
    question's mood (`memory.text.shape.is_hypothetical`: "Would Caroline likely …?") times
    the speaker and the two rankings' columns: recall@10 0.816 → 0.817, open-domain @10
    0.462 → 0.473, multi-hop 0.493 → 0.495, the rest unchanged ("Twelfth round"). Off in
    `TURN_TUNING` with `learned`: the turn's block fell (0.808 → 0.806)."""
    learned_set: int = 5
    """How many candidates the model picks at least: with 5 its best five for k ≤ 5
    (recall@5 0.729 held out), its best k above (its ten for k = 10); with 10 its best ten
    for any k ≤ 10, the product's top k of them (recall@5 0.710, as without the model).
    Below five the product's order (the length prior) still chooses among the model's five."""
    list_vector_weight: float | None = 0.75
    """`vector_weight` for a question asking for a list (`memory.text.shape.is_list_question`:
    "What books has …?"), whose answer is spread over turns that do not repeat its words
    (None: as any query). LoCoMo, chosen by every fold: recall@10 0.769 → 0.773,
    multi-hop 0.423 → 0.436."""


TUNING = RecallTuning()
"""What search runs (`straylight recall`, MCP `memory_search`, the browser, `/recall`): k hits."""

TURN_TUNING = replace(TUNING, neighbour_window=3, neighbour_anchors=5, learned=None, speaker=None)
"""What the turn's prompt runs: the same k hits, then the turns at most 3 points from each
of them in its conversation, while `MEMORY_MAX_CHARS` has room (the budget cuts them first).
LoCoMo, chosen leave-one-conversation-out by every fold: the evidence in the block 0.663 →
0.794 (worst conversation 0.597 → 0.725) for ~3.3k instead of ~1.1k characters
(docs/recall-quality.md, "Fourth round")."""


def recall(
    store: MemoryStore,
    query: str,
    *,
    vector: Sequence[float] | None = None,
    k: int | None = None,
    exclude_contents: Iterable[str] = (),
    mode: RecallMode = "hybrid",
    max_chars: int | None = None,
    tuning: RecallTuning = TUNING,
) -> RecallResult:
    """Hybrid recall over `store` (`MemoryStore.recall`): see the module docstring. Points
    whose content is already in the prompt (`exclude_contents`) are left out. `tuning`:
    `TURN_TUNING` for the turn's prompt, other values for the benchmark that chooses them."""
    config = store.config
    k = config.top_k if k is None else k
    query = query.strip()
    if not query or k <= 0:
        return RecallResult([], "")
    excluded = {content_hash(text.strip()) for text in exclude_contents}
    query_vec = None if mode == "lexical" or vector is None else np.asarray(vector, np.float32)
    depth = tuning.candidates
    if tuning.list_vector_weight is not None and is_list_question(query):
        tuning = replace(tuning, vector_weight=tuning.list_vector_weight)
    words = None  # ranked in the store's side thread while this one searches the vectors
    if mode != "vector" and query_vec is not None:  # (without the GIL): store.side_thread
        words = store.side.hand(partial(_lexical_candidates, store, query, depth))
    vector_ranked = store.vectors.search(query_vec, depth) if query_vec is not None else []
    if words is not None:
        lexical_ranked, pinned_lexical = words.result()
    elif mode != "vector":
        lexical_ranked, pinned_lexical = _lexical_candidates(store, query, depth)
    else:
        lexical_ranked, pinned_lexical = [], []
    cosine = dict(vector_ranked)
    fused = fuse(vector_ranked, lexical_ranked, tuning)
    if tuning.feedback_seeds and lexical_ranked and store.lexical_ready:
        seeds = [pid for pid in sorted(fused, key=lambda p: -fused[p])][: tuning.feedback_seeds]
        second = store.lexical.feedback_search(query, seeds, tuning.feedback_terms, depth)
        for rank, (pid, _score) in enumerate(second, start=1):
            fused[pid] = fused.get(pid, 0.0) + tuning.feedback_weight / (tuning.rrf_k + rank)
    floor = config.min_score
    pins = store.pins
    pinned_order, pinned_cosine = (
        _pinned_ranking(store, query_vec, pinned_lexical, tuning) if pins else ([], {})
    )
    cosine.update(pinned_cosine)
    lexical_ids = {pid for pid, _ in lexical_ranked}
    regular = [  # a word match counts on its own; a vector-only match needs the floor
        pid
        for pid in sorted(fused, key=lambda p: -fused[p])
        if pid not in pins and (pid in lexical_ids or pid not in cosine or cosine[pid] >= floor)
    ]
    if mode == "vector":
        regular = [pid for pid in regular if pid in cosine]
    lexical_top = max((score for _, score in lexical_ranked), default=0.0)
    lexical_score = (
        {pid: score / lexical_top for pid, score in lexical_ranked} if lexical_top else {}
    )
    spans = date_spans(query, store.db.clock.now()) if tuning.date_boost else []
    kinds = answer_types(query) if tuning.answer_boost else frozenset()
    asked = (kinds, question_names(query) if "who" in kinds else frozenset())
    hits: list[RecallHit] = []
    reranks = (
        bool(spans)
        or bool(kinds)
        or tuning.same_day_factor != 1.0
        or tuning.neighbour_factor != 1.0
    )
    fill = k + len(excluded)  # enough to fill k after exclusions
    depth = max(tuning.rerank_depth, fill) if reranks else fill
    if tuning.length_prior:
        depth = max(depth, tuning.length_prior_depth + len(excluded))
    chosen = learned_order(
        store, query, regular, fused, vector_ranked, lexical_ranked, spans, kinds, tuning
    )
    if chosen is not None:  # the model's best, then the product's own order among them
        picked = chosen.ids[: max(tuning.learned_set, k) + len(excluded)]
        regular, depth = sorted(picked, key=lambda p: -fused[p]), len(picked)
        reranks = True
    groups = ((pinned_order[:fill], False, False), (regular[:depth], reranks, True))
    rows = _hit_rows(store, pinned_order[:fill], regular[:depth])
    for wanted, rerank, weigh in groups:  # both groups' rows came in one query
        points = [rows[pid] for pid in wanted if pid in rows]
        if excluded:
            points = [point for point in points if point.content_hash not in excluded]
        scores = fused
        if rerank:  # the date and answer boosts (and the bench's diversity), then the prior
            points, scores = boosted(points, fused, spans, asked, tuning)
        if chosen is not None and weigh:  # the model's set: its first ones, excluded left out
            points = (
                points if not excluded else first_picked(points, chosen.ids, tuning.learned_set, k)
            )
        if weigh and tuning.length_prior:
            points = length_prior(points, scores, tuning, None if chosen is None else chosen.words)
        for point in points[:k]:
            score = max(cosine.get(point.id, 0.0), lexical_score.get(point.id, 0.0))
            hits.append(
                RecallHit(
                    point.id, point.role, score, point.pinned, point.created_at, point.content
                )
            )
    around = _neighbour_hits(store, hits, excluded, tuning) if tuning.neighbour_window else []
    entries, placed = placed_entries([*hits, *around], max_chars or config.max_chars)
    return RecallResult(hits, join_recall_block(entries), entries, tuple(around), placed)


def _hit_rows(
    store: MemoryStore, pinned: Sequence[int], regular: Sequence[int]
) -> dict[int, point_reads.HitRow]:
    """The rows of the pinned and the regular hits to show, from `rows.dat` and one query
    for what it lacks (`point_reads.hit_rows`; `pinned` from the pins); a pinned point's
    row is read once and kept with the pins (`PinnedPoints.kept_rows`): pins are ~a fifth
    of the rows asked (bench.memory_scale's 49 pins at 100k)."""
    kept = store.pins.kept_rows()  # before the query: a pin change meanwhile replaces it
    asked = [*(p for p in pinned if p not in kept), *regular]
    rows = point_reads.hit_rows(store.db, asked, rows=store.rows, pinned=store.pins.ids)
    for pid in pinned:
        row = rows.get(pid)
        if row is None and pid in kept:
            rows[pid] = kept[pid]
        elif row is not None and row.pinned:
            kept[pid] = row
    return rows


def _neighbour_hits(
    store: MemoryStore, hits: Sequence[RecallHit], excluded: set[str], tuning: RecallTuning
) -> list[RecallHit]:
    """The turns around the first regular hits (`RecallTuning.neighbour_window`), after all
    the hits, so the character budget cuts them first; each carries its anchor's score."""
    anchors = [hit for hit in hits if not hit.pinned][: tuning.neighbour_anchors]
    around = point_reads.neighbour_rows(
        store.db,
        [hit.id for hit in anchors],
        tuning.neighbour_window,
        rows=store.rows,
        pinned=store.pins.ids,
    )
    seen = {hit.id for hit in hits}
    extra: list[RecallHit] = []
    for anchor in anchors:
        for point in around.get(anchor.id, []):
            if point.id in seen or point.pinned or (excluded and point.content_hash in excluded):
                continue
            seen.add(point.id)
            extra.append(
                RecallHit(
                    point.id, point.role, anchor.score, False, point.created_at, point.content
                )
            )
    return extra


def _lexical_candidates(
    store: MemoryStore, query: str, depth: int
) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
    """The word ranking's candidates, and the ranking of the pinned points."""
    pinned = sorted(store.pins.ids)
    with store.db.cursor() as cur:
        if store.lexical_ready:
            return store.lexical.search_and_subset(cur, query, depth, pinned)
        overall = lexical_index.search(cur, query, depth)
        within = (
            lexical_index.search(cur, query, len(pinned), candidate_ids=pinned) if pinned else []
        )
        return overall, within


def _pinned_ranking(
    store: MemoryStore,
    query_vec: npt.NDArray[np.float32] | None,
    lexical: list[tuple[int, float]],
    tuning: RecallTuning,
) -> tuple[list[int], dict[int, float]]:
    """Pinned points that are about the query at all — a word match (`lexical`, the word
    ranking within the pins), or a cosine of at least half the floor — ranked by RRF of
    exact cosine over the pinned vectors and BM25; and their cosines. Embedding models
    give almost any two texts a positive cosine, so "no floor at all" would put every
    pin into every prompt."""
    vector: list[tuple[int, float]] = []
    dim = store.embed_dim
    if query_vec is not None and dim is not None and dim == query_vec.shape[-1]:
        ids, matrix = store.pins.normalized(dim)
        if len(ids):
            found = exact_search(query_vec, ids, matrix, len(ids), normalized=True)
            least = store.config.min_score * PIN_FLOOR_FACTOR
            vector = [(int(p), float(s)) for p, s in found if s >= least]
    fused = fuse(vector, lexical, tuning)
    return sorted(fused, key=lambda p: -fused[p]), dict(vector)


def lexical_text(text: str, *, context: str = "", when: datetime | None = None) -> str:
    """What the word index sees of a point: its text, the messages around it (a turn's
    words are often in its neighbour), and its date as words ("8 May 2023"), so "what did
    I say in May" finds it. Only the index sees these; the point's content stays as said."""
    parts = [text]
    if context:
        parts.append(context)
    if when is not None:
        parts.append(f"{when.day} {when:%B %Y}")
    return "\n".join(parts)
