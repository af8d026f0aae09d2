"""What can go wrong opening `straylight.duckdb`, as one clear error each: another process
holds the data dir (`DataDirInUse`, with its PID when DuckDB names one), the file is damaged
(`CorruptDatabase`), it comes from a newer Straylight (`SchemaTooNew`), or it is missing where
it must not be created (`NoDatabase`); `classify_open_error` reads DuckDB's message."""

from __future__ import annotations

import errno
import re
from pathlib import Path

import duckdb

_LOCK_MARKERS = ("Could not set lock on file", "Conflicting lock is held")
_NO_LOCKS_MARKER = "File locks are not supported for this file system"
_CORRUPT_MARKERS = (
    "not a valid DuckDB database file",
    "Could not read enough bytes",
    "Corrupt database file",
    "checksum",
)
_WAL_MARKER = "while replaying WAL file"
_PID_PATTERN = re.compile(r"\bPID\s+(\d+)")


class DatabaseError(Exception):
    """A database that cannot be opened or used; `str()` is one line for the user."""


class DataDirInUse(DatabaseError):
    """Another process holds the database file's lock."""

    def __init__(self, path: Path, pid: int | None) -> None:
        self.path = path
        self.pid = pid
        holder = f"PID {pid}" if pid is not None else "another process"
        super().__init__(
            f"{path} is in use by {holder} (another Straylight?); close it or use --home"
        )


class CorruptDatabase(DatabaseError):
    """The file is not a DuckDB database, or is truncated or damaged."""

    def __init__(self, path: Path, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(
            f"{path} is damaged ({problem}); it was left untouched — "
            "restore it from a backup or move it aside"
        )


class CorruptWal(CorruptDatabase):
    """The write-ahead log beside the database is damaged (a write cut by a crash or a bad
    disk). Moving the database aside would throw away every point; moving the log aside
    loses only the writes since the last checkpoint, so that is the advice."""

    def __init__(self, path: Path, problem: str) -> None:
        wal = path.with_name(path.name + ".wal")
        self.path = wal
        self.problem = problem
        DatabaseError.__init__(
            self,
            f"{wal} is damaged ({problem}); it and {path.name} were left untouched — move "
            f"the .wal aside to open the database without the writes since its last "
            f"checkpoint (mv {wal} {wal}.damaged), or restore both from a backup",
        )


class DatabaseNotPermitted(DatabaseError):
    """The file's mode shuts this user out (`chmod 000`, a copy made with other modes): a
    data dir that cannot be used, as the command line says it (exit 2), with the fix."""

    def __init__(self, path: Path) -> None:
        self.path = path
        super().__init__(
            f"cannot open {path}: permission denied; Straylight keeps it 0600 — run: "
            f"chmod u+rw {path}"
        )


class SchemaTooNew(DatabaseError):
    """The file was migrated by a newer Straylight than this one."""

    def __init__(self, path: Path, found: int, known: int) -> None:
        self.path = path
        self.found = found
        self.known = known
        super().__init__(
            f"{path} is at schema version {found}; this Straylight knows up to {known}"
            " — upgrade Straylight"
        )


class NoDatabase(DatabaseError):
    """`open_database(..., create=False)` found no file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        super().__init__(f"{path} does not exist yet (nothing has been saved)")


def parse_lock_pid(message: str) -> int | None:
    """The PID named in DuckDB's lock-conflict message, or None when it names none.

    The holder's PID ends the sentence, after the executable's path: take the last one.
    """
    found = _PID_PATTERN.findall(message)
    return int(found[-1]) if found else None


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def classify_open_error(path: Path, error: duckdb.Error) -> DatabaseError:
    message = str(error)
    if _NO_LOCKS_MARKER in message:  # a network or FUSE mount: nobody else holds it
        return DatabaseError(
            f"the file system of {path.parent} does not support file locks, which the "
            "database needs to write: use a data dir on a local disk (--home)"
        )
    if any(marker in message for marker in _LOCK_MARKERS):
        return DataDirInUse(path.parent, parse_lock_pid(message))
    if "Permission denied" in message:
        return DatabaseNotPermitted(path)
    if "not a valid DuckDB database file" in message:
        problem = "empty file" if file_size(path) == 0 else "not a DuckDB database"
        return CorruptDatabase(path, problem)
    if _WAL_MARKER in message and "does not match database file" in message:
        problem = _first_line(error).removeprefix("IO Error: ")  # a database restored by cp
        return CorruptWal(path, _wal_problem(problem))  # beside a crash's .wal
    if any(marker in message for marker in _CORRUPT_MARKERS):
        problem = _first_line(error).removeprefix("IO Error: ")
        if _WAL_MARKER in message:
            return CorruptWal(path, _wal_problem(problem))
        return CorruptDatabase(path, problem)
    return DatabaseError(f"cannot open {path}: {_first_line(error)}")


def _wal_problem(problem: str) -> str:
    """DuckDB's reason without the path it names again (`Failure while replaying WAL file
    "…": Corrupt WAL file: entry at byte position 91 …` → `Corrupt WAL file: entry …`)."""
    _, found, reason = problem.partition('": ')
    return reason if found and reason else problem


_FILE_ERROR = re.compile(
    r"(?:Could not write|Could not read|Could not open|Cannot open|Failed to create) file "
    r'"(?P<path>[^"]+)": (?P<reason>No space left on device|Permission denied|'
    r"Read-only file system|Disk quota exceeded|Input/output error|File too large)"
)
_ERRNO = {
    "No space left on device": errno.ENOSPC,
    "Permission denied": errno.EACCES,
    "Read-only file system": errno.EROFS,
    "Disk quota exceeded": errno.EDQUOT,
    "Input/output error": errno.EIO,
    "File too large": errno.EFBIG,
}


def as_os_error(error: BaseException) -> OSError | None:
    """The OSError inside a DuckDB error raised while the database was in use (a commit
    whose `.wal` the full disk cannot grow, a data dir that does not let it make the
    `.wal`): `OSError(ENOSPC, …, path)`, so it is said as the disk or permission problem it
    is, naming the file, and not as "unexpected error: TransactionException". None for
    anything else."""
    if not isinstance(error, duckdb.Error):
        return None
    found = _FILE_ERROR.search(str(error))
    if found is None:
        return None
    reason = found.group("reason")
    return OSError(_ERRNO[reason], reason, found.group("path"))


def file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return -1
