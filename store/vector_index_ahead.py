"""The check of `vectors.usearch`, and its load, started before the open reaches them
(issue 18; the registry: `store.file_checks_ahead`).

Opening a store at 1M points checks the 1.6 GB vector file (its CRC-32, ~0.5 s) and only
then lets usearch load it (~1.1 s): a damaged graph must never reach usearch, which can
crash on one. Neither needs the database, so both can run in a thread while the opener
imports DuckDB, numpy and usearch (~0.3-0.9 s after the TUI's first frame) and opens the
database. `start_check(path, load=True)` starts them (the TUI's memory worker before its
imports, `MemoryStore.open` before the database); `take_check(path)` — what
`vector_index_file.checked_index_file` calls — hands over the checked mapping, with the
index usearch loaded from it, or raises the check's error, as a check made then would. The
load still comes after the check and reads the same mapping, so what usearch reads is what
was checked. The open uses the loaded index only if it would make the same one
(`VectorIndex._load_into`: the file's identity and header are checked there as before).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from store import file_checks_ahead
from store.vector_index_file import CheckedIndexFile, check_index_file


def _preload(checked: CheckedIndexFile) -> tuple[tuple[object, ...], Any] | None:
    """usearch's index loaded from the checked bytes (None if it cannot be: the open then
    loads, or refuses, the file itself)."""
    from store.vector_index import preload_index

    try:
        return preload_index(checked.payload)
    except Exception:  # noqa: BLE001 - the open loads the checked file itself and says why
        return None


def start_check(path: Path, *, load: bool = False) -> None:
    """Start checking the index file at `path` in a thread (nothing when it is missing or a
    check of it is already pending); with `load`, usearch then loads it in that thread."""

    def run(dropped: Callable[[], bool]) -> CheckedIndexFile:
        checked = check_index_file(path)
        if load and not dropped():
            checked.loaded = _preload(checked)
        return checked

    file_checks_ahead.start(path, run, CheckedIndexFile.close)


def take_check(path: Path) -> CheckedIndexFile | None:
    """The pending check of the file at `path` (waited for), or None when there is none or
    the file was replaced since it started. Raises what the check raised (IndexFileError,
    OSError). The caller closes the mapping."""
    found, checked = file_checks_ahead.take(path)
    return checked if found else None


drop_check = file_checks_ahead.drop
pending = file_checks_ahead.pending
wait = file_checks_ahead.wait
