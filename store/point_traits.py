"""What the learned re-rank of recall reads of a point without its row (issue 17, eighth
and tenth rounds): its own content words, its day, which kinds of answer it holds, and who
speaks it (a hash of the "Name: " its content starts with) — 9 bytes a point kept beside
the word index's lengths (`lexical_docs`, `store.lexical_postings`, `lexical.idx`).

The store only carries them: `memory.point_traits` computes them from the point's content
and date (store/ may not import memory/) and hands them down with the point's words.
A point indexed without them (a store made before they existed, until its open fills them)
carries `MISSING_WORDS` / `MISSING_DAY`, and recall ranks as without the re-rank; a point
indexed before the speaker existed (schema 7) carries `MISSING_SPEAKER`, and recall ranks
as without the speaker.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

MISSING_WORDS: Final = 0xFFFF
"""`words` of a point indexed without traits (uint16's top value; a count is capped below)."""
MISSING_DAY: Final = -(2**31)
"""`day` of a point indexed without traits (int32's lowest value)."""
MAX_WORDS: Final = MISSING_WORDS - 1
NO_SPEAKER: Final = 0
"""`speaker` of a point whose content names no speaker."""
MISSING_SPEAKER: Final = 0xFFFF
"""`speaker` of a point indexed before the speaker trait (uint16's top value; a hash is
1 … `MISSING_SPEAKER` − 1)."""

TraitRow = tuple[int | None, int | None, int | None, int | None]


@dataclass(frozen=True, slots=True)
class PointTraits:
    """One point's traits: `words` its content words (capped at `MAX_WORDS`), `day` its
    creation date as days since 1970-01-01 (UTC), `answers` a bit set of the kinds of
    answer it holds (the bits are `memory.point_traits`'), `speaker` a 16-bit hash of the
    name it is spoken by (`NO_SPEAKER`: none; `MISSING_SPEAKER`: not known)."""

    words: int
    day: int
    answers: int
    speaker: int = NO_SPEAKER

    def as_row(self) -> tuple[int, int, int, int]:
        """(words, day, answers, speaker) as the columns of `lexical_docs` store them."""
        return (
            min(max(self.words, 0), MAX_WORDS),
            self.day,
            self.answers & 0xFF,
            self.speaker & 0xFFFF,
        )


def trait_row(traits: PointTraits | None) -> TraitRow:
    """(words, day, answers, speaker) for `lexical_docs`: NULLs when the traits are
    unknown, the speaker NULL when it is (`MISSING_SPEAKER`)."""
    if traits is None:
        return (None, None, None, None)
    words, day, answers, speaker = traits.as_row()
    return (words, day, answers, None if speaker == MISSING_SPEAKER else speaker)
