"""The reads of `CompactPostings` (its base class `PostingReads`), and the arrays they share:
slots and points, a point's terms and traits, a term's postings and document frequency, the
terms' impact bounds and the postings' stored factors.

Apart from the building and the changes (`store.lexical_postings`: loads, the file's arrays,
adds, removes, merges), which write the arrays these only read. The layout is described there.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from store.bm25 import max_factor
from store.point_traits import MISSING_DAY, MISSING_WORDS

if TYPE_CHECKING:
    from numpy.typing import NDArray

    PostingPart = tuple[NDArray[np.int32], NDArray[np.integer]]  # slots (ascending), tfs
    Traits = tuple[  # words, days, answers, speakers: by slot or point
        NDArray[np.uint16], NDArray[np.int32], NDArray[np.uint8], NDArray[np.uint16]
    ]


class PostingReads:
    """The word index's postings as flat arrays, read (`CompactPostings` builds and changes
    them). Not thread-safe: the caller locks."""

    def __init__(self) -> None:
        self._term_id: dict[str, int] = {}
        self._terms: list[str] = []
        # per slot
        self._point_of = array("q")
        self._length = array("i")
        self._alive = array("b")
        self._words = array("H")  # the traits (`store.point_traits`), MISSING_* when unknown
        self._day = array("i")
        self._answers = array("B")
        self._speaker = array("H")
        self._base_ids: NDArray[np.int64] = np.empty(0, dtype=np.int64)  # sorted, slots 0 … len-1
        self._new_slot: dict[int, int] = {}  # point id -> slot, for slots after the base
        # term-major CSR (merged)
        self._offsets: NDArray[np.int64] = np.zeros(1, dtype=np.int64)
        self._slots: NDArray[np.int32] = np.empty(0, dtype=np.int32)
        self._tfs: NDArray[np.integer] = np.empty(0, dtype=np.uint16)
        # doc-major CSR (merged): slot -> term ids, for slots < len(_fwd_offsets) - 1
        self._fwd_offsets: NDArray[np.int64] = np.zeros(1, dtype=np.int64)
        self._fwd_terms: NDArray[np.int32] = np.empty(0, dtype=np.int32)
        # append buffers since the last merge
        self._delta: dict[int, tuple[array[int], array[int]]] = {}  # term id -> (slots, tfs)
        self._delta_fwd: list[array[int]] = []  # term ids of slots len(_fwd_offsets) - 1 …
        self._delta_postings = 0
        self.doc_count = 0
        self.total_length = 0
        self.id_sum = 0
        self.dead = 0  # removed slots
        self.merges = 0
        self.changes = 0  # adds and removes since it was built (the file's staleness)
        self._scratch: list[NDArray[np.float32]] = []  # all zeros between two queries
        self._max_id: int | None = None  # the highest live point id, when _max_known
        self._max_known = False
        self._impacts: dict[int, tuple[float, float]] = {}  # term id -> (avgdl, max factor)
        # the mapped file's impacts, at `_file_avgdl`, of its `_file_slots` slots' postings
        self._file_impacts: NDArray[np.float64] = np.empty(0, dtype=np.float64)
        self._file_avgdl = 0.0
        self._file_slots = 0
        # the merged postings' factors (`bm25.factors`) at `factor_avgdl`, posting by posting
        # (from the file; carried through merges); None: the walk computes them
        self._factors: NDArray[np.float16] | None = None
        self.factor_avgdl = 0.0
        self.older_file = False  # mapped from a file of format 4, which holds no factors

    def _trait_arrays(self) -> Traits:
        """Every slot's traits (views: valid until the next add)."""
        return (
            np.frombuffer(self._words, dtype=np.uint16),
            np.frombuffer(self._day, dtype=np.int32),
            np.frombuffer(self._answers, dtype=np.uint8),
            np.frombuffer(self._speaker, dtype=np.uint16),
        )

    # -- state

    @property
    def slot_count(self) -> int:
        return len(self._point_of)

    @property
    def term_count(self) -> int:
        return len(self._terms)

    @property
    def posting_count(self) -> int:
        return len(self._slots) + self._delta_postings

    def nbytes(self) -> int:
        """Bytes held by the arrays (not the term strings and their dict)."""
        if not self._point_of and not self._terms:
            return 0
        arrays: tuple[NDArray[Any], ...] = (
            self._offsets,
            self._slots,
            self._tfs,
            self._fwd_offsets,
            self._fwd_terms,
        )
        if self._factors is not None:
            arrays = (*arrays, self._factors)
        per_slot = sum(
            a.itemsize for a in (self._point_of, self._length, self._alive, self._words, self._day)
        )
        per_slot += self._answers.itemsize + self._speaker.itemsize
        return (
            sum(a.nbytes for a in arrays)
            + self._base_ids.nbytes
            + per_slot * len(self._point_of)
            + 8 * self._delta_postings
        )

    def max_id(self) -> int | None:
        """The highest live point id (None when empty); O(n) once, then kept up to date."""
        if not self._max_known:
            ids = self.point_ids()
            if self.dead:
                ids = ids[np.frombuffer(self._alive, dtype=np.int8) != 0]
            self._max_id = int(ids.max()) if len(ids) else None
            self._max_known = True
        return self._max_id

    def slot_of(self, point_id: int) -> int | None:
        """The live slot of `point_id`, None when it is not indexed."""
        slot = self._new_slot.get(point_id)
        if slot is None:
            i = int(np.searchsorted(self._base_ids, point_id))
            if i >= len(self._base_ids) or int(self._base_ids[i]) != point_id:
                return None
            slot = i
        return slot if self._alive[slot] else None

    def length_of(self, point_id: int) -> int | None:
        slot = self.slot_of(point_id)
        return None if slot is None else self._length[slot]

    def live_docs(self) -> tuple[NDArray[np.int64], NDArray[np.int32]]:
        """Every live point's id and length, by point id (for a reconcile: O(n))."""
        alive = np.frombuffer(self._alive, dtype=np.int8).astype(bool)
        ids = np.frombuffer(self._point_of, dtype=np.int64)[alive]
        lengths = np.frombuffer(self._length, dtype=np.int32)[alive]
        order = np.argsort(ids, kind="stable")
        return ids[order], lengths[order]

    def terms_of(self, point_id: int) -> tuple[str, ...]:
        """The distinct terms of a point (empty when it is not indexed)."""
        slot = self.slot_of(point_id)
        if slot is None:
            return ()
        merged = len(self._fwd_offsets) - 1
        if slot < merged:
            ids: Iterable[int] = self._fwd_terms[
                self._fwd_offsets[slot] : self._fwd_offsets[slot + 1]
            ].tolist()
        else:
            ids = self._delta_fwd[slot - merged]
        return tuple(self._terms[i] for i in ids)

    def postings(self, term: str) -> tuple[NDArray[np.int32], NDArray[np.integer], int] | None:
        """A term's slots (ascending: new slots are always higher), tfs and live document
        frequency; None when no live point holds it."""
        tid = self._term_id.get(term)
        if tid is None:
            return None
        slots, tfs = self._term_slots(tid)
        df = self._df(tid, (slots, tfs))
        return (slots, tfs, df) if df else None

    def posting_parts(self, term: str) -> tuple[list[PostingPart], int] | None:
        """`postings(term)` as held: the merged list and the appended postings (a copy of
        those: the buffers grow), each ascending, the second's slots above the first's —
        without joining them: a join copies the whole list at every query (at 1M points,
        with a session's appends, the query's words' lists: `prepare` p95 0.1 → 5–6 ms)."""
        tid = self._term_id.get(term)
        if tid is None:
            return None
        parts: list[PostingPart] = []
        if tid < len(self._offsets) - 1:
            lo, hi = int(self._offsets[tid]), int(self._offsets[tid + 1])
            if hi > lo:
                parts.append((self._slots[lo:hi], self._tfs[lo:hi]))
        buffer = self._delta.get(tid)
        if buffer is not None and len(buffer[0]):
            added = (np.array(buffer[0], dtype=np.int32), np.array(buffer[1], dtype=np.int32))
            parts.append(added)
        df = sum(self._df(tid, part) for part in parts)
        return (parts, df) if df else None

    def scratch(self, which: int = 0) -> NDArray[np.float32]:
        """A float32 per slot, all zero, kept between queries (a query zeroes what it
        touched: allocating and zeroing 4 MB a query at 1M points costs more than the
        query); two of them (`which` 0 or 1). float32: the walk only bounds scores
        (`store.lexical_topk`), and half the bytes walk faster."""
        size = len(self._point_of)
        if len(self._scratch) <= which or len(self._scratch[which]) < size:
            self._scratch = [np.zeros(size + 1024, dtype=np.float32) for _ in range(2)]
        return self._scratch[which]

    def drop_scratch(self) -> None:
        self._scratch = []

    def doc_lengths(self) -> NDArray[np.int32]:
        """Every slot's length (a view: valid until the next add)."""
        return np.frombuffer(self._length, dtype=np.int32)

    def point_ids(self) -> NDArray[np.int64]:
        """Every slot's point id (a view: valid until the next add)."""
        return np.frombuffer(self._point_of, dtype=np.int64)

    def alive_mask(self) -> NDArray[np.int8]:
        """Every slot's 1 (alive) or 0 (removed) (a view: valid until the next add)."""
        return np.frombuffer(self._alive, dtype=np.int8)

    def live(self, slots: NDArray[np.int64]) -> NDArray[np.int64]:
        """`slots` without the removed ones."""
        if not self.dead:
            return slots
        return slots[np.frombuffer(self._alive, dtype=np.int8)[slots] != 0]

    def _slots_of(self, point_ids: Sequence[int]) -> NDArray[np.int64]:
        """Each point's newest slot, in their order (-1: not indexed), alive or not: the
        points added since the load by their map (often none), the others with one binary
        search in the sorted base ids for all."""
        new_slot = self._new_slot
        slots = (
            np.fromiter((new_slot.get(p, -1) for p in point_ids), np.int64, len(point_ids))
            if new_slot
            else np.full(len(point_ids), -1, dtype=np.int64)
        )
        loaded = slots < 0  # not added since the load: in the sorted base ids, if anywhere
        if loaded.any():
            wanted = np.asarray(point_ids, dtype=np.int64)[loaded]
            where = np.searchsorted(self._base_ids, wanted)
            found = where < len(self._base_ids)
            found[found] = self._base_ids[where[found]] == wanted[found]
            slots[loaded] = np.where(found, where, -1)
        return slots

    def live_slots_of(self, point_ids: Iterable[int]) -> NDArray[np.int64]:
        """The live slots of these points, ascending (points not indexed left out): `slot_of`
        for many, with one binary search for all (recall asks it for every pin)."""
        slots = self._slots_of(list(set(point_ids)))
        slots = slots[slots >= 0]
        slots = slots[np.frombuffer(self._alive, dtype=np.int8)[slots] != 0]
        return np.sort(slots)

    def traits_of(self, point_ids: Sequence[int]) -> Traits | None:
        """The traits of these points, in their order (words, days, answers, speakers); None
        when one of them is not indexed or was indexed without traits (the caller ranks as
        without them; a speaker not known is `MISSING_SPEAKER`). One binary search for all
        (recall asks it for ~100 candidates)."""
        slots = self._slots_of(point_ids)
        if not (slots >= 0).all():
            return None
        if len(slots) and not np.frombuffer(self._alive, dtype=np.int8)[slots].all():
            return None
        all_words, all_days, all_answers, all_speakers = self._trait_arrays()
        words, days = all_words[slots], all_days[slots]
        if bool(np.any(words == MISSING_WORDS)) or bool(np.any(days == MISSING_DAY)):
            return None
        return words, days, all_answers[slots], all_speakers[slots]

    def document_frequency(self, term: str) -> int:
        """How many live points hold `term`."""
        tid = self._term_id.get(term)
        if tid is None:
            return 0
        return self._df(tid, self._term_slots(tid))

    # -- scoring

    def impact(self, term: str, avgdl: float) -> float:
        """An upper bound of `tf·(k1+1) / (tf + k1·(1 − b + b·len/avgdl))` over the term's
        postings (its BM25 contribution over idf), valid for an average length up to 5 %
        above `avgdl` (the factor grows with it); the merged part is cached by term, and
        comes from the mapped file (`store.lexical_file.impact_sections`) while its average
        length is in range."""
        tid = self._term_id.get(term)
        if tid is None:
            return 0.0
        cached = self._impacts.get(tid)
        if cached is None or avgdl > cached[0] or avgdl < cached[0] / 1.1:
            at_file = self._file_avgdl  # the file's, computed when it was written
            if tid < len(self._file_impacts) and at_file / 1.1 <= avgdl <= at_file:
                cached = (at_file, self._file_impact(tid))
            else:
                merged = 0.0
                if tid < len(self._offsets) - 1:
                    lo, hi = int(self._offsets[tid]), int(self._offsets[tid + 1])
                    merged = max_factor(
                        self._slots[lo:hi], self._tfs[lo:hi], avgdl * 1.05, self.doc_lengths()
                    )
                cached = (avgdl * 1.05, merged)
            self._impacts[tid] = cached
        buffer = self._delta.get(tid)
        if buffer is None:
            return cached[1]
        slots = np.frombuffer(buffer[0], dtype=np.int32)
        tfs = np.frombuffer(buffer[1], dtype=np.int32)
        return max(cached[1], max_factor(slots, tfs, cached[0], self.doc_lengths()))

    def merged_factors(self, term: str) -> NDArray[np.float16] | None:
        """The factors of the term's merged postings (`posting_parts`' first part, when it has
        one), at `factor_avgdl`; None when there are none (`bm25.factors`)."""
        tid = self._term_id.get(term)
        if self._factors is None or tid is None or tid >= len(self._offsets) - 1:
            return None
        lo, hi = int(self._offsets[tid]), int(self._offsets[tid + 1])
        return self._factors[lo:hi] if hi > lo else None

    def _file_impact(self, tid: int) -> float:
        """The file's impact of a term, raised by the postings merged since (slots after the
        file's: a term's slots ascend, so they are the end of its merged list)."""
        impact = float(self._file_impacts[tid])
        lo, hi = int(self._offsets[tid]), int(self._offsets[tid + 1])
        cut = lo + int(np.searchsorted(self._slots[lo:hi], self._file_slots))
        if cut < hi:
            later = max_factor(
                self._slots[cut:hi], self._tfs[cut:hi], self._file_avgdl, self.doc_lengths()
            )
            impact = max(impact, later)
        return impact

    def _term_slots(self, tid: int) -> tuple[NDArray[np.int32], NDArray[np.integer]]:
        slots: NDArray[np.int32] = self._slots[:0]
        tfs: NDArray[np.integer] = self._tfs[:0]
        if tid < len(self._offsets) - 1:
            lo, hi = int(self._offsets[tid]), int(self._offsets[tid + 1])
            slots, tfs = self._slots[lo:hi], self._tfs[lo:hi]
        buffer = self._delta.get(tid)
        if buffer is not None:
            slots = np.concatenate([slots, np.frombuffer(buffer[0], dtype=np.int32)])
            tfs = np.concatenate([tfs.astype(np.int32), np.frombuffer(buffer[1], dtype=np.int32)])
        return slots, tfs

    def _df(self, tid: int, postings: tuple[NDArray[np.int32], NDArray[np.integer]]) -> int:
        slots = postings[0]
        if not self.dead:
            return len(slots)
        alive = np.frombuffer(self._alive, dtype=np.int8)
        return int(np.count_nonzero(alive[slots]))
