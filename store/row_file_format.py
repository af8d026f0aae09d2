"""The bytes of `rows.dat` (`store.row_file`): a header, then one record a point holding the
fields of its row that never change (role, date, conversation, content).

Header (64 bytes): magic `STRAYRW1`, the 32-byte identity of the database it was made for
(`file_identity`: meta `database.id`), a random 16-byte nonce of this file (a snapshot of its
offsets, `rows.idx`, names it), 8 bytes reserved (zero).

Record: `<I q I B q H` — total length (header included), point id, CRC-32 of everything
after the CRC field plus the id, role (1 user, 2 assistant, 3 doc; 0: forgotten), `created_at`
in microseconds since the epoch (UTC), the conversation id's length in bytes; then the
conversation id and the content, UTF-8. A forgotten point's record keeps its length and id
(so a scan can step over it) and has every byte after the CRC field's start zeroed: its text
is gone from the file. A record is trusted only when its id and CRC hold (`decode`).
`scan_file` steps over the records to find where each starts (the open, without `rows.idx`).
"""

from __future__ import annotations

import hashlib
import os
import struct
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final

import numpy as np
import numpy.typing as npt

MAGIC: Final = b"STRAYRW1"
HEADER: Final = struct.Struct("<8s32s16s8s")
RECORD: Final = struct.Struct("<IqIBqH")
LENGTH_BITS: Final = 24  # a record's length in an offsets entry; longer records stay out
MAX_RECORD: Final = (1 << LENGTH_BITS) - 1  # also the mask of an offsets entry's length
GONE: Final = 1  # an offsets entry: no such point (no record starts inside the header)
ROLES: Final = ("", "user", "assistant", "doc")  # index 0: a forgotten record
ROLE_CODES: Final = {name: code for code, name in enumerate(ROLES) if name}
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND: Final = timedelta(microseconds=1)
_ID: Final = struct.Struct("<q")
_CHUNK: Final = 4 << 20  # bytes read at a time by `scan_file`
_SLACK: Final = 4096  # ids an offsets array has room for beyond the largest
_CRC_AT: Final = 12  # the CRC field's offset in a record: it and all after it are zeroed
_AFTER_CRC: Final = 16  # where the CRC's bytes begin (role onward)


@dataclass(frozen=True, slots=True)
class StoredRow:
    """A point's fields that no statement changes: what `rows.dat` holds of it."""

    id: int
    role: str
    created_at: datetime
    conversation_id: str
    content: str


def file_identity(database_id: str) -> bytes:
    """The 32 bytes saying whose points a file holds: a file copied from another data dir
    carries other bytes and is rebuilt."""
    return hashlib.sha256(f"rows\0{database_id}".encode()).digest()


def header(identity: bytes, nonce: bytes) -> bytes:
    return HEADER.pack(MAGIC, identity, nonce, bytes(8))


def header_problem(data: bytes, identity: bytes) -> tuple[str | None, bytes]:
    """Why a file's first bytes are not a header of this database's file (None: they are),
    and the file's nonce."""
    if len(data) < HEADER.size:
        return f"truncated ({len(data)} bytes)", b""
    magic, theirs, nonce, _reserved = HEADER.unpack_from(data)
    if magic != MAGIC:
        return "not a row file", b""
    if theirs != identity:
        return "made for another database", b""
    return None, nonce


def encode(row: StoredRow) -> bytes | None:
    """The record of `row`, or None when it is longer than an offsets entry can say."""
    conversation = row.conversation_id.encode()
    content = row.content.encode()
    micros = (row.created_at - _EPOCH) // _MICROSECOND
    length = RECORD.size + len(conversation) + len(content)
    if length > MAX_RECORD or len(conversation) > 0xFFFF:
        return None
    head = RECORD.pack(length, row.id, 0, ROLE_CODES[row.role], micros, len(conversation))
    body = head[_AFTER_CRC:] + conversation + content
    crc = zlib.crc32(body, zlib.crc32(_ID.pack(row.id)))
    return head[:_CRC_AT] + struct.pack("<I", crc) + body


def decode(data: bytes, point_id: int) -> StoredRow | None:
    """The row a record holds when it is whole and of `point_id` (None: torn, forgotten,
    another point's, not a record, or a hand-made one whose text or date cannot be read)."""
    if len(data) < RECORD.size:
        return None
    length, rid, crc, role, micros, conv_len = RECORD.unpack_from(data)
    if rid != point_id or length != len(data) or not 0 < role < len(ROLES):
        return None
    body = memoryview(data)[_AFTER_CRC:]
    if zlib.crc32(body, zlib.crc32(_ID.pack(rid))) != crc:
        return None
    start = RECORD.size
    try:  # a CRC is no signature: a hand-made record can hold and still be unreadable
        conversation = data[start : start + conv_len].decode()
        content = data[start + conv_len :].decode()
        created_at = _EPOCH + micros * _MICROSECOND
    except (UnicodeDecodeError, OverflowError):
        return None
    return StoredRow(rid, ROLES[role], created_at, conversation, content)


def zeroed_tail(length: int) -> tuple[int, bytes]:
    """(offset within the record, zeros) that forget writes over a record of `length`."""
    return _CRC_AT, bytes(length - _CRC_AT)


def record_span(entry: int) -> tuple[int, int]:
    """(file offset, length) of the record an offsets entry (> `GONE`) names."""
    return entry >> LENGTH_BITS, entry & MAX_RECORD


def zero_record(fd: int, entry: int) -> None:
    """Zero the record an offsets entry names (`zeroed_tail`: its CRC and all after it)."""
    at, length = record_span(entry)
    start, zeros = zeroed_tail(length)
    write_all_at(fd, zeros, at + start)


@dataclass
class Scanned:
    """What `scan` found in a chunk of the file."""

    records: list[tuple[int, int, int]]  # (id, file offset, length) of the usable records
    used: int  # the bytes the whole records took (a record cut by the chunk's end is not)
    broken: bool  # a length that is no record's: nothing after it can be trusted


def scan(data: bytes, base: int, check_from: int) -> Scanned:
    """The whole, not-forgotten records in `data`, which starts at file offset `base`; those
    at `check_from` or later (the tail a crash may have torn) only when their CRC holds.
    Every read checks a record's CRC again (`decode`): one damaged elsewhere is read from
    the database."""
    found: list[tuple[int, int, int]] = []
    at, size = 0, len(data)
    view = memoryview(data)
    unpack = RECORD.unpack_from
    while at + RECORD.size <= size:
        length, rid, crc, role, _micros, _conv = unpack(data, at)
        if length < RECORD.size or length > MAX_RECORD:
            return Scanned(found, at, True)
        if at + length > size:
            break
        if role and (
            base + at < check_from
            or zlib.crc32(view[at + _AFTER_CRC : at + length], zlib.crc32(_ID.pack(rid))) == crc
        ):
            found.append((rid, base + at, length))
        at += length
    return Scanned(found, at, False)


def scan_file(
    fd: int, offsets: npt.NDArray[np.uint64], start: int, check_from: int
) -> tuple[npt.NDArray[np.uint64], int]:
    """`offsets` with the usable records from `start` on added (their CRCs checked from
    `check_from` on), and where the whole records end."""
    ids: list[int] = []
    entries: list[int] = []
    pos, want = start, _CHUNK
    while True:
        data = os.pread(fd, want, pos)
        if not data:
            break
        found = scan(data, pos, check_from)
        for pid, offset, length in found.records:
            ids.append(pid)
            entries.append((offset << LENGTH_BITS) | length)
        pos += found.used
        if found.broken or len(data) < want:
            break
        # a record longer than the chunk: read it whole next time
        want = max(_CHUNK, RECORD.unpack_from(data, found.used)[0]) if found.used == 0 else _CHUNK
    offsets = sized(offsets, max(ids, default=0))
    if ids:
        offsets[np.asarray(ids, np.int64)] = np.asarray(entries, np.uint64)
    return offsets, pos


def sized(offsets: npt.NDArray[np.uint64], largest: int) -> npt.NDArray[np.uint64]:
    """`offsets` (entries by point id) with room for id `largest` (a copy with 1/16 and
    `_SLACK` more when it grows: ~8.5 bytes a point id)."""
    if largest < len(offsets):
        return offsets
    grown = np.zeros(largest + 1 + largest // 16 + _SLACK, np.uint64)
    grown[: len(offsets)] = offsets
    return grown


def write_all_at(fd: int, data: bytes, offset: int) -> None:
    """`data` written at `offset` whole (`os.pwrite` may write less)."""
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, offset)
        view, offset = view[written:], offset + written
