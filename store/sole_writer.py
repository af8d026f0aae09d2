"""Which word-index mirror may skip its sync check: the one that alone answers, in this
process, for a database file the process holds read-write.

DuckDB locks a file it opens read-write: no other process can open it at all, read-write or
read-only (tests/test_lexical_sync_skip.py checks it), so every write comes from this
process. The product opens one `MemoryStore` a data dir a process (`tui.memory_session`)
and every write of the word index goes through its mirror (staged, `LexicalCache.stage_add`
/ `stage_remove`): that mirror knows of every change before a search could see it. Should a
second mirror claim the same file (two stores on one data dir in a process), neither is
alone any more, and both check before every search again.
"""

from __future__ import annotations

import os
import threading
import weakref
from pathlib import Path


class SoleWriters:
    """Claims on database files by mirrors (weakly held: a mirror dropped unclosed lets go)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._claims: dict[str, weakref.WeakSet[object]] = {}

    def claim(self, database: Path, owner: object) -> str:
        """`owner` writes `database` through itself; the key to ask and release with."""
        key = os.path.realpath(database)
        with self._lock:
            self._claims.setdefault(key, weakref.WeakSet()).add(owner)
        return key

    def release(self, key: str, owner: object) -> None:
        with self._lock:
            self._claims.get(key, weakref.WeakSet()).discard(owner)

    def alone(self, key: str, owner: object) -> bool:
        """True while `owner`'s claim on `key` is the only one."""
        with self._lock:
            claims = self._claims.get(key)
            return claims is not None and len(claims) == 1 and owner in claims


SOLE_WRITERS = SoleWriters()
