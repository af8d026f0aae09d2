"""The file `lexical.idx`: the word index's flat arrays (`store.lexical_postings`) on disk, so
the next open maps them (O(1), pages read on demand, file-backed and reclaimable) instead of
loading every posting from the tables.

Derived like `vectors.usearch`: the tables stay the truth and the file is rebuilt from them
whenever it cannot be used. Layout: the magic `STRAYLX1`, a little JSON header (identity,
the state it holds, and per section its offset, dtype, length and CRC-32), the sections at
64-byte boundaries, and a footer (`STRAYLXE`, the file's length, the header's CRC-32). Opening
checks every CRC (~0.1 s for 300 MB in the page cache) and the arrays' shapes, so a truncated,
corrupt or foreign file is refused (`LexicalFileError`), never trusted. Written atomically
(0600 temp file, fsync, rename, fsync the folder); opened without following a link.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import mmap
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast

import numpy as np

from store import file_checks_ahead
from store.bm25 import contributions, factors
from store.lexical_ahead import LEXICAL_FILENAME as LEXICAL_FILENAME
from store.private_files import map_private, replace_atomically, write_all

if TYPE_CHECKING:
    from numpy.typing import NDArray

VERSION: Final = 5  # 2: the terms' impact bounds; 3: the points' traits (`store.point_traits`);
# 4: their speaker; 5: the postings' factors
READABLE: Final = (4, 5)  # a version-4 file is mapped without the factors (the walk computes them)
_MAGIC: Final = b"STRAYLX1"
_FOOTER: Final = struct.Struct("<8sQI")
_FOOTER_MAGIC: Final = b"STRAYLXE"
_MIN_SIZE: Final = len(_MAGIC) + 4 + _FOOTER.size
_ALIGN: Final = 64
_DTYPES: Final = {"int8", "int32", "int64", "uint16", "uint8", "float16", "float64"}
IMPACT_CHUNK: Final = 1 << 22  # postings scored at a time for the impacts (32 MiB of floats)

# The arrays a file holds, with their dtype (tfs may be uint16 or int32).
SECTIONS: Final = (
    "point_ids",  # int64 by slot, ascending (dead slots included, marked in `alive`)
    "lengths",  # int32 by slot
    "alive",  # int8 by slot
    "words",  # uint16 by slot: content words (the traits; `store.point_traits`)
    "days",  # int32 by slot: days since 1970-01-01
    "answers",  # uint8 by slot: answer-kind bits
    "speakers",  # uint16 by slot: the speaker's hash (0 none, 0xFFFF not known)
    "offsets",  # int64, terms + 1: term-major CSR
    "slots",  # int32 by posting
    "tfs",  # uint16 / int32 by posting
    "fwd_offsets",  # int64, slots + 1: doc-major CSR
    "fwd_terms",  # int32 by posting
    "terms",  # uint8: the terms in term-id order, UTF-8, each followed by a NUL
    "impacts",  # float64 by term: the largest BM25 factor of its postings at …
    "impact_avgdl",  # float64, one: … this average length (written by `write_file`)
    "factors",  # float16 by posting (none when one is too small): `bm25.factors` at …
    "factor_avgdl",  # float64, one: … this average length, the true one (`write_file`)
)
_SINCE: Final = {"factors": 5, "factor_avgdl": 5}  # the version that added a section


def sections_of(version: int) -> tuple[str, ...]:
    """The sections a file of `version` holds."""
    return tuple(name for name in SECTIONS if _SINCE.get(name, 0) <= version)


class LexicalFileError(Exception):
    """The file cannot be used; the message says why (one line for the log)."""


class StaleFile(LexicalFileError):
    """A sound file made for another state: another database or tokenizer, an older index."""


def file_identity(database_id: str, analyzer: str) -> str:
    """What a file carries to say whose words it holds: the database's random id (meta
    `database.id`) and the analyzer that made the terms. Another data dir's file, or one made
    with another tokenizer, carries another identity and is rebuilt."""
    return hashlib.sha256(f"{database_id}\0{analyzer}".encode()).hexdigest()


@dataclass(frozen=True)
class FileState:
    """What the file holds, compared with the tables at open (`store.lexical_cache`)."""

    identity: str
    generation: str | None
    doc_count: int
    total_length: int
    id_sum: int


@dataclass
class MappedArrays:
    """A file's arrays: read-only numpy views of one `mmap` (kept alive by the views)."""

    state: FileState
    arrays: dict[str, NDArray[Any]]
    terms: list[str]
    size: int


def write_file(path: Path, state: FileState, arrays: dict[str, NDArray[Any]]) -> int:
    """Write the arrays (every name in SECTIONS but the impacts, which it computes here,
    outside the cache's lock; `terms` as `encode_terms` bytes); atomically. Returns the
    file's size."""
    arrays = {**arrays, **impact_sections(arrays, state), **factor_sections(arrays, state)}
    sections: dict[str, list[Any]] = {}
    blobs: list[tuple[int, NDArray[Any]]] = []
    offset = 0
    for name in sections_of(VERSION):
        data = np.ascontiguousarray(arrays[name])
        if str(data.dtype) not in _DTYPES:
            raise ValueError(f"{name}: dtype {data.dtype} cannot be written")
        crc = zlib.crc32(data.data.cast("B")) if data.size else 0
        sections[name] = [offset, str(data.dtype), int(data.size), crc]
        blobs.append((offset, data))
        offset = _aligned(offset + data.nbytes)
    header = json.dumps(
        {
            "version": VERSION,
            "identity": state.identity,
            "generation": state.generation,
            "doc_count": state.doc_count,
            "total_length": state.total_length,
            "id_sum": state.id_sum,
            "sections": sections,
        },
        separators=(",", ":"),
    ).encode()
    start = _aligned(len(_MAGIC) + 4 + len(header))
    prefix = _MAGIC + struct.pack("<I", len(header)) + header
    size = start + offset + _FOOTER.size

    def write(fd: int) -> None:
        write_all(fd, prefix + bytes(start - len(prefix)))
        at = 0
        for where, data in blobs:
            write_all(fd, bytes(where - at))
            write_all(fd, data.data.cast("B") if data.size else b"")
            at = where + data.nbytes
        write_all(fd, bytes(offset - at))
        write_all(fd, _FOOTER.pack(_FOOTER_MAGIC, size, zlib.crc32(prefix)))

    replace_atomically(path, write)
    return size


def impact_sections(arrays: dict[str, NDArray[Any]], state: FileState) -> dict[str, NDArray[Any]]:
    """Every term's largest `tf·(k1+1) / (tf + k1·(1 − b + b·len/A))` over its postings, at
    A = 1.05 × the average length (valid while it stays below A, as
    `CompactPostings.impact` computes them one term at a time; the pruned top k's bounds).
    The same float operations as `contributions`, so the same values. O(postings)."""
    offsets, slots, tfs = arrays["offsets"], arrays["slots"], arrays["tfs"]
    lengths = arrays["lengths"]
    terms = len(offsets) - 1
    impacts = np.zeros(terms, dtype=np.float64)
    avgdl = max(state.total_length / state.doc_count, 1e-9) * 1.05 if state.doc_count else 0.0
    counts = np.diff(offsets)
    start = 0
    while start < terms and avgdl:
        end = int(np.searchsorted(offsets, offsets[start] + IMPACT_CHUNK, side="right")) - 1
        end = min(max(end, start + 1), terms)
        lo, hi = int(offsets[start]), int(offsets[end])
        if hi > lo:
            values = contributions(slots[lo:hi], tfs[lo:hi], 1.0, avgdl, lengths)
            held = np.flatnonzero(counts[start:end])
            impacts[start + held] = np.maximum.reduceat(values, offsets[start:end][held] - lo)
        start = end
    return {"impacts": impacts, "impact_avgdl": np.array([avgdl], dtype=np.float64)}


def factor_sections(arrays: dict[str, NDArray[Any]], state: FileState) -> dict[str, NDArray[Any]]:
    """Every posting's factor at the average length (`bm25.factors`, float16: 2 B a posting),
    which the MaxScore walk reads in place of computing it from the slot's length (a random
    read of the lengths a posting: the walk at 1M points ~35 % faster; docs/lexical_search.md,
    "Fourth round"). None (an empty section, average 0) when one is below float16's range.
    O(postings), in chunks."""
    slots, tfs, lengths = arrays["slots"], arrays["tfs"], arrays["lengths"]
    avgdl = max(state.total_length / state.doc_count, 1e-9) if state.doc_count else 0.0
    out = np.empty(len(slots), dtype=np.float16)
    for lo in range(0, len(slots) if avgdl else 0, IMPACT_CHUNK):
        chunk = factors(slots[lo : lo + IMPACT_CHUNK], tfs[lo : lo + IMPACT_CHUNK], avgdl, lengths)
        if chunk is None:
            avgdl = 0.0
            break
        out[lo : lo + len(chunk)] = chunk
    if not avgdl:
        out = out[:0]
    return {"factors": out, "factor_avgdl": np.array([avgdl], dtype=np.float64)}


def encode_terms(terms: list[str]) -> NDArray[np.uint8]:
    """The terms as one NUL-separated UTF-8 byte array (a term never holds a NUL: `\\w+`)."""
    blob = "".join(term + "\0" for term in terms).encode()
    return np.frombuffer(blob, dtype=np.uint8)


def read_file(path: Path, identity: str, generation: str | None) -> MappedArrays:
    """Map the file and check it: footer, header, that it was made for `identity` at
    `generation`, then every section's bounds, CRC and shape. LexicalFileError if it cannot
    be used (missing included); `SymlinkRefused` for a link. A check of this file started
    ahead (`start_check`) is used when the file was not replaced since."""
    found, ahead = file_checks_ahead.take(path)  # (raises what that check raised)
    if found:
        _check_state(ahead.state, identity, generation)
        return cast("MappedArrays", ahead)
    return _read(path, identity, generation)


def read_unbound(path: Path) -> MappedArrays:
    """`read_file` but for whose the file is (`store.lexical_ahead`: before the database is
    open; `read_file` checks that when it takes the result)."""
    return _read(path, None, None)


def _read(path: Path, identity: str | None, generation: str | None) -> MappedArrays:
    try:
        mapped = map_private(path, _too_small, LexicalFileError("not a regular file"))
    except FileNotFoundError:
        raise LexicalFileError("missing") from None
    size = len(mapped)
    try:
        return _parse(mapped, size, identity, generation)
    except LexicalFileError:
        with contextlib.suppress(BufferError):  # views of it live on in the traceback
            mapped.close()
        raise


def _check_state(state: FileState, identity: str, generation: str | None) -> None:
    if state.identity != identity:
        raise StaleFile("made for another database or tokenizer")
    if state.generation != generation:
        raise StaleFile("made before the word index was last rebuilt")


def _too_small(size: int) -> LexicalFileError | None:
    return LexicalFileError(f"truncated ({size} bytes)") if size < _MIN_SIZE else None


def _parse(
    mapped: mmap.mmap, size: int, identity: str | None, generation: str | None
) -> MappedArrays:
    """The file's arrays, checked; whose it is too unless `identity` is None (ahead)."""
    if mapped[: len(_MAGIC)] != _MAGIC:
        raise LexicalFileError("not a word-index file")
    magic, length, header_crc = _FOOTER.unpack(mapped[size - _FOOTER.size :])
    if magic != _FOOTER_MAGIC or length != size:
        raise LexicalFileError("truncated: the footer is missing or names another length")
    (header_len,) = struct.unpack("<I", mapped[len(_MAGIC) : len(_MAGIC) + 4])
    prefix_len = len(_MAGIC) + 4 + header_len
    if prefix_len > size - _FOOTER.size or zlib.crc32(mapped[:prefix_len]) != header_crc:
        raise LexicalFileError("the header is corrupt")
    try:
        header = json.loads(mapped[len(_MAGIC) + 4 : prefix_len])
        version = header["version"]
        if version not in READABLE:  # an older layout: rebuilt from the tables
            raise StaleFile(f"version {version}, expected {VERSION}")
        state = FileState(
            str(header["identity"]),
            None if header["generation"] is None else str(header["generation"]),
            int(header["doc_count"]),
            int(header["total_length"]),
            int(header["id_sum"]),
        )
        table = {name: header["sections"][name] for name in sections_of(version)}
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        raise LexicalFileError(f"the header is unreadable ({exc})") from None
    if identity is not None:
        _check_state(state, identity, generation)
    start = _aligned(prefix_len)
    end = size - _FOOTER.size
    arrays: dict[str, NDArray[Any]] = {}
    for name, (offset, dtype, count, crc) in table.items():
        if dtype not in _DTYPES:
            raise LexicalFileError(f"{name}: dtype {dtype}")
        itemsize = np.dtype(dtype).itemsize
        lo = start + int(offset)
        hi = lo + int(count) * itemsize
        if int(offset) < 0 or int(count) < 0 or hi > end:
            raise LexicalFileError(f"{name}: outside the file")
        array = np.frombuffer(mapped, dtype=dtype, count=int(count), offset=lo)
        if (zlib.crc32(array.data.cast("B")) if count else 0) != crc:
            raise LexicalFileError(f"{name}: checksum mismatch, the file is corrupt")
        arrays[name] = array
    terms = bytes(arrays.pop("terms")).decode().split("\0")[:-1]
    _check_shapes(arrays, len(terms))
    return MappedArrays(state, arrays, terms, size)


def _check_shapes(arrays: dict[str, NDArray[Any]], term_count: int) -> None:
    """The arrays fit together (a file a buggy writer made is refused like a corrupt one)."""
    slots = len(arrays["point_ids"])
    postings = len(arrays["slots"])
    offsets, fwd = arrays["offsets"], arrays["fwd_offsets"]
    ok = (
        len(arrays["lengths"]) == slots == len(arrays["alive"])
        and len(arrays["words"]) == slots == len(arrays["days"]) == len(arrays["answers"])
        and len(arrays["speakers"]) == slots
        and len(offsets) == term_count + 1
        and len(fwd) == slots + 1
        and len(arrays["tfs"]) == postings == len(arrays["fwd_terms"])
        and int(offsets[0]) == 0 == int(fwd[0])
        and int(offsets[-1]) == postings == int(fwd[-1])
        and bool(np.all(np.diff(offsets) >= 0))
        and bool(np.all(np.diff(fwd) >= 0))
        and bool(np.all(np.diff(arrays["point_ids"]) > 0))
        and (postings == 0 or int(arrays["slots"].max()) < slots)
        and (postings == 0 or int(arrays["fwd_terms"].max()) < term_count)
        and len(arrays["impacts"]) == term_count
        and len(arrays["impact_avgdl"]) == 1
        and bool(np.all(np.isfinite(arrays["impacts"])))
        and bool(np.isfinite(arrays["impact_avgdl"][0]))
        and _factors_fit(arrays, postings)
    )
    if not ok:
        raise LexicalFileError("the arrays do not fit together")


# The float16 bit patterns of a factor: a normal number from 2**-14 (`bm25.FACTOR_MIN`) to 2.5
# (a factor is below k1 + 1 = 2.2): no zero, subnormal, negative, infinite or NaN one.
_FACTOR_BITS: Final = (0x0400, 0x4100)


def _factors_fit(arrays: dict[str, NDArray[Any]], postings: int) -> bool:
    """A version-5 file's factors: none (average 0), or one a posting at a positive average,
    each a positive normal float16 below 2.5 (checked on the bits: ~6 ms at 1M points)."""
    if "factors" not in arrays:
        return True
    avgdl = arrays["factor_avgdl"]
    if len(avgdl) != 1 or not np.isfinite(avgdl[0]):
        return False
    factors = arrays["factors"]
    if len(factors) != (postings if avgdl[0] > 0 else 0):
        return False
    if not len(factors):
        return True
    bits = factors.view(np.uint16)
    return _FACTOR_BITS[0] <= int(bits.min()) and int(bits.max()) <= _FACTOR_BITS[1]


def _aligned(offset: int) -> int:
    return -(-offset // _ALIGN) * _ALIGN
