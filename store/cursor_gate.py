"""Who holds the cursors of one DuckDB connection, and the moments no other thread may.

A cache drop (`Database.drop_cached_blocks`, `store.buffer_pool`) lowers DuckDB's
`memory_limit` for a moment; a query running then on another cursor can need more than the
margin and fails with DuckDB's OutOfMemoryException (a CI run of test_reindex_neighbours).
So the drop runs alone: `CursorGate.run_alone` waits until no other thread holds a cursor,
and meanwhile keeps new cursors of other threads waiting (a thread that already holds one
goes on, so nested cursors never deadlock; a write transaction's cursor goes on, because
the drop takes the write lock anyway). A cursor still open after a short wait (a word-index
load reads on one cursor for seconds) is not waited for: the run is left to the last cursor
to close (`closed` says when).

Cost on every cursor: a thread-local count and one flag read under the lock `Database`
took already (well under a microsecond).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class CursorGate:
    """Counts the open cursors (in all and per thread) and runs work while no other thread
    has one open."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._open = 0  # cursors open, all threads
        self._mine = threading.local()  # .open: cursors the current thread holds
        self._alone_waiting = 0  # run_alone calls waiting: new cursors of others wait too
        self._pending = False  # a run gave up waiting; the last cursor to close is told

    def opened(self, make: Callable[[], T], *, gated: bool = True) -> T:
        """`make()` a cursor and count it; waits while a run alone is due, unless this
        thread holds a cursor already or `gated` is off (a write transaction's cursor)."""
        held: int = getattr(self._mine, "open", 0)
        with self._cond:
            if gated and self._alone_waiting and not held:
                self._cond.wait_for(lambda: not self._alone_waiting)
            made = make()
            self._open += 1
        self._mine.open = held + 1
        return made

    def closed(self) -> bool:
        """A cursor of this thread was closed. True when that was the last cursor open and
        a run alone gave up waiting for it: the caller should start that run again."""
        self._mine.open -= 1
        with self._cond:
            self._open -= 1
            self._cond.notify_all()
            if self._pending and self._open == 0:
                self._pending = False
                return True
        return False

    def when_idle(self, work: Callable[[], None], timeout: float) -> None:
        """`work()` once no cursor is open (or after `timeout`), with no new one opening
        until it returns (closing the connection)."""
        with self._cond:
            self._cond.wait_for(lambda: self._open == 0, timeout=timeout)
            work()

    def run_alone(self, lock: threading.Lock, work: Callable[[], None], wait: float) -> bool:
        """`work()` holding `lock`, while no other thread holds a cursor and none can open
        one. Waits for the other threads' cursors without `lock` (writers go on meanwhile),
        then for `lock`, for at most `wait` seconds in all, so new cursors are never held
        back longer; False when that was not enough (the run is then due when the last
        cursor closes: `closed()` returns True). The caller's own cursors are left open
        and must stay idle meanwhile."""
        own: int = getattr(self._mine, "open", 0)

        def others_idle() -> bool:
            return self._open <= own

        deadline = time.monotonic() + wait
        with self._cond:
            self._alone_waiting += 1
        try:
            while True:
                with self._cond:
                    remaining = max(0.0, deadline - time.monotonic())
                    if not self._cond.wait_for(others_idle, timeout=remaining):
                        self._pending = True
                        return False
                # a write transaction that began meanwhile must end first; bounded too, so a
                # transaction waiting on a thread whose new cursor waits here cannot deadlock
                if not lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
                    with self._cond:
                        self._pending = True  # its cursor's close starts the run again
                    return False
                try:
                    with self._cond:
                        if others_idle():
                            work()
                            return True
                finally:
                    lock.release()
        finally:
            with self._cond:
                self._alone_waiting -= 1
                self._cond.notify_all()
