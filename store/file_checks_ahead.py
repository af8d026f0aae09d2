"""Checks of derived files started before the open needs them, one thread each (issue 18).

A store's derived files (`vectors.usearch`, `lexical.idx`) are checked whole at open —
CRCs over up to 1.6 GB at 1M points — and need nothing from the database for that. zlib
releases the GIL while it reads, so a check can run while the opener imports DuckDB, numpy
and usearch and opens the database. `start(path, run, close)` runs `run()` (map and check
the file, returning what the open would use) in a thread; `take(path)` hands that result
over, or raises what `run` raised, exactly as if the open had run it then.

A result is used only for the file it was made from: `take` compares the file now at
`path` (device, inode, size, mtime, ctime) with the one seen when the check started and
returns None when they differ (the caller checks the file itself). One check per path is
kept; a check nobody takes is dropped (`drop`: its result closed once its thread is done).
The files' own modules wrap this (`store.vector_index_ahead`, `store.lexical_file`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

Signature = tuple[int, int, int, int, int]


def signature(path: Path) -> Signature | None:
    """What tells this file from one put in its place; None when there is no file."""
    try:
        info = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


class _Check:
    """One file's check, running in its own thread."""

    def __init__(
        self,
        path: Path,
        found: Signature,
        run: Callable[[], Any],
        close: Callable[[Any], None],
    ) -> None:
        self.path = path
        self.signature = found
        self._run_check = run
        self._close = close
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._result: Any = None
        self._error: Exception | None = None
        self._dropped = False
        self._thread = threading.Thread(target=self._run, name="file-check", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        try:
            result = self._run_check()
        except Exception as error:  # noqa: BLE001 - handed to the taker, raised there
            self._error = error
        else:
            with self._lock:
                if self._dropped:
                    self._close(result)
                else:
                    self._result = result
        finally:
            self._done.set()

    def wait(self, timeout: float | None = None) -> None:
        self._done.wait(timeout)

    def result(self) -> Any:
        """What the check made, once it is done; its error if it failed."""
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._result

    def drop(self) -> None:
        """Close the result now or, if the check still runs, when it ends (no waiting)."""
        with self._lock:
            self._dropped = True
            result, self._result = self._result, None
        if result is not None:
            self._close(result)


_checks: dict[str, _Check] = {}
_guard = threading.Lock()


def _key(path: Path) -> str:
    return os.path.realpath(path)


def start(path: Path, run: Callable[[], Any], close: Callable[[Any], None]) -> None:
    """Run `run()` in a thread for the file at `path` (nothing when it is missing or a
    check of it is pending); `close(result)` frees a result nobody takes."""
    found = signature(path)
    if found is None:
        return
    with _guard:
        key = _key(path)
        if key in _checks:
            return
        check = _checks[key] = _Check(path, found, run, close)
    check.start()


def take(path: Path) -> tuple[bool, Any]:
    """(True, result) of the pending check of the file at `path`, waited for; (False,
    None) when there is none or the file was replaced since it started. Raises what the
    check raised. The caller owns the result."""
    with _guard:
        check = _checks.pop(_key(path), None)
    if check is None:
        return False, None
    if signature(path) != check.signature:
        check.drop()
        return False, None
    return True, check.result()


def drop(path: Path) -> None:
    """Forget a pending check of `path` nobody will take (its result is closed)."""
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
    place while a check reads it)."""
    with _guard:
        check = _checks.get(_key(path))
    if check is not None:
        check.wait(timeout)
