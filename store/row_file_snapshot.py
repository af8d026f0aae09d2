"""`rows.idx`: the offsets of `rows.dat`'s records (`store.row_file`) as they were when the
store closed, so the next open reads 8 bytes a point id instead of stepping over every
record in Python (~1.2 µs a record: >1 s at a million points).

Header `<8s32s16sQQI>`: magic `STRAYRI1`, the database's identity and the nonce of the
`rows.dat` it was taken of (a file made anew has another), how many bytes of that file it
covers, how many entries follow, and their CRC-32; then the entries (little-endian uint64).
Written atomically (`replace_atomically`) after `rows.dat` is synced; a snapshot that does
not match — missing, a link, foreign, damaged, of another `rows.dat`, covering more than the
file holds — is not used (the file is scanned, as without one). Records appended after it
are scanned from where it ends; forgets since are found by the open's check against the
database.
"""

from __future__ import annotations

import logging
import os
import stat
import struct
import zlib
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt

from store.private_files import (
    NotRegularFile,
    UnsafeDataDir,
    open_private,
    replace_atomically,
    write_all,
)

log = logging.getLogger("straylight.memory")

SNAPSHOT_FILENAME: Final = "rows.idx"
MAGIC: Final = b"STRAYRI1"
HEAD: Final = struct.Struct("<8s32s16sQQI")


def write_snapshot(
    path: Path, identity: bytes, nonce: bytes, covered: int, offsets: npt.NDArray[np.uint64]
) -> None:
    """Write the snapshot whole or not at all (OSError when it cannot be written)."""
    payload = np.ascontiguousarray(offsets, dtype="<u8").tobytes()
    head = HEAD.pack(MAGIC, identity, nonce, covered, len(offsets), zlib.crc32(payload))

    def write(fd: int) -> None:
        write_all(fd, head)
        write_all(fd, payload)

    replace_atomically(path, write)


def read_snapshot(
    path: Path, identity: bytes, nonce: bytes, size: int
) -> tuple[npt.NDArray[np.uint64], int] | None:
    """(offsets, bytes covered) of the snapshot of the `rows.dat` with `nonce` and `size`
    bytes, or None when there is none that fits (a link or a damaged one: one log line).
    The header is checked first, and the file's size against it: the entries of a file that
    cannot fit (a huge sparse one) are never read."""
    try:
        fd = open_private(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except (UnsafeDataDir, OSError) as problem:
        log.warning("%s; the rows file is scanned instead", problem)
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            log.warning("%s; the rows file is scanned instead", NotRegularFile(path))
            return None
        head = os.pread(fd, HEAD.size, 0)
        if len(head) < HEAD.size:
            return None
        magic, theirs, their_nonce, covered, count, crc = HEAD.unpack(head)
        if (
            magic != MAGIC
            or theirs != identity
            or their_nonce != nonce
            or covered > size
            or os.fstat(fd).st_size != HEAD.size + count * 8
        ):
            return None
        payload = read_at(fd, count * 8, HEAD.size)
    except OSError as problem:
        log.warning("%s: %s; the rows file is scanned instead", path, problem)
        return None
    finally:
        os.close(fd)
    if len(payload) != count * 8 or zlib.crc32(payload) != crc:
        return None
    return np.frombuffer(payload, dtype="<u8").astype(np.uint64), int(covered)


def read_at(fd: int, length: int, offset: int) -> bytes:
    """`length` bytes from `offset` (fewer at the end of the file)."""
    chunks: list[bytes] = []
    while length > 0 and (chunk := os.pread(fd, min(length, 1 << 20), offset)):
        chunks.append(chunk)
        length -= len(chunk)
        offset += len(chunk)
    return b"".join(chunks)
