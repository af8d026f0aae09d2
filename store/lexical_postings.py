"""The word index's postings in memory as a few flat numpy arrays (no object per term or doc).

Layout (docs/memory-scale.md has the measurements):

* every indexed point has a dense slot 0 … n (never reused until a reload); by slot:
  its point id, its length, whether it is still alive (removals are tombstones), and its
  traits (`store.point_traits`: content words, day, answer kinds, speaker; 9 bytes);
* a term-major CSR of what was loaded or merged: `offsets[t] : offsets[t + 1]` indexes the
  slots and tfs of term id `t`;
* a doc-major CSR (slot -> its term ids), which says a point's terms without a Python tuple;
* adds since the last merge wait in small per-term append buffers; once they hold
  `max(MERGE_MIN_POSTINGS, postings / MERGE_FRACTION)` postings they are merged into the CSR
  in one vectorised pass (no sort).

A term's document frequency is its live postings: its posting count while nothing was removed,
else counted through the alive mask. Scores are the same float64 BM25 as the SQL path's.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from store.bm25 import factors, max_factor
from store.lexical_file import encode_terms
from store.point_traits import MISSING_DAY, MISSING_SPEAKER, MISSING_WORDS, PointTraits

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from store.lexical_file import MappedArrays

    PostingPart = tuple[NDArray[np.int32], NDArray[np.integer]]  # slots (ascending), tfs
    Traits = tuple[  # words, days, answers, speakers: by slot or point
        NDArray[np.uint16], NDArray[np.int32], NDArray[np.uint8], NDArray[np.uint16]
    ]

MERGE_MIN_POSTINGS = 20_000  # append buffers merged into the CSR beyond this many postings …
MERGE_FRACTION = 8  # … or beyond this fraction of the merged postings, whichever is more


def _tf_dtype(max_tf: int) -> type[np.integer]:
    """The narrowest exact tf type: most tfs are 1–3, a long document's may be larger."""
    return np.uint16 if max_tf < 2**16 else np.int32


class CompactPostings:
    """BM25 postings of many points in flat arrays. Not thread-safe: the caller locks."""

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

    # -- building

    @classmethod
    def from_arrays(
        cls,
        terms: list[str],
        point_ids: NDArray[np.int64],
        lengths: NDArray[np.int32],
        post_slot: NDArray[np.int32],
        post_term: NDArray[np.int32],
        post_tf: NDArray[np.int32],
        traits: Traits | None = None,
    ) -> CompactPostings:
        """From the tables' columns: `terms` by term id, `point_ids` ascending with their
        `lengths` and `traits` (words, days, answers, speakers; None: unknown) (the slot is the row
        number), and postings as (slot, term id, tf) ordered by slot."""
        self = cls()
        self._terms = terms
        self._term_id = {term: i for i, term in enumerate(terms)}
        self._base_ids = np.ascontiguousarray(point_ids, dtype=np.int64)
        self._point_of = array("q", self._base_ids.tobytes())
        self._length = array("i", np.ascontiguousarray(lengths, dtype=np.int32).tobytes())
        self._alive = array("b", bytes([1])) * len(point_ids)
        n = len(point_ids)
        self._set_traits(traits, n)
        tf_type = _tf_dtype(int(post_tf.max()) if post_tf.size else 0)
        post_term = np.ascontiguousarray(post_term, dtype=np.int32)
        self._fwd_terms = post_term
        self._fwd_offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(post_slot, minlength=n), out=self._fwd_offsets[1:])
        order = np.argsort(post_term, kind="stable")  # by term, then by slot
        self._slots = post_slot[order].astype(np.int32, copy=False)
        self._tfs = post_tf[order].astype(tf_type)
        del order
        self._offsets = np.zeros(len(terms) + 1, dtype=np.int64)
        np.cumsum(np.bincount(post_term, minlength=len(terms)), out=self._offsets[1:])
        self.doc_count = n
        self.total_length = int(np.asarray(lengths, dtype=np.int64).sum())
        self.id_sum = int(self._base_ids.sum())
        return self

    @classmethod
    def from_file(cls, mapped: MappedArrays) -> CompactPostings:
        """From a `lexical.idx` (`store.lexical_file`): the CSRs stay memory-mapped (file
        pages, read on demand); the per-slot arrays (22 B a point with the traits) are
        copied, as they grow."""
        self = cls()
        arrays = mapped.arrays
        self._terms = mapped.terms
        self._term_id = {term: i for i, term in enumerate(mapped.terms)}
        self._base_ids = arrays["point_ids"]
        self._point_of = array("q", arrays["point_ids"].tobytes())
        self._length = array("i", arrays["lengths"].tobytes())
        self._alive = array("b", arrays["alive"].tobytes())
        self._set_traits(
            (arrays["words"], arrays["days"], arrays["answers"], arrays["speakers"]),
            len(self._alive),
        )
        self._offsets, self._slots, self._tfs = arrays["offsets"], arrays["slots"], arrays["tfs"]
        self._fwd_offsets, self._fwd_terms = arrays["fwd_offsets"], arrays["fwd_terms"]
        self._file_impacts = arrays["impacts"]
        self._file_avgdl = float(arrays["impact_avgdl"][0])
        self._file_slots = len(arrays["point_ids"])
        stored = arrays.get("factors")
        self.older_file = stored is None
        if stored is not None and len(stored):  # one a posting (`lexical_file` checked it)
            self._factors, self.factor_avgdl = stored, float(arrays["factor_avgdl"][0])
        alive = arrays["alive"].astype(bool)
        self.doc_count = int(np.count_nonzero(alive))
        self.dead = len(alive) - self.doc_count
        self.total_length = int(arrays["lengths"][alive].sum(dtype=np.int64))
        self.id_sum = int(arrays["point_ids"][alive].sum())
        return self

    def file_arrays(self) -> dict[str, NDArray[Any]]:
        """The arrays `store.lexical_file.write_file` writes: merged first, and compacted
        when the slots are not in point-id order (ids come from a sequence, so rarely). The
        per-slot arrays are copies, the CSRs the current (immutable) arrays."""
        self.merge()
        ids = np.frombuffer(self._point_of, dtype=np.int64)
        source = self if bool(np.all(np.diff(ids) > 0)) else self._compacted()
        return {
            "point_ids": np.array(np.frombuffer(source._point_of, dtype=np.int64)),
            "lengths": np.array(np.frombuffer(source._length, dtype=np.int32)),
            "alive": np.array(np.frombuffer(source._alive, dtype=np.int8)),
            "words": np.array(np.frombuffer(source._words, dtype=np.uint16)),
            "days": np.array(np.frombuffer(source._day, dtype=np.int32)),
            "answers": np.array(np.frombuffer(source._answers, dtype=np.uint8)),
            "speakers": np.array(np.frombuffer(source._speaker, dtype=np.uint16)),
            "offsets": source._offsets,
            "slots": source._slots,
            "tfs": source._tfs,
            "fwd_offsets": source._fwd_offsets,
            "fwd_terms": source._fwd_terms,
            "terms": encode_terms(source._terms),
        }

    def _compacted(self) -> CompactPostings:
        """The live points in point-id order, rebuilt (merged state; a sort of the postings)."""
        alive = np.frombuffer(self._alive, dtype=np.int8).astype(bool)
        live = np.flatnonzero(alive)
        ids = np.frombuffer(self._point_of, dtype=np.int64)[live]
        order = np.argsort(ids, kind="stable")
        live = live[order]
        new_slot = np.full(len(alive), -1, dtype=np.int64)
        new_slot[live] = np.arange(len(live))
        post_term = np.repeat(
            np.arange(len(self._terms), dtype=np.int32), np.diff(self._offsets)[: len(self._terms)]
        )
        post_slot = new_slot[self._slots]
        keep = post_slot >= 0
        post_slot, post_term, post_tf = post_slot[keep], post_term[keep], self._tfs[keep]
        by_slot = np.argsort(post_slot, kind="stable")
        lengths = np.frombuffer(self._length, dtype=np.int32)[live]
        words, days, answers, speakers = self._trait_arrays()
        return CompactPostings.from_arrays(
            list(self._terms),
            ids[order],
            lengths,
            post_slot[by_slot].astype(np.int32),
            post_term[by_slot],
            post_tf[by_slot].astype(np.int32),
            (words[live], days[live], answers[live], speakers[live]),
        )

    def _set_traits(self, traits: Traits | None, n: int) -> None:
        """The per-slot traits from arrays (None: every one unknown)."""
        if traits is None:
            self._words = array("H", [MISSING_WORDS]) * n
            self._day = array("i", [MISSING_DAY]) * n
            self._answers = array("B", bytes(n))
            self._speaker = array("H", [MISSING_SPEAKER]) * n
            return
        words, days, answers, speakers = traits
        self._words = array("H", np.ascontiguousarray(words, dtype=np.uint16).tobytes())
        self._day = array("i", np.ascontiguousarray(days, dtype=np.int32).tobytes())
        self._answers = array("B", np.ascontiguousarray(answers, dtype=np.uint8).tobytes())
        self._speaker = array("H", np.ascontiguousarray(speakers, dtype=np.uint16).tobytes())

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

    # -- changing

    def add(
        self,
        point_id: int,
        length: int,
        counts: Mapping[str, int],
        traits: PointTraits | None = None,
    ) -> None:
        """Index a point (replacing an earlier version of it) in a new slot; `traits`
        None: unknown (`store.point_traits`)."""
        self.remove(point_id)
        slot = len(self._point_of)
        self._point_of.append(point_id)
        self._length.append(length)
        self._alive.append(1)
        words, day, answers, speaker = (
            (MISSING_WORDS, MISSING_DAY, 0, MISSING_SPEAKER) if traits is None else traits.as_row()
        )
        self._words.append(words)
        self._day.append(day)
        self._answers.append(answers)
        self._speaker.append(speaker)
        self._new_slot[point_id] = slot
        tids = array("i")
        for term, tf in counts.items():
            tid = self._term_id.get(term)
            if tid is None:
                tid = self._term_id[term] = len(self._terms)
                self._terms.append(term)
            tids.append(tid)
            buffer = self._delta.get(tid)
            if buffer is None:
                buffer = self._delta[tid] = (array("i"), array("i"))
            buffer[0].append(slot)
            buffer[1].append(tf)
        self._delta_fwd.append(tids)
        self._delta_postings += len(tids)
        self.changes += 1
        if self._max_known:
            self._max_id = point_id if self._max_id is None else max(self._max_id, point_id)
        self.doc_count += 1
        self.total_length += length
        self.id_sum += point_id
        if self._delta_postings >= max(MERGE_MIN_POSTINGS, len(self._slots) // MERGE_FRACTION):
            self.merge()

    def remove(self, point_id: int) -> None:
        """Forget a point (a tombstone on its slot); nothing when it is not indexed."""
        slot = self.slot_of(point_id)
        if slot is None:
            return
        self._alive[slot] = 0
        self._new_slot.pop(point_id, None)
        self.changes += 1
        if point_id == self._max_id:
            self._max_known = False
        self.dead += 1
        self.doc_count -= 1
        self.total_length -= self._length[slot]
        self.id_sum -= point_id

    def merge(self) -> None:
        """Move the append buffers into the CSRs: one vectorised pass, no sort."""
        if not self._delta_fwd:
            return
        n_terms = len(self._terms)
        old_terms = len(self._offsets) - 1
        base_counts = np.zeros(n_terms, dtype=np.int64)
        base_counts[:old_terms] = np.diff(self._offsets)
        delta_counts = np.zeros(n_terms, dtype=np.int64)
        max_tf = int(self._tfs.max()) if self._tfs.size else 0
        for tid, (slots, tfs) in self._delta.items():
            delta_counts[tid] = len(slots)
            max_tf = max(max_tf, max(tfs))
        offsets = np.zeros(n_terms + 1, dtype=np.int64)
        np.cumsum(base_counts + delta_counts, out=offsets[1:])
        total = int(offsets[-1])
        new_slots = np.empty(total, dtype=np.int32)
        new_tfs = np.empty(total, dtype=_tf_dtype(max_tf))
        shift = np.repeat(offsets[:old_terms] - self._offsets[:-1], base_counts[:old_terms])
        where = np.arange(len(self._slots), dtype=np.int64) + shift
        new_slots[where] = self._slots
        new_tfs[where] = self._tfs
        new_factors = None
        if self._factors is not None:  # the merged ones move; the appended get theirs
            new_factors = np.empty(total, dtype=np.float16)
            new_factors[where] = self._factors
        del where, shift
        for tid, (slots, tfs) in self._delta.items():
            start = int(offsets[tid] + base_counts[tid])
            new_slots[start : start + len(slots)] = np.frombuffer(slots, dtype=np.int32)
            new_tfs[start : start + len(tfs)] = np.frombuffer(tfs, dtype=np.int32)
            if new_factors is not None:
                computed = factors(
                    new_slots[start : start + len(slots)],
                    new_tfs[start : start + len(tfs)],
                    self.factor_avgdl,
                    self.doc_lengths(),
                )
                if computed is None:  # below float16's range: the walk computes them all
                    new_factors = None
                else:
                    new_factors[start : start + len(computed)] = computed
        self._offsets, self._slots, self._tfs = offsets, new_slots, new_tfs
        self._factors = new_factors
        fwd_counts = np.fromiter((len(t) for t in self._delta_fwd), dtype=np.int64)
        fwd_offsets = np.empty(len(self._fwd_offsets) + len(fwd_counts), dtype=np.int64)
        fwd_offsets[: len(self._fwd_offsets)] = self._fwd_offsets
        np.cumsum(fwd_counts, out=fwd_offsets[len(self._fwd_offsets) :])
        fwd_offsets[len(self._fwd_offsets) :] += self._fwd_offsets[-1]
        added = [np.frombuffer(t, dtype=np.int32) for t in self._delta_fwd]
        self._fwd_terms = np.concatenate([self._fwd_terms, *added])
        self._fwd_offsets = fwd_offsets
        self._delta = {}
        self._impacts = {}  # the merged lists changed
        self._delta_fwd = []
        self._delta_postings = 0
        self.merges += 1

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
