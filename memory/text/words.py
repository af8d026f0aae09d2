"""Word lists and the word-level tools of `store.text_terms` (stopwords, stems, language
detection, index terms). Those live in store/ because the lexical index needs them; memory/
modules take them from here, with the other language tools."""

from __future__ import annotations

from store.text_terms import (
    ENGLISH_STOPWORDS,
    GERMAN_STOPWORDS,
    STOPWORDS,
    detect_language,
    raw_tokens,
    snowball,
    terms,
)

__all__ = [
    "ENGLISH_STOPWORDS",
    "GERMAN_STOPWORDS",
    "STOPWORDS",
    "clip",
    "detect_language",
    "one_line",
    "raw_tokens",
    "snowball",
    "terms",
    "word_list",
    "word_set",
]


def word_set(text: str) -> frozenset[str]:
    """The whitespace-separated words of `text`: how word lists are written down."""
    return frozenset(text.split())


def word_list(text: str) -> tuple[str, ...]:
    """The words of `text` in their written order, for lists whose order matters (the
    alternatives of a regular expression)."""
    return tuple(text.split())


def one_line(text: str) -> str:
    """`text` with every run of whitespace (newlines too) as one space, stripped."""
    return " ".join(text.split())


def clip(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, an ellipsis marking the cut."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
