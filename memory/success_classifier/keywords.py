"""Event keywords (deploy, build, test, ssh, db, auth) found on the words of a sentence, and
the success predicates (per language) with the kinds each one fits."""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory.success_classifier.kinds import ALL_KINDS, BUILD_TEST, REMOTE, WORK_KINDS, Kind
from memory.success_classifier.lexicons import (
    AFTER_BAUT,
    KEYWORD_PHRASES,
    KEYWORD_PREFIX_HEADS,
    KEYWORD_PREFIXES,
    KEYWORD_WORDS,
    LOGIN_PREFIXES,
    LOGIN_WORDS,
    NOT_AFTER_DEPLOY,
    PLACE_NOUNS,
)

_I = re.IGNORECASE

_KEYWORD_TOKEN_RE = re.compile(r"[^\W_]+")


@dataclass(frozen=True, slots=True)
class EventKeyword:
    kind: Kind
    start: int
    end: int
    login: bool  # a login word ("logged in", "eingeloggt"): SSH's or a database's if named


def _in_identifier(text: str, start: int, end: int) -> bool:
    """Whether the word is part of a joined name with a digit (``ci-runner-7``, ``build_v2``)."""
    left, right = start, end
    while left > 0 and (text[left - 1].isalnum() or text[left - 1] in "-_."):
        left -= 1
    while right < len(text) and (text[right].isalnum() or text[right] in "-_."):
        right += 1
    joined = text[left:right].strip("-_.")
    return joined != text[start:end] and any(c.isdigit() for c in joined)


def find_keywords(text: str) -> list[EventKeyword]:
    """The event keywords of a sentence, in order."""
    tokens = [(m.group(0).lower(), m.start(), m.end()) for m in _KEYWORD_TOKEN_RE.finditer(text)]
    found: list[EventKeyword] = []
    for index, (word, start, end) in enumerate(tokens):
        following = tokens[index + 1][0] if index + 1 < len(tokens) else ""
        kind = KEYWORD_WORDS.get(word)
        if kind is None:
            for rest, phrase_kind in KEYWORD_PHRASES.get(word, ()):
                if following == rest:
                    kind, end = phrase_kind, tokens[index + 1][2]
                    break
        if kind is None:
            if word == "baut" and following in AFTER_BAUT:
                kind = "build"
            elif len(word) >= 8 and word.endswith("tests"):
                kind = "test"
            elif word.startswith(KEYWORD_PREFIX_HEADS):
                kind = next(k for prefix, k in KEYWORD_PREFIXES if word.startswith(prefix))
        if kind is None or (kind == "deploy" and following in NOT_AFTER_DEPLOY):
            continue
        if _in_identifier(text, start, end):
            continue  # "ci-runner-7", "test-db-2": a name that contains a keyword
        if kind in WORK_KINDS and following in PLACE_NOUNS:
            continue  # "the build server", "Build-Server", "test host": a machine
        login = word in LOGIN_WORDS or word.startswith(LOGIN_PREFIXES)
        found.append(EventKeyword(kind, start, end, login))
    return found


PREDICATES: tuple[tuple[re.Pattern[str], frozenset[Kind]], ...] = (
    (
        re.compile(
            r"\bwork(?:s|ed)\b|\bworking\b(?!\s+on\b)|\bsucceed(?:s|ed)?\b"
            r"|\bsuccessful\b(?<!\ba successful)(?<!\ban successful)(?<!\bany successful)"
            r"(?<!\bevery successful)(?<!\beach successful)"
            r"(?!\s+(?:deploy|build|login|run|test|connection|release|attempt)\w*)"
            r"|\bsuccessfully\b|\b(?:was|is|were|are|been)\s+(?:a\s+)?(?:\w+\s+)?success\b"
            r"|[:–—]\s*success\b|\bwent\s+(?:through|fine|well|smoothly|ok(?:ay)?|great)\b"
            r"|\bgoes\s+through\b|\ball\s+good\b|\bdid\s+the\s+trick\b"
            r"|\b(?:was|were)\s+able\s+to\b|\bmanaged\s+to\b"
            r"|\b(?:can|could)\s+(?:now|finally|again)\b|\bis\s+(?:now\s+)?live\b"
            r"|\b(?:is|are|was|were|ran|runs)\s+(?:all\s+)?(?:fine|smoothly|cleanly)\b"
            r"|\bcomplet(?:es|ed)\s+(?:now|fine|cleanly|without|again)\b",
            _I,
        ),
        ALL_KINDS,
    ),
    (
        re.compile(
            r"\bgeklappt\b|\bklapp(?:t|te|ten|en)\b|\bfunktionier(?:t|te|ten)\b|\berfolgreich\b"
            r"|\bging\s+(?:\S+\s+){0,3}?durch\b|\bdurchgelaufen\b|\bdurchl(?:ä|a)uft\b"
            r"|\b(?:l(?:ä|a)uft|laufen|lief(?:en)?)\s+(?:\S+\s+){0,3}?"
            r"(?:durch|sauber|fehlerfrei|wieder|stabil)\b"
            r"|\bgeht\s+(?:jetzt|wieder|endlich)\b"
            r"|\bkann\s+(?:\S+\s+){0,2}?(?:jetzt|endlich|wieder)\b"
            r"|\bkonnte(?:n|st)?\b|\bist\s+(?:jetzt\s+)?live\b",
            _I,
        ),
        ALL_KINDS,
    ),
    (
        re.compile(
            r"\bpass(?:es|ed)?\b|\bgreen\b|\bgrün\b|\bbestanden\b"
            r"|\b(?:are|is|was|were|been|'re|'s|now|all|still|keep|kept)\s+passing\b"
            r"|\b(?:builds|compiles|kompiliert|baut)(?=\s*(?:now|fine|again|cleanly|clean|locally"
            r"|without|with|jetzt|wieder|sauber|fehlerfrei|ohne|mit|$|[.!]))",
            _I,
        ),
        BUILD_TEST,
    ),
    (
        re.compile(
            r"\bconnect(?:ed|s)\b|\breachable\b|\bverbunden\b|\berreichbar\b|\bsteht\b"
            r"|\bgot\s+in\b|\breingekommen\b",
            _I,
        ),
        REMOTE,
    ),
    (
        re.compile(
            r"\blogged\s+in(?:to)?\b|\bsigned\s+in\b|\bauthenticated\b|\bauthori[sz]ed\b"
            r"|\beingeloggt\b|\bangemeldet\b|\bauthentifiziert\b",
            _I,
        ),
        frozenset(("auth", "ssh")),
    ),
)
