"""The word index's dense BM25 pass: every slot scored, then the top k. The reference the
pruned walk (`store.lexical_topk`) must equal bit for bit, and what `LexicalCache` uses
when pruning is off (`lexical_topk.PRUNING`, for the benches) or cannot answer."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from store import bm25
from store.bm25 import contributions

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from store.lexical_postings import CompactPostings


def totals(index: CompactPostings, groups: Sequence[tuple[str, ...]]) -> NDArray[np.float64] | None:
    """BM25 of every slot for the query (groups of alternative terms: a doc scores the
    best alternative of each group); None when no term matches a live point."""
    n = index.doc_count
    if n == 0:
        return None
    avgdl = max(index.total_length / n, 1e-9)
    doc_lengths = index.doc_lengths()
    scores = np.zeros(index.slot_count, dtype=np.float64)
    matched = False
    for group in groups:
        present = [found for found in map(index.postings, group) if found is not None]
        if not present:
            continue
        matched = True
        if len(present) == 1:  # a term's slots are unique: fancy-index add is exact
            slots, values = _scores(present[0], n, avgdl, doc_lengths)
            scores[slots] += values
            continue
        best = np.zeros_like(scores)
        for item in present:
            slots, values = _scores(item, n, avgdl, doc_lengths)
            best[slots] = np.maximum(best[slots], values)
        scores += best
    if not matched:
        return None
    if index.dead:
        scores[index.alive_mask() == 0] = 0.0
    return scores


def top(
    index: CompactPostings, scores: NDArray[np.float64], k: int, wanted: Iterable[int] | None
) -> list[tuple[int, float]]:
    """The `k` best slots with a score > 0 as (point id, score), ties by lower id;
    `wanted` restricts them to those point ids."""
    if wanted is not None:
        found = (index.slot_of(p) for p in set(wanted))
        candidates = np.fromiter((s for s in found if s is not None), dtype=np.int64)
    else:
        candidates = np.flatnonzero(scores)
    if candidates.size > k:
        values = scores[candidates]
        threshold = np.partition(values, candidates.size - k)[candidates.size - k]
        candidates = candidates[values >= threshold]
    return ranked(index, candidates, scores[candidates], k)


PARTITION_FROM = 8  # `ranked` partitions first when it keeps under 1 in this many


def ranked(
    index: CompactPostings, slots: NDArray[np.int64], scores: NDArray[np.float64], k: int
) -> list[tuple[int, float]]:
    """The `k` best of `slots` with a score > 0 (`scores` theirs), as (point id, score),
    ties by lower point id."""
    keep = scores > 0
    slots, scores = slots[keep], scores[keep]
    if 0 < k < len(scores) // PARTITION_FROM:  # only those scoring at least the k-th best
        cut = np.partition(scores, len(scores) - k)[len(scores) - k]  # (all of its ties)
        near = scores >= cut
        slots, scores = slots[near], scores[near]
    point_ids = index.point_ids()[slots]
    order = np.lexsort((point_ids, -scores))[:k]
    return [(int(point_ids[i]), float(scores[i])) for i in order]


def _scores(
    postings: tuple[NDArray[np.int32], NDArray[np.integer], int],
    n: int,
    avgdl: float,
    doc_lengths: NDArray[np.int32],
) -> tuple[NDArray[np.int32], NDArray[np.float64]]:
    """A term's slots and BM25 contributions (the SQL path's formula, in float64)."""
    slots, raw_tfs, df = postings
    idf = bm25.idf(n, df)
    return slots, contributions(slots, raw_tfs, idf, avgdl, doc_lengths)
