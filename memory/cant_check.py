"""Verify before claiming impossibility: find where a reply says the assistant cannot do
something for lack of access or credentials, and the active capability facts that say
otherwise.

`find_cant_claims(reply)` returns the claims; `memory.cant_match.match_capabilities(claims,
capabilities)` the keys of the active capability facts on the same subject, best first. The
UI shows those facts under the reply and the next turn's prompt carries them. Pure and cheap
(regular expressions and a word-form lookup, no model call). What counts as a claim, the
subject words and the matching rules: docs/cant_check.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory.text.cues import NEGATIONS_DE
from memory.text.markdown import QUOTE_LINE_RE, plain_apostrophes, without_fenced_blocks
from memory.text.sentences import split_sentences
from memory.text.words import ENGLISH_STOPWORDS, GERMAN_STOPWORDS, word_list, word_set


@dataclass(frozen=True, slots=True)
class CantClaim:
    """A sentence (or clause) of a reply in which the assistant says it lacks access, and the
    words naming what it cannot do or reach."""

    sentence: str
    subject_words: tuple[str, ...]


# ------------------------------------------------------------------------ vocabulary

_F = re.IGNORECASE | re.UNICODE
_STOPWORDS: frozenset[str] = ENGLISH_STOPWORDS | GERMAN_STOPWORDS
# Determiners and modifiers that may stand between a lack word and a credential word even
# though some are stopwords.
_DETERMINERS = word_list(
    """
    the a an any your my our their its some enough sufficient necessary required proper valid
    correct right die der das den dem des ein eine einen einem einer deine ihre meine nötigen
    nötige erforderlichen passenden gültigen gültige
    """
)
_MODIFIER_STOP = sorted(_STOPWORDS - set(_DETERMINERS), key=len, reverse=True)
_MODIFIER = (
    r"(?:(?:" + "|".join(_DETERMINERS) + r")\s+"
    r"|(?!(?:" + "|".join(re.escape(word) for word in _MODIFIER_STOP) + r")\b)[\w-]+\s+)"
)
_MODS = rf"{_MODIFIER}{{0,3}}?"

_EN_CRED = (
    r"(?:credentials?|creds|passwords?|passphrases?|passcodes?|access|permissions?|rights|"
    r"privileges?|(?:api|ssh|access|deploy|private)[\s-]keys?|keys?|tokens?|logins?|"
    r"log-?in\s+(?:details|data|info)|accounts?|authori[sz]ation|auth|certificates?|certs?|"
    r"secrets?|sudo|root)\b"
)
_DE_CRED_STEMS = (
    "zugangsdaten",
    "anmeldedaten",
    "logindaten",
    "zugriff",
    "zugang",
    "zugänge",
    "berechtigung",
    "rechte",
    "passwort",
    "passwörter",
    "kennwort",
    "schlüssel",
    "token",
    "credentials",
)
_DE_CRED = r"(?:[\w]*?(?:" + "|".join(_DE_CRED_STEMS) + r")\w*)\b"
_CRED = rf"(?:[\w]+-)?(?:{_EN_CRED}|{_DE_CRED})"

_ADV = r"(?:\w+ly|just|still|also|even|therefore|thus|now|simply|currently)"

_EN_INABILITY = re.compile(
    rf"\bI\s+(?:{_ADV}\s+)?(?:can't|cant|cannot|can\s+not|couldn't|could\s+not|"
    r"won't\s+be\s+able\s+to|will\s+not\s+be\s+able\s+to|wasn't\s+able\s+to|"
    r"was\s+not\s+able\s+to|have\s+no\s+(?:way|means)\s+(?:to|of)|"
    r"(?:don't|do\s+not)\s+have\s+(?:the\s+|any\s+)?(?:ability|means|way)\s+to)"
    rf"|\bI(?:'m|\s+am)\s+(?:{_ADV}\s+)?(?:not\s+able|unable|not\s+allowed|not\s+permitted|"
    r"not\s+authori[sz]ed|not\s+in\s+a\s+position)\s+to"
    r"|\b(?:not\s+possible|impossible)\s+for\s+me\s+to|\bno\s+way\s+for\s+me\s+to",
    _F,
)
_EN_ACCESS_VERB = (
    r"(?:access|connect|log\s*in|log\s+into|login|sign\s+in|authenticate|ssh|reach|"
    r"get\s+(?:into|onto|in))\b"
)
# The inability immediately followed by an access verb: "I cannot access", "unable to ssh".
_EN_INABILITY_ACCESS = re.compile(
    rf"(?:{_EN_INABILITY.pattern})\s+(?:{_ADV}\s+)?{_EN_ACCESS_VERB}", _F
)

_EN_FIRST_PERSON_LACK = re.compile(
    rf"\bI\s+(?:{_ADV}\s+)?(?:don't|dont|do\s+not)\s+(?:{_ADV}\s+)?(?:have|possess|hold)\s+"
    rf"{_MODS}{_CRED}"
    rf"|\bI(?:\s+{_ADV})?(?:\s+have|'ve)\s+(?:no|not\s+(?:been\s+)?(?:given|granted|got))\s+"
    rf"{_MODS}{_CRED}"
    rf"|\bI\s+(?:haven't|have\s+not)\s+(?:been\s+)?(?:got|given|granted|received)\s+"
    rf"{_MODS}{_CRED}"
    rf"|\bI\s+(?:{_ADV}\s+)?lack\s+{_MODS}{_CRED}"
    rf"|\bI(?:'m|\s+am)\s+(?:{_ADV}\s+)?not\s+(?:authori[sz]ed|permitted|allowed|logged\s+in|"
    r"signed\s+in|authenticated)\b"
    rf"|\bmy\s+{_CRED}\s+(?:is|are|was|were|has|have)\s+(?:been\s+)?(?:missing|revoked|"
    r"expired|denied|invalid|rejected)\b",
    _F,
)
_EN_LACK = re.compile(
    rf"\b(?:without|lacking|lack\s+of|missing|no|need|needs|needed|require|requires|required)\s+"
    rf"{_MODS}{_CRED}"
    rf"|\b(?:give|gives|gave|provide|provides|grant|grants|share|send)\s+(?:me\s+)?{_MODS}{_CRED}"
    rf"|\b(?:don't|dont|do\s+not|doesn't|does\s+not|didn't|did\s+not|haven't|have\s+not|"
    r"hasn't|has\s+not)\s+(?:have|got|been\s+given|given|provided|shared|granted)\s+"
    rf"(?:me\s+)?{_MODS}{_CRED}"
    rf"|\b(?=[\w-]+\s+(?:is|are|was|were|has|have)\s){_CRED}\s+(?:is|are|was|were|has\s+been|have\s+been)\s+(?:\w+\s+)?(?:missing|denied|"
    r"revoked|expired|not\s+(?:available|set|configured|provided|given))\b",
    _F,
)

_DE_LACK = re.compile(
    rf"\b(?:mangels|ohne|fehlende[nmrs]?|kein|keine|keinen|keiner|keinem)\s+{_MODS}{_CRED}"
    rf"|\b(?=[\w-]+\s+(?:[\w-]+\s+){{0,3}}fehl){_CRED}\s+{_MODS}(?:fehlen|fehlt|fehlten|fehlte)\b"
    rf"|\b(?:fehlen|fehlt|fehlten|fehlte)\s+(?:mir\s+)?{_MODS}{_CRED}"
    r"|\b(?:bin|sind)\s+(?:\w+\s+)?nicht\s+(?:berechtigt|angemeldet|eingeloggt|autorisiert|"
    r"befugt)\b"
    rf"|\b(?:habe|hab|besitze|verfüge)\s+(?:\w+\s+){{0,2}}?nicht\s+(?:über\s+)?{_MODS}{_CRED}",
    _F,
)
_DE_FIRST_PERSON = re.compile(r"\b(?:ich|mir|mich)\b", _F)
_DE_MODAL = re.compile(r"\b(?:kann|konnte|könnte|darf|durfte)\b", _F)
# Any kein… form counts here ("keinerlei", "keineswegs"), not only the declined ones.
_DE_NEGATION = re.compile(r"\b(?:" + "|".join(NEGATIONS_DE.split()) + r"|kein\w*)\b", _F)
_DE_INABILITY_PHRASE = re.compile(
    r"\b(?:ist\s+es\s+mir|es\s+ist\s+mir|ist\s+mir)\s+(?:\w+\s+){0,2}?(?:nicht\s+möglich|"
    r"unmöglich)\b"
    r"|\bich\s+bin\s+(?:\w+\s+)?nicht\s+in\s+der\s+lage|\bbin\s+ich\s+(?:\w+\s+)?nicht\s+in\s+"
    r"der\s+lage|\bes\s+gelingt\s+mir\s+nicht",
    _F,
)
_DE_ACCESS_VERB = re.compile(
    r"\b(?:zugreifen|zuzugreifen|einloggen|einzuloggen|anmelden|anzumelden|verbinden|"
    r"erreichen|reinkommen|hineinkommen|rankommen)\b",
    _F,
)

# Every claim has one of these; a sentence without any is skipped before the costly patterns.
_CUE = re.compile(
    r"n't|\bnot\b|\bno\b|\bcannot\b|\bcant\b|\bunable\b|\bwithout\b|\black|\bmissing\b"
    r"|impossible|\bnicht\b|\bkein|\bohne\b|\bmangels\b|\bfehl|unmöglich",
    _F,
)
_CONDITION_BEFORE = re.compile(
    r"(?:\bif|\bunless|\bwhen|\bwhether|\bwenn|\bfalls|\bsofern|\bob)\s+(?:[\w']+\s+){0,2}\Z", _F
)
_CONDITION_START = re.compile(r"^\W*(?:if|unless|when|whether|wenn|falls|sofern|ob)\b", _F)


_CLAIM_WORDS = word_set(
    """
    can cannot cant able unable allowed permitted authorized authorised position possible
    impossible way means ability lack lacking lacks missing without need needs needed require
    requires required give gave provide grant share send expired revoked denied invalid
    rejected available configured set given granted received got possess hold logged signed
    authenticated afraid sorry unfortunately currently actually really simply still just even
    right now yet therefore thus directly here there help unless whether
    kann konnte könnte darf durfte nicht nichts kein keine keinen keiner keinem nie niemals
    mangels ohne fehlen fehlt fehlten fehlte fehlende fehlenden möglich unmöglich lage
    gelingt berechtigt angemeldet eingeloggt autorisiert befugt besitze verfüge leider derzeit
    momentan gerade aktuell direkt hab habe weil denn deshalb daher dafür damit
    want wants wanted like would please make do willst möchtest möchte möchten hast hat
    machen mache tun since until till due first
    """
)
_ACCESS_WORDS = word_set(
    """
    access connect connecting log login logins sign authenticate reach zugreifen zuzugreifen
    einloggen einzuloggen anmelden anzumelden verbinden erreichen reinkommen hineinkommen
    rankommen
    """
)
_EN_CRED_WORDS = word_set(
    """
    credential credentials creds password passwords passphrase passphrases passcode passcodes
    access permission permissions rights privilege privileges key keys token tokens login
    logins account accounts authorization authorisation auth certificate certificates cert
    certs secret secrets sudo root details
    """
)
_DE_CRED_WORD = re.compile(rf"^{_DE_CRED}$", _F)
_DE_CRED_SUFFIX = re.compile(r"^(?P<head>\w{3,}?)s?(?:" + "|".join(_DE_CRED_STEMS) + r")\w*$", _F)

# --------------------------------------------------------------------------- cleaning

# Narrower than the classifier's bullets: no "·", no heading marks, any number of digits.
_LIST_MARKER = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
_CLAUSE_SPLIT = re.compile(
    r"\s*;\s*|,?\s+(?=\b(?:but|however|although|though|whereas|aber|jedoch|allerdings|"
    r"sondern)\b)",
    _F,
)
_LEADING_CONJUNCTION = re.compile(
    r"^(?:but|however|although|though|whereas|aber|jedoch|allerdings|sondern)\b[\s,]*", _F
)
_WORD = re.compile(r"\w+", re.UNICODE)


def _clean(reply: str) -> str:
    """The reply without code blocks and quotes, inline code unwrapped, apostrophes plain."""
    text = QUOTE_LINE_RE.sub("", without_fenced_blocks(reply))
    return plain_apostrophes(text.replace("`", "").replace("**", "").replace("__", ""))


def _sentences(text: str) -> list[str]:
    sentences: list[str] = []
    for line in text.splitlines():
        line = _LIST_MARKER.sub("", line).strip()
        for piece in split_sentences(line):
            piece = " ".join(piece.split())
            if piece:
                sentences.append(piece)
    return sentences


# -------------------------------------------------------------------------- detection


def _unconditional(pattern: re.Pattern[str], text: str) -> bool:
    """Whether `pattern` matches somewhere in `text` not right after if / wenn / …."""
    return any(
        _CONDITION_BEFORE.search(text, 0, match.start()) is None for match in pattern.finditer(text)
    )


def _german_inability(text: str) -> bool:
    """``ich`` and a modal, then a negation, in one comma-free stretch not opened by a
    condition; or a fixed phrase (es ist mir nicht möglich …)."""
    if _unconditional(_DE_INABILITY_PHRASE, text):
        return True
    for stretch in re.split(r"[,;:]", text):
        if _CONDITION_START.search(stretch):
            continue
        pronoun = re.search(r"\bich\b", stretch, _F)
        modal = _DE_MODAL.search(stretch)
        if pronoun is None or modal is None:
            continue
        if _DE_NEGATION.search(stretch, min(pronoun.start(), modal.start())):
            return True
    return False


def _german_first_person_lack(text: str) -> bool:
    """A German lack of access with ich / mir / mich in the same comma-free stretch."""
    for stretch in re.split(r"[,;:]", text):
        if _DE_FIRST_PERSON.search(stretch) and _unconditional(_DE_LACK, stretch):
            return True
    return False


def _is_claim(text: str, *, whole_sentence: bool = False) -> bool:
    """Whether a clause says the assistant cannot do something for lack of access. A whole
    sentence (tested when none of its clauses is a claim) needs an inability: a first-person
    lack must stand in one clause."""
    if _CUE.search(text) is None:
        return False
    if not whole_sentence and (
        _unconditional(_EN_FIRST_PERSON_LACK, text) or _german_first_person_lack(text)
    ):
        return True
    english = _unconditional(_EN_INABILITY, text)
    german = _german_inability(text)
    if not (english or german):
        return False
    lack = _unconditional(_EN_LACK, text) or _unconditional(_DE_LACK, text)
    if lack:
        return True
    if english and _unconditional(_EN_INABILITY_ACCESS, text):
        return True
    return german and _DE_ACCESS_VERB.search(text) is not None


def content_words(text: str) -> list[str]:
    """Lower-case content words of `text`, in order, without repeats (docs/cant_check.md)."""
    words: list[str] = []
    for token in _WORD.findall(text.lower()):
        candidates = [token]
        if _DE_CRED_WORD.match(token):
            compound = _DE_CRED_SUFFIX.match(token)
            candidates = [compound.group("head")] if compound else []
        for word in candidates:
            if (
                len(word) < 2
                or word.isdigit()
                or word in _STOPWORDS
                or word in _CLAIM_WORDS
                or word in _ACCESS_WORDS
                or word in _EN_CRED_WORDS
                or _DE_CRED_WORD.match(word)
                or word in words
            ):
                continue
            words.append(word)
    return words


def find_cant_claims(reply: str) -> list[CantClaim]:
    """The sentences (or clauses) of `reply` in which the assistant says it cannot do
    something for lack of access or credentials, in order."""
    claims: list[CantClaim] = []
    sentences = _sentences(_clean(reply))
    for index, sentence in enumerate(sentences):
        if sentence.endswith("?"):
            continue
        clauses = [clause for clause in _CLAUSE_SPLIT.split(sentence) if clause.strip()]
        found = [clause for clause in clauses if _is_claim(clause)]
        if not found and len(clauses) > 1 and _is_claim(sentence, whole_sentence=True):
            found = [sentence]
        for clause in found:
            text = _LEADING_CONJUNCTION.sub("", clause.strip())
            subject = content_words(text)
            if not subject and index > 0:
                subject = content_words(sentences[index - 1])
            claims.append(CantClaim(text, tuple(subject)))
    return claims


# ---------------------------------------------------------------- inability is not use


def says_cannot(sentence: str) -> bool:
    """Whether a sentence says the assistant cannot do something (an inability or a lack of
    access in the first person, outside a condition): naming a capability there is not using
    it, so it neither boosts its confidence nor proves a success event."""
    text = plain_apostrophes(sentence)
    if _CUE.search(text) is None:
        return False
    return (
        _unconditional(_EN_INABILITY, text)
        or _german_inability(text)
        or _unconditional(_EN_FIRST_PERSON_LACK, text)
        or _german_first_person_lack(text)
    )


def without_inability(reply: str) -> str:
    """`reply` without its sentences that say the assistant cannot do something, line by line
    (code blocks and everything else kept as they are)."""
    if _CUE.search(reply) is None:
        return reply
    kept_lines: list[str] = []
    for line in reply.split("\n"):
        if _CUE.search(line) is None:
            kept_lines.append(line)
            continue
        kept = [piece for piece in split_sentences(line) if not says_cannot(piece)]
        kept_lines.append(" ".join(kept))
    return "\n".join(kept_lines)
