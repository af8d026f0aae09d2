"""`rows.dat`: the fields of every point's row that never change (role, date, conversation,
content), appended after each save, so a recall reads its hits' rows with one `os.pread`
each instead of a DuckDB statement (~0.7 ms fixed cost; docs/recall-latency.md "Ninth
session").

DuckDB is the truth and the file is derived, like `lexical.idx` and `vectors.usearch`:
* a record is used only when its id and CRC hold (`row_file_format.decode`); anything the
  file lacks — a point saved while it loaded, a torn or damaged record, a record too long,
  the whole file before its load — is read from DuckDB (`point_reads.hit_rows`);
* it is appended after the save's commit, and before a forget's (or an ingest's replace's)
  transaction the point's record is zeroed and the file synced: the text is gone from it
  whether the delete then commits or not (a zeroed record is read from DuckDB);
* at open, in the background (`load`), the file is checked against the database (and made
  anew when most of it is zeroed records, `row_file_catchup.mostly_dead`): its
  header must carry this database's identity (a foreign file or a damaged header is
  replaced by an empty file; a planted link, or a folder in its place, is left alone and
  not used, as `lexical.idx`: one log line each), its records are scanned (a torn tail is
  cut off), records of points the database no longer has are zeroed and the points it
  lacks are appended from the database; until then recall reads DuckDB as before.
In memory: one `uint64` a point id (offset << 24 | record length, 0: not in the file).
Read-only opens do not use it (`MemoryStore`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt

from store import meta
from store.database import Database
from store.private_files import (
    NotRegularFile,
    UnsafeDataDir,
    lstat_unlinked,
    open_private,
    refuse_symlink,
    replace_atomically,
    write_all,
)
from store.row_file_catchup import mostly_dead, rows_from
from store.row_file_early_forget import EarlyForget
from store.row_file_format import (
    GONE,
    HEADER,
    LENGTH_BITS,
    StoredRow,
    decode,
    encode,
    file_identity,
    header,
    header_problem,
    record_span,
    scan_file,
    sized,
    write_all_at,
    zero_record,
)
from store.row_file_snapshot import SNAPSHOT_FILENAME, read_snapshot, write_snapshot
from store.vector_index_file import remove_stale_temp_files

log = logging.getLogger("straylight.memory")

ROWS_FILENAME: Final = "rows.dat"
DATABASE_ID_KEY: Final = "database.id"
# The open's scan checks the CRCs of the records in the file's last MiB only (where a crash
# cuts an append short; 0.2–0.5 s at 100k points for all of them, ~4x less without): a read
# checks every record it uses again.
_CHECKED_TAIL: Final = 1 << 20
_PAGE: Final = 5_000  # points read from the database at a time by the catch-up
_DROP_AFTER_BYTES: Final = 1 << 20  # a catch-up that read more evicts DuckDB's cached blocks


class RowFile:
    """The `rows.dat` of one writable data dir. Thread-safe: reads take no lock (a record
    is checked, not trusted), writes and the load's end take `_lock`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.ready = False  # loaded and caught up: `rows` answers
        self.largest = 0  # the largest point id the file answers for (has or knows gone)
        self.opened_from = ""  # "snapshot" (rows.idx), "scan" or "new": how the load began
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._offsets: npt.NDArray[np.uint64] = np.zeros(0, np.uint64)
        self._end = 0  # where the next record goes
        self._loading = False
        self._queued: dict[int, StoredRow] = {}  # saved while loading
        self._forgotten: set[int] = set()  # forgotten while loading
        self._identity, self._nonce = b"", b""
        self._snapshot_stale = False  # `rows.idx` is written at close when it is
        self._early = EarlyForget(path)  # forgets before the load

    # ---- reads ---------------------------------------------------------------------------
    def lookup(self, ids: Iterable[int]) -> tuple[dict[int, StoredRow], list[int]]:
        """The rows the file holds whole of `ids`, and the ids it cannot answer for (read
        them from DuckDB): not in the file, or its record torn, or above `largest` (saved
        a moment ago). Ids of points known gone (forgotten, or no point at the load) are in
        neither."""
        found: dict[int, StoredRow] = {}
        unknown: list[int] = []
        offsets, fd = self._offsets, self._fd
        if not self.ready or fd is None:
            return found, list(ids)
        for pid in ids:
            if pid <= 0:
                continue
            if pid >= len(offsets):
                unknown.append(pid)
                continue
            entry = int(offsets[pid])
            if entry == GONE:
                continue
            row = None
            if entry:
                with contextlib.suppress(OSError):
                    at, length = record_span(entry)
                    row = decode(os.pread(fd, length, at), pid)
            if row is None:
                unknown.append(pid)
            else:
                found[pid] = row
        return found, unknown

    def rows(self, ids: Iterable[int]) -> dict[int, StoredRow]:
        """The rows the file holds whole of `ids`."""
        return self.lookup(ids)[0]

    def covers(self) -> int:
        """How many points the file holds (status, tests)."""
        return int(np.count_nonzero(self._offsets > GONE)) if self.ready else 0

    # ---- writes (`PointStore` calls them) ------------------------------------------------
    def append(self, rows: Sequence[StoredRow]) -> None:
        """Add committed points' rows (queued while the file loads)."""
        with self._lock:
            if self._loading:
                self._queued.update((row.id, row) for row in rows)
                return
            if not self.ready or self._fd is None:
                return
            try:
                self._write(self._fd, rows)
                self._snapshot_stale = True
            except OSError as error:
                self._give_up(f"cannot append ({error.strerror})")

    def forget(self, ids: Sequence[int]) -> None:
        """Zero the records of points about to be deleted, and sync: before the delete's
        transaction, so the text is not left in the file whatever happens next."""
        with self._lock:
            fd = self._fd
            loaded = fd is not None
            if fd is None:  # not loaded (yet): zeroed below, and again by the load
                self._forgotten.update(ids)
                for pid in ids:
                    self._queued.pop(pid, None)
            else:
                try:
                    if self._zero(fd, ids):
                        os.fdatasync(fd)
                        self._snapshot_stale = True
                except OSError as error:
                    self._give_up(f"cannot zero a forgotten point ({error.strerror})")
        if not loaded:  # without the lock: its scan (~2 s at 1M) must not hold up saves
            try:
                self._early.zero(ids)
            except OSError as error:  # (a link planted meanwhile: `UnsafeDataDir`)
                log.warning("%s: cannot zero a forgotten point (%s)", self.path, error)

    @property
    def forgets_pending(self) -> bool:
        """Points were forgotten before the file was loaded: the load must run to zero them
        (`MemoryStore` runs it even when closing)."""
        return bool(self._forgotten)

    def gone(self, ids: Sequence[int]) -> None:
        """Mark points whose delete committed as gone: a read of them needs no query."""
        with self._lock:
            if self.ready and not self._loading:
                offsets = self._offsets
                for pid in ids:
                    if 0 < pid < len(offsets) and not offsets[pid]:
                        offsets[pid] = GONE
                        self._snapshot_stale = True

    def close(self) -> None:
        """Write `rows.idx` when the offsets changed since it was written; close the file."""
        with self._lock:
            fd, self._fd = self._fd, None
            if fd is None:
                return
            try:
                if self.ready and self._snapshot_stale:
                    os.fdatasync(fd)  # the records before the snapshot that names them
                    snapshot = self.path.with_name(SNAPSHOT_FILENAME)
                    refuse_symlink(snapshot)  # a link there is left alone, as lexical.idx's
                    write_snapshot(snapshot, self._identity, self._nonce, self._end, self._offsets)
            except OSError as error:
                log.warning("cannot write %s (%s); the next open scans", SNAPSHOT_FILENAME, error)
            finally:
                self.ready = False
                os.close(fd)

    # ---- the open's load (a background thread) ------------------------------------------
    def load(self, db: Database, stop: Callable[[], bool] = lambda: False) -> None:
        """Open or rebuild the file, check it against the database, catch up; `ready` when
        done. Any problem leaves the file unused (one log line): recall reads DuckDB."""
        with self._lock:
            self._loading = True
        fd: int | None = None
        try:
            with db.cursor() as cur:
                database_id = meta.get(cur, DATABASE_ID_KEY)
            if database_id is None:
                return
            self._identity = file_identity(database_id)
            for path in (self.path, self.path.with_name(SNAPSHOT_FILENAME)):
                remove_stale_temp_files(path)  # of a process killed writing it
            fd, offsets, end, from_snapshot = self._open(self._identity)
            with db.cursor() as cur:
                result = cur.execute("SELECT id FROM points ORDER BY id").fetchnumpy()
            stored = np.asarray(result["id"], dtype=np.int64)
            largest = int(stored[-1]) if len(stored) else 0
            offsets = sized(offsets, largest)
            if mostly_dead(offsets, stored, end):  # forgets and re-imports left holes
                os.close(fd)
                fd = None
                fd, offsets, end, from_snapshot = self._open(self._identity, anew=True)
                offsets = sized(offsets, largest)
            before = offsets.copy() if from_snapshot else None
            present = np.zeros(len(offsets), dtype=bool)  # (masks: setdiff1d took 3 s at 1M)
            present[stored] = True
            held = offsets > GONE
            if self._zero_at(fd, offsets, np.flatnonzero(held & ~present).tolist()):
                os.fdatasync(fd)  # points forgotten while the file did not follow
            missing = np.flatnonzero(present & ~held)
            caught_up_from = end
            for start in range(0, len(missing), _PAGE):
                if stop():  # closing: only the forgets made meanwhile are still done
                    with self._lock:
                        if self._zero_at(fd, offsets, sorted(self._forgotten)):
                            os.fdatasync(fd)
                    return
                page = missing[start : start + _PAGE]
                end = self._append_at(fd, offsets, end, rows_from(db, page))
            if end - caught_up_from > _DROP_AFTER_BYTES:
                db.drop_cached_blocks()  # the contents that catch-up read
            head = offsets[: largest + 1]  # ids no point has: gone
            head[~present[: largest + 1] & (head <= GONE)] = GONE
            with self._lock:
                self._snapshot_stale = before is None or not np.array_equal(before, offsets)
                self._fd, self._offsets, self._end = fd, offsets, end
                self.largest = largest
                fd = None
                queued = [row for pid, row in self._queued.items() if not self._has(pid)]
                self._write(self._fd, sorted(queued, key=lambda row: row.id))
                if self._zero(self._fd, sorted(self._forgotten)):
                    os.fdatasync(self._fd)
                self.ready = True
                self._early.clear()
        except UnsafeDataDir as refused:  # a link, or a folder or FIFO in its place
            log.warning("%s; recall reads the rows from the database", refused)
        except OSError as problem:
            log.warning("%s: %s; recall reads the rows from the database", self.path, problem)
        finally:
            with self._lock:
                self._loading = False
                self._queued, self._forgotten = {}, set()
            if fd is not None:
                os.close(fd)

    def _open(
        self, identity: bytes, *, anew: bool = False
    ) -> tuple[int, npt.NDArray[np.uint64], int, bool]:
        """(descriptor, offsets, end, whether `rows.idx` gave the offsets) of the file at
        `path`, made anew (empty) when it is missing, foreign or damaged, or when asked
        (`anew`: most of it zeroed); a torn tail is cut off."""
        problem = "most of it zeroed" if anew else self._unusable()
        if problem is None:
            fd = open_private(self.path, os.O_RDWR | os.O_NONBLOCK)
            try:
                problem = self._check(fd, identity)
                if problem is None:
                    offsets, end, from_snapshot = self._offsets_of(fd, identity)
                    self.opened_from = "snapshot" if from_snapshot else "scan"
                    if end < os.fstat(fd).st_size:
                        os.ftruncate(fd, end)  # a record cut by a crash, or damage
                    return fd, offsets, end, from_snapshot
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)
        if problem != "missing":
            report = log.info if anew else log.warning
            report("%s: %s; made anew from the database", self.path, problem)
        self._nonce = os.urandom(16)
        self.opened_from = "new"
        replace_atomically(self.path, lambda fd: write_all(fd, header(identity, self._nonce)))
        fd = open_private(self.path, os.O_RDWR | os.O_NONBLOCK)
        return fd, np.zeros(0, np.uint64), HEADER.size, False

    def _offsets_of(self, fd: int, identity: bytes) -> tuple[npt.NDArray[np.uint64], int, bool]:
        """The offsets of a file whose header held: from `rows.idx` and a scan of what was
        appended after it, or from a scan of the whole file."""
        size = os.fstat(fd).st_size
        snapshot_path = self.path.with_name(SNAPSHOT_FILENAME)
        snapshot = read_snapshot(snapshot_path, identity, self._nonce, size)
        if snapshot is None:
            offsets, end = scan_file(fd, np.zeros(0, np.uint64), HEADER.size, size - _CHECKED_TAIL)
            return offsets, end, False
        offsets, covered = snapshot
        offsets, end = scan_file(fd, offsets, covered, covered)  # every CRC after it
        return offsets, end, True

    def _unusable(self) -> str | None:
        """ "missing" or None (the file may be opened); a link, or a folder or FIFO in its
        place, is refused (`UnsafeDataDir`: left as it is, and not used)."""
        info = lstat_unlinked(self.path)
        if info is None:
            return "missing"
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFile(self.path)
        return None

    def _check(self, fd: int, identity: bytes) -> str | None:
        """Why the open file is not this database's row file (None: it is; its nonce kept)."""
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "not a regular file"
        problem, self._nonce = header_problem(os.pread(fd, HEADER.size, 0), identity)
        return problem

    # ---- under the lock, or before the file is published --------------------------------
    def _has(self, pid: int) -> bool:
        return 0 <= pid < len(self._offsets) and int(self._offsets[pid]) > GONE

    def _write(self, fd: int, rows: Sequence[StoredRow]) -> None:
        if rows:
            largest = max(row.id for row in rows)
            self._offsets = sized(self._offsets, largest)
            self._end = self._append_at(fd, self._offsets, self._end, rows)
            self.largest = max(self.largest, largest)

    def _append_at(
        self, fd: int, offsets: npt.NDArray[np.uint64], end: int, rows: Sequence[StoredRow]
    ) -> int:
        """Write `rows` at `end` in one write, then set their offsets; the new end."""
        records = [(row.id, encode(row)) for row in rows]
        blob = b"".join(record for _pid, record in records if record is not None)
        write_all_at(fd, blob, end)
        for pid, record in records:
            if record is not None:
                offsets[pid] = (end << LENGTH_BITS) | len(record)
                end += len(record)
        return end

    def _zero(self, fd: int, ids: Iterable[int]) -> bool:
        return self._zero_at(fd, self._offsets, ids)

    @staticmethod
    def _zero_at(fd: int, offsets: npt.NDArray[np.uint64], ids: Iterable[int]) -> bool:
        """Zero the records of `ids` the file holds; whether there was one."""
        zeroed = False
        for pid in ids:
            if not 0 <= pid < len(offsets) or int(offsets[pid]) <= GONE:
                continue
            entry = int(offsets[pid])
            offsets[pid] = 0  # first: a read meanwhile falls back to the database
            zero_record(fd, entry)
            zeroed = True
        return zeroed

    def _give_up(self, why: str) -> None:
        log.warning("%s: %s; recall reads the rows from the database", self.path, why)
        self.ready = False
