"""Zeroing forgotten points' records in a `rows.dat` that is not loaded yet
(`store.row_file.RowFile.forget`): a CLI `forget` runs before the open's background load has
read the file, and a kill -9 right after the delete must not leave the text in it.

Without the load's offsets, a record is found through `rows.idx` (when it fits the file)
and a scan of what follows it, or a scan of the whole file (~1–2 µs a record, 0.17–0.43 s
at 200k: its CRCs not checked there); the offsets found are kept for the next forget
(0.2 ms each after the first). Only a record whose id and CRC hold (`decode`) is zeroed,
then the file is synced. A file that is missing, a link, not a regular file or not a row
file is left alone: the load deals with it (and zeroes again whatever was forgotten
meanwhile).
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from store.private_files import lstat_unlinked, open_private
from store.row_file_format import (
    GONE,
    HEADER,
    MAGIC,
    decode,
    record_span,
    scan_file,
    zero_record,
)
from store.row_file_snapshot import SNAPSHOT_FILENAME, read_snapshot


class EarlyForget:
    """Zeroes records of the row file at `path` before it is loaded. The offsets it found
    are kept between calls (a conversation's delete forgets its points one by one): a later
    call scans only what was appended since, unless the file was made anew (another nonce)
    or cut. Thread-safe."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._nonce = b""
        self._offsets: npt.NDArray[np.uint64] = np.zeros(0, np.uint64)
        self._end = 0

    def clear(self) -> None:
        """Drop the offsets (the load's own are in use now)."""
        with self._lock:
            self._nonce, self._offsets, self._end = b"", np.zeros(0, np.uint64), 0

    def zero(self, ids: Sequence[int]) -> bool:
        """Zero the records of `ids` and sync the file; whether one was."""
        info = lstat_unlinked(self.path)
        if info is None or not stat.S_ISREG(info.st_mode):
            return False
        with self._lock:
            fd = open_private(self.path, os.O_RDWR | os.O_NONBLOCK)
            try:
                return self._zero(fd, ids)
            finally:
                os.close(fd)

    def _zero(self, fd: int, ids: Sequence[int]) -> bool:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        head = os.pread(fd, HEADER.size, 0)
        if len(head) < HEADER.size or HEADER.unpack(head)[0] != MAGIC:
            return False
        _magic, identity, nonce, _reserved = HEADER.unpack(head)
        size = os.fstat(fd).st_size
        if nonce == self._nonce and self._end <= size:
            offsets, start = self._offsets, self._end  # what was appended since
        else:
            snapshot_path = self.path.with_name(SNAPSHOT_FILENAME)
            snapshot = read_snapshot(snapshot_path, identity, nonce, size)
            offsets, start = snapshot if snapshot else (np.zeros(0, np.uint64), HEADER.size)
        offsets, end = scan_file(fd, offsets, start, size)  # CRCs: checked by `decode`
        self._nonce, self._offsets, self._end = nonce, offsets, end
        zeroed = False
        for pid in ids:
            entry = int(offsets[pid]) if 0 < pid < len(offsets) else 0
            if entry <= GONE:
                continue
            at, length = record_span(entry)
            if decode(os.pread(fd, length, at), pid) is None:
                continue
            zero_record(fd, entry)
            zeroed = True
        if zeroed:
            os.fdatasync(fd)
        return zeroed
