"""Whether a sentence is a question: a trailing ``?`` or an English or German question opening
("did the deploy work", "Hat das Deployment geklappt"); questions never propose."""

from __future__ import annotations

import re

from memory.success_classifier.lexicons import NOT_QUESTION_SECOND

_I = re.IGNORECASE

_EN_QUESTION_RE = re.compile(
    r"^(?:did|does|do(?!\s+not\b)|is|are|was|were|can|could|should|would|will|shall|has|have"
    r"|had|how|why|what|where|which|who|whom|whose|anyone|anybody|isn't|aren't|doesn't"
    r"|didn't|wasn't|won't|can't|wie|warum|wieso|weshalb|wo|wann|welche\w*|wer)\b",
    _I,
)

_DE_QUESTION_RE = re.compile(
    r"^(?:hat|hast|haben|habt|ist|bist|sind|seid|war|waren|kann|kannst|können|könnt|soll"
    r"|sollte|sollen|wird|werden|würde|klappt|klappte|funktioniert|läuft|geht|gibt|muss|darf)"
    r"\s+(?:das|der|die|den|dem|es|sich|ihr|du|man|denn|mein\w*|unser\w*|dein\w*|ein|eine"
    r"|bei|mit)\b",
    _I,
)


def is_question(text: str) -> bool:
    if re.search(r"\?[\s\"')\]]*$", text):
        return True
    if _DE_QUESTION_RE.match(text):
        return True
    match = _EN_QUESTION_RE.match(text)
    if not match:
        return False
    rest = text[match.end() :].split(None, 1)
    return not rest or rest[0].lower().strip(",.!") not in NOT_QUESTION_SECOND
