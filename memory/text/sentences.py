"""Splitting a line of prose into sentences: after a sentence end and the spaces that follow.
Which marks end a sentence is the caller's: the classifier adds the ellipsis and keeps
abbreviations ("e.g.", "z. B.") inside a sentence; confidence also splits at semicolons."""

from __future__ import annotations

import re
from functools import lru_cache

SENTENCE_ENDS = ".!?"


@lru_cache(maxsize=8)
def _end_re(ends: str) -> re.Pattern[str]:
    return re.compile(rf"(?<=[{re.escape(ends)}])\s+")


def split_sentences(
    line: str, *, ends: str = SENTENCE_ENDS, abbreviations: frozenset[str] = frozenset()
) -> list[str]:
    """The pieces of `line` after each of `ends` followed by whitespace (the whitespace
    dropped). A piece whose last word is one of `abbreviations` or a single letter with a dot
    ("J.") is joined with the next when `abbreviations` are given."""
    pieces = _end_re(ends).split(line)
    if not abbreviations:
        return pieces
    merged: list[str] = []
    for piece in pieces:
        if merged:
            last = merged[-1].rsplit(None, 1)[-1].lower()
            if last in abbreviations or re.fullmatch(r"\w\.", last):
                merged[-1] = f"{merged[-1]} {piece}"
                continue
        merged.append(piece)
    return merged
