"""What a question asks for, and whether a text holds that kind of thing — answer types from
classic question answering, without a model: a "when" question wants a time, "how many /
much / long / often / old" a number, "where" a place, "who" a name.

Recall weighs a point that holds what its question asks for up among the first 30
(`memory.recall`, `RecallTuning.answer_boost`), chosen leave-one-conversation-out on
LoCoMo (docs/recall-quality.md, "Sixth round"). English question words only; a question in
another language asks for none, and ranks as without the rule.
"""

from __future__ import annotations

import re
from typing import Final, Literal

from memory.text.shape import CONTENT_CHARS

AnswerType = Literal["when", "number", "where", "who"]

_MONTHS: Final = (
    "January|February|March|April|May|June|July|August|September|October|November|December"
)
_DAYS: Final = "Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday"
_CALENDAR: Final = re.compile(rf"(?:{_MONTHS}|{_DAYS})")

_ASKS: Final[dict[AnswerType, re.Pattern[str]]] = {
    "when": re.compile(
        r"^\s*when\b|\bwhat (?:year|month|day|date|time)\b|\bhow long ago\b", re.IGNORECASE
    ),
    "number": re.compile(r"\bhow (?:many|much|long|often|old)\b", re.IGNORECASE),
    "where": re.compile(r"\bwhere\b", re.IGNORECASE),
    "who": re.compile(r"\bwho(?:se|m)?\b", re.IGNORECASE),
}
_TIME: Final = re.compile(
    r"\b(?:(?i:yesterday|today|tonight|tomorrow|weekend|ago|recently|"
    r"(?:last|next|this|past) (?:week|month|year|night|weekend|summer|winter|spring|fall|"
    r"morning|evening|friday|saturday|sunday))|(?:19|20)\d\d|"
    rf"{_MONTHS}|{_DAYS})\b"
)
"""A time or a date-like word: "yesterday", "last week", "2023", "May", "Sunday"."""
_NUMBER: Final = re.compile(
    r"\b\d+(?:[.,]\d+)?\b|\b(?i:two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
    r"fifteen|twenty|thirty|forty|fifty|hundred|thousand|dozen|couple|once|twice)\b"
)
_PLACE: Final = re.compile(
    r"\b(?i:in|at|to|from|near|visit(?:ed|ing)?|around|across|into)\s+(?:the\s+)?"
    r"(?P<w>[A-Z][a-z]+)"
)
"""A capitalised word after a preposition of place ("in Paris", "to the Louvre")."""
_SENTENCE: Final = re.compile(r"(?<=[.!?:])\s+")
_WORD: Final = re.compile(r"[A-Za-z][A-Za-z'-]*")

HOLDS_CHARS: Final = CONTENT_CHARS
"""A text is searched in its first this many characters (as `shape.content_words`)."""


_OPENS: Final = re.compile(r"^\s*(?:when|where|who|whom|whose|how|what|which)\b", re.IGNORECASE)


def answer_types(question: str) -> frozenset[AnswerType]:
    """The answer types `question` asks for; empty for a question that asks for none, and
    for a message that is no question (no "?" and no question word first: "the man who
    sold me the car")."""
    if "?" not in question and not _OPENS.match(question):
        return frozenset()
    return frozenset(kind for kind, pattern in _ASKS.items() if pattern.search(question))


def _names(text: str) -> set[str]:
    """Capitalised words that do not open a sentence, other than "I" and calendar words."""
    found: set[str] = set()
    for sentence in _SENTENCE.split(text):
        for word in _WORD.findall(sentence)[1:]:
            if word[0].isupper() and word != "I" and not _CALENDAR.fullmatch(word):
                found.add(word.lower())
    return found


def question_names(question: str) -> frozenset[str]:
    """Every capitalised word of `question` (the people it asks about are no answer)."""
    return frozenset(w.lower() for w in _WORD.findall(question) if w[0].isupper())


def holds_answer(text: str, kinds: frozenset[AnswerType], asked_names: frozenset[str]) -> bool:
    """Whether `text` holds a thing of one of `kinds`: a time, a number, a place, or a name
    the question does not already hold (`asked_names`: `question_names`)."""
    text = text[:HOLDS_CHARS]
    if "when" in kinds and _TIME.search(text):
        return True
    if "number" in kinds and _NUMBER.search(text):
        return True
    if "where" in kinds and any(not _CALENDAR.fullmatch(m["w"]) for m in _PLACE.finditer(text)):
        return True
    return "who" in kinds and bool(_names(text) - asked_names)
