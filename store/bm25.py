"""Okapi BM25's per-posting arithmetic, shared by the word index's scorers
(`store.lexical_topk`, `store.lexical_dense`, the impact bounds of `store.lexical_posting_reads`,
the merges of `store.lexical_postings` and `store.lexical_file`) and, for its parameters, the
SQL path of `store.lexical_index`."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, TypeVar

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import NDArray

FloatT = TypeVar("FloatT", bound=np.floating)

# Okapi BM25's parameters, shared with the SQL scoring in `store.lexical_index`.
K1 = 1.2
B = 0.75


def idf(n: int, df: int) -> float:
    """A term's inverse document frequency among `n` points, `df` of which hold it (Okapi
    BM25's, kept positive: ln(1 + (n − df + 0.5) / (df + 0.5)))."""
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


def contributions(
    slots: NDArray[np.integer],
    raw_tfs: NDArray[np.integer],
    idf: float | NDArray[np.float64],
    avgdl: float,
    doc_lengths: NDArray[np.int32],
) -> NDArray[np.float64]:
    """BM25 contributions at `slots`: one term's (`idf` a number), or many terms' postings
    in one call (`idf` an array, each posting's term's). Element by element, so the same
    float for a posting whichever other postings are scored with it."""
    return _contributions(slots, raw_tfs, idf, avgdl, doc_lengths, np.float64)


def rough_contributions(
    slots: NDArray[np.intp],
    raw_tfs: NDArray[np.integer],
    idf: float,
    avgdl: float,
    doc_lengths: NDArray[np.int32],
) -> NDArray[np.float32]:
    """`contributions` in float32, each within a relative `ROUGH_ERROR` of the float64 one:
    for the MaxScore walk (`store.lexical_topk`), which only bounds scores; every score it
    returns comes from `contributions`. Half the bytes of float64: the walk at 1M points
    ~15 % faster (docs/lexical_search.md)."""
    return _contributions(slots, raw_tfs, idf, avgdl, doc_lengths, np.float32)


def _contributions(
    slots: NDArray[np.integer],
    raw_tfs: NDArray[np.integer],
    idf: float | NDArray[np.float64],
    avgdl: float,
    doc_lengths: NDArray[np.int32],
    dtype: type[FloatT],
) -> NDArray[FloatT]:
    tfs = raw_tfs.astype(dtype)
    # (idf·(k1+1))·tf / (tf + k1·((1 − b) + (b·len) / avgdl)), operation by operation in
    # place (fewer temporaries; the same operations in the same order, so the same floats)
    denominator = doc_lengths[slots].astype(dtype)
    denominator *= B
    denominator /= avgdl
    denominator += 1 - B
    denominator *= K1
    denominator += tfs
    tfs *= idf * (K1 + 1)
    tfs /= denominator
    return tfs


# Above the relative error of one `rough_contributions` value: the constants rounded to
# float32 (avgdl, 1.2, idf·2.2) and seven operations on positive numbers, each at most half
# a float32 ulp (2**-24) off: ~10 · 2**-24, with room to spare. A sum of n of them in
# float32 adds at most n · 2**-24 more.
ROUGH_ERROR = 16 * 2.0**-24


# A posting's factor (its contribution over idf) stored in float16 (`factors`), for the
# MaxScore walk: half a float16 ulp (2**-11) off, then times idf in float32 (two more
# roundings of 2**-24): below 2**-10 relative. float16's relative error grows below its
# smallest normal number, so a file that would hold a smaller factor stores none at all.
FACTOR_ERROR = 2.0**-10
FACTOR_MIN = 2.0**-14


def factors(
    slots: NDArray[np.integer],
    raw_tfs: NDArray[np.integer],
    avgdl: float,
    doc_lengths: NDArray[np.int32],
) -> NDArray[np.float16] | None:
    """Each posting's `tf·(k1+1) / (tf + k1·norm)` at `avgdl` in float16, within
    `FACTOR_ERROR` of `contributions(…, 1.0, …)` (None when one is below `FACTOR_MIN`)."""
    values = contributions(slots, raw_tfs, 1.0, avgdl, doc_lengths)
    if len(values) and float(values.min()) < FACTOR_MIN:
        return None
    return values.astype(np.float16)


def factor_drift(avgdl: float, basis: float) -> float:
    """How far (relative, either way) a factor computed at the average length `basis` can be
    from the one at `avgdl`: only `b·len/avgdl` in the denominator moves, by the ratio of the
    two, so the factor moves by at most that ratio."""
    return max(avgdl / basis, basis / avgdl) - 1.0


def max_factor(
    slots: NDArray[np.integer],
    tfs: NDArray[np.integer],
    avgdl: float,
    doc_lengths: NDArray[np.int32],
) -> float:
    """The largest `tf·(k1+1) / (tf + k1·norm)` of these postings at `avgdl`."""
    if not len(slots):
        return 0.0
    return float(contributions(slots, tfs, 1.0, avgdl, doc_lengths).max())
