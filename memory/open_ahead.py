"""What opening a data dir's memory can start before the store's modules are imported.

The TUI's memory worker calls `start_open_ahead` first thing, then imports DuckDB, numpy and
usearch and opens the store (~0.3-0.9 s of imports after the first frame, holding the GIL):
meanwhile the vector file's check runs in a thread that mostly does not need the GIL
(`store.vector_index_ahead`). `MemoryStore.open` calls it too (a second call does nothing).
Light on purpose: nothing here imports DuckDB, numpy or usearch.
"""

from __future__ import annotations

from pathlib import Path

from store.vector_index_ahead import drop_check, start_check
from store.vector_index_file import INDEX_FILENAME

PRELOAD = True  # usearch loads the file in that thread too, once it is checked


def start_open_ahead(home: Path) -> None:
    """Start checking `home`'s `vectors.usearch` in a thread, then loading it (nothing if
    it is missing)."""
    start_check(home / INDEX_FILENAME, load=PRELOAD)


def drop_open_ahead(home: Path) -> None:
    """Forget what `start_open_ahead` started and no open took (the store was open already
    in this process, or its open failed first): its mapping and index are freed."""
    drop_check(home / INDEX_FILENAME)
