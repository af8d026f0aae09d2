"""Which facts go under `## Known facts` for a message, and how they read there.

Every prompt gets the block (`FactDrawer.for_prompt`), without the model asking:

* all active rules and capabilities of this workspace and the global scope, capped at
  `always_max` (key matches first, then confidence, then the most recently verified), with a
  note saying how many the cap cut;
* then the top-k other active facts (decisions, procedures, facts) that match the message:
  exact key match first (the key, or all its parts, appear in the message as words — stems,
  so "deployed" matches `deploy:blyck`; some of its parts give a partial score), then a light
  semantic match of the body (cosine of the turn's query vector with the fact's vector, when
  ≥ `min_score`; without vectors, the share of the body's words found in the message),
  weighted by confidence and recency (last seen; a 90-day half-life-ish curve).

`FactDrawer.search` (`memory_read` with a query) ranks the same way.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import numpy.typing as npt

from memory.fact_types import key_parts
from memory.model_names import same_model
from memory.settings_models import FactsConfig
from memory.text.words import clip
from store.fact_records import Fact
from store.text_terms import default_analyzer

ALWAYS_TYPES = ("rule", "capability")
RECENCY_DAYS = 90.0  # recency weight e^(-days unseen / 90)
BODY_OVERLAP_FLOOR = 0.5  # without vectors: share of the body's words in the message


@dataclass(frozen=True, slots=True)
class InjectedFacts:
    """What went under `## Known facts` this turn, and how many rules/capabilities the cap
    left out."""

    facts: list[Fact]
    block: str
    cut: int = 0


class FactRanking:
    """How active facts match a message, and the block they make. Pure: no I/O."""

    def __init__(self, config: FactsConfig, now: Callable[[], datetime]) -> None:
        self.config = config
        self._now = now
        self._analyzer = default_analyzer()

    def inject(
        self,
        active: Sequence[Fact],
        message: str,
        query_vector: Sequence[float] | None = None,
        *,
        carry: Sequence[Fact] = (),
    ) -> InjectedFacts:
        """The `## Known facts` block for this message out of the `active` facts.

        `carry`: facts that must be in this prompt whatever the cap (the "can't" check of the
        previous reply)."""
        words = self._terms(message)
        lowered = message.lower()
        always = [f for f in active if f.type in ALWAYS_TYPES]
        always.sort(
            key=lambda f: (
                -self._key_score(f.key, words, lowered),
                -f.confidence,
                -(f.last_verified or f.updated_at).timestamp(),
                f.key,
            )
        )
        carried_ids = {f.id for f in carry}
        carried = [f for f in active if f.id in carried_ids]
        always = [f for f in always if f.id not in carried_ids]
        cap = max(self.config.always_max - len(carried), 0)
        cut = max(len(always) - cap, 0)
        chosen_always = carried + always[:cap]
        others = [f for f in active if f.type not in ALWAYS_TYPES and f.id not in carried_ids]
        ranked = self.rank(others, message, query_vector, words=words)
        chosen_others = [f for f, _ in ranked[: self.config.top_k]]
        chosen = chosen_always + chosen_others
        block, shown = self._format(chosen, cut, carried_ids)
        return InjectedFacts(shown, block, cut)

    def covering(self, facts: Sequence[Fact], query: str) -> list[Fact]:
        """The facts whose key and body hold every word of `query`, the most confident
        first: a search's short query (`facts search staging`), which the share of a body's
        words that a message must hold, or a cosine, may not reach."""
        words = self._terms(query)
        if not words:
            return []
        found = [
            f
            for f in facts
            if words <= self._terms(f"{f.key.replace(':', ' ').replace('-', ' ')} {f.body}")
        ]
        found.sort(key=lambda f: (-f.confidence, f.key))
        return found

    def _terms(self, text: str) -> builtins.set[str]:
        return set(self._analyzer.terms(text))

    def _key_score(self, key: str, words: builtins.set[str], lowered: str) -> float:
        """1.0 when the key or all its parts appear in the message; a share of 0.5 for some."""
        if key in lowered:
            return 1.0
        parts = key_parts(key)
        if not parts:
            return 0.0
        hits = 0
        for part in parts:
            stems = self._terms(part.replace("-", " "))
            if stems and stems <= words:
                hits += 1
        if hits == len(parts):
            return 1.0
        return 0.5 * hits / len(parts)

    def _semantic(
        self, fact: Fact, query: npt.NDArray[np.float32] | None, words: builtins.set[str]
    ) -> float:
        if (
            query is not None
            and fact.embedding is not None
            and same_model(fact.embed_model, self.config.embed_model)
            and fact.embedding.shape == query.shape
        ):
            norm = float(np.linalg.norm(fact.embedding) * np.linalg.norm(query))
            cosine = float(fact.embedding @ query) / norm if norm else 0.0
            return cosine if cosine >= self.config.min_score else 0.0
        body = self._terms(fact.body)
        if not body:
            return 0.0
        share = len(body & words) / len(body)
        return share if share >= BODY_OVERLAP_FLOOR else 0.0

    def rank(
        self,
        facts: Sequence[Fact],
        message: str,
        query_vector: Sequence[float] | None,
        *,
        words: builtins.set[str] | None = None,
    ) -> list[tuple[Fact, float]]:
        """The facts that match the message, best first, with their scores."""
        words = self._terms(message) if words is None else words
        lowered = message.lower()
        query = np.asarray(query_vector, dtype=np.float32) if query_vector is not None else None
        now = self._now()
        scored: list[tuple[Fact, float]] = []
        for fact in facts:
            relevance = self._key_score(fact.key, words, lowered) + 0.5 * self._semantic(
                fact, query, words
            )
            if relevance <= 0:
                continue
            days = max((now - fact.last_seen).total_seconds() / 86400.0, 0.0)
            weight = (0.5 + 0.5 * fact.confidence) * (0.5 + 0.5 * math.exp(-days / RECENCY_DAYS))
            scored.append((fact, relevance * weight))
        scored.sort(key=lambda item: (-item[1], item[0].key))
        return scored

    def _format(
        self, facts: Sequence[Fact], cut: int, carried: builtins.set[int]
    ) -> tuple[str, list[Fact]]:
        lines: list[str] = []
        shown: list[Fact] = []
        used = 0
        limit = self.config.max_chars
        for fact in facts:
            line = format_fact_line(fact, carried=fact.id in carried)
            if limit and used + len(line) + 1 > limit:
                cut += 1 if fact.type in ALWAYS_TYPES else 0
                continue
            lines.append(line)
            shown.append(fact)
            used += len(line) + 1
        if not lines and not cut:
            return "", []
        if cut:
            lines.append(
                f"({cut} more rules or capabilities are not shown here; "
                "memory_read can fetch them by key.)"
            )
        return "\n".join(lines), shown


def format_fact_line(fact: Fact, *, carried: bool = False) -> str:
    """One fact as a prompt line: `- capability deploy:blyck — body (proof: …; confidence …)`."""
    details = []
    if fact.proof and fact.type in ("capability", "procedure"):
        details.append(f"proof: {clip(fact.proof, 160)}")
    if fact.requires:
        details.append("requires " + ", ".join(fact.requires))
    details.append(f"confidence {fact.confidence:.2f}")
    if fact.last_verified:
        details.append(f"verified {fact.last_verified:%Y-%m-%d}")
    where = " (global)" if fact.scope == "global" else ""
    note = " — you said you could not do this; this fact says you can" if carried else ""
    return f"- {fact.type} `{fact.key}`{where}: {fact.body} ({'; '.join(details)}){note}"
