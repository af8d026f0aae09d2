"""The dream's first step: pick a seed memory and the memories related to it (shared index
terms or key parts), masked and clipped as the model will see them. Pure: no I/O. The rule in
full: docs/dream.md.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from memory.fact_types import key_parts
from memory.secret_masking import mask_secrets
from memory.text.words import clip, one_line, terms
from store.fact_records import Fact
from store.point_records import Point

SOURCE_LIMIT = 12
SOURCE_TEXT_CHARS = 400
MIN_SHARED_TERMS = 2
COMMON_SHARE = 0.5  # a term in more than this share of the pool relates nothing
COMMON_MIN_DF = 3

SourceKind = Literal["fact", "point"]


@dataclass(frozen=True, slots=True)
class DreamSource:
    """One memory shown to the model: its namespaced id and its (masked, clipped) text."""

    id: str
    kind: SourceKind
    text: str


@dataclass(frozen=True, slots=True)
class _Memory:
    id: str
    kind: SourceKind
    text: str
    terms: frozenset[str]
    key_terms: frozenset[str]


def _pool(facts: Iterable[Fact], pinned_points: Iterable[Point]) -> list[_Memory]:
    pool: list[_Memory] = []
    for fact in facts:
        if fact.status != "active":
            continue
        parts = " ".join(key_parts(fact.key))
        key_terms = frozenset(terms(parts))
        pool.append(
            _Memory(
                f"fact:{fact.id}",
                "fact",
                f"{fact.type} {fact.key}: {fact.body}",
                frozenset(terms(fact.body)) | key_terms,
                key_terms,
            )
        )
    for point in pinned_points:
        if not point.pinned:
            continue
        pool.append(
            _Memory(
                f"point:{point.id}",
                "point",
                point.content,
                frozenset(terms(point.content)),
                frozenset(),
            )
        )
    return [m for m in pool if m.terms]


def _relations(pool: Sequence[_Memory], *, drop_common: bool = True) -> dict[int, dict[int, float]]:
    """For each memory (by index), its related memories and the strength of each link;
    `drop_common` ignores the terms too common to relate anything."""
    postings: dict[str, list[int]] = defaultdict(list)
    for index, memory in enumerate(pool):
        for term in memory.terms:
            postings[term].append(index)
    n = len(pool)
    shared: dict[tuple[int, int], list[str]] = defaultdict(list)
    for term, indices in postings.items():
        df = len(indices)
        if df < 2 or (drop_common and df >= COMMON_MIN_DF and df > n * COMMON_SHARE):
            continue  # shared by none, or too common to relate anything
        for i, a in enumerate(indices):
            for b in indices[i + 1 :]:
                shared[(a, b)].append(term)
    links: dict[int, dict[int, float]] = defaultdict(dict)
    for (a, b), words in shared.items():
        key_link = bool(pool[a].key_terms & pool[b].key_terms & set(words))
        if len(words) < MIN_SHARED_TERMS and not key_link:
            continue
        strength = sum(math.log(1 + n / len(postings[w])) for w in words)
        links[a][b] = strength
        links[b][a] = strength
    return links


def _source(memory: _Memory) -> DreamSource:
    text = clip(one_line(mask_secrets(memory.text)), SOURCE_TEXT_CHARS)
    return DreamSource(memory.id, memory.kind, text)


def pick_sources(
    facts: Sequence[Fact],
    pinned_points: Sequence[Point],
    *,
    limit: int = SOURCE_LIMIT,
    covered: Collection[str] = (),
) -> list[DreamSource]:
    """A seed memory and its related memories (docs/dream.md), at most `limit`;
    empty when no two memories are related. Inactive facts and unpinned points are skipped."""
    pool = _pool(facts, pinned_points)
    # a pool on one subject shares its subject's words everywhere: then they are the link
    links = _relations(pool) or _relations(pool, drop_common=False)
    if not links:
        return []

    def rank(index: int) -> tuple[bool, int, float, int]:
        neighbours = links.get(index, {})
        return (pool[index].id not in covered, len(neighbours), sum(neighbours.values()), -index)

    seed = max(links, key=rank)
    neighbours = sorted(links[seed].items(), key=lambda item: (-item[1], item[0]))
    chosen = [seed, *(index for index, _ in neighbours)][: max(limit, 2)]
    return [_source(pool[index]) for index in chosen]
