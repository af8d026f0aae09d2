"""Open `straylight.duckdb`: private modes, schema migrations, one owner process, clear errors.

`open_database(path, clock=...)` takes the path of the database *file* (normally
`<data dir>/straylight.duckdb`, see `database_path`). It

1. creates a missing data dir 0700 (an existing one keeps its mode) and makes the file 0600;
2. inspects an existing file read-only first (read-only DuckDB never writes the main file), so
   a damaged file is reported as `CorruptDatabase` and left byte-for-byte untouched, a file
   from a newer Straylight as `SchemaTooNew`, and a file held by another process as
   `DataDirInUse` — in no case is a new empty database created in its place;
3. opens it read-write and applies the missing steps of `store.schema.MIGRATIONS`, each step
   in one transaction together with its `schema_version` row.

Truncation check: DuckDB opens a file cut short behind its metadata without complaint and only
fails when a query reaches a missing block, so the inspection also compares the file size with
the size its header declares (3 header blocks of 4 KiB + `total_blocks` × `block_size`), and,
when the file is shorter (DuckDB drops trailing free blocks), checks that the blocks known to
be in use lie inside the file (~0.1 s extra for a 420 MB database; see
`store.database_truncation`).

Threads: a `Database` owns one DuckDB connection. Work from any thread goes through
`Database.cursor()` (a fresh cursor per call, closed afterwards) or `Database.transaction()`
(a fresh cursor inside BEGIN … COMMIT, rolled back on error). Write transactions are
serialised by a lock, so concurrent writers in this process never meet DuckDB's optimistic
write-write conflicts; readers are not blocked, except for the moment of a cache drop, which
runs while no other thread holds a cursor (`store.cursor_gate`).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Self

import duckdb

from store import buffer_pool
from store.clock import Clock
from store.cursor_gate import CursorGate

# The errors are re-exported: callers catch them as `store.database.…`.
from store.database_errors import CorruptDatabase as CorruptDatabase
from store.database_errors import DatabaseError as DatabaseError
from store.database_errors import DataDirInUse as DataDirInUse
from store.database_errors import NoDatabase as NoDatabase
from store.database_errors import SchemaTooNew as SchemaTooNew
from store.database_errors import classify_open_error
from store.database_errors import parse_lock_pid as parse_lock_pid
from store.database_truncation import check_complete
from store.private_files import (
    FILE_MODE,
    ensure_private_dir,
    keep_new_files_private,
    refuse_symlink,
)
from store.schema import MIGRATIONS, SCHEMA_VERSION, VERSION_TABLE, run_statement

DATABASE_FILENAME = "straylight.duckdb"

Cursor = duckdb.DuckDBPyConnection
"""What `Database.cursor()` and `Database.transaction()` yield (a DuckDB cursor is a
connection object); the name callers outside `store/` annotate with."""


def database_path(data_dir: Path) -> Path:
    """The database file inside a data dir."""
    return data_dir / DATABASE_FILENAME


CHECKPOINT_THRESHOLD_BYTES = 32 * 2**20
"""DuckDB's automatic checkpoint runs inside the commit that pushes the write-ahead log past
`checkpoint_threshold` (16 MiB by default: ~3,000 saves at 100k points, and that save took
~225 ms). A writing process raises it to this (~6,000 saves); the index-upkeep job
checkpoints from its thread (`Database.checkpoint`, every 10 min and at exit) long before a
session's saves fill it, so only bulk writes (an ingest, a backfill burst) still meet it.
The cost: up to this much log on disk and in DuckDB's memory before it is folded in, and its
replay at the next open after a crash (a clean close checkpoints): at 100k points 0.9 s for
16 MiB, 2.4 s for 32, 3.0 s for 64 on a loaded machine (docs/save-latency.md)."""

BACKGROUND_CHECKPOINT_MIN_BYTES = 1 * 2**20
"""The index-upkeep job's checkpoint skips a log smaller than this (a few hundred saves)."""

LOCK_WAIT_SECONDS = 10.0
"""How long an open waits for another process's hold on the file: a reading command (DuckDB
read-only, no lock file taken: issue 15 §5) and a writer starting beside it meet here, and
the later one waits for the earlier (reads take about a second)."""


DUCKDB_THREADS = 1
"""DuckDB's `threads`: one, so a query runs on the thread that asked it and never waits for
a worker another query or the OS holds. Recall's one query (~10 rows by id) gains nothing
from a second thread; under load it waited for one (100k, alternating query by query: hit
rows p95 3.0 instead of 5.5 ms, whole recalls p95 −0.5 to −6 ms; docs/recall-latency.md
"Sixth session"). Big scans (a rebuild's vectors, the word rows) ran as fast on this
2-core machine."""


def _connect(path: Path, *, read_only: bool) -> duckdb.DuckDBPyConnection:
    deadline = time.monotonic() + LOCK_WAIT_SECONDS
    config: dict[str, str | bool | int | float | list[str]] = {"threads": DUCKDB_THREADS}
    while True:
        try:
            return duckdb.connect(str(path), read_only=read_only, config=config)
        except duckdb.Error as error:
            classified = classify_open_error(path, error)
            if not isinstance(classified, DataDirInUse) or time.monotonic() >= deadline:
                raise classified from error
        time.sleep(0.05)


def read_schema_version(con: duckdb.DuckDBPyConnection) -> int:
    """The highest applied migration step; 0 for a database without a version table."""
    tables = con.execute(
        "SELECT count(*) FROM duckdb_tables() "
        "WHERE table_name = 'schema_version' AND schema_name = 'main'"
    ).fetchall()
    if not tables[0][0]:
        return 0
    rows = con.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchall()
    return int(rows[0][0])


def _inspect_existing(path: Path) -> int:
    """Check an existing file without writing it: lock, damage, truncation, schema version
    (returned)."""
    con = _connect(path, read_only=True)
    try:
        check_complete(con, path)
        version = read_schema_version(con)
    except duckdb.Error as error:
        raise classify_open_error(path, error) from error
    finally:
        con.close()
    if version > SCHEMA_VERSION:
        raise SchemaTooNew(path, version, SCHEMA_VERSION)
    return version


def _apply_step(con: duckdb.DuckDBPyConnection, version: int, clock: Clock) -> None:
    """Run migration step `version` and record it, all in one transaction."""
    con.execute("BEGIN TRANSACTION")
    try:
        for statement in MIGRATIONS[version - 1]:
            run_statement(con, statement)
        con.execute(
            "INSERT INTO schema_version (version, applied_at) VALUES (?, ?)",
            [version, clock.now()],
        )
    except BaseException:
        with contextlib.suppress(duckdb.Error):
            con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def _migrate(con: duckdb.DuckDBPyConnection, path: Path, clock: Clock) -> None:
    con.execute(VERSION_TABLE)
    current = read_schema_version(con)
    if current > SCHEMA_VERSION:
        raise SchemaTooNew(path, current, SCHEMA_VERSION)
    for version in range(current + 1, SCHEMA_VERSION + 1):
        _apply_step(con, version, clock)
    if 0 < current < SCHEMA_VERSION:
        # An upgrade of existing data leaves a large write-ahead log (v1 → v2 rewrites every
        # vector); fold it in now rather than in the middle of the first save (~2 s at 100k).
        con.execute("CHECKPOINT")


def _tighten_modes(path: Path) -> None:
    """Files 0600: the database and its write-ahead log (the folder is 0700 anyway; a log
    DuckDB makes later is 0600 through the umask, `keep_new_files_private`)."""
    for candidate in (path, path.with_name(path.name + ".wal")):
        with contextlib.suppress(FileNotFoundError):
            if (candidate.stat().st_mode & 0o777) != FILE_MODE:
                os.chmod(candidate, FILE_MODE)


def open_database(
    path: Path, *, clock: Clock, create: bool = True, read_only: bool = False
) -> Database:
    """Open (creating and migrating as needed) the database file at `path`.

    With `create=False` a missing file raises `NoDatabase` and nothing is created (for
    commands that only read). `read_only=True` (implies `create=False`) opens a current file
    with DuckDB's read-only mode: nothing is written, and a write raises; a file of an older
    schema is upgraded first (the one write a reading command may make). Raises
    `DataDirInUse`, `CorruptDatabase`, `SchemaTooNew` or another `DatabaseError`.
    """
    refuse_symlink(path)  # DuckDB opens its files by path: never through a link
    refuse_symlink(path.with_name(f"{path.name}.wal"))
    if path.exists():
        version = _inspect_existing(path)
        if read_only and version == SCHEMA_VERSION:
            return Database(path, _connect(path, read_only=True), clock, read_only=True)
    elif not create or read_only:
        raise NoDatabase(path)
    ensure_private_dir(path.parent)
    keep_new_files_private()  # the write-ahead log DuckDB makes after each checkpoint
    con = _connect(path, read_only=False)
    try:
        _tighten_modes(path)
        _migrate(con, path, clock)
        _tighten_modes(path)
    except duckdb.Error as error:
        con.close()
        raise classify_open_error(path, error) from error
    except BaseException:
        con.close()
        raise
    con.execute(f"SET checkpoint_threshold = '{CHECKPOINT_THRESHOLD_BYTES}B'")
    return Database(path, con, clock)


CLOSE_WAIT_SECONDS = 30.0
DROP_WAIT_SECONDS = 0.25
"""How long a cache drop waits for the cursors other threads hold; past it the drop is left
to the last of them to close (the caller goes on; the blocks go a little later)."""


class Database:
    """One open `straylight.duckdb`: a connection, cursors per call, serialised writes."""

    def __init__(
        self, path: Path, con: duckdb.DuckDBPyConnection, clock: Clock, *, read_only: bool = False
    ) -> None:
        self.path = path
        self.clock = clock
        self.read_only = read_only  # opened with DuckDB's read-only mode: writes raise
        self._con: duckdb.DuckDBPyConnection | None = con
        self._write_lock = threading.Lock()
        self._writer: int | None = None
        self._gate = CursorGate()  # cursors in use: close() waits for them, a drop runs alone

    def __repr__(self) -> str:
        state = "open" if self._con is not None else "closed"
        return f"Database({str(self.path)!r}, {state})"

    @property
    def closed(self) -> bool:
        return self._con is None

    def _connection(self) -> duckdb.DuckDBPyConnection:
        if self._con is None:
            raise DatabaseError(f"{self.path} is closed")
        return self._con

    def cursor(self) -> contextlib.AbstractContextManager[duckdb.DuckDBPyConnection]:
        """A fresh cursor for this call (safe from any thread), closed afterwards."""
        return self._cursor(gated=True)

    @contextlib.contextmanager
    def _cursor(self, *, gated: bool) -> Iterator[duckdb.DuckDBPyConnection]:
        cur = self._gate.opened(lambda: self._connection().cursor(), gated=gated)
        try:
            yield cur
        finally:
            cur.close()
            if self._gate.closed():  # the last cursor a waiting cache drop gave up on
                threading.Thread(
                    target=self.drop_cached_blocks, name="duckdb-cache-drop", daemon=True
                ).start()

    @contextlib.contextmanager
    def _writing(self, refusal: str) -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor of this thread's write, under the write lock; `refusal` (a RuntimeError)
        when this thread is writing already (the lock is not re-entrant)."""
        if self._writer == threading.get_ident():
            raise RuntimeError(refusal)
        with self._write_lock:
            self._writer = threading.get_ident()
            try:
                with self._cursor(gated=False) as cur:
                    yield cur
            finally:
                self._writer = None

    @contextlib.contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor inside BEGIN … COMMIT; rolled back if the block raises. Not re-entrant."""
        with self._writing("Database.transaction() does not nest") as cur:
            cur.execute("BEGIN TRANSACTION")
            try:
                yield cur
            except BaseException:
                with contextlib.suppress(duckdb.Error):
                    cur.execute("ROLLBACK")
                raise
            cur.execute("COMMIT")

    @contextlib.contextmanager
    def autocommit(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor for one data-modifying statement that commits by itself, under the same
        write lock as `transaction`: no `BEGIN` / `COMMIT` statements (~0.4 ms less CPU a
        save at 100k points, docs/save-latency.md). One statement only: two would commit
        apart."""
        with self._writing("Database.autocommit() inside a transaction") as cur:
            yield cur

    def drop_cached_blocks(self) -> None:
        """Evict DuckDB's cached table blocks after a one-off read (`store.buffer_pool`).

        DuckDB's limit is lowered for a moment, so nothing else may run a query then: the
        drop holds the write lock (no write transaction) and runs while no other thread
        holds a cursor (new ones wait the milliseconds it takes: `store.cursor_gate`). The
        caller's own cursors stay open but idle. When other threads' cursors stay open
        past `DROP_WAIT_SECONDS`, the last of them to close starts the drop in a thread of
        its own. Not from inside `transaction()` (the lock is not re-entrant)."""
        if self._writer == threading.get_ident():
            raise RuntimeError("Database.drop_cached_blocks() inside a transaction")

        def drop() -> None:
            if self._con is None:
                return
            cur = self._con.cursor()
            try:
                buffer_pool.drop_cached_blocks(cur)
            finally:
                cur.close()

        self._gate.run_alone(self._write_lock, drop, DROP_WAIT_SECONDS)

    def wal_bytes(self) -> int:
        """The size of the write-ahead log (`straylight.duckdb.wal`); 0 when there is none."""
        try:
            return self.path.with_name(self.path.name + ".wal").stat().st_size
        except FileNotFoundError:
            return 0

    def checkpoint(self, min_wal_bytes: int = 0) -> bool:
        """Fold the write-ahead log into the database file now (DuckDB's CHECKPOINT), when
        it holds at least `min_wal_bytes`; True when it ran. For background work: it holds
        the write lock for the checkpoint only (a save waits for it, ~0.2 s at 16 MiB);
        reads go on. A read-only database does nothing."""
        if self.read_only or self.wal_bytes() < max(min_wal_bytes, 1):
            return False
        if self._writer == threading.get_ident():
            raise RuntimeError("Database.checkpoint() inside a transaction")
        with self._write_lock, self._cursor(gated=False) as cur:
            cur.execute("CHECKPOINT")
        return True

    def schema_version(self) -> int:
        with self.cursor() as cur:
            return read_schema_version(cur)

    def close(self) -> None:
        """Close the connection (waits for a running write transaction). Idempotent."""
        if self._writer == threading.get_ident():
            raise RuntimeError("Database.close() inside a transaction")

        def close_connection() -> None:
            con, self._con = self._con, None
            if con is not None:
                con.close()

        with self._write_lock:
            # a reader in another thread (a job cancelled at quit, a status refresh) may still
            # be inside a query: let it finish first, for at most CLOSE_WAIT_SECONDS
            self._gate.when_idle(close_connection, CLOSE_WAIT_SECONDS)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
