"""What opening a data dir's memory can start before the store's modules are imported.

The TUI's memory worker calls `start_open_ahead` first thing, then imports DuckDB, numpy and
usearch and opens the store (~0.3-0.9 s of imports after the first frame, holding the GIL):
meanwhile the vector file is checked in one thread (`store.vector_index_ahead`),
`lexical.idx` in another (`store.lexical_ahead`); their CRCs do not need the GIL.
`MemoryStore.open` calls it too (a second call does nothing). The chat starts the checks
earlier still, before its own imports (`start_before_chat`): a data dir with a database is
opened right after the first frame, and at a million points the vector file's CRC (~0.8 s,
1.6 GB) was then what the open waited for.
Light on purpose: nothing here imports DuckDB, numpy or usearch.
"""

from __future__ import annotations

from pathlib import Path

from store import lexical_ahead
from store.file_checks_ahead import drop
from store.lexical_ahead import LEXICAL_FILENAME
from store.vector_index_ahead import start_check
from store.vector_index_file import INDEX_FILENAME

DATABASE_FILENAME = "straylight.duckdb"  # store.database's (which imports DuckDB)


def start_open_ahead(home: Path) -> None:
    """Start checking `home`'s `vectors.usearch` in a thread and its `lexical.idx` in
    another (nothing for a file that is missing)."""
    start_check(home / INDEX_FILENAME)
    lexical_ahead.start_check(home / LEXICAL_FILENAME)


def start_before_chat(home: Path) -> None:
    """`start_open_ahead` for the chat, before it imports its screens, when the data dir has
    a database (the chat opens it right after the first frame; a new data dir's memory opens
    at its first write, so nothing is mapped for it here). The chat's open takes the checks;
    one that fails drops them (`tui.app_memory`)."""
    if (home / DATABASE_FILENAME).is_file():
        start_open_ahead(home)


def drop_open_ahead(home: Path, *, vectors: bool = True, words: bool = True) -> None:
    """Forget what `start_open_ahead` started and no open took (its open failed first, or
    did not need the file): their mappings are closed. `MemoryStore` drops the
    vector file's check when its open returns, `lexical.idx`'s when the word index loaded."""
    if vectors:
        drop(home / INDEX_FILENAME)
    if words:
        drop(home / LEXICAL_FILENAME)
