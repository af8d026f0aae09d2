"""`store.database`: creation, migrations, the second-process lock, damaged files, transactions."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import numpy as np
import pytest

import store.database as database_module
from store.clock import Clock
from store.database import (
    CorruptDatabase,
    DatabaseError,
    DataDirInUse,
    NoDatabase,
    SchemaTooNew,
    database_path,
    open_database,
    parse_lock_pid,
)
from store.point_store import NewPoint, PointStore
from store.schema import MIGRATIONS, SCHEMA_VERSION, VERSION_TABLE, run_statement

ROOT = Path(__file__).resolve().parent.parent
EARLIER = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
NOW = datetime(2026, 11, 29, 21, 4, 38, tzinfo=UTC)
CLOCK = Clock(NOW)


def build_at_version(path: Path, version: int) -> None:
    """A database at `version`: the version table plus only the first `version` steps.

    Written with plain DuckDB (not the code under test), so every future step appended to
    `MIGRATIONS` is covered by the parametrised upgrade test automatically.
    """
    con = duckdb.connect(str(path))
    try:
        con.execute(VERSION_TABLE)
        for number, step in enumerate(MIGRATIONS[:version], start=1):
            for statement in step:
                run_statement(con, statement)
            con.execute("INSERT INTO schema_version VALUES (?, ?)", [number, EARLIER])
    finally:
        con.close()


def applied_versions(path: Path) -> list[tuple[int, datetime]]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        rows = con.execute("SELECT version, applied_at FROM schema_version ORDER BY 1").fetchall()
    finally:
        con.close()
    return [(int(version), at.astimezone(UTC)) for version, at in rows]


def table_names(path: Path) -> set[str]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        rows = con.execute("SELECT table_name FROM duckdb_tables()").fetchall()
    finally:
        con.close()
    return {name for (name,) in rows}


def snapshot(folder: Path) -> dict[str, bytes]:
    return {entry.name: entry.read_bytes() for entry in sorted(folder.iterdir())}


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return database_path(tmp_path / "home")


# --- creation and migrations -----------------------------------------------------------------


def test_a_new_database_is_private_and_fully_migrated(db_path: Path) -> None:
    with open_database(db_path, clock=CLOCK) as db:
        assert db.schema_version() == SCHEMA_VERSION
    assert db_path.name == "straylight.duckdb"
    assert db_path.parent.stat().st_mode & 0o777 == 0o700
    assert db_path.stat().st_mode & 0o777 == 0o600
    expected = [(v, NOW) for v in range(1, SCHEMA_VERSION + 1)]
    assert applied_versions(db_path) == expected
    assert {"schema_version", "points", "audit", "meta"} <= table_names(db_path)


def test_an_existing_data_dir_keeps_its_mode_and_the_file_is_tightened(db_path: Path) -> None:
    db_path.parent.mkdir()
    os.chmod(db_path.parent, 0o750)  # a folder the user chose: not ours to change
    build_at_version(db_path, SCHEMA_VERSION)
    os.chmod(db_path, 0o644)
    open_database(db_path, clock=CLOCK).close()
    assert db_path.parent.stat().st_mode & 0o777 == 0o750
    assert db_path.stat().st_mode & 0o777 == 0o600


WAL_AFTER_CHECKPOINT = """
import os, sys
from pathlib import Path
os.umask(0o022)  # the usual umask: files 0644 unless made otherwise
from store.database import open_database
from store.point_store import NewPoint, PointStore
from tests.test_database import CLOCK, NOW
path = Path(sys.argv[1])
with open_database(path, clock=CLOCK) as db:
    db.checkpoint()  # the log is folded in and removed; the next write starts a new one
    point = NewPoint(role="user", content="private words", source="turn", created_at=NOW)
    PointStore(db).add_many([point])
    wal = path.with_name(path.name + ".wal")
    print(oct(wal.stat().st_mode & 0o777))
"""


def test_a_write_ahead_log_made_after_a_checkpoint_is_private_too(db_path: Path) -> None:
    """DuckDB makes a new `.wal` at the first write after each checkpoint, with the process's
    umask: it was 0644 (the messages and facts of the last writes, readable by every user on
    the machine when the data dir is a folder the user chose with 0755), while the README
    promises 0600 for every file. Run in a child, so the umask here is left alone."""
    db_path.parent.mkdir()
    os.chmod(db_path.parent, 0o755)  # a data dir the user chose: it keeps its mode
    assert in_a_child(WAL_AFTER_CHECKPOINT, db_path).strip() == "0o600"


def in_a_child(script: str, db_path: Path) -> str:
    """`script` run by a Python process of its own on `db_path`; its stdout (it must end
    with exit 0)."""
    proc = subprocess.run(
        [sys.executable, "-c", script, str(db_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_create_false_creates_nothing(tmp_path: Path) -> None:
    db_path = database_path(tmp_path / "home")
    with pytest.raises(NoDatabase) as caught:
        open_database(db_path, clock=CLOCK, create=False)
    assert str(caught.value) == f"{db_path} does not exist yet (nothing has been saved)"
    assert not db_path.parent.exists()
    open_database(db_path, clock=CLOCK).close()
    with open_database(db_path, clock=CLOCK, create=False) as db:
        assert db.schema_version() == SCHEMA_VERSION


@pytest.mark.parametrize("version", range(SCHEMA_VERSION))
def test_upgrade_from_every_earlier_version(db_path: Path, version: int) -> None:
    db_path.parent.mkdir(mode=0o700)
    build_at_version(db_path, version)
    with open_database(db_path, clock=CLOCK) as db:
        assert db.schema_version() == SCHEMA_VERSION
    expected = [(v, EARLIER if v <= version else NOW) for v in range(1, SCHEMA_VERSION + 1)]
    assert applied_versions(db_path) == expected


def test_upgrade_to_v2_keeps_every_v1_vector_and_point(db_path: Path) -> None:
    """v1 stored FLOAT[] embeddings; v2 stores float32 bytes. Nothing is lost on the way."""
    db_path.parent.mkdir(mode=0o700)
    build_at_version(db_path, 1)
    con = duckdb.connect(str(db_path))
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((12, 16)).astype(np.float32)
    try:
        for n in range(12):
            embedding = [float(x) for x in vectors[n]] if n % 3 else None
            con.execute(
                "INSERT INTO points (role, content, source, content_hash, created_at, "
                "embedding, embed_model, tags) VALUES ('user', ?, 'turn', 'h', ?, ?, ?, ['t'])",
                [f"point {n}", EARLIER, embedding, "m" if embedding else None],
            )
    finally:
        con.close()
    with open_database(db_path, clock=CLOCK) as db:
        store = PointStore(db)
        points = list(store.iter_points())
        assert [p.content for p in points] == [f"point {n}" for n in range(12)]
        for n, point in enumerate(points):
            if n % 3:
                assert point.embedding is not None
                np.testing.assert_array_equal(point.embedding, vectors[n])
            else:
                assert point.embedding is None
        ids, matrix = store.vectors("m")
        assert list(ids) == [p.id for n, p in enumerate(points) if n % 3]
        np.testing.assert_array_equal(matrix, vectors[[n for n in range(12) if n % 3]])
        assert store.by_source_prefix("tur") == points  # the source index was rebuilt
        assert points[1].tags == ("t",) and points[1].created_at == EARLIER


def test_upgrade_from_a_bare_duckdb_file_without_a_version_table(db_path: Path) -> None:
    db_path.parent.mkdir(mode=0o700)
    duckdb.connect(str(db_path)).close()
    with open_database(db_path, clock=CLOCK) as db:
        assert db.schema_version() == SCHEMA_VERSION


def test_reopening_applies_nothing_and_keeps_data(db_path: Path) -> None:
    with open_database(db_path, clock=CLOCK) as db:
        point_id = PointStore(db).add(NewPoint("user", "kept", "tui"))
    later = Clock(datetime(2027, 1, 1, tzinfo=UTC))
    with open_database(db_path, clock=later) as db:
        assert PointStore(db).get(point_id) is not None
    assert {at for _, at in applied_versions(db_path)} == {NOW}


def test_a_failing_step_leaves_no_trace(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    open_database(db_path, clock=CLOCK).close()
    broken = (*MIGRATIONS, ("CREATE TABLE half_done (x INTEGER)", "SELECT error('boom')"))
    monkeypatch.setattr(database_module, "MIGRATIONS", broken)
    monkeypatch.setattr(database_module, "SCHEMA_VERSION", len(broken))
    with pytest.raises(DatabaseError, match="boom"):
        open_database(db_path, clock=CLOCK)
    assert "half_done" not in table_names(db_path)
    assert [v for v, _ in applied_versions(db_path)] == list(range(1, SCHEMA_VERSION + 1))


def test_a_database_newer_than_the_code_is_refused_untouched(db_path: Path) -> None:
    db_path.parent.mkdir(mode=0o700)
    build_at_version(db_path, SCHEMA_VERSION)
    con = duckdb.connect(str(db_path))
    con.execute("INSERT INTO schema_version VALUES (?, ?)", [SCHEMA_VERSION + 1, EARLIER])
    con.close()
    before = snapshot(db_path.parent)
    with pytest.raises(SchemaTooNew) as caught:
        open_database(db_path, clock=CLOCK)
    assert str(caught.value) == (
        f"{db_path} is at schema version {SCHEMA_VERSION + 1}; "
        f"this Straylight knows up to {SCHEMA_VERSION} — upgrade Straylight"
    )
    assert snapshot(db_path.parent) == before


# --- one process per data dir ----------------------------------------------------------------

HOLDER = """
import sys
from pathlib import Path
from store.clock import Clock
from store.database import open_database
db = open_database(Path(sys.argv[1]), clock=Clock())
print("ready", flush=True)
sys.stdin.readline()
db.close()
"""


def test_a_second_process_gets_a_one_line_message_with_the_holders_pid(db_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(db_path)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(DataDirInUse) as caught:
            open_database(db_path, clock=CLOCK)
        assert caught.value.pid == holder.pid
        assert caught.value.path == db_path.parent
        assert str(caught.value) == (
            f"{db_path.parent} is in use by PID {holder.pid} (another Straylight?); "
            "close it or use --home"
        )
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.wait(timeout=20) == 0
    finally:
        holder.kill()
        holder.wait()
    with open_database(db_path, clock=CLOCK) as db:
        assert db.schema_version() == SCHEMA_VERSION


@pytest.mark.parametrize(
    ("message", "pid"),
    [
        (
            'IO Error: Could not set lock on file "/x/straylight.duckdb": Conflicting lock is '
            "held in /usr/bin/python3.11 (PID 4242). See also https://duckdb.org/docs",
            4242,
        ),
        ("Conflicting lock is held in /opt/my app (v2)/python (PID 7) by user x", 7),
        ("Conflicting lock is held in /home/x/PID 12/bin/python (PID 99).", 99),
        ("Could not set lock on file: Resource temporarily unavailable", None),
    ],
)
def test_the_lock_holders_pid_is_parsed_or_none(message: str, pid: int | None) -> None:
    assert parse_lock_pid(message) == pid


def test_the_message_without_a_pid_still_reads_well(tmp_path: Path) -> None:
    assert str(DataDirInUse(tmp_path, None)) == (
        f"{tmp_path} is in use by another process (another Straylight?); close it or use --home"
    )


# --- damaged files ---------------------------------------------------------------------------


def _refused_untouched(db_path: Path) -> CorruptDatabase:
    before = snapshot(db_path.parent)
    with pytest.raises(CorruptDatabase) as caught:
        open_database(db_path, clock=CLOCK)
    assert snapshot(db_path.parent) == before, "the file changed or a new file appeared"
    message = str(caught.value)
    assert "\n" not in message
    assert str(db_path) in message
    assert "backup" in message
    return caught.value


def _real_database_with_data(db_path: Path) -> bytes:
    with open_database(db_path, clock=CLOCK) as db:
        store = PointStore(db)
        vectors = np.random.default_rng(1).random((3000, 256), dtype=np.float32)
        store.add_many(
            NewPoint("user", f"message {i}", "tui", embedding=vector, embed_model="m")
            for i, vector in enumerate(vectors)
        )
    return db_path.read_bytes()


def test_a_file_that_is_not_a_database_is_left_untouched(db_path: Path) -> None:
    db_path.parent.mkdir(mode=0o700)
    db_path.write_bytes(b"this is not a database\n" * 500)
    error = _refused_untouched(db_path)
    assert error.problem == "not a DuckDB database"


def test_an_empty_file_is_refused_not_replaced(db_path: Path) -> None:
    db_path.parent.mkdir(mode=0o700)
    db_path.write_bytes(b"")
    assert _refused_untouched(db_path).problem == "empty file"


@pytest.mark.parametrize("keep", [0.05, 0.5, 0.97])
def test_a_truncated_database_is_left_untouched(db_path: Path, keep: float) -> None:
    data = _real_database_with_data(db_path)
    cut = int(len(data) * keep) // 4096 * 4096
    db_path.write_bytes(data[:cut])
    error = _refused_untouched(db_path)
    assert "truncated" in error.problem or "read enough bytes" in error.problem
    assert db_path.read_bytes() == data[:cut]


def _database_with_trailing_free_blocks(db_path: Path) -> None:
    """Checkpoints between batches leave free blocks that DuckDB drops from the file's end."""
    rng = np.random.default_rng(2)
    for _ in range(2):
        with open_database(db_path, clock=CLOCK) as db:
            for _ in range(3):
                matrix = rng.random((400, 768), dtype=np.float32)
                PointStore(db).add_many(
                    NewPoint("user", "x", "s", embedding=row, embed_model="m") for row in matrix
                )
                with db.cursor() as cur:
                    cur.execute("CHECKPOINT")
    con = duckdb.connect(str(db_path), read_only=True)
    block_size, total_blocks = con.execute(
        "SELECT block_size, total_blocks FROM pragma_database_size()"
    ).fetchall()[0]
    con.close()
    assert db_path.stat().st_size < 3 * 4096 + block_size * total_blocks, "precondition"


def test_a_healthy_file_shorter_than_its_block_count_opens(db_path: Path) -> None:
    _database_with_trailing_free_blocks(db_path)
    with open_database(db_path, clock=CLOCK) as db:
        assert PointStore(db).counts()["total"] == 2400
    data = db_path.read_bytes()
    db_path.write_bytes(data[: len(data) // 2])
    assert "truncated" in _refused_untouched(db_path).problem


def test_a_damaged_block_is_reported_as_corrupt(db_path: Path) -> None:
    data = bytearray(_real_database_with_data(db_path))
    data[12288 + 64 : 12288 + 96] = b"\xff" * 32  # inside the first data block
    db_path.write_bytes(bytes(data))
    _refused_untouched(db_path)


# --- connection, cursors and transactions ----------------------------------------------------


def test_a_transaction_rolls_back_when_its_block_raises(db_path: Path) -> None:
    with open_database(db_path, clock=CLOCK) as db:
        with pytest.raises(KeyError), db.transaction() as cur:
            cur.execute("INSERT INTO meta VALUES ('k', 'v')")
            raise KeyError("abort")
        with db.transaction() as cur:
            cur.execute("INSERT INTO meta VALUES ('k2', 'v2')")
        with db.cursor() as cur:
            assert cur.execute("SELECT key FROM meta").fetchall() == [("k2",)]


def test_transactions_do_not_nest(db_path: Path) -> None:
    with (
        open_database(db_path, clock=CLOCK) as db,
        db.transaction(),
        pytest.raises(RuntimeError, match="nest"),
        db.transaction(),
    ):
        pass


def test_an_autocommitted_statement_commits_alone_and_not_inside_a_transaction(
    db_path: Path,
) -> None:
    with open_database(db_path, clock=CLOCK) as db:
        with db.autocommit() as cur:
            cur.execute("INSERT INTO meta VALUES ('k', 'v')")
        with pytest.raises(duckdb.ConstraintException), db.autocommit() as cur:
            cur.execute("INSERT INTO meta VALUES ('k3', 'v'), ('k', 'again')")  # one fails: none
        with db.cursor() as cur:
            assert cur.execute("SELECT key, value FROM meta").fetchall() == [("k", "v")]
        with (
            db.transaction(),
            pytest.raises(RuntimeError, match="inside a transaction"),
            db.autocommit(),
        ):
            pass


def test_cursors_work_from_many_threads_at_once(db_path: Path) -> None:
    errors: list[BaseException] = []
    with open_database(db_path, clock=CLOCK) as db:

        def work(n: int) -> None:
            try:
                for _ in range(20):
                    with db.transaction() as cur:
                        cur.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", [f"k{n}", "v"])
                    with db.cursor() as cur:
                        cur.execute("SELECT count(*) FROM meta").fetchall()
            except BaseException as error:  # noqa: BLE001 - collected and asserted below
                errors.append(error)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        with db.cursor() as cur:
            assert cur.execute("SELECT count(*) FROM meta").fetchall() == [(8,)]
    assert errors == []


def test_close_is_idempotent_and_a_closed_database_says_so(db_path: Path) -> None:
    db = open_database(db_path, clock=CLOCK)
    assert not db.closed
    db.close()
    db.close()
    assert db.closed
    with pytest.raises(DatabaseError, match="closed"), db.cursor():
        pass
    # Closing released the file: another connection can take it.
    duckdb.connect(str(db_path)).close()


def test_a_file_system_without_locks_is_named_not_taken_for_another_process(
    tmp_path: Path,
) -> None:
    """DuckDB's words on a mount without POSIX locks (some network and FUSE file systems)
    start like those of a lock another process holds; it was "in use by another process
    (another Straylight?)", exit 6, where no other process was."""
    from store.database_errors import DatabaseError, classify_open_error

    path = tmp_path / "straylight.duckdb"
    said = duckdb.IOException(
        f'IO Error: Could not set lock on file "{path}": File locks are not supported for '
        "this file system, cannot open the file in read-write mode. Try opening the file in "
        "read-only mode"
    )
    named = classify_open_error(path, said)
    assert type(named) is DatabaseError and not isinstance(named, DataDirInUse)
    assert str(named) == (
        f"the file system of {tmp_path} does not support file locks, which the database "
        "needs to write: use a data dir on a local disk (--home)"
    )


WAL_LEFT_BY_A_CRASH = """
import os, sys
from pathlib import Path
from store.database import open_database
from store.point_store import NewPoint, PointStore
from tests.test_database import CLOCK, NOW
path = Path(sys.argv[1])
db = open_database(path, clock=CLOCK)
PointStore(db).add_many([NewPoint(role="user", content="kept", source="turn", created_at=NOW)])
db.checkpoint()  # "kept" is in the database file itself
PointStore(db).add_many([NewPoint(role="user", content="late", source="turn", created_at=NOW)])
os._exit(0)  # killed: "late" is only in the .wal
"""


def crash_leaving_a_wal(db_path: Path) -> None:
    """A database in a new data dir with one point checkpointed and one only in its .wal."""
    db_path.parent.mkdir()
    in_a_child(WAL_LEFT_BY_A_CRASH, db_path)


def test_a_damaged_write_ahead_log_is_named_and_moving_it_aside_keeps_the_database(
    db_path: Path,
) -> None:
    """A .wal damaged by a crash or a bad disk was reported as a damaged `straylight.duckdb`
    with "move it aside": following that gave an empty memory, where moving the log aside
    loses only the writes since the last checkpoint."""
    crash_leaving_a_wal(db_path)
    wal = db_path.with_name(db_path.name + ".wal")
    damaged = bytearray(wal.read_bytes())
    damaged[len(damaged) // 2 : len(damaged) // 2 + 4] = b"\xff\xff\xff\xff"
    wal.write_bytes(bytes(damaged))
    database_before = db_path.read_bytes()

    with pytest.raises(CorruptDatabase) as raised:
        open_database(db_path, clock=CLOCK)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"{wal} is damaged (")
    assert f"mv {wal} {wal}.damaged" in message
    assert raised.value.path == wal
    assert db_path.read_bytes() == database_before and wal.read_bytes() == bytes(damaged)

    wal.rename(wal.with_name(wal.name + ".damaged"))  # the advice
    with open_database(db_path, clock=CLOCK) as db, db.cursor() as con:
        assert con.execute("SELECT content FROM points").fetchall() == [("kept",)]


@pytest.mark.parametrize(
    ("message", "code", "reason"),
    [
        ('Could not write file "{wal}": No space left on device', 28, "No space left on device"),
        ('Cannot open file "{wal}": Permission denied', 13, "Permission denied"),
        ('Could not write file "{wal}": File too large', 27, "File too large"),
    ],
)
def test_a_commit_that_meets_the_disk_is_an_os_error_naming_the_file(
    tmp_path: Path, message: str, code: int, reason: str
) -> None:
    """DuckDB reports a full disk (or a folder it may not make its `.wal` in) at a commit
    as a TransactionException: the command said "unexpected error: TransactionException"."""
    from store.database_errors import as_os_error

    wal = str(tmp_path / "straylight.duckdb.wal")
    error = duckdb.TransactionException(
        "TransactionContext Error: Failed to commit: " + message.format(wal=wal)
    )
    found = as_os_error(error)
    assert found is not None
    assert (found.errno, found.strerror, found.filename) == (code, reason, wal)
    assert as_os_error(duckdb.TransactionException("Conflict on tuple deletion")) is None
    assert as_os_error(OSError(28, "No space left on device")) is None


def test_a_write_ahead_log_of_another_database_is_named_with_the_same_advice(
    db_path: Path, tmp_path: Path
) -> None:
    """A crash left a .wal, then `straylight.duckdb` was restored from a backup with cp:
    "cannot open …: IO Error: Failure while replaying WAL file …: WAL does not match
    database file", exit 1 on every command, and no advice."""
    crash_leaving_a_wal(db_path)
    backup = tmp_path / "backup.duckdb"
    open_database(backup, clock=CLOCK).close()
    db_path.write_bytes(backup.read_bytes())  # the restore
    wal = db_path.with_name(db_path.name + ".wal")
    with pytest.raises(CorruptDatabase) as raised:
        open_database(db_path, clock=CLOCK)
    assert raised.value.path == wal
    assert "does not match" in str(raised.value) and f"mv {wal} {wal}.damaged" in str(raised.value)
