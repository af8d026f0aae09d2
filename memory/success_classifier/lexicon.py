"""`Lexicon`: a word list (words, prefixes, suffixes, phrases) matched on the lower-cased
words of a text, several times faster than one regex alternation of the same words."""

from __future__ import annotations

import re

from memory.text.words import word_set


class Lexicon:
    """Single words, word prefixes and suffixes, and multi-word phrases, matched on the
    lower-cased words of a text: several times faster than one regex alternation of the same
    words, which `re` tries word by word at every position."""

    __slots__ = ("_phrases", "_prefixes", "_suffixes", "_unless_next", "_words")

    def __init__(
        self,
        words: str,
        *,
        prefixes: str = "",
        suffixes: str = "",
        phrases: str = "",
        unless_next: dict[str, str] | None = None,
    ) -> None:
        self._words = word_set(words)
        self._prefixes = tuple(prefixes.split())
        self._suffixes = tuple(suffixes.split())
        by_first: dict[str, list[tuple[str, ...]]] = {}
        for phrase in phrases.split(","):
            parts = tuple(phrase.split())
            if parts:
                by_first.setdefault(parts[0], []).append(parts[1:])
        self._phrases = {first: tuple(rests) for first, rests in by_first.items()}
        self._unless_next = {word: word_set(nexts) for word, nexts in (unless_next or {}).items()}

    def found_in(self, words: list[str]) -> bool:
        prefixes, suffixes = self._prefixes, self._suffixes
        for index, word in enumerate(words):
            if (
                word in self._words
                or (prefixes and word.startswith(prefixes))
                or (suffixes and word.endswith(suffixes))
            ):
                return True
            if word in self._phrases:
                for rest in self._phrases[word]:
                    if tuple(words[index + 1 : index + 1 + len(rest)]) == rest:
                        return True
            if word in self._unless_next:
                following = words[index + 1] if index + 1 < len(words) else ""
                if following not in self._unless_next[word]:
                    return True
        return False


_WORD_RE = re.compile(r"[\w']+")


def lower_words(text: str, start: int = 0, end: int | None = None) -> list[str]:
    return _WORD_RE.findall(text.lower(), start, len(text) if end is None else end)
