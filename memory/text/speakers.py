"""Who speaks a text, and whom a question names — the speaker trait of the learned re-rank
(issue 17, tenth round; docs/recall-quality.md).

A point is spoken by a name when its content starts with one word and ": " — "Melanie:
They were stoked for the dinosaur exhibit!", the layout of an imported transcript (and of
LoCoMo's turns). The word starts with a capital and is not all capitals ("TODO: …", "FYI:
…" are labels), and is not a label word of `LABELS` ("Note: …", "Update: …", "Error: …"),
a month or a day ("Monday: gym"). Two words ("Mary Ann: …") are not read as a speaker.
The name is kept as a 16-bit hash of its lower-cased form (`speaker_hash`; 0 = none), so a
question is matched by hashing its own capitalised words the same way (`named_speakers`).
A user's own chat messages carry no name: for them the trait is 0 and recall ranks as
without it.
"""

from __future__ import annotations

import re
import zlib
from typing import Final

from store.point_traits import MISSING_SPEAKER, NO_SPEAKER

SPEAKER_CHARS: Final = 42
"""The longest "Name: " read (a name of up to 40 characters, its colon and space)."""
_NAME: Final = r"[^\W\d_]+(?:['’-][^\W\d_]+)*"
_HEAD: Final = re.compile(rf"(?P<name>{_NAME}): ")
_WORD: Final = re.compile(_NAME)
_POSSESSIVE: Final = re.compile(r"['’]s$")
_CALENDAR_WORDS: Final = (
    "january february march april may june july august september october november december "
    "monday tuesday wednesday thursday friday saturday sunday "
    "feb mar apr aug sep sept oct nov dec mon tue tues wed thu thur thurs fri sat sun"
)  # "Jan" and "Jun" are names too: read as speakers
_CALENDAR: Final = frozenset(_CALENDAR_WORDS.split())
_LABEL_WORDS: Final = """
    note notes nota update updates error errors warning warnings todo fixme hint hints tip tips
    question questions answer answers summary example examples edit info important
    reminder result results output input status goal goals task tasks problem solution idea
    ideas fact facts caution danger source sources subject from to cc date time title re fwd
    step steps pros cons conclusion context background description reason fix bug issue
    usage command response request prompt system assistant user human bot model query reply
    link url address phone email name location price cost total score rating verdict
    disclaimer spoiler correction observation lesson takeaway recipe ingredients
    instructions definition meaning translation quote exercise homework deadline meeting
    agenda action decision owner priority risk plan next done pending fixed added changed
    removed deprecated security feature features feat chore docs refactor test tests build
    perf style revert merge release version caveat alert attention also but so well yes no
    ok okay now today tonight tomorrow yesterday here this that log debug trace fatal
    exception traceback hello hi hey thanks dear ps
    what when where who whom whose why how which
    nb fyi btw tldr tbd recap aside remember attendees participants bcc sent tel mobile venue
    breakfast lunch dinner day week weekend morning afternoon evening night"""
LABELS: Final = frozenset(_LABEL_WORDS.split())
"""Capitalised words that open a line as a label, not as a speaker ("Note: …"). The question
words are among them: every question starts with one, capitalised, so a "Who: …" line read
as a speaker would be favoured by every "Who …" question."""


def speaker_name(content: str) -> str:
    """The lower-cased name `content` is spoken by ("" for none: see the module's rule)."""
    head = _HEAD.match(content[:SPEAKER_CHARS])
    if head is None:
        return ""
    name = head.group("name")
    if len(name) > SPEAKER_CHARS - 2 or not name[0].isupper() or name.isupper():
        return ""
    lowered = name.lower()
    return "" if lowered in LABELS or lowered in _CALENDAR else lowered


def speaker_hash(name: str) -> int:
    """A lower-cased name's 16-bit hash, 1 … `MISSING_SPEAKER` − 1 (CRC-32: the same in
    every process); `NO_SPEAKER` for ""."""
    if not name:
        return NO_SPEAKER
    return zlib.crc32(name.encode()) % (MISSING_SPEAKER - 1) + 1


def speaker_of(content: str) -> int:
    """The speaker trait of a point with this content (`NO_SPEAKER`: none)."""
    return speaker_hash(speaker_name(content))


def named_speakers(question: str) -> frozenset[int]:
    """The hashes of every capitalised word of `question`, a possessive also without its
    "'s" ("What do Melanie's kids like?": what, melanie's, melanie) — the names a
    candidate's speaker is matched against. A word that is no name costs nothing unless its
    hash meets a speaker's (1 in 65,534)."""
    words = {w.lower() for w in _WORD.findall(question) if w[0].isupper()}
    words |= {_POSSESSIVE.sub("", w) for w in words}
    return frozenset(speaker_hash(w) for w in words)
