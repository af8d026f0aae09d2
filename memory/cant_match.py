"""Which capability facts a "cannot" claim is about: the subject words of the claim
(`memory.cant_check.find_cant_claims`) against each fact's key and body, matched by word
forms (the word, its English and German Snowball stems, its synonym group). Rules:
docs/cant_check.md."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache

from memory.cant_check import CantClaim, content_words
from memory.fact_types import key_parts
from memory.text.words import snowball

# Synonym groups: every form of a member also stands for the group's first word.
_SYNONYM_GROUPS: tuple[tuple[str, ...], ...] = (
    ("database", "databas", "databases", "db", "dbs", "datenbank", "datenbanken"),
    ("repository", "repositori", "repo", "repos", "repositories"),
    ("postgres", "postgresql", "psql", "pg"),
    ("kubernetes", "k8s"),
    ("github", "gh"),
)
_SYNONYMS: dict[str, str] = {word: group[0] for group in _SYNONYM_GROUPS for word in group}


@lru_cache(maxsize=4096)
def word_forms(word: str) -> frozenset[str]:
    """The forms a word is matched by: itself, its English and German Snowball stems, and
    its synonym group's canonical word."""
    lowered = word.lower()
    forms = {lowered, snowball("en")(lowered), snowball("de")(lowered)}
    forms |= {_SYNONYMS[form] for form in forms if form in _SYNONYMS}
    return frozenset(form for form in forms if form)


def _forms_of(words: Iterable[str]) -> frozenset[str]:
    return frozenset(form for word in words for form in word_forms(word))


def _claim_score(subject: Sequence[str], key_forms: frozenset[str], body: frozenset[str]) -> int:
    score = 0
    for word in subject:
        forms = word_forms(word)
        if forms & key_forms:
            score += 2
        elif forms & body:
            score += 1
    return score


def match_capabilities(
    claims: Sequence[CantClaim], capabilities: Sequence[tuple[str, str]]
) -> list[str]:
    """The keys of the capabilities (``(key, body)`` of active capability facts) on the
    subject of a claim: best overlap first, ties in the given order, no repeats."""
    if not claims:
        return []
    scored: dict[str, tuple[int, int]] = {}
    seen: set[str] = set()
    for position, (key, body) in enumerate(capabilities):
        if key in seen:
            continue
        seen.add(key)
        key_forms = _forms_of(word.lower() for word in key_parts(key))
        body_forms = _forms_of(content_words(body))
        score = max(_claim_score(claim.subject_words, key_forms, body_forms) for claim in claims)
        if score > 0:
            scored[key] = (score, position)
    return sorted(scored, key=lambda key: (-scored[key][0], scored[key][1]))
