"""Text that reads as an instruction to the model or as prompt structure ("ignore your
instructions", a new system prompt, a role line, a chat-template token), in English and
German, and the control and invisible characters no stored text may hold. What the model
proposes (reflection facts, dream cards) is checked with it before it can reach a prompt.
"""

from __future__ import annotations

import re
import unicodedata

_FLAGS = re.IGNORECASE | re.UNICODE

_EN_OVERRIDE_VERB = r"(?:ignore|disregard|forget|override|overrule|bypass)"
_DE_OVERRIDE_VERB = (
    r"(?:ignorier(?:e|t|en)?|vergiss|vergesst|vergessen\s+sie|missachte(?:t|n)?|"
    r"übergehe|überschreibe)"
)
# Nouns that name the model's instructions whatever qualifies them ("ignore the instructions"),
# and nouns that do only when qualified ("ignore all rules", not "ignore the lint rules").
_EN_STRONG = r"(?:instructions?|directives?|prompts?|programming|guardrails)"
_EN_WEAK = (
    r"(?:rules?|guidelines?|constraints?|restrictions?|context|messages?|orders?|commands?|"
    r"policies|policy|training)"
)
_EN_QUALIFIER = r"(?:previous|prior|above|earlier|preceding|existing|original|initial|former)"
_DE_STRONG = r"(?:anweisungen|anweisung|instruktionen|prompts?|programmierung|systemanweisungen)"
_DE_WEAK = r"(?:regeln|befehle|vorgaben|richtlinien|einschränkungen|nachrichten)"
_DE_QUALIFIER = (
    r"(?:vorherigen|vorigen|bisherigen|obigen|früheren|ursprünglichen|alten|"
    r"vorangegangenen|vorstehenden)"
)

_HOSTILE_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "tells the model to ignore its instructions",
        re.compile(
            rf"\b{_EN_OVERRIDE_VERB}\s+(?:(?:all|any|every)\s+(?:of\s+)?)?"
            rf"(?:(?:the|your|my|these|those|its)\s+)?(?:{_EN_QUALIFIER}\s+)?"
            rf"(?:system\s+|safety\s+)?{_EN_STRONG}\b"
            rf"|\b{_EN_OVERRIDE_VERB}\s+(?:(?:all|any)\s+(?:of\s+)?(?:the\s+|your\s+)?"
            rf"(?:{_EN_QUALIFIER}\s+)?|(?:the\s+|your\s+)?{_EN_QUALIFIER}\s+|your\s+)"
            rf"(?:system\s+|safety\s+)?{_EN_WEAK}\b"
            rf"|\b{_EN_OVERRIDE_VERB}\s+(?:everything|all|anything)\s+"
            rf"(?:above|before|previous|prior|earlier|you\s+(?:were|have\s+been)\s+told)\b"
            rf"|\b{_EN_OVERRIDE_VERB}\s+(?:(?:all|any)\s+(?:of\s+)?)?(?:the\s+|your\s+)?"
            rf"{_EN_WEAK}\s+(?:above|before|so\s+far|(?:you\s+(?:were|have\s+been)\s+)?given)\b"
            rf"|\b{_EN_OVERRIDE_VERB}\s+everything\b",
            _FLAGS,
        ),
    ),
    (
        "tells the model to ignore its instructions",
        re.compile(
            rf"\b{_DE_OVERRIDE_VERB}\s+(?:(?:alle|sämtliche)\s+)?(?:(?:die|deine|ihre|eure)\s+)?"
            rf"(?:{_DE_QUALIFIER}\s+)?{_DE_STRONG}\b"
            rf"|\b{_DE_OVERRIDE_VERB}\s+(?:(?:alle|sämtliche)\s+(?:{_DE_QUALIFIER}\s+)?"
            rf"|(?:die\s+|deine\s+|ihre\s+|eure\s+)?{_DE_QUALIFIER}\s+|deine\s+|ihre\s+)"
            rf"{_DE_WEAK}\b"
            rf"|\b{_DE_OVERRIDE_VERB}\s+alles\s+(?:bisherige|vorherige|obige|davor|oben)\b",
            _FLAGS,
        ),
    ),
    (
        "demands obedience",
        re.compile(
            r"\byou\s+(?:must|shall|will|should|have\s+to|need\s+to)\s+(?:always\s+)?obey\b"
            r"|\bobey\s+(?:me|only\s+me|every\s+(?:command|order|instruction))\b"
            r"|\b(?:musst|sollst|wirst)\s+(?:\w+\s+){0,2}?gehorchen\b|\bgehorche\b",
            _FLAGS,
        ),
    ),
    (
        "changes the assistant's identity",
        re.compile(
            r"\bfrom\s+now\s+on,?\s+(?:you\s+are|you're|you\s+will\s+be|you\s+act|act\s+as|"
            r"your\s+(?:new\s+)?(?:name|role|identity|persona))\b"
            r"|\byou\s+are\s+now\s+(?:a|an|my|no\s+longer|free|unrestricted|jailbroken|dan|"
            r"called|named)\b"
            r"|\bpretend\s+(?:to\s+be|you\s+are|you're)\b"
            r"|\b(?:developer|god|dan|jailbreak|unrestricted)\s+mode\b|\bjailbr(?:eak|oken)"
            r"|\b(?:ab\s+(?:jetzt|sofort|nun|heute)|von\s+nun\s+an)\s+(?:bist|heißt|agierst|"
            r"handelst|spielst)\s+du\b"
            r"|\bdu\s+bist\s+(?:jetzt|ab\s+jetzt|nun|ab\s+sofort)\s+(?:ein|eine|kein|keine|"
            r"frei|mein|meine)\b",
            _FLAGS,
        ),
    ),
    (
        "talks about a new or hidden system prompt",
        re.compile(
            r"\b(?:new|updated|real|actual|true|hidden|secret|following)\s+system[\s-]*prompt\b"
            r"|\byour\s+(?:\w+\s+)?system[\s-]*prompt\b"
            r"|\bignore\s+(?:the\s+)?system[\s-]*prompt\b"
            r"|\bsystem[\s-]*prompt\s*[:=]"
            r"|\b(?:this|here)\s+is\s+(?:the\s+|your\s+|a\s+|my\s+)?system[\s-]*prompt\b"
            r"|\b(?:begin|start|end)\s+(?:of\s+)?(?:the\s+)?system[\s-]*prompt\b"
            r"|\b(?:neuer?|neuen|deinen?|echte[nr]?|wahre[nr]?|folgende[nr]?|versteckte[nr]?)\s+"
            r"system[\s-]*prompt\b"
            r"|\b(?:ignoriere|vergiss)\s+(?:den\s+)?system[\s-]*prompt\b",
            _FLAGS,
        ),
    ),
)

_STRUCTURE_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("has a heading line (prompt structure)", re.compile(r"^[ \t]*#", re.MULTILINE)),
    (
        "has a role line (prompt structure)",
        re.compile(r"^[ \t]*(?:system|assistant|developer)[ \t]*:", re.MULTILINE | _FLAGS),
    ),
    (
        "has a chat-template token (prompt structure)",
        re.compile(
            r"<\|[a-z_]+\|>|\[/?INST\]|<</?SYS>>|</?s>|<start_of_turn>|<end_of_turn>"
            r"|<<<TRANSCRIPT|TRANSCRIPT>>>",
            _FLAGS,
        ),
    ),
)

INVISIBLE = frozenset(
    "\u200b\u200c\u200d\u200e\u200f\u2060\ufeff"  # zero-width characters and marks
    "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"  # bidi embeddings and isolates
)


def bad_character(text: str, *, allow_newlines: bool) -> str | None:
    """The first control, bidi-override or zero-width character in `text`, if any."""
    for char in text:
        if char in "\n\t" and allow_newlines:
            continue
        if char in INVISIBLE or unicodedata.category(char) == "Cc":
            return char
    return None


def hostile_reason(text: str) -> str | None:
    """Why `text` reads as an instruction to the model or as prompt structure, else None."""
    for reason, pattern in (*_HOSTILE_PATTERNS, *_STRUCTURE_PATTERNS):
        if pattern.search(text):
            return reason
    return None
