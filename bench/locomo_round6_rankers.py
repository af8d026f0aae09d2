"""The rankers of the sixth recall round (`bench/locomo_round6.py`): one question of one
conversation → its top 10 point ids.

The round starts from `DATED`: round 5's product with the date boost on (the fused top 30
times 2 for a point inside a time the question names, then the top 10 weighed by the length
prior on those scores). `shaped` prototypes it from the product's own two rankings
(`bench.locomo_round5_rankers.base`) with one more multiplier: over the top 30 (before the
re-order, so it can change which points are in the top 10) or inside the top 10 (beside the
prior, so only their order). With no multiplier it ranks every question exactly as `recall`
with `DATED`; with the answer types over the top 30 at `TUNING.answer_boost` exactly as
`recall` with `TUNING`, the product since this round (`run` counts any question where
either does not).

The multipliers are this round's ideas, none a model call:
- answer types from classic question answering (a "when" question wants a point holding a
  time, "how many" a number, "where" a place, "who" a name: Moldovan et al. 2000, Prager
  et al. 2000 "predictive annotation"), the rules of `memory.text.answers`;
- a point that asks goes down (its own text only asks, or ends with a question): a question
  rarely holds its own answer (answer-sentence selection; dialogue-act filtering).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.locomo_data import Question
from bench.locomo_round5_rankers import DATED, TOP, Conv, Ranker, boosted_prior
from memory.text.answers import AnswerType, answer_types, holds_answer, question_names


def only_asks(text: str) -> bool:
    """Every sentence of the point's own text (after a "Speaker:" prefix) is a question."""
    own = text.split(": ", 1)[1] if re.match(r"^[A-Z][\w .'-]{0,40}: ", text) else text
    pieces = [p for p in re.split(r"(?<=[.!?])\s+", own.strip()) if p]
    return bool(pieces) and all(p.rstrip("\"')").endswith("?") for p in pieces)


def ends_asking(text: str) -> bool:
    """The point's text ends with a question."""
    return text.rstrip().rstrip("\"')").endswith("?")


@dataclass
class Texts:
    """The stored text of each point of a conversation (what the product would read)."""

    content: dict[int, str]
    cache: dict[tuple[str, int], object] = field(default_factory=dict)

    def feature(self, name: str, pid: int, compute: Callable[[str], object]) -> object:
        key = (name, pid)
        if key not in self.cache:
            self.cache[key] = compute(self.content.get(pid, ""))
        return self.cache[key]


@dataclass
class Conv6(Conv):
    """A replayed conversation (`bench.locomo_round5_rankers.Conv`) and its points' texts."""

    texts: Texts = field(default_factory=lambda: Texts({}))


Factor = Callable[[Texts, Question, int], float]
"""A multiplier on a point's score for a question (1: unchanged)."""


def shaped(factor: Factor | None = None, *, depth: int = TOP) -> Ranker:
    """`DATED`, with `factor` on the boosted scores over the top `depth` (30: before the
    re-order; 10: inside the top 10, beside the length prior). None: `DATED` itself."""

    def rank(conv: Conv, index: int, question: Question) -> list[int]:
        assert isinstance(conv, Conv6)
        texts = conv.texts
        on = None if factor is None else (lambda pid: factor(texts, question, pid))
        return boosted_prior(
            conv,
            index,
            question,
            DATED.date_boost,
            DATED.length_prior,
            DATED.list_vector_weight,
            on,
            depth,
        )

    return rank


def answer_type(kinds: frozenset[AnswerType], strength: float) -> Factor:
    """1 + `strength` for a point that holds what the question asks for, when that is one of
    `kinds` (`memory.text.answers`, the rule the product would run)."""

    def factor(texts: Texts, question: Question, pid: int) -> float:
        asked = answer_types(question.question) & kinds
        if not asked:
            return 1.0
        names = question_names(question.question)
        held = texts.feature(f"{sorted(asked)} {question.question}", pid, _holds(asked, names))
        return 1.0 + strength if held else 1.0

    return factor


def _holds(asked: frozenset[AnswerType], names: frozenset[str]) -> Callable[[str], object]:
    return lambda text: holds_answer(text, asked, names)


def asking_down(strength: float, *, only: bool) -> Factor:
    """1 - `strength` for a point whose own text only asks (`only`) or ends with a question."""
    test = only_asks if only else ends_asking
    name = "only_asks" if only else "ends_asking"

    def factor(texts: Texts, question: Question, pid: int) -> float:
        return 1.0 - strength if texts.feature(name, pid, test) else 1.0

    return factor
