"""A readers-writer lock that takes turns (`ReadWriteLock`), the vector index's `_rw`.

Searches share it and each step of a mutation holds it alone; why the readers that waited
go before the next writer: docs/vector_index.md, "Concurrency".
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator


class ReadWriteLock:
    """Many readers or one writer, taking turns. Not re-entrant.

    A waiting writer holds back new readers, and the readers that waited through a write go
    before the next writer: back-to-back writes (a chunked add) cannot starve a search.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._readers_waiting = 0
        self._admitted = 0  # waiting readers let in ahead of the next writer
        self._writing = False
        self._writers_waiting = 0

    @contextlib.contextmanager
    def read(self) -> Iterator[None]:
        with self._cond:
            self._readers_waiting += 1
            try:
                while self._writing or (self._writers_waiting and not self._admitted):
                    self._cond.wait()
            except BaseException:
                self._admitted = min(self._admitted, self._readers_waiting - 1)
                self._cond.notify_all()
                raise
            finally:
                self._readers_waiting -= 1
            self._admitted = max(0, self._admitted - 1)
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    @contextlib.contextmanager
    def write(self) -> Iterator[None]:
        with self._cond:
            self._writers_waiting += 1
            try:
                while self._writing or self._readers or self._admitted:
                    self._cond.wait()
            finally:
                self._writers_waiting -= 1
            self._writing = True
        try:
            yield
        finally:
            with self._cond:
                self._writing = False
                self._admitted = self._readers_waiting
                self._cond.notify_all()
