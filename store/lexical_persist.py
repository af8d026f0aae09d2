"""Keeping `lexical.idx` (`store.lexical_file`) in step with the word index: whether the file
may be opened, when it is written, and the one log line when it cannot be used.

The file is derived: the tables are the truth. It is opened when it carries this database's
identity (meta `database.id` and the analyzer) and the word index's generation; changes made
since it was written are then replayed from the tables (`LexicalCache` diffs the doc list).
It is (re)written, in the background after a load from the tables and when the store closes,
whenever it is missing or stale or at least `max(REWRITE_MIN_CHANGES, points /
REWRITE_FRACTION)` adds and removals happened since it was written: few enough that the
replay at the next open stays well under a second.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from store import meta
from store.lexical_file import (
    FileState,
    LexicalFileError,
    MappedArrays,
    StaleFile,
    file_identity,
    read_file,
    write_file,
)
from store.lexical_postings import CompactPostings
from store.mapped_pages import mapping_of, release_pages
from store.private_files import UnsafeDataDir, lstat_unlinked

if TYPE_CHECKING:
    from numpy.typing import NDArray

log = logging.getLogger("straylight.memory")

DATABASE_ID_KEY = "database.id"  # the database's random id (made by memory.embedding_space)
REWRITE_MIN_CHANGES = 2_000
REWRITE_FRACTION = 100


@dataclass(frozen=True)
class Snapshot:
    """What a write puts in the file: `index`'s arrays after `changes` adds and removals."""

    index: CompactPostings
    changes: int
    state: FileState
    arrays: dict[str, NDArray[Any]]


class IndexFile:
    """The `lexical.idx` of one data dir. Not thread-safe: `LexicalCache` calls it under its
    lock, except `write` and `reopen`, which touch only the file."""

    def __init__(self, path: Path, *, writable: bool = True) -> None:
        self.path = path
        self.writable = writable  # False for a reading command: the data dir stays as it was
        self.identity: str | None = None  # None until opened, or without a database id
        self._mark: tuple[CompactPostings, int] | None = None  # the file holds this index …

    def open(
        self, con: duckdb.DuckDBPyConnection, analyzer: str, generation: str | None
    ) -> CompactPostings | None:
        """The word index mapped from the file, or None (logged) when it cannot be used."""
        database_id = meta.get(con, DATABASE_ID_KEY)
        self.identity = None if database_id is None else file_identity(database_id, analyzer)
        if self.identity is None:
            return None
        try:
            mapped = read_file(self.path, self.identity, generation)
            index = CompactPostings.from_file(mapped)
        except LexicalFileError as problem:
            expected = isinstance(problem, StaleFile) or str(problem) == "missing"
            level = logging.INFO if expected else logging.WARNING  # corrupt: worth a look
            log.log(level, "%s: %s; the word index loads from the tables", self.path, problem)
            return None
        except UnsafeDataDir as problem:  # a link, or a folder or FIFO in its place
            log.warning("%s; the word index loads from the tables", problem)
            self.writable = False
            return None
        _release_checked_pages(mapped)
        self._mark = (index, 0)
        return index

    def wanted(self, index: CompactPostings, points: int, force: bool) -> bool:
        """Whether `index` should be written: the file lags it, is of format 4 (written once
        again, with the postings' factors), or enough changed."""
        if not self.writable or self.identity is None:
            return False
        if force or self._mark is None or self._mark[0] is not index or index.older_file:
            return True
        return index.changes - self._mark[1] >= max(REWRITE_MIN_CHANGES, points // REWRITE_FRACTION)

    def snapshot(self, index: CompactPostings, generation: str | None) -> Snapshot | None:
        """The arrays to write (merges the append buffers; call under the cache's lock)."""
        if self.identity is None:
            return None
        state = FileState(
            self.identity, generation, index.doc_count, index.total_length, index.id_sum
        )
        return Snapshot(index, index.changes, state, index.file_arrays())

    def write(self, snapshot: Snapshot) -> bool:
        """Write the file atomically; False (one log line) when it cannot be written."""
        from store.vector_index_file import remove_stale_temp_files  # usearch: import late

        try:
            lstat_unlinked(self.path)  # a link planted there stays, untouched
            remove_stale_temp_files(self.path)
            write_file(self.path, snapshot.state, snapshot.arrays)
        except OSError as problem:
            why = (self.path, problem)
            log.warning("cannot write %s (%s); the word index loads from the tables", *why)
            return False
        return True

    def reopen(self, snapshot: Snapshot) -> CompactPostings | None:
        """The file just written, mapped (None, logged, should it not read back)."""
        try:
            mapped = read_file(self.path, snapshot.state.identity, snapshot.state.generation)
        except (LexicalFileError, OSError) as problem:
            log.warning("%s does not read back (%s)", self.path, problem)
            return None
        index = CompactPostings.from_file(mapped)
        _release_checked_pages(mapped)
        return index

    def mark(self, snapshot: Snapshot) -> None:
        """The file now holds `snapshot.index` as it was after `snapshot.changes` changes."""
        self._mark = (snapshot.index, snapshot.changes)

    def forget(self) -> None:
        """Drop the reference to the index the file holds (the cache is closing)."""
        self._mark = None


def _release_checked_pages(mapped: MappedArrays) -> None:
    """The check (and `from_file`'s copies) read every page of the file: out of the RSS with
    them; a recall maps back the lists it reads (store/mapped_pages.py; 47 MiB at 100k
    points, ~465 MiB at 1M)."""
    release_pages(mapping_of(next(iter(mapped.arrays.values()), None)))
