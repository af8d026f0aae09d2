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

Here the building and the changes; the reads, and the arrays' state they share, are the base
class `PostingReads` (`store.lexical_posting_reads`).
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from store.bm25 import factors
from store.lexical_file import encode_terms
from store.lexical_posting_reads import PostingReads
from store.point_traits import MISSING_DAY, MISSING_SPEAKER, MISSING_WORDS, PointTraits

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from store.lexical_file import MappedArrays
    from store.lexical_posting_reads import Traits

MERGE_MIN_POSTINGS = 20_000  # append buffers merged into the CSR beyond this many postings …
MERGE_FRACTION = 8  # … or beyond this fraction of the merged postings, whichever is more


def _tf_dtype(max_tf: int) -> type[np.integer]:
    """The narrowest exact tf type: most tfs are 1–3, a long document's may be larger."""
    return np.uint16 if max_tf < 2**16 else np.int32


class CompactPostings(PostingReads):
    """BM25 postings of many points in flat arrays. Not thread-safe: the caller locks."""

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
