"""The check of `vectors.usearch`, started before the open reaches it (issue 18; the
registry: `store.file_checks_ahead`).

Opening a store at 1M points checks the 1.6 GB vector file (its CRC-32, ~0.5 s) before
usearch may load it: a damaged graph must never reach usearch, which can crash on one. The
check needs nothing from the database, so it can run in a thread while the opener imports
DuckDB, numpy and usearch (~0.3-0.5 s after the TUI's first frame, holding the GIL, which
zlib does not need) and opens the database. `start_check(path)` starts it (the TUI's memory
worker before its imports, `MemoryStore.open` before the database); `take_check(path)` —
what `vector_index_file.mapped_index_file` calls — hands over the checked mapping, or raises
the check's error, as a check made then would. The open then checks the file's identity and
header and loads it from that same mapping, as before: what usearch reads is what was
checked. (usearch's load itself in that thread too was measured and not kept:
docs/memory-scale.md, "Fifth slice".)
"""

from __future__ import annotations

from pathlib import Path

from store import file_checks_ahead
from store.vector_index_file import CheckedIndexFile, check_index_file


def start_check(path: Path) -> None:
    """Start checking the index file at `path` in a thread (nothing when it is missing or a
    check of it is already pending)."""
    file_checks_ahead.start(path, lambda: check_index_file(path), CheckedIndexFile.close)


def take_check(path: Path) -> CheckedIndexFile | None:
    """The pending check of the file at `path` (waited for), or None when there is none or
    the file was replaced since it started. Raises what the check raised (IndexFileError,
    OSError). The caller closes the mapping."""
    found, checked = file_checks_ahead.take(path)
    return checked if found else None


drop_check = file_checks_ahead.drop
pending = file_checks_ahead.pending
wait = file_checks_ahead.wait
