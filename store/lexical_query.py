"""A word query made ready for `CompactPostings` (store/lexical_topk.py walks it): each group's
terms with their postings, idf, stored factors and bound; and its exact BM25 over a set of
slots, summed group by group in query order as the dense pass sums, so every score is the
same float. Docs: docs/lexical_search.md."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from store import bm25
from store.bm25 import FACTOR_ERROR, ROUGH_ERROR, contributions, factor_drift
from store.lexical_postings import CompactPostings

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from store.lexical_posting_reads import PostingPart

# The stored factors are used while the average length is within this of theirs: their error
# widens every margin of the walk by it (the file is written again long before).
MAX_FACTOR_DRIFT = 0.05


@dataclass(frozen=True, slots=True)
class Alternative:
    parts: tuple[PostingPart, ...]  # the merged postings, then the appended ones (ascending)
    idf: float
    factors: NDArray[np.float16] | None  # the first part's stored factors, if it has them


@dataclass(frozen=True, slots=True)
class QueryGroup:
    alternatives: tuple[Alternative, ...]
    bound: float  # above any document's contribution from this group
    size: int  # postings


@dataclass(frozen=True, slots=True)
class PreparedQuery:
    groups: list[QueryGroup]  # in query order
    avgdl: float
    doc_lengths: NDArray[np.int32]
    value_error: float  # above a walked value's relative error (computed or stored factors)

    @property
    def rough(self) -> float:
        """Above a float32 partial score's relative error: each value's and one rounding
        per group summed, doubled (1 + this bounds both ways)."""
        return 2 * (self.value_error + len(self.groups) * 2.0**-24)


def prepare(index: CompactPostings, groups: Sequence[tuple[str, ...]]) -> PreparedQuery | None:
    """The query's groups with their postings and idf; None when no term matches."""
    n = index.doc_count
    if n == 0:
        return None
    avgdl = max(index.total_length / n, 1e-9)
    drift = factor_drift(avgdl, index.factor_avgdl) if index.factor_avgdl else 1.0
    stored = drift <= MAX_FACTOR_DRIFT  # else the walk computes every value
    found: list[QueryGroup] = []
    for group in groups:
        alternatives, terms = [], []
        for term in group:
            postings = index.posting_parts(term)  # not joined: a join copies the list
            if postings is not None:
                parts, df = postings
                idf = bm25.idf(n, df)
                held = index.merged_factors(term) if stored else None
                alternatives.append(Alternative(tuple(parts), idf, held))
                terms.append(term)
        if alternatives:
            pairs = zip(alternatives, terms, strict=True)
            bound = max(a.idf * index.impact(term, avgdl) for a, term in pairs)
            size = sum(len(slots) for a in alternatives for slots, _ in a.parts)
            found.append(QueryGroup(tuple(alternatives), bound, size))
    if not found:
        return None
    error = ROUGH_ERROR
    if stored and any(a.factors is not None for g in found for a in g.alternatives):
        error = max(error, (1 + drift) * (1 + FACTOR_ERROR) - 1)
    return PreparedQuery(found, avgdl, index.doc_lengths(), error)


def exact(query: PreparedQuery, slots: NDArray[np.int64]) -> NDArray[np.float64]:
    """The BM25 of `slots` (ascending), summed group by group in query order like the dense
    pass, so every float is the same. Every group's terms are looked up first and all the
    hits' contributions come from one `contributions` call (each hit with its term's
    idf: the same operations on the same values as a call a term), ~10 numpy calls a term
    fewer (docs/lexical_search.md, "Seventh round")."""
    totals = np.zeros(len(slots), dtype=np.float64)
    if not len(slots):
        return totals
    looked = [[_hits(a, slots) for a in group.alternatives] for group in query.groups]
    found = [hit for group in looked for hit in group]
    if not sum(len(where) for where, _, _ in found):
        return totals
    idfs = [a.idf for group in query.groups for a in group.alternatives]
    values = contributions(
        np.concatenate([at for _, at, _ in found]),
        np.concatenate([tfs for _, _, tfs in found]),
        np.repeat(idfs, [len(where) for where, _, _ in found]),
        query.avgdl,
        query.doc_lengths,
    )
    start = 0
    for group in looked:
        if len(group) == 1:  # a slot once: added where the term occurs (+ 0.0 elsewhere)
            where = group[0][0]
            totals[where] += values[start : start + len(where)]
            start += len(where)
            continue
        best = np.zeros(len(slots), dtype=np.float64)
        for where, _, _ in group:
            best[where] = np.maximum(best[where], values[start : start + len(where)])
            start += len(where)
        totals += best
    return totals


def group_values(
    group: QueryGroup, slots: NDArray[np.int64], query: PreparedQuery
) -> NDArray[np.float64]:
    """The group's BM25 contribution to each of `slots` (ascending): its best alternative's,
    0 where none occurs."""
    best = np.zeros(len(slots), dtype=np.float64)
    for alternative in group.alternatives:
        where, at, tfs = _hits(alternative, slots)
        values = contributions(at, tfs, alternative.idf, query.avgdl, query.doc_lengths)
        if len(group.alternatives) == 1:
            best[where] = values
        else:
            best[where] = np.maximum(best[where], values)
    return best


def _hits(
    alternative: Alternative, slots: NDArray[np.int64]
) -> tuple[NDArray[np.intp], NDArray[np.integer], NDArray[np.integer]]:
    """Where in `slots` the term occurs, with those postings' slots and tfs (a slot is in
    one part of the term's postings at most). The shorter of the two is looked up in the
    longer (both ascending): a binary search per element of the shorter."""
    found: list[tuple[NDArray[np.intp], NDArray[np.integer], NDArray[np.integer]]] = []
    for postings, tfs in alternative.parts:
        if not len(postings):
            continue
        if len(postings) < len(slots):  # a rare word among many candidates: its postings
            at = np.searchsorted(slots, postings)  # looked up in the slots, not the reverse
            at = np.minimum(at, len(slots) - 1)
            hit = slots[at] == postings
            found.append((at[hit], postings[hit], tfs[hit]))
            continue
        # the keys in the postings' dtype: else numpy converts the whole list at every call
        at = np.searchsorted(postings, slots.astype(postings.dtype, copy=False))
        at = np.minimum(at, len(postings) - 1)
        hit = postings[at] == slots
        at = at[hit]
        found.append((np.flatnonzero(hit), postings[at], tfs[at]))
    if len(found) == 1:
        return found[0]
    if not found:
        return np.empty(0, dtype=np.intp), np.empty(0, np.int32), np.empty(0, np.int32)
    return (
        np.concatenate([where for where, _, _ in found]),
        np.concatenate([at for _, at, _ in found]),
        np.concatenate([tfs for _, _, tfs in found]),
    )
