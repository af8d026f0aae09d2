"""The check of `vectors.usearch`, started before the open reaches it (issue 18).

Opening a store at 1M points checks the 1.6 GB vector file (its CRC-32, ~0.5 s) and only
then lets usearch load it: a damaged graph must never reach usearch, which can crash on one.
The check needs nothing from the database, and zlib releases the GIL while it reads, so it
can run in a thread while the opener does what holds the GIL or waits on DuckDB: importing
DuckDB, numpy and usearch (~0.3-0.9 s after the TUI's first frame), opening the database,
the analyzer check, the pins. `start_check(path)` starts it (the TUI's memory worker before
its imports, `MemoryStore.open` before the database); `take_check(path)` — what
`vector_index_file.mapped_index_file` calls — hands over the checked mapping, or raises the
check's error, exactly as the check made then would. The load still comes after the check
and from the same mapping, so what usearch reads is what was checked.

A check is used only for the file it mapped: `take_check` compares the file now at `path`
(device, inode, size, mtime, ctime) with the one seen when the check started, and checks
again itself when they differ (a file replaced meanwhile). One check per path is kept; a
check nobody takes is dropped by `drop_check` (its mapping closed once its thread is done).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from store.vector_index_file import CheckedIndexFile, IndexFileError, check_index_file

_Signature = tuple[int, int, int, int, int]


def _signature(path: Path) -> _Signature | None:
    """What tells this file from one put in its place; None when there is no file to map."""
    try:
        info = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


class _Check:
    """One file's check, running in its own thread."""

    def __init__(self, path: Path, signature: _Signature, *, load: bool) -> None:
        self.path = path
        self.signature = signature
        self.load = load
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._checked: CheckedIndexFile | None = None
        self._error: BaseException | None = None
        self._dropped = False
        self._thread = threading.Thread(target=self._run, name="index-check", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        try:
            checked = check_index_file(self.path)
            if self.load and not self._dropped:
                checked.loaded = _preload(checked)
        except Exception as error:  # noqa: BLE001 - handed to the taker, raised there
            self._error = error
        else:
            with self._lock:
                if self._dropped:
                    checked.close()
                else:
                    self._checked = checked
        finally:
            self._done.set()

    def wait(self, timeout: float | None = None) -> None:
        self._done.wait(timeout)

    def result(self) -> CheckedIndexFile:
        """The checked mapping, once the check is done; its error if it failed."""
        self._done.wait()
        if self._error is not None:
            raise self._error
        if self._checked is None:  # (the thread died of something else)
            raise IndexFileError("the check of the file did not finish")
        return self._checked

    def drop(self) -> None:
        """Close the mapping now or, if the check still runs, when it ends (no waiting)."""
        with self._lock:
            self._dropped = True
            checked, self._checked = self._checked, None
        if checked is not None:
            checked.close()


_checks: dict[str, _Check] = {}
_guard = threading.Lock()


def _key(path: Path) -> str:
    return os.path.realpath(path)


def _preload(checked: CheckedIndexFile) -> tuple[tuple[object, ...], Any] | None:
    """usearch's index loaded from the checked bytes (None if it cannot be: the open then
    loads, or refuses, the file itself)."""
    from store.vector_index import preload_index

    try:
        return preload_index(checked.payload)
    except (RuntimeError, ValueError, KeyError):
        return None


def start_check(path: Path, *, load: bool = False) -> None:
    """Start checking the index file at `path` in a thread (nothing when it is missing or a
    check of it is already pending); with `load`, usearch then loads it in that thread."""
    signature = _signature(path)
    if signature is None:
        return
    with _guard:
        key = _key(path)
        if key in _checks:
            return
        check = _checks[key] = _Check(path, signature, load=load)
    check.start()


def take_check(path: Path) -> CheckedIndexFile | None:
    """The pending check of the file at `path` (waited for), or None when there is none or
    the file was replaced since it started. Raises what the check raised (IndexFileError,
    OSError). The caller closes the mapping."""
    with _guard:
        check = _checks.pop(_key(path), None)
    if check is None:
        return None
    if _signature(path) != check.signature:
        check.drop()
        return None
    return check.result()


def drop_check(path: Path) -> None:
    """Forget a pending check of `path` nobody will take (its mapping is closed)."""
    with _guard:
        check = _checks.pop(_key(path), None)
    if check is not None:
        check.drop()


def pending(path: Path) -> bool:
    """Whether a check of `path` waits to be taken (tests)."""
    with _guard:
        return _key(path) in _checks


def wait(path: Path, timeout: float | None = None) -> None:
    """Wait until a pending check of `path` is done (tests: a file must not be changed in
    place while the check reads it)."""
    with _guard:
        check = _checks.get(_key(path))
    if check is not None:
        check.wait(timeout)
