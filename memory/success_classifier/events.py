"""Success events: a success predicate paired with the nearest event keyword of a fitting
kind, silenced by a failure, a negation, a hedge between the two, or (in a reply) advice; the
paired event's subject makes the key and the body."""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory.fact_types import FactError, FactProposal, normalise_key
from memory.secret_masking import mask_secrets
from memory.success_classifier.keywords import PREDICATES, EventKeyword
from memory.success_classifier.kinds import REMOTE, REPLY_CONFIDENCE, USER_CONFIDENCE, Kind, Speaker
from memory.success_classifier.lexicon import lower_words
from memory.success_classifier.lexicons import ADVICE_OPENERS, FAILURE, HEDGE, NEGATION
from memory.success_classifier.names import key_word
from memory.success_classifier.subjects import (
    Subject,
    auth_subject,
    build_subject,
    db_subject,
    deploy_subject,
    ssh_subject,
    test_subject,
)
from memory.text.markdown import INLINE_CODE_RE

_I = re.IGNORECASE

_CLAUSE_BREAK_RE = re.compile(
    r"[,;:](?=\s|$)|[–—]|\s-\s"
    r"|\b(?:but|though|although|however|whereas|while|aber|jedoch|doch|während)\b",
    _I,
)

_NEUTRAL_RE = re.compile(
    r"\b(?:no|zero|0|without(?:\s+any)?|keine?n?|ohne(?:\s+jede[n]?)?)\s+(?:errors?|failures?"
    r"|failed|failing|problems?|issues?|warnings?|hiccups?|fehlern?|probleme?n?|warnungen?)\b"
    r"|\bfehlerfrei\b",
    _I,
)

_ADVICE_RE = re.compile(
    r"\b(?:you|you're|you'll|your|yours|du|dein\w*|kannst|können|könnt|can|kann)\b", _I
)


@dataclass(frozen=True, slots=True)
class _Candidate:
    """A predicate paired with a keyword; `score` sorts candidates, best first."""

    kind: Kind
    keyword: tuple[int, int]
    predicate: tuple[int, int]
    score: tuple[int, int, int]


def _clause_index(breaks: list[int], position: int) -> int:
    index = 0
    for offset in breaks:
        if offset > position:
            break
        index += 1
    return index


def _in_code(spans: list[tuple[int, int]], position: int) -> int:
    return int(any(start <= position < end for start, end in spans))


def _candidates(
    text: str, breaks: list[int], found_keywords: list[EventKeyword]
) -> list[_Candidate]:
    """Every (keyword, predicate) pair of a fitting kind in the same or adjacent clauses,
    ordered by clause distance, then keywords outside inline code first, then distance."""
    code = [m.span() for m in INLINE_CODE_RE.finditer(text)]
    remote = any(k.kind in REMOTE for k in found_keywords)
    keywords = [
        (k.kind, k.start, k.end)
        for k in found_keywords
        if not (remote and k.kind == "auth" and k.login)
    ]
    found: list[_Candidate] = []
    for pattern, kinds in PREDICATES:
        for match in pattern.finditer(text):
            p_start, p_end = match.span()
            p_clause = _clause_index(breaks, p_start)
            for kind, k_start, k_end in keywords:
                if kind not in kinds:
                    continue
                k_clause = _clause_index(breaks, k_start)
                if k_clause > p_clause + 1 or k_clause < p_clause - 1:
                    continue
                if k_end <= p_start:
                    distance = p_start - k_end
                elif p_end <= k_start:
                    distance = k_start - p_end
                else:
                    distance = 0
                score = (abs(k_clause - p_clause), _in_code(code, k_start), distance)
                found.append(_Candidate(kind, (k_start, k_end), (p_start, p_end), score))
    found.sort(key=lambda c: c.score)
    return found


def _hedged(text: str, breaks: list[int], candidate: _Candidate) -> bool:
    """A hypothesis, plan or hedge in the clauses from the keyword to the predicate."""
    first = min(candidate.keyword[0], candidate.predicate[0])
    last = max(candidate.keyword[1], candidate.predicate[1]) - 1
    start_clause = _clause_index(breaks, first)
    end_clause = _clause_index(breaks, last)
    start = 0 if start_clause == 0 else breaks[start_clause - 1]
    end = len(text) if end_clause >= len(breaks) else breaks[end_clause]
    return HEDGE.found_in(lower_words(text, start, end))


def _subject(text: str, candidate: _Candidate) -> Subject | None:
    """What the event is about, for the candidate's kind; None when nothing is named."""
    if candidate.kind == "deploy":
        return deploy_subject(text)
    if candidate.kind == "build":
        return build_subject(text, candidate.keyword)
    if candidate.kind == "test":
        return test_subject(text, candidate.keyword)
    if candidate.kind == "ssh":
        return ssh_subject(text)
    if candidate.kind == "db":
        return db_subject(text)
    return auth_subject(text)


def _is_advice(text: str) -> bool:
    if _ADVICE_RE.search(text):
        return True
    words = text.split(None, 1)
    return bool(words) and words[0].lower().strip(",.:`") in ADVICE_OPENERS


def classify_success(
    text: str, speaker: Speaker, proof: str, keywords: list[EventKeyword]
) -> FactProposal | None:
    breaks = [m.start() for m in _CLAUSE_BREAK_RE.finditer(text)]
    candidates = _candidates(text, breaks, keywords)
    if not candidates:
        return None
    neutral = lower_words(_NEUTRAL_RE.sub(" ", text))
    if FAILURE.found_in(neutral) or NEGATION.found_in(neutral):
        return None
    if speaker == "assistant" and (_is_advice(text) or HEDGE.found_in(neutral)):
        return None
    for candidate in candidates:
        if _hedged(text, breaks, candidate):
            continue
        subject = _subject(text, candidate)
        if subject is None:
            continue
        try:
            key = normalise_key(f"{candidate.kind}:{key_word(subject.name)}")
        except FactError:
            continue
        user = speaker == "user"
        return FactProposal(
            type=subject.type,
            key=key,
            body=mask_secrets(subject.body),
            proof=proof,
            confidence=USER_CONFIDENCE if user else REPLY_CONFIDENCE,
            source="user" if user else "inference",
        )
    return None
