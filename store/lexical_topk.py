"""BM25 top k over `CompactPostings` without scoring every posting of the common words:
MaxScore pruning, exact (the same ids, scores and order as the dense pass, bit for bit).

A query group's contribution to any document is at most its bound: over its alternatives,
the largest idf · max over the term's postings of tf·(k1+1) / (tf + k1·norm) (cached by term,
`CompactPostings.impact`; at most idf · (k1 + 1)). Take the groups by bound, highest (rarest) first,
adding each one's contributions into a per-slot scratch array: a point holding none of the
first `e` groups scores below the sum of the other groups' bounds (`rest`), so once the k-th
best partial score (kept as the walk goes: `_Best`) beats `rest`, the common words' posting
lists are never walked. Of the candidates, only those whose partial score plus `rest` can
still reach that k-th best are kept; the groups not walked are then looked up for them one
at a time, best bound first, dropping those that can no longer reach it (`_narrowed`); the
few left are scored exactly: every group looked up by binary search in its sorted posting
list and summed in query order, as the dense pass sums, so every score is the same float. A
query of common words only walks them all, like the dense pass. The walk's partial scores
are float32 (`bm25.rough_contributions`): they only bound, so each comparison allows their
rounding (`PreparedQuery.rough`). A file's merged postings carry their factors
(`bm25.factors`, float16, at the file's average length): the walk multiplies them by idf
instead of computing each value from its slot's length, and widens its margins by their
error (`FACTOR_ERROR`, and how far the average length moved since). The query's
preparation and its exact scores are `store/lexical_query.py`. Docs: docs/lexical_search.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from store.bm25 import (
    rough_contributions,
)
from store.lexical_dense import ranked
from store.lexical_postings import CompactPostings
from store.lexical_query import Alternative, PreparedQuery, QueryGroup, exact, group_values
from store.sorted_keys import sorted_unique

if TYPE_CHECKING:
    from numpy.typing import NDArray


PRUNING = True  # False: always the dense pass (bench.lexical_open compares the two)
LOOKUP_COST = 2  # a look-up for a candidate costs about as much as walking this many postings
_SAFETY = 1 + 1e-9  # rounding margin on the bound: a tie at the cut is never pruned
CAN_REACH_SAMPLE = 8  # `_can_reach` counts in one candidate in this many
ZERO_ALL_RATIO = 20  # zero the whole scratch array once a query touched 1 slot in this many


# what a group's walk touched: the slots new to the walk, and each slot with its partial now
_Accumulated = tuple["NDArray[np.int64]", list[tuple["NDArray[np.intp]", "NDArray[np.float32]"]]]


def top(index: CompactPostings, query: PreparedQuery, k: int) -> list[tuple[int, float]]:
    """The `k` best live points as (point id, score), ties by lower id — as the dense pass
    ranks them."""
    hopeful = _hopeful(index, query, k)
    return ranked(index, hopeful, exact(query, hopeful), k)


def top_and_within(
    index: CompactPostings, query: PreparedQuery, k: int, point_ids: Sequence[int]
) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
    """`top` and, when it found any, `within` of `point_ids` (recall's pins), from one
    `exact` pass over both sets of slots: its look-ups cost per query group, not per slot,
    so the pins' ranking costs ~0.1 ms less a recall at 100k (docs/recall-latency.md,
    "Sixth session"). A slot's score does not depend on the others scored with it: the
    same floats as the two calls."""
    hopeful = _hopeful(index, query, k)
    pins = index.live_slots_of(point_ids) if point_ids else np.empty(0, np.int64)
    # ascending, as `exact` wants (np.union1d sorted from scratch: 0.67 ms for 10k + 50)
    slots = sorted_unique(np.concatenate([hopeful, pins]))
    scores = exact(query, slots)
    overall = ranked(index, hopeful, scores[np.searchsorted(slots, hopeful)], k)
    if not overall or not len(pins):
        return overall, []
    return overall, ranked(index, pins, scores[np.searchsorted(slots, pins)], len(pins))


def _hopeful(index: CompactPostings, query: PreparedQuery, k: int) -> NDArray[np.int64]:
    """The slots (ascending) that can still be among the `k` best: MaxScore's walk."""
    groups = query.groups
    by_bound = sorted(range(len(groups)), key=lambda i: -groups[i].bound)
    rest = [*np.cumsum([groups[i].bound for i in reversed(by_bound)])[::-1].tolist(), 0.0]
    partial = index.scratch()  # zeros; every slot touched below is zeroed again at the end
    touched: list[NDArray[np.int64]] = []
    live: list[NDArray[np.int64]] = []  # the candidates: touched and not removed
    best = _Best(k)
    high = 1 + query.rough  # a float32 partial times this is above its exact value …
    low = 1 / high  # … and times this below it
    try:
        essential = 0
        while essential < len(groups):
            group = groups[by_bound[essential]]
            new, changed = _accumulate(index, partial, group, query)
            touched.append(new)
            live.append(index.live(new))
            best.add(index, partial, changed)
            essential += 1
            if essential == len(groups):
                continue
            theta = best.kth * low
            bound = rest[essential] * _SAFETY  # above the score of any point not touched yet
            if bound < theta:  # no other point reaches the k-th best
                walk = groups[by_bound[essential]].size  # the next group's postings
                reach = _can_reach(partial, live, theta, rest[essential], high)
                if walk > LOOKUP_COST * reach * len(groups):
                    break  # cheaper to look its postings up for the hopeful ones
        theta = best.kth * low
        hopeful, scores = _can_still_reach(partial, live, theta, rest[essential], high)
        _zero(partial, touched)
    except BaseException:
        index.drop_scratch()  # maybe not all zero again
        raise
    order = np.argsort(hopeful)
    unwalked = [groups[i] for i in by_bound[essential:]]
    return _narrowed(query, hopeful[order], scores[order], unwalked, rest[essential:], theta, k)


class _Best:
    """The `k` best partial scores of the walk so far (live slots): after each group, the
    old best and the slots the group raised to at least the old k-th best are all that can
    be the new best (a score only grows, and one not raised stays at most the old k-th), so
    the k-th best costs the few that pass, not every candidate (a `np.partition` of 250k
    candidates after every group was ~40 % of the slowest walks at 1M)."""

    def __init__(self, k: int) -> None:
        self.k = k
        self.slots = np.empty(0, np.int64)  # ascending
        self.kth = 0.0  # the k-th best partial score (a float32's value); 0 while fewer than k

    def add(
        self,
        index: CompactPostings,
        partial: NDArray[np.float32],
        changed: list[tuple[NDArray[np.intp], NDArray[np.float32]]],
    ) -> None:
        """Take in a group's raised slots with their new partial scores."""
        passing = [slots[values >= self.kth] for slots, values in changed]
        raised = index.live(np.concatenate(passing).astype(np.int64, copy=False))
        old = self.slots
        if len(old) and len(raised):  # a raised one of the old best: once
            at = np.minimum(np.searchsorted(old, raised), len(old) - 1)
            raised = raised[old[at] != raised]
        union = np.concatenate([old, raised])
        if len(union) < self.k:
            self.slots = np.sort(union)
            return
        values = partial.take(union)
        first = len(union) - self.k
        at = np.argpartition(values, first)[first:]
        self.slots = np.sort(union[at])
        self.kth = float(values[at].min())


def _can_still_reach(
    partial: NDArray[np.float32],
    live: list[NDArray[np.int64]],
    theta: float,
    rest: float,
    high: float,
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """The candidates that can still reach `theta` with `rest` more (`_reaches`), and their
    partial scores: first in float32 against a cut a little below the exact one, then the
    few that pass exactly (float64 for all ~250k candidates of the slowest queries at 1M
    cost ~0.3 ms more)."""
    cut = np.nextafter(np.float32(_reach_cut(theta, rest, high)), np.float32(0))
    cut = np.nextafter(cut, np.float32(-np.inf)) if cut > 0 else np.float32(-np.inf)
    slots, scores = [], []
    for candidates in live:
        values = partial.take(candidates)
        passed = np.flatnonzero(values >= cut)
        slots.append(candidates[passed])
        scores.append(values[passed].astype(np.float64))
    found, partial_scores = np.concatenate(slots), np.concatenate(scores)
    kept = _reaches(partial_scores * high, rest, theta)
    return found[kept], partial_scores[kept]


def _can_reach(
    partial: NDArray[np.float32],
    live: list[NDArray[np.int64]],
    theta: float,
    rest: float,
    high: float,
) -> int:
    """About how many candidates can still reach `theta` with `rest` more: counted in every
    `CAN_REACH_SAMPLE`-th (it only weighs walking against looking up)."""
    cut = _reach_cut(theta, rest, high)
    return CAN_REACH_SAMPLE * sum(
        int(np.count_nonzero(partial.take(slots[::CAN_REACH_SAMPLE]) >= cut)) for slots in live
    )


def _narrowed(
    query: PreparedQuery,
    slots: NDArray[np.int64],
    walked: NDArray[np.floating],
    unwalked: list[QueryGroup],
    rest: list[float],
    theta: float,
    k: int,
) -> NDArray[np.int64]:
    """MaxScore's look-ups: the groups the walk left (`unwalked`, best bound first) looked up
    for the hopeful `slots` (ascending; `walked`: their float32 partial scores), one group at
    a time; after each, the k-th best of the scores so far (a lower bound: the partial score
    divided by its rounding, plus the exact values looked up) may raise `theta`, and a slot
    whose score so far plus the bounds of the groups still left (`rest`) cannot reach it is
    dropped. `exact` then scores the few left (at 1M the slowest queries' 2,200 hopeful slots
    became ~50: `exact` 0.84 → 0.32 ms; docs/lexical_search.md, "Fifth round"). The sums
    here are float64 in another order than `exact`'s: within ~1e-15 of its, far inside
    `_SAFETY`."""
    high = 1 + query.rough
    below, above = walked / high, walked * high
    for i, group in enumerate(unwalked):
        if len(slots) <= k:
            break
        values = group_values(group, slots, query)
        below += values
        above += values
        theta = max(theta, _kth(below, k))
        kept = _reaches(above, rest[i + 1], theta)
        slots, below, above = slots[kept], below[kept], above[kept]
    return slots


def _reach_cut(theta: float, rest: float, high: float) -> float:
    """The partial score (float32, its rounding `high`) from which a candidate passes
    `_reaches` with `rest` more: `_reaches`' rule solved for it."""
    return (theta / _SAFETY - rest * _SAFETY) / high


def _reaches(above: NDArray[np.floating], rest: float, theta: float) -> NDArray[np.bool_]:
    """Which slots can still reach the k-th best score `theta`: their score so far (`above`,
    at least its exact value) plus the bounds of the groups still left (`rest`), with the
    rounding margin that keeps a tie at the cut."""
    return above + rest * _SAFETY >= theta / _SAFETY


def _zero(scratch: NDArray[np.float32], touched: list[NDArray[np.int64]]) -> None:
    """Zero the slots of `scratch` a query touched: one by one while they are few, else the
    whole array (a memset of 4 MB at 1M points, < 0.15 ms, beats putting zeros at more than
    ~1 slot in 20: 0.66 ms for 300k slots; docs/recall-latency.md, "Eleventh session")."""
    if sum(map(len, touched)) * ZERO_ALL_RATIO > len(scratch):
        scratch.fill(0.0)
        return
    for slots in touched:
        scratch[slots] = 0.0


def _accumulate(
    index: CompactPostings, partial: NDArray[np.float32], group: QueryGroup, query: PreparedQuery
) -> _Accumulated:
    """Add the group's rough contributions (best alternative) to `partial` in any order (only
    for pruning); returns the slots it touched first (each slot once over all groups), and
    every slot it touched with its partial score now (`_Best`)."""
    alternatives = group.alternatives
    scored: list[tuple[NDArray[np.intp], NDArray[np.float32]]] = []
    if len(alternatives) == 1:  # its parts hold a slot once between them
        for i, part in enumerate(alternatives[0].parts):
            slots = part[0].astype(np.intp)  # once: numpy converts at every index
            scored.append((slots, _values(alternatives[0], i, part[1], slots, query)))
    else:  # the best alternative per slot, in a second scratch array (no sort)
        best = index.scratch(1)
        fresh = []
        for alternative in alternatives:
            for i, part in enumerate(alternative.parts):
                at = part[0].astype(np.intp)
                found = _values(alternative, i, part[1], at, query)
                had = best.take(at)
                fresh.append(at[had == 0.0])
                best[at] = np.maximum(had, found)
        slots = np.concatenate(fresh)
        scored.append((slots, best.take(slots)))
        _zero(best, [slots])
    new, changed = [], []
    for slots, values in scored:
        before = partial.take(slots)
        new.append(slots[before == 0.0].astype(np.int64, copy=False))  # > 0: 0 is untouched
        before += values
        partial[slots] = before
        changed.append((slots, before))
    return (new[0] if len(new) == 1 else np.concatenate(new)), changed


def _values(
    alternative: Alternative,
    part: int,
    tfs: NDArray[np.integer],
    slots: NDArray[np.intp],
    query: PreparedQuery,
) -> NDArray[np.float32]:
    """The walk's values of the alternative's `part`-th part: its stored factors times idf
    (no read of the slots' lengths), or computed (`bm25.rough_contributions`)."""
    if part == 0 and alternative.factors is not None:
        values = alternative.factors.astype(np.float32)
        values *= np.float32(alternative.idf)
        return values
    return rough_contributions(slots, tfs, alternative.idf, query.avgdl, query.doc_lengths)


def within(
    index: CompactPostings, query: PreparedQuery, point_ids: Sequence[int]
) -> list[tuple[int, float]]:
    """The ranking of `point_ids` (those with a score > 0), exactly."""
    slots = index.live_slots_of(point_ids)
    return ranked(index, slots, exact(query, slots), len(slots))


def _kth(scores: NDArray[np.floating], k: int) -> float:
    """The k-th best of `scores` (0 when there are fewer than k)."""
    if len(scores) < k:
        return 0.0
    return float(np.partition(scores, len(scores) - k)[len(scores) - k])
