"""A point's traits for the learned re-rank (`store.point_traits`; docs/recall-quality.md,
"Eighth round"): computed here, where the text rules live, and handed down with the point's
words, so recall reads them from the word index's arrays instead of the points' rows.

- `words`: `memory.text.shape.content_words` of the point's own content (not of the indexed
  text, which adds its neighbours and its date as words);
- `day`: its creation date in UTC as days since 1970-01-01;
- `answers`: a bit per kind of answer it holds (`memory.text.answers`). A "who" question's
  check leaves out the names the question holds itself; a bit stored per point cannot, so
  the "who" bit says "holds a name" (the approximation measured in the eighth round);
- `speaker`: a 16-bit hash of the name it is spoken by, the "Name: " its content starts
  with (`memory.text.speakers`; 0 for none; the tenth round).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, date, datetime
from typing import Final

from memory.text.answers import AnswerType, holds_answer
from memory.text.shape import content_words
from memory.text.speakers import SPEAKER_CHARS, speaker_of
from store import lexical_index, point_reads
from store.database import Cursor
from store.point_traits import PointTraits

ANSWER_BITS: Final[dict[AnswerType, int]] = {"when": 1, "number": 2, "where": 4, "who": 8}
"""The bit of each answer kind in `PointTraits.answers`."""
_EPOCH: Final = date(1970, 1, 1)
_NO_NAMES: Final[frozenset[str]] = frozenset()


def day_number(when: datetime) -> int:
    """`when`'s date in UTC as days since 1970-01-01 (an aware datetime)."""
    return (when.astimezone(UTC).date() - _EPOCH).days


def answer_bits(content: str) -> int:
    """The bits of the answer kinds `content` holds (any name counts for "who")."""
    return sum(
        bit
        for kind, bit in ANSWER_BITS.items()
        if holds_answer(content, frozenset((kind,)), _NO_NAMES)
    )


def kinds_mask(kinds: Iterable[AnswerType]) -> int:
    """The bits of the answer kinds a question asks for."""
    return sum(ANSWER_BITS[kind] for kind in set(kinds))


def point_traits(content: str, created_at: datetime) -> PointTraits:
    """The traits of a point with this content, made at `created_at` (aware)."""
    return PointTraits(
        content_words(content), day_number(created_at), answer_bits(content), speaker_of(content)
    )


def fill_missing_traits(cur: Cursor, *, page_size: int = 20_000) -> int:
    """Give every indexed point without traits its traits (a store indexed before schema 7),
    then every one with them but without its speaker its speaker (indexed at schema 7: only
    the speaker is computed, from the first characters of its content), `page_size` points
    at a time: the texts of a page are in memory, never the store's. Run it in the caller's
    transaction. Returns the number filled."""
    filled, after = 0, -1
    while page := point_reads.points_without_traits(cur, after=after, limit=page_size):
        found = {pid: point_traits(text, when) for pid, text, when in page}
        filled += lexical_index.fill_traits(cur, found)
        after = page[-1][0]
    after = -1
    while heads := point_reads.points_without_speaker(
        cur, head=SPEAKER_CHARS, after=after, limit=page_size
    ):
        filled += lexical_index.fill_speakers(cur, {pid: speaker_of(h) for pid, h in heads})
        after = heads[-1][0]
    return filled
