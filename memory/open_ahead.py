"""What opening a data dir's memory can start before the store's modules are imported.

The TUI's memory worker calls `start_open_ahead` first thing, then imports DuckDB, numpy and
usearch and opens the store (~0.3-0.9 s of imports after the first frame, holding the GIL):
meanwhile the vector file is checked in one thread (`store.vector_index_ahead`),
`lexical.idx` in another (`store.lexical_ahead`); their CRCs do not need the GIL.
`MemoryStore.open` calls it too (a second call does nothing).
Light on purpose: nothing here imports DuckDB, numpy or usearch.
"""

from __future__ import annotations

from pathlib import Path

from store import lexical_ahead
from store.file_checks_ahead import drop
from store.lexical_ahead import LEXICAL_FILENAME
from store.vector_index_ahead import start_check
from store.vector_index_file import INDEX_FILENAME


def start_open_ahead(home: Path) -> None:
    """Start checking `home`'s `vectors.usearch` in a thread and its `lexical.idx` in
    another (nothing for a file that is missing)."""
    start_check(home / INDEX_FILENAME)
    lexical_ahead.start_check(home / LEXICAL_FILENAME)


def drop_open_ahead(home: Path, *, vectors: bool = True, words: bool = True) -> None:
    """Forget what `start_open_ahead` started and no open took (its open failed first, or
    did not need the file): their mappings are closed. `MemoryStore` drops the
    vector file's check when its open returns, `lexical.idx`'s when the word index loaded."""
    if vectors:
        drop(home / INDEX_FILENAME)
    if words:
        drop(home / LEXICAL_FILENAME)
