"""A user's standing rules ("never touch PROD", "immer pnpm verwenden"): an imperative with a
standing marker after optional openers and a leading condition; style requests to the assistant
are not project rules. The key is made of the condition and the imperative's first clause."""

from __future__ import annotations

import re

from memory.fact_types import FactError, FactProposal, Scope, normalise_key
from memory.success_classifier.kinds import USER_CONFIDENCE
from memory.success_classifier.lexicons import (
    DE_IMPERATIVE_STEMS,
    DE_NOT_IMPERATIVES,
    DE_NOT_INFINITIVES,
    EN_NOT_VERBS,
    EN_VERB_EXCEPTIONS,
    RULE_DROP,
    STANDING_NOT_VERBS,
)
from memory.success_classifier.names import clean_name

_I = re.IGNORECASE

RULE_KEY_WORDS = 8
RULE_KEY_CHARS = 70
_NOT_A_KEY_WORD_RE = re.compile(r"@|\[REDACTED", re.IGNORECASE)  # mail, masked secrets
_RULE_OPENER_RE = re.compile(
    r"^(?:please|pls|bitte|also|and|ok(?:ay)?|so|remember|note|rule|reminder|important"
    r"|wichtig|regel|hinweis|merke?\s+dir|from\s+now\s+on|going\s+forward"
    r"|in\s+(?:the\s+)?future|henceforth|ab\s+jetzt|ab\s+sofort|von\s+jetzt\s+an|künftig"
    r"|zukünftig|in\s+zukunft)\b[\s:,!.-]*",
    _I,
)

_STANDING_RE = re.compile(
    r"^(?:from\s+now\s+on|going\s+forward|in\s+(?:the\s+)?future|henceforth|ab\s+jetzt"
    r"|ab\s+sofort|von\s+jetzt\s+an|künftig|zukünftig|in\s+zukunft)\b",
    _I,
)

_LEADING_CONDITION_RE = re.compile(
    r"^(?:if|when|whenever|before|after|wenn|falls|bevor|nachdem|sobald)\b[^,]{1,120},\s*",
    _I,
)

_GLOBAL_RE = re.compile(
    r"\s*\b(?:globally|everywhere|in\s+every\s+(?:project|repo(?:sitory)?|workspace)"
    r"|in\s+all\s+(?:projects|repos|repositories|workspaces)|across\s+all\s+projects"
    r"|überall|in\s+allen\s+(?:projekten|repos|repositories)|in\s+jedem\s+(?:projekt|repo))\b",
    _I,
)

_EN_RULE_RE = re.compile(
    r"^(?:(?:you|we)\s+(?:must|should|need\s+to|have\s+to)\s+)?"
    r"(?P<pol>always|never(?:\s+ever)?|don't|dont|do\s+not|must\s+not|mustn't|should\s+never)"
    r"\s+(?:ever\s+)?(?P<verb>[a-z][\w-]*)",
    _I,
)

_EN_MUST_RE = re.compile(r"^(?:you|we)\s+(?P<pol>must)\s+(?P<verb>[a-z][\w-]*)", _I)
_DE_POL = r"immer|nie|niemals|stets|grundsätzlich|keinesfalls|auf\s+keinen\s+fall|nicht|keine[nmr]?"
_DE_INFINITIVE_RULE_RE = re.compile(
    # "immer wieder" is "again and again"; "nie wieder" + infinitive is a rule
    rf"^(?:{_DE_POL})\b(?!\s+(?:noch|wenn|mehr|so|ganz|schlecht|wirklich)\b)"
    r"(?!(?<=immer)\s+wieder\b)",
    _I,
)

_DE_IMPERATIVE_RULE_RE = re.compile(
    rf"^(?P<verb>[A-Za-zÄÖÜäöüß]+)\s+(?:du\s+)?(?:bitte\s+)?(?:{_DE_POL})\b", _I
)

_STYLE_RE = re.compile(
    r"\b(?:answer\w*|repl(?:y|ies)|respond\w*|talk|speak|explain|apologi[sz]e|greet"
    r"|summari[sz]e|emojis?|in\s+(?:english|german|french|spanish|deutsch|englisch)"
    r"|auf\s+(?:deutsch|englisch)|antwort\w*|sprich|sprechen|erkläre?|entschuldig\w*|duz\w*"
    r"|siez\w*|call\s+me|address\s+me|nenn\w*\s+mich|be\s+(?:concise|brief|short|polite"
    r"|friendly|verbose|formal|informal|honest|nice)|sei\s+(?:kurz|knapp|höflich|freundlich"
    r"|ehrlich)|tone)\b",
    _I,
)

_DE_INFINITIVE_RE = re.compile(r"[a-zäöüß]{2,}(?:en|ern|eln)")
_EN_NEVER_RE = re.compile(
    r"^(?:(?:you|we)\s+(?:must|should|need\s+to|have\s+to)\s+)?(?:never\s+ever|don't|dont"
    r"|do\s+not|must\s+not|mustn't|should\s+never|never)\b(?:\s+ever\b)?",
    _I,
)

_EN_ALWAYS_RE = re.compile(
    r"^(?:you|we)\s+(?:must|should|need\s+to|have\s+to)\s+(?=always\b)|^(?:you|we)\s+(?=must\b)",
    _I,
)


def _en_verb_ok(verb: str) -> bool:
    low = verb.lower()
    if low in EN_NOT_VERBS:
        return False
    if low in EN_VERB_EXCEPTIONS:
        return True
    if low.endswith(("ed", "ing")):
        return False
    return not (low.endswith("s") and not low.endswith(("ss", "us", "is")))


def _ends_in_infinitive(head: str) -> bool:
    """Whether the first clause ends in a lower-case German infinitive ("… pushen")."""
    clause = head.split(",", 1)[0].strip(" .!")
    words = clause.split()
    if len(words) < 2:
        return False
    last = words[-1].rsplit("-", 1)[-1]
    return (
        last[:1].islower()
        and _DE_INFINITIVE_RE.fullmatch(last) is not None
        and last not in DE_NOT_INFINITIVES
    )


def _is_rule(head: str, standing: bool) -> bool:
    """Whether the head (openers and a leading condition removed) is a standing imperative."""
    match = _EN_RULE_RE.match(head) or _EN_MUST_RE.match(head)
    if match:
        return _en_verb_ok(match.group("verb"))
    if _DE_INFINITIVE_RULE_RE.match(head):
        return _ends_in_infinitive(head)
    match = _DE_IMPERATIVE_RULE_RE.match(head)
    if match:
        verb = match.group("verb").lower()
        if verb in DE_NOT_IMPERATIVES:
            return False
        return verb in DE_IMPERATIVE_STEMS or (verb.endswith("e") and not verb.endswith("ie"))
    if not standing:
        return False
    first = head.split(None, 1)[0]
    low = first.lower()
    if low in STANDING_NOT_VERBS:
        return False
    return _ends_in_infinitive(head) or (first.isascii() and _en_verb_ok(low))


def _rule_key(core: str) -> str:
    text = _EN_NEVER_RE.sub("never", core, count=1)
    text = _EN_ALWAYS_RE.sub("", text, count=1)
    words: list[str] = []
    for raw in text.replace("`", " ").split():
        if "://" in raw:  # a URL: its host (a web or ssh address), else its scheme
            raw = clean_name(raw.strip('.,;!?"()[]{}'))
        elif _NOT_A_KEY_WORD_RE.search(raw):
            continue  # a mail address or a redaction names no rule
        word = raw.replace("'", "").strip('.,;:!?"()[]{}-').lower().replace(":", "-")
        if not word or word in RULE_DROP:
            continue
        words.append(word)
        if len(words) >= RULE_KEY_WORDS:
            break
    while len(words) > 2 and len("-".join(words)) > RULE_KEY_CHARS:
        words.pop()
    return normalise_key("rule:" + " ".join(words))


def _strip_openers(text: str) -> tuple[str, bool]:
    standing = False
    while True:
        if _STANDING_RE.match(text):
            standing = True
        stripped = _RULE_OPENER_RE.sub("", text, count=1)
        if stripped == text:
            return text, standing
        text = stripped


def classify_rule(text: str, proof: str) -> FactProposal | None:
    """A user's standing rule; the key is made of the leading condition (if any) and the
    imperative's first clause, so a reason added after a comma does not change it."""
    sentence = text.strip().rstrip(".!; ")
    core, standing = _strip_openers(sentence)
    if not core:
        return None
    scope: Scope = "global" if _GLOBAL_RE.search(core) else "workspace"
    condition = _LEADING_CONDITION_RE.match(core)
    head = core[condition.end() :] if condition else core
    head = _GLOBAL_RE.sub("", head).strip(" ,")
    if not head or not _is_rule(head, standing) or _STYLE_RE.search(core):
        return None
    key_source = (condition.group(0) if condition else "") + head.split(",", 1)[0]
    try:
        key = _rule_key(_GLOBAL_RE.sub("", key_source).strip(" ,"))
    except FactError:
        return None
    statement = core[0].lower() + core[1:] if core[1:2].islower() else core
    return FactProposal(
        type="rule",
        key=key,
        body=f"Rule: {statement}.",
        proof=proof,
        scope=scope,
        confidence=USER_CONFIDENCE,
        source="user",
    )


RULE_HINT_RE = re.compile(
    r"\b(?:always|never|don't|dont|do\s+not|must|mustn't|immer|nie|niemals|stets|nicht"
    r"|keine[nmr]?|grundsätzlich|keinesfalls|from\s+now\s+on|going\s+forward|ab\s+jetzt"
    r"|ab\s+sofort|künftig|zukünftig)\b",
    _I,
)
