"""What a text's shape says without a model: how many content words a point carries (a
turn that states a fact has several; "wow, that's great!" has one or two), whether a
message asks for a list ("What books has Melanie read?": its answer is spread over turns),
and whether it asks for an inference ("Would Caroline likely …?": its answer is not said).

They feed recall's ranking (`memory.recall`: the length prior, the list questions' vector
weight, the learned re-rank's mood columns), chosen leave-one-conversation-out on LoCoMo
(docs/recall-quality.md, "Fifth round", "Twelfth round"). English question words; the
content words drop English and German stopwords.
"""

from __future__ import annotations

import re
from typing import Final

from memory.text.words import STOPWORDS

_WORD: Final = re.compile(r"\w+")
_STOPWORDS: Final = frozenset().union(*STOPWORDS.values())


CONTENT_CHARS: Final = 1000
"""`content_words` reads this many characters: a point this long is weighed ~0.9 or more
by recall's prior anyway, and a long reply would cost recall ~0.45 ms each 10 KB."""


def content_words(text: str) -> int:
    """The distinct words of `text`'s first `CONTENT_CHARS` characters that are no stopword
    and longer than one letter."""
    words = _WORD.findall(text[:CONTENT_CHARS].lower())
    return len({w for w in words if len(w) > 1 and w not in _STOPWORDS})


_TOKEN: Final = re.compile(r"[\w+'’-]+")
_KINDS: Final = frozenset(["kind", "kinds", "type", "types", "sort", "sorts"])
_NOT_PLURAL: Final = frozenset(
    [
        "is",
        "was",
        "has",
        "does",
        "this",
        "its",
        "his",
        "us",
        "as",
        "yes",
        "plus",
        "always",
        "perhaps",
    ]
)
_CUES: Final = re.compile(r"\b(?:what|which)\s+(?:are|were)\b|\bsome\b|\bboth\b", re.IGNORECASE)


def _plural(word: str) -> bool:
    low = word.lower()
    return (
        len(low) > 3
        and low.endswith("s")
        and not low.endswith(("ss", "us", "is", "'s", "’s"))
        and low not in _NOT_PLURAL
    )


def is_list_question(text: str) -> bool:
    """A question asking for several things: "what/which [kind of] [one word] <plural
    noun> …" ("What activities…", "Which European countries…", "What kind of pets…"), or a question
    with "what are/were", "some" or "both". A message without "?" that does not start with
    what/which is no question."""
    words = _TOKEN.findall(text)
    opens = bool(words) and words[0].lower() in ("what", "which")
    if not opens and "?" not in text:
        return False
    if _CUES.search(text):
        return True
    if not opens:
        return False
    rest = words[1:]
    if len(rest) > 1 and rest[0].lower() in _KINDS and rest[1].lower() == "of":
        rest = rest[2:]
    if rest and _plural(rest[0]):
        return True
    return len(rest) > 1 and rest[0].lower() not in _NOT_PLURAL and _plural(rest[1])


_MODALS: Final = frozenset(["would", "could", "might", "may", "should"])
_EPISTEMIC: Final = frozenset(
    ["likely", "unlikely", "probably", "possibly", "perhaps", "maybe", "potentially", "presumably"]
)
_MOOD_WORD: Final = re.compile(r"[A-Za-z']+")


def is_hypothetical(text: str) -> bool:
    """A question asking for an inference rather than for what was said: it holds a modal
    of possibility ("Would Caroline …", "What might John's degree be in?", negated too:
    "wouldn't") or a word of likelihood ("Is it likely that …", "probably", "maybe").
    "May" capitalised inside a sentence is the month, not the modal."""
    for i, word in enumerate(_MOOD_WORD.findall(text)):
        low = word.lower().removesuffix("n't")
        if low in _EPISTEMIC or (low in _MODALS and (low != "may" or word == "may" or i == 0)):
            return True
    return False
