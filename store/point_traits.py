"""What the learned re-rank of recall reads of a point without its row (issue 17, eighth
round): its own content words, its day, and which kinds of answer it holds — a few bytes a
point kept beside the word index's lengths (`lexical_docs`, `store.lexical_postings`,
`lexical.idx`).

The store only carries them: `memory.point_traits` computes them from the point's content
and date (store/ may not import memory/) and hands them down with the point's words.
A point indexed without them (a store made before they existed, until its open fills them)
carries `MISSING_WORDS` / `MISSING_DAY`, and recall ranks as without the re-rank.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

MISSING_WORDS: Final = 0xFFFF
"""`words` of a point indexed without traits (uint16's top value; a count is capped below)."""
MISSING_DAY: Final = -(2**31)
"""`day` of a point indexed without traits (int32's lowest value)."""
MAX_WORDS: Final = MISSING_WORDS - 1


@dataclass(frozen=True, slots=True)
class PointTraits:
    """One point's traits: `words` its content words (capped at `MAX_WORDS`), `day` its
    creation date as days since 1970-01-01 (UTC), `answers` a bit set of the kinds of
    answer it holds (the bits are `memory.point_traits`')."""

    words: int
    day: int
    answers: int

    def as_row(self) -> tuple[int, int, int]:
        """(words, day, answers) as the columns of `lexical_docs` store them."""
        return (min(max(self.words, 0), MAX_WORDS), self.day, self.answers & 0xFF)


def trait_row(traits: PointTraits | None) -> tuple[int | None, int | None, int | None]:
    """(words, day, answers) for `lexical_docs`: NULLs when the traits are unknown."""
    return (None, None, None) if traits is None else traits.as_row()
