"""Helpers for the crash tests (`test_crash.py`): real processes killed with SIGKILL.

A `CrashRig` is one sandbox: a data dir (`home/`), the folders a process could stray into
(`user-home/` as $HOME, `tmp/` as $TMPDIR, `xdg-config/`, `xdg-data/`), an `io/` folder for
the test's own files (stdout/stderr captures, input documents), and the in-process Ollama
stand-in every subprocess talks to over HTTP. It starts `python -m tui.cli …` (or the TUI
under the pilot, see `tui_main` below), kills it when a trigger fires plus a seeded random
delay, and `verify` then reopens the data dir the way a user would and checks what must hold
after any crash:

* after a writing command (`jobs run index-upkeep`: `status` writes nothing, so it neither
  rebuilds the index nor removes a dead save's temp file), `straylight status --json` exits 0,
  no traceback, index `in_sync` with one vector per point
  that has one, today's message count equal to what the parser reads;
* the data-dir lock is free (the killed PID left in the file does not block);
* the daily log only grew (the bytes known before are a prefix), parses, keeps every message
  known before unchanged, and every new message is one that was sent (or, cut short by the
  kill, a prefix of one, marked `truncated`);
* no point known before is lost or changed; every point the stand-in has evidence of is there
  (an `/api/embed` request for the reply is made only after the user's point committed; a
  completed process saved both); every turn point is a message of the log; the embed-request
  counter (bumped in a committed transaction before each request) is at least the number of
  requests the stand-in received;
* `vectors.usearch` loads (checksum ok) and holds exactly the ids of the stored vectors; no
  temp file of a dead process is left;
* nothing appeared or changed outside the data dir.

Run as a module it is the TUI driver: `python -m tests.reliability.crash_support tui
MESSAGES.json` starts `StraylightApp` under `run_test` (holding the data-dir lock, as
`straylight` does), sends each message and waits for its reply, printing `sent N` / `done N`.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.support.cli import DAY, REPO_ROOT, sandboxed_env

PYTHON = sys.executable
EMBED_MODEL = "nomic-embed-text"
WORKSPACE = "crash"
SEED_VARIABLE = "STRAYLIGHT_CRASH_SEED"
RUN_TIMEOUT = 120.0  # seconds a process may take before the test gives up on it
POLL = 0.0005  # trigger polling interval

WORDS = (
    "harbour",
    "lantern",
    "quartz",
    "meadow",
    "copper",
    "violet",
    "glacier",
    "orchard",
    "falcon",
    "ember",
    "tundra",
    "cobalt",
    "saffron",
    "willow",
    "basalt",
    "heron",
    "juniper",
    "marble",
    "nectar",
    "onyx",
    "pepper",
    "quill",
    "raven",
    "sierra",
    "thistle",
    "umber",
    "velvet",
    "walnut",
    "yarrow",
    "zephyr",
    "anchor",
    "bramble",
    "cedar",
    "dune",
    "fjord",
    "granite",
    "hollow",
    "iris",
    "jasper",
    "kelp",
    "lichen",
    "mango",
    "nutmeg",
    "opal",
    "pebble",
    "quince",
    "reef",
    "slate",
)


def crash_seed() -> int:
    """The seed of this run: $STRAYLIGHT_CRASH_SEED to replay one, else a fresh one."""
    text = os.environ.get(SEED_VARIABLE)
    return int(text) if text else random.SystemRandom().randrange(2**31)


def random_text(rng: random.Random, words: int = 18) -> str:
    """Distinct prose of `words` words (long enough for the save filter's length floor)."""
    body = " ".join(rng.choice(WORDS) for _ in range(words))
    return f"{body} {rng.randrange(10**9):09d}."


# --------------------------------------------------------------------------- the sandbox


@dataclass
class Run:
    """One process started by the rig and what is known about it."""

    label: str
    proc: subprocess.Popen[bytes]
    stdout_path: Path
    stderr_path: Path
    started: float
    first_request: int  # index into the stand-in's request log when it started
    user_text: str = ""
    reply_text: str = ""
    killed_after: float | None = None  # seconds since start when SIGKILL was sent
    returncode: int | None = None

    @property
    def stdout(self) -> str:
        return self.stdout_path.read_bytes().decode("utf-8", errors="replace")

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_bytes().decode("utf-8", errors="replace")

    @property
    def killed(self) -> bool:
        return self.killed_after is not None


@dataclass
class Known:
    """What a previous check saw committed: it must all survive the next crash."""

    log_bytes: bytes = b""
    messages: list[tuple[str, str, str, str]] = field(default_factory=list)
    points: dict[int, tuple[str, str]] = field(default_factory=dict)
    required_points: set[tuple[str, str]] = field(default_factory=set)
    required_log: set[tuple[str, str]] = field(default_factory=set)
    texts: set[str] = field(default_factory=set)  # every message text that may appear


class CrashRig:
    """A sandbox with a data dir, the stand-in, and seeded kills (see the module docstring)."""

    def __init__(self, root: Path, standin: Any, seed: int, phase: str) -> None:
        self.root = root
        self.home = root / "home"
        self.io = root / "io"
        self.standin = standin
        self.seed = seed
        self.phase = phase
        self.rng = random.Random(f"{seed}:{phase}")
        self.trail: list[str] = []
        self.known = Known()
        self.kills = 0
        self.truncated_seen = 0
        self.mid_save = 0
        self.foreign: set[int] = set()  # points that were there before the rig's first run
        self._count = 0
        for folder in (self.io, root / "user-home", root / "tmp"):
            folder.mkdir(parents=True, exist_ok=True)
        self.env = self._environment()
        self.outside = self._outside_listing()

    def _environment(self) -> dict[str, str]:
        return sandboxed_env(
            self.home,
            self.root,
            self.standin.host,
            STRAYLIGHT_WORKSPACE=WORKSPACE,
            TMPDIR=str(self.root / "tmp"),
        )

    # ---- failure messages

    def note(self, line: str) -> None:
        self.trail.append(line)

    def replay_hint(self) -> str:
        recent = "\n  ".join(self.trail[-12:])
        return (
            f"[crash test phase {self.phase!r}, seed {self.seed}: replay with "
            f"{SEED_VARIABLE}={self.seed}]\n  {recent}"
        )

    @contextmanager
    def replayable(self) -> Iterator[None]:
        """Re-raise any assertion with the seed and the recent kills in front of it."""
        try:
            yield
        except AssertionError as error:
            raise AssertionError(f"{self.replay_hint()}\n{error}") from error

    # ---- processes

    def start(
        self, *args: str, label: str = "", stdin: bytes | None = None, module: str = "tui.cli"
    ) -> Run:
        """Start `python -m MODULE ARGS` (the headless CLI unless told otherwise)."""
        self._count += 1
        name = f"{self._count:03d}"
        out, err = self.io / f"{name}.out", self.io / f"{name}.err"
        with out.open("wb") as out_file, err.open("wb") as err_file:
            proc = subprocess.Popen(
                [PYTHON, "-m", module, *args],
                env=self.env,
                cwd=REPO_ROOT,
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=out_file,
                stderr=err_file,
            )
        if stdin is not None:
            assert proc.stdin is not None
            try:
                proc.stdin.write(stdin)
                proc.stdin.close()
            except BrokenPipeError:
                pass
        return Run(
            label or " ".join(args[:2]),
            proc,
            out,
            err,
            time.monotonic(),
            len(self.standin.requests),
        )

    def finish(self, run: Run, timeout: float = RUN_TIMEOUT) -> Run:
        try:
            run.returncode = run.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            run.proc.kill()
            run.proc.wait()
            raise AssertionError(f"{run.label} did not end within {timeout} s") from None
        return run

    def kill_when(
        self,
        run: Run,
        trigger: Callable[[], bool],
        delay: float,
        *,
        what: str,
        timeout: float = RUN_TIMEOUT,
    ) -> Run:
        """Wait for `trigger()`, then `delay` seconds, then SIGKILL (unless it ended first)."""
        deadline = time.monotonic() + timeout
        fired = False
        while run.proc.poll() is None and time.monotonic() < deadline:
            if trigger():
                fired = True
                break
            time.sleep(POLL)
        if fired and delay > 0:
            end = time.monotonic() + delay
            while run.proc.poll() is None and time.monotonic() < end:
                time.sleep(min(POLL * 4, max(0.0, end - time.monotonic())))
        if run.proc.poll() is None:
            if not fired:
                run.proc.kill()
                run.proc.wait()
                raise AssertionError(f"{run.label}: trigger {what!r} never fired")
            os.kill(run.proc.pid, signal.SIGKILL)
            run.killed_after = time.monotonic() - run.started
            self.kills += 1
        run.returncode = run.proc.wait(timeout=timeout)
        outcome = (
            f"killed at {run.killed_after:.3f} s"
            if run.killed
            else f"ended by itself ({run.returncode})"
        )
        self.note(f"{run.label}: {what} + {delay:.3f} s → {outcome}")
        return run

    def lifetime(self, run: Run, pattern: str) -> float:
        """Let `run` end by itself; the longest time a file matching `pattern` existed."""
        longest, since = 0.0, None
        deadline = time.monotonic() + RUN_TIMEOUT
        while run.proc.poll() is None and time.monotonic() < deadline:
            exists = any(self.home.glob(pattern))
            now = time.monotonic()
            if exists and since is None:
                since = now
            elif not exists and since is not None:
                longest, since = max(longest, now - since), None
            time.sleep(POLL)
        self.finish(run)
        self.note(f"{run.label}: calibration, {pattern} existed up to {longest:.3f} s")
        return longest

    def time_after(self, run: Run, trigger: Callable[[], bool], *, what: str) -> float:
        """Let `run` end by itself; seconds from `trigger()` to its end (for kill timings)."""
        fired_at = None
        deadline = time.monotonic() + RUN_TIMEOUT
        while run.proc.poll() is None and time.monotonic() < deadline:
            if fired_at is None and trigger():
                fired_at = time.monotonic()
            time.sleep(POLL)
        self.finish(run)
        assert fired_at is not None, f"{run.label}: trigger {what!r} never fired"
        window = time.monotonic() - fired_at
        self.note(f"{run.label}: calibration, {what} → end {window:.3f} s ({run.returncode})")
        return window

    # ---- triggers

    def stdout_has(self, run: Run, text: str = "") -> Callable[[], bool]:
        def check() -> bool:
            if not text:
                return run.stdout_path.stat().st_size > 0
            return text in run.stdout

        return check

    def file_appears(self, pattern: str) -> Callable[[], bool]:
        return lambda: any(self.home.glob(pattern))

    def file_grows(self, path: Path) -> Callable[[], bool]:
        size = path.stat().st_size if path.exists() else 0
        return lambda: path.exists() and path.stat().st_size > size

    def embed_received(self, run: Run, text: str) -> Callable[[], bool]:
        return lambda: text in self.embed_inputs(run)

    def embed_inputs(self, run: Run | None = None) -> list[str]:
        start = run.first_request if run is not None else 0
        found: list[str] = []
        for request in self.standin.requests[start:]:
            if request.path in ("/api/embed", "/api/embeddings") and isinstance(request.body, dict):
                value = request.body.get("input", request.body.get("prompt"))
                found.extend(value if isinstance(value, list) else [str(value)])
        return found

    def embed_request_count(self) -> int:
        return sum(1 for r in self.standin.requests if r.path in ("/api/embed", "/api/embeddings"))

    # ---- what a run proves

    def expect_turn(self, run: Run) -> None:
        """Record what the stand-in saw of an `ask` (or TUI) turn as evidence of commits."""
        known = self.known
        known.texts.update(t for t in (run.user_text, run.reply_text) if t)
        inputs = self.embed_inputs(run)
        if run.user_text and run.user_text in inputs:  # embedded for recall: logged before
            known.required_log.add(("user", run.user_text))
        if run.reply_text and run.reply_text in inputs:
            # the reply is logged before it is saved, and embedded after the user's point
            known.required_log.add(("assistant", run.reply_text))
            known.required_points.add(("user", run.user_text))
        if not run.killed and run.returncode == 0 and run.reply_text:
            known.required_log.add(("assistant", run.reply_text))
            known.required_points.add(("user", run.user_text))
            known.required_points.add(("assistant", run.reply_text))

    # ---- the checks after a crash

    def verify(self, run: Run | None = None, *, fresh_process: bool = True) -> dict[str, Any]:
        """Reopen the data dir and check everything that must hold after a crash: with a
        `straylight status --json` subprocess, or (faster) by opening it in this process."""
        with self.replayable():
            if run is not None:
                assert "Traceback" not in run.stderr, (run.label, run.stderr)
                if any(self.home.glob(f"vectors.usearch.tmp-{run.proc.pid}")):
                    self.mid_save += 1  # the kill landed while the index file was written
            status = self.status() if fresh_process else self.status_in_process()
            self.check_lock_free()
            self.check_log(status)
            points = self.check_points(status)
            self.check_index(points)
            self.check_outside()
            return status

    def adopt(self, *, fresh_process: bool = True) -> dict[str, Any]:
        """Take a prepared data dir as the starting point: its points are known (and not
        expected in the log), then check it like after a crash."""
        import duckdb

        con = duckdb.connect(str(self.home / "straylight.duckdb"), read_only=True)
        try:
            rows = con.execute("SELECT id, role, content FROM points").fetchall()
        finally:
            con.close()
        self.foreign = {int(pid) for pid, _r, _c in rows}
        self.known.points = {int(pid): (role, content) for pid, role, content in rows}
        return self.verify(fresh_process=fresh_process)

    def status(self) -> dict[str, Any]:
        # `status` writes nothing (issue 15 §5): a writing command first, as a user's next
        # one would, removes a dead save's temp file and rebuilds or reconciles the index.
        upkeep = self.finish(self.start("jobs", "run", "index-upkeep", label="index-upkeep"))
        assert upkeep.returncode == 0, ("index-upkeep", upkeep.returncode, upkeep.stderr)
        run = self.finish(self.start("status", "--json", label="status"))
        assert run.returncode == 0, ("status", run.returncode, run.stdout, run.stderr)
        assert run.stderr == "", ("status wrote to stderr", run.stderr)
        report: dict[str, Any] = json.loads(run.stdout)
        assert report["ollama"]["reachable"] is True, report["ollama"]
        return self._check_status(report)

    def status_in_process(self) -> dict[str, Any]:
        """The memory part of `status`, computed here: lock, open, reconcile, close."""
        from agent.settings import load_settings
        from store.daily_log import DailyLog
        from tui.cli_memory import memory_status

        settings = load_settings(flags={}, environ=self.env).settings
        assert settings.home == self.home, (settings.home, self.home)
        self.reopen_writing(settings)
        report = memory_status(settings)
        today = DailyLog(self.home / "conversation").read_day(settings.clock.now().date())
        report["log"] = {"messages_today": len(today)}
        return self._check_status(report)

    def reopen_writing(self, settings: Any) -> None:
        """Open the data dir as a writing command does (`status` writes nothing): stale temp
        files go, the index is reconciled or rebuilt and saved."""
        from memory.memory_store import MemoryStore
        from store.data_dir_lock import DataDirLock

        with DataDirLock(self.home):
            store = MemoryStore.open(self.home, settings.memory, clock=settings.clock)
            try:
                store.wait_until_ready(timeout=RUN_TIMEOUT)
                store.upkeep_index()
            finally:
                store.close()

    def _check_status(self, report: dict[str, Any]) -> dict[str, Any]:
        points = report["points"]
        index = report["index"]
        assert index["state"] == "in_sync", index
        assert index["size"] == points["total"] - points["without_vector"], (index, points)
        assert report["headroom"] in ("ok", "warn"), report["headroom"]
        return report

    def check_lock_free(self) -> None:
        from store.data_dir_lock import DataDirLock

        DataDirLock(self.home).acquire().release()

    def log_path(self) -> Path:
        return self.home / "conversation" / f"{DAY}.md"

    def check_log(self, status: dict[str, Any]) -> None:
        from store.daily_log import parse_messages

        known = self.known
        path = self.log_path()
        data = path.read_bytes() if path.exists() else b""
        assert data.startswith(known.log_bytes), (
            "the daily log lost or changed bytes it held before the crash",
            len(known.log_bytes),
            len(data),
        )
        messages = parse_messages(data.decode("utf-8"))
        assert status["log"]["messages_today"] == len(messages), (status["log"], len(messages))
        now = [(m.role, m.content, m.conversation_id, m.status) for m in messages]
        before = known.messages
        assert now[: len(before)] == before, (
            "a message known before the crash changed",
            [(a, b) for a, b in zip(before, now, strict=False) if a != b][:3],
        )
        for role, content, _conversation, state in now[len(before) :]:
            if state == "truncated":
                self.truncated_seen += 1
                ok = content.startswith("<!-- straylight") or any(
                    text.startswith(content) for text in known.texts
                )
                assert ok, ("a truncated message is not a prefix of a sent one", content[:200])
            else:
                assert state == "complete", (role, state, content[:80])
                assert content in known.texts, ("an unknown message in the log", content[:200])
        truncated = [i for i, m in enumerate(messages) if m.status == "truncated"]
        for index in truncated:
            assert index == len(messages) - 1 or messages[index + 1].time is not None, index
        logged = {(role, content) for role, content, _c, state in now if state == "complete"}
        missing = known.required_log - logged
        assert not missing, ("messages the stand-in saw logged are missing", missing)
        known.log_bytes = data
        known.messages = now

    def check_points(self, status: dict[str, Any]) -> dict[int, tuple[str, str, bool]]:
        """Every point known before is still there, unchanged; evidence is honoured."""
        import duckdb

        db = self.home / "straylight.duckdb"
        con = duckdb.connect(str(db), read_only=True)
        try:
            rows = con.execute(
                "SELECT id, role, content, source, embedding IS NOT NULL AND embed_model = ? "
                "FROM points",
                [EMBED_MODEL],
            ).fetchall()
            meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
        finally:
            con.close()
        points = {int(pid): (role, content, bool(vec)) for pid, role, content, _s, vec in rows}
        assert status["points"]["total"] == len(points), (status["points"], len(points))
        known = self.known
        lost = {
            pid: old
            for pid, old in known.points.items()
            if pid not in points or points[pid][:2] != old
        }
        assert not lost, ("points committed before the crash are lost or changed", lost)
        present = {(role, content) for role, content, _v in points.values()}
        missing = {(r, c) for r, c in known.required_points if (r, c.strip()) not in present}
        assert not missing, ("points the stand-in saw committed are missing", missing)
        logged = {(role, content.strip()) for role, content, _c, _s in known.messages}
        for pid, role, content, source, _vec in rows:
            if source == "turn" and int(pid) not in self.foreign:
                assert (role, content) in logged, ("a point without its log message", content)
        received = self.embed_request_count()
        counted = int(meta.get("embed.requests", 0))
        assert counted >= received, (
            "embed requests counted in committed transactions were lost",
            counted,
            received,
        )
        assert status["embed_requests"] == counted
        known.points = {pid: (role, content) for pid, (role, content, _v) in points.items()}
        return points

    def check_index(self, points: dict[int, tuple[str, str, bool]]) -> None:
        """vectors.usearch loads and holds exactly the stored vectors; no stale temp file."""
        import duckdb

        from store.vector_index import VectorIndex

        leftovers = sorted(p.name for p in self.home.glob("vectors.usearch.tmp-*"))
        assert not leftovers, ("temp files of a dead process were left", leftovers)
        with_vector = {pid for pid, (_r, _c, vec) in points.items() if vec}
        path = self.home / "vectors.usearch"
        if not with_vector and not path.exists():
            return
        con = duckdb.connect(str(self.home / "straylight.duckdb"), read_only=True)
        try:
            dim = con.execute("SELECT value FROM meta WHERE key = 'embed.dim'").fetchall()
        finally:
            con.close()
        assert dim, "vectors are stored but embed.dim is not"
        index = VectorIndex(path, int(dim[0][0]))
        state = index.open()
        assert state == "in_sync", (state, index.reason)
        assert index.keys() == with_vector, (
            "vectors.usearch differs from the database",
            len(index.keys()),
            len(with_vector),
            sorted(with_vector ^ index.keys())[:10],
        )

    def _outside_listing(self) -> dict[str, tuple[int, int]]:
        listing: dict[str, tuple[int, int]] = {}
        for folder, dirs, files in os.walk(self.root):
            here = Path(folder)
            if here == self.home or here == self.io:
                dirs[:] = []
                continue
            dirs[:] = [d for d in dirs if here / d not in (self.home, self.io)]
            for name in [*dirs, *files]:
                path = here / name
                if path in (self.home, self.io):
                    continue
                info = path.lstat()
                size = info.st_size if path.is_file() else 0
                listing[str(path.relative_to(self.root))] = (size, info.st_mtime_ns)
        return listing

    def check_outside(self) -> None:
        now = self._outside_listing()
        assert now == self.outside, (
            "files outside the data dir appeared or changed",
            sorted(set(now.items()) ^ set(self.outside.items())),
        )

    def history_matches_log(self) -> None:
        """`straylight history --json` reads the same messages the parser does."""
        with self.replayable():
            run = self.finish(self.start("history", "--json", "--date", DAY, label="history"))
            assert run.returncode == 0 and run.stderr == "", (run.returncode, run.stderr)
            shown = [(m["role"], m["content"], m["status"]) for m in json.loads(run.stdout)]
            assert shown == [(r, c, s) for r, c, _conv, s in self.known.messages]


# --------------------------------------------------------------------------- databases


def build_v1_database(path: Path, points: int, dim: int, *, seed: int = 7) -> None:
    """A schema-v1 database (FLOAT[] vectors) with `points` points, written with plain DuckDB
    as tests/test_database.py does, plus the embedding meta so the index is built from it."""
    import duckdb

    from store.schema import MIGRATIONS, VERSION_TABLE, run_statement

    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    con = duckdb.connect(str(path))
    try:
        con.execute(VERSION_TABLE)
        for statement in MIGRATIONS[0]:
            run_statement(con, statement)
        earlier = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
        con.execute("INSERT INTO schema_version VALUES (1, ?)", [earlier])
        con.execute(f"SELECT setseed({(seed % 1000) / 1000})")
        con.execute(
            "INSERT INTO points (role, content, source, content_hash, created_at, embedding, "
            "embed_model) SELECT CASE WHEN i % 2 = 0 THEN 'user' ELSE 'assistant' END, "
            "'old point ' || i || ' about ' || md5(i::VARCHAR), 'turn', md5(i::VARCHAR), "
            "?::TIMESTAMPTZ + to_seconds(i::BIGINT), "
            "list_transform(range(?), lambda x: (random() - 0.5)::FLOAT), ? FROM range(?) t(i)",
            [earlier, dim, EMBED_MODEL, points],
        )
        con.execute(
            "INSERT INTO meta VALUES ('embed.model', ?), ('embed.dim', ?)",
            [EMBED_MODEL, str(dim)],
        )
    finally:
        con.close()


def vector_sample(path: Path, ids: list[int]) -> dict[int, tuple[float, ...]]:
    """Vectors of `ids` at any schema version (FLOAT[] before v2, float32 bytes after)."""
    import duckdb
    import numpy as np

    con = duckdb.connect(str(path), read_only=True)
    try:
        rows = con.execute(
            "SELECT id, embedding FROM points WHERE id IN (SELECT unnest(?::BIGINT[]))", [ids]
        ).fetchall()
    finally:
        con.close()
    out: dict[int, tuple[float, ...]] = {}
    for pid, value in rows:
        if isinstance(value, bytes | bytearray):
            out[int(pid)] = tuple(float(x) for x in np.frombuffer(value, dtype=np.float32))
        else:
            out[int(pid)] = tuple(float(np.float32(x)) for x in value)
    return out


def inspect_schema(path: Path) -> tuple[int, int]:
    """(schema version, points) of a database as the next open finds it, checking that
    every recorded step is complete and no step is half applied."""
    import duckdb

    from store.schema import SCHEMA_VERSION

    con = duckdb.connect(str(path), read_only=True)
    try:
        versions = [
            int(v)
            for (v,) in con.execute("SELECT version FROM schema_version ORDER BY 1").fetchall()
        ]
        tables = {
            name for (name,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()
        }
        columns = dict(
            con.execute(
                "SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = 'points'"
            ).fetchall()
        )
        count = int(con.execute("SELECT count(*) FROM points").fetchall()[0][0])
    finally:
        con.close()
    version = versions[-1] if versions else 0
    assert versions == list(range(1, version + 1)), ("gaps in schema_version", versions)
    assert 1 <= version <= SCHEMA_VERSION, versions
    assert "vector_blob" not in columns, ("step 2 half applied", columns)
    assert columns.get("embedding") == ("FLOAT[]" if version == 1 else "BLOB"), columns
    assert "lexical_postings_v2" not in tables and "candidates_v4" not in tables, tables
    assert ("facts" in tables) == (version >= 3), (version, tables)
    assert ("job_runs" in tables) == (version >= 4), (version, tables)
    return version, count


def copy_tree(source: Path, target: Path) -> None:
    import shutil

    shutil.copytree(source, target)


# --------------------------------------------------------------------------- the TUI driver


async def _drive_tui(messages: list[str]) -> None:
    from agent.settings import load_settings
    from store.data_dir_lock import DataDirLock
    from tests.support.pilot_helpers import wait_until
    from tui.app import StraylightApp
    from tui.widgets.chat_input import ChatInput

    settings = load_settings(flags={}).settings
    with DataDirLock(settings.home):  # as `straylight` does before the app starts
        app = StraylightApp(settings)
        async with app.run_test(size=(110, 32)) as pilot:
            await wait_until(pilot, lambda: app.engine.memory is not None, timeout=60)
            print("ready", flush=True)
            for number, text in enumerate(messages):
                logged = len(app.engine.daily_log.read_day(settings.clock.now().date()))
                app.query_one(ChatInput).text = text
                print(f"sent {number}", flush=True)
                await pilot.press("enter")
                await wait_until(
                    pilot,
                    lambda logged=logged: (
                        not app.replying
                        and len(app.engine.daily_log.read_day(settings.clock.now().date()))
                        >= logged + 2
                    ),
                    timeout=60,
                )
                print(f"done {number}", flush=True)
            await app.engine.drain()
        print("closed", flush=True)


def tui_main(argv: list[str]) -> int:
    import asyncio

    messages = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    asyncio.run(_drive_tui(messages))
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["tui"]:
        raise SystemExit(tui_main(sys.argv[2:]))
    raise SystemExit(f"usage: python -m {__spec__.name if __spec__ else __name__} tui FILE")
