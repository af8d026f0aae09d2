"""BM25 rankings over the word index's mirror (`CompactPostings`): which pass answers (the
pruned walk, `store.lexical_topk`, else the dense pass, `store.lexical_dense`), the ranking
within a subset, and the terms of a feedback round. Pure functions of the arrays: the caller
(`store.lexical_cache`) holds the lock and has synced.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from store import bm25, lexical_dense, lexical_query, lexical_topk

if TYPE_CHECKING:
    from store.lexical_postings import CompactPostings


def score(
    index: CompactPostings, groups: list[tuple[str, ...]], k: int, wanted: list[int] | None
) -> list[tuple[int, float]]:
    """The top `k`, or (`wanted`) the top `k` of the ranking within those points."""
    if wanted is not None:
        return within(index, groups, wanted)[:k]
    return ranked(index, groups, k)


def ranked(
    index: CompactPostings, groups: list[tuple[str, ...]], k: int
) -> list[tuple[int, float]]:
    """The top `k` (`store.lexical_topk`: pruned, exact; the dense pass when it must)."""
    if lexical_topk.PRUNING:
        query = lexical_query.prepare(index, groups)
        if query is None:
            return []
        found = lexical_topk.top(index, query, k)
        if found is not None:
            return found
    totals = lexical_dense.totals(index, groups)
    return [] if totals is None else lexical_dense.top(index, totals, k, None)


def within(
    index: CompactPostings, groups: list[tuple[str, ...]], ids: list[int]
) -> list[tuple[int, float]]:
    """The ranking of the points `ids` (those with a score > 0)."""
    if lexical_topk.PRUNING:
        query = lexical_query.prepare(index, groups)
        return [] if query is None else lexical_topk.within(index, query, ids)
    totals = lexical_dense.totals(index, groups)
    return [] if totals is None else lexical_dense.top(index, totals, len(ids), ids)


def ranked_and_within(
    index: CompactPostings, groups: list[tuple[str, ...]], k: int, subset: list[int]
) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
    """The top `k` overall and the ranking within `subset`, from one scoring pass."""
    if not lexical_topk.PRUNING:
        overall = ranked(index, groups, k)
        return overall, (within(index, groups, subset) if subset and overall else [])
    prepared = lexical_query.prepare(index, groups)  # once for both rankings
    if prepared is None:
        return [], []
    return lexical_topk.top_and_within(index, prepared, k, subset)


def feedback_terms(
    index: CompactPostings, seeds: Sequence[int], terms: int, asked: set[str]
) -> list[tuple[str, ...]]:
    """The `terms` terms the `seeds` share most, weighted by idf, as one-term groups (a term
    in one seed only, or `asked`, or in fewer than two points overall is left out)."""
    n = index.doc_count
    shared: Counter[str] = Counter()
    for point_id in seeds:
        shared.update(index.terms_of(point_id))
    weighted: list[tuple[float, str]] = []
    for term, count in shared.items():
        if count < 2 or term in asked:
            continue
        df = index.document_frequency(term)
        if df < 2:
            continue
        idf = bm25.idf(n, df)
        weighted.append((count * idf, term))
    best = sorted(weighted, reverse=True)[:terms]
    return [(term,) for _, term in best]
