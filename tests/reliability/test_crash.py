"""Issue 7, crashes: kill -9 of `straylight ask`, `import-doc`, `status` and the TUI at random
points, then reopen and check that nothing committed was lost (see `crash_support`).

Every phase runs twice: a CI variant with one or two kills (`just test`) and a `slow` variant
with at least 20 kills (`just reliability`). Kill timings come from a seeded RNG; a failure
names the seed, and `STRAYLIGHT_CRASH_SEED=<seed>` replays the same timings (the machine's
own timing still varies). Real processes, real DuckDB, real usearch, the real-HTTP stand-in.

* reply: `ask` killed while the reply streams, right when the log grows (the user's message
  or the reply being appended; some messages are 400 KB so the write takes a while), or at
  any moment of its run;
* save: `ask` killed after the stand-in got the reply's embedding request — the user's
  point is committed, the reply's point, the turn counter and the index save on close follow;
* index: on a store of 4,000 points, `ask` killed while `vectors.usearch.tmp-PID` is being
  written (the save on close), and `import-doc` of 240 sections killed while the background
  save (after max(200, 1 % of the index) changes) or the final save runs;
* migration: a schema-v1 database of 4,000 points (FLOAT[] vectors, no word-index analyzer)
  whose `status` is killed after the migration started writing: the next open finds a
  complete version (1 to the newest, each step all or nothing), every point and vector intact,
  and finishes the upgrade;
* TUI: the app under the pilot in a subprocess (`crash_support tui`), sending messages, killed
  at any moment from start-up to shutdown.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from store.schema import SCHEMA_VERSION
from tests.reliability.crash_support import (
    CrashRig,
    Run,
    build_v1_database,
    copy_tree,
    crash_seed,
    inspect_schema,
    random_text,
    vector_sample,
)
from tests.support.ollama_standin import DEFAULT_REPLY_PREFIX, OllamaStandIn

TEMPLATE_POINTS = 4000
TEMPLATE_DIM = 768  # the stand-in's default embedding size
DOC_SECTIONS = 240
SLOW_KILLS = 20
BIG_MESSAGE_BYTES = 400_000

FAST = pytest.param(1, id="ci")
SLOW = pytest.param(SLOW_KILLS, id="slow", marks=pytest.mark.slow)


@pytest.fixture(scope="module")
def seed() -> int:
    value = crash_seed()
    print(f"\ncrash tests: seed {value} (replay with STRAYLIGHT_CRASH_SEED={value})")
    return value


@dataclass(frozen=True)
class Templates:
    v1_home: Path  # a data dir holding a schema-v1 database
    populated_home: Path  # the same, upgraded and opened: word index and vectors.usearch
    sample_ids: list[int]
    sample: dict[int, tuple[float, ...]]


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> Templates:
    from datetime import UTC, datetime

    from memory.memory_store import MemoryConfig, MemoryStore
    from store.clock import Clock

    root = tmp_path_factory.mktemp("crash-templates")
    v1_home = root / "v1"
    build_v1_database(v1_home / "straylight.duckdb", TEMPLATE_POINTS, TEMPLATE_DIM)
    sample_ids = [1, 2, 3, TEMPLATE_POINTS // 2, TEMPLATE_POINTS - 1, TEMPLATE_POINTS]
    sample = vector_sample(v1_home / "straylight.duckdb", sample_ids)
    populated = root / "populated"
    copy_tree(v1_home, populated)
    clock = Clock(datetime(2031, 2, 3, 4, 5, 6, tzinfo=UTC))
    store = MemoryStore.open(populated, MemoryConfig(), clock=clock)
    try:
        store.wait_until_ready(timeout=120)
        assert store.index_state() == ("in_sync", TEMPLATE_POINTS)
    finally:
        store.close()
    return Templates(v1_home, populated, sample_ids, sample)


@pytest.fixture
def rigs(tmp_path: Path, standin: OllamaStandIn, seed: int) -> Iterator[list[CrashRig]]:
    made: list[CrashRig] = []
    yield made
    for rig in made:
        print(
            f"{rig.phase}: {rig.kills} kills, {rig.truncated_seen} truncated messages seen, "
            f"{rig.mid_save} kills during an index save"
        )


def new_rig(rigs: list[CrashRig], root: Path, standin: OllamaStandIn, seed: int, phase: str):
    rig = CrashRig(root, standin, seed, phase)
    rigs.append(rig)
    return rig


def ask_turn(rig: CrashRig, *, reply_words: int, big: bool = False):
    """Start `ask` with a fresh scripted reply; returns the run (texts recorded on it)."""
    user = random_text(rig.rng)
    if big:  # a long paste: the log append is one write of ~BIG_MESSAGE_BYTES
        user = (user + "\n") * (BIG_MESSAGE_BYTES // len(user))
    reply = random_text(rig.rng, reply_words)
    rig.standin.clear_replies()
    rig.standin.script_reply(reply)
    run = rig.start("ask", "-", label="ask", stdin=user.encode())
    run.user_text, run.reply_text = user, reply
    rig.known.texts.update((user, reply))
    return run


def fresh(kills: int) -> bool:
    """Reopen with a `status` subprocess after every kill in the slow variant; the CI variant
    reopens in this process (a second faster) and runs `status` once at the end."""
    return kills >= SLOW_KILLS


def kills_done(rig: CrashRig, wanted: int, attempts: int) -> bool:
    """Enough kills landed (a kill that came after the process ended is not one)."""
    return rig.kills >= wanted or attempts >= wanted * 3


# --------------------------------------------------------------------------- phases


@pytest.mark.parametrize("kills", [FAST, SLOW])
def test_kill_ask_during_the_reply_and_the_log_append(
    kills: int, rigs: list[CrashRig], tmp_path: Path, standin: OllamaStandIn, seed: int
) -> None:
    rig = new_rig(rigs, tmp_path / "reply", standin, seed, "reply")
    standin.token_delay = 0.02
    # one complete turn first: something committed that every crash must keep
    first = rig.finish(ask_turn(rig, reply_words=10))
    rig.expect_turn(first)
    rig.verify(first, fresh_process=fresh(kills))
    modes = ["stream", "append"] if kills == 1 else ["stream", "append", "anywhere"]
    attempts = 0
    while not kills_done(rig, kills * (2 if kills == 1 else 1), attempts):
        mode = modes[attempts % len(modes)]
        attempts += 1
        if mode == "stream":  # mid-reply: ~60 tokens at 20 ms
            run = ask_turn(rig, reply_words=60)
            rig.kill_when(run, rig.stdout_has(run), rig.rng.uniform(0, 1.3), what=mode)
        elif mode == "append":  # the user's message (often 400 KB) or the reply is appended
            run = ask_turn(rig, reply_words=30, big=rig.rng.random() < 0.6)
            delay = rig.rng.choice([0.0, 0.0, rig.rng.uniform(0, 0.004)])
            rig.kill_when(run, rig.file_grows(rig.log_path()), delay, what=mode)
        else:
            run = ask_turn(rig, reply_words=40)
            rig.kill_when(run, lambda: True, rig.rng.uniform(0, 3.5), what=mode)
        rig.expect_turn(run)
        rig.verify(run, fresh_process=fresh(kills))
    assert rig.kills >= kills * (2 if kills == 1 else 1), rig.replay_hint()
    rig.verify()
    rig.history_matches_log()


@pytest.mark.parametrize("kills", [FAST, SLOW])
def test_kill_ask_during_the_background_save(
    kills: int, rigs: list[CrashRig], tmp_path: Path, standin: OllamaStandIn, seed: int
) -> None:
    rig = new_rig(rigs, tmp_path / "save", standin, seed, "save")
    standin.token_delay = 0.002
    # the reply's embedding request comes after the user's point committed; then the reply's
    # point, the turn counter and the index save on close: how long does that take here?
    run = ask_turn(rig, reply_words=25)
    window = rig.time_after(run, rig.embed_received(run, run.reply_text), what="reply embedded")
    rig.expect_turn(run)
    rig.verify(run, fresh_process=fresh(kills))
    attempts = 0
    while not kills_done(rig, kills, attempts):
        attempts += 1
        run = ask_turn(rig, reply_words=25)
        trigger = rig.embed_received(run, run.reply_text)
        rig.kill_when(run, trigger, rig.rng.uniform(0, window * 0.9), what="reply embedded")
        rig.expect_turn(run)
        rig.verify(run, fresh_process=fresh(kills))
    assert rig.kills >= kills, rig.replay_hint()
    rig.verify()
    rig.history_matches_log()


@pytest.mark.parametrize("kills", [FAST, SLOW])
def test_kill_during_the_usearch_save(
    kills: int,
    rigs: list[CrashRig],
    tmp_path: Path,
    standin: OllamaStandIn,
    seed: int,
    templates: Templates,
) -> None:
    rig = new_rig(rigs, tmp_path / "index", standin, seed, "index")
    copy_tree(templates.populated_home, rig.home)
    rig.adopt(fresh_process=fresh(kills))
    standin.token_delay = 0.0
    doc = rig.io / "notes.md"
    doc.write_text(
        "".join(
            f"# Section {n}\n\n{random_text(rig.rng, 12)} number {n}.\n\n"
            for n in range(DOC_SECTIONS)
        ),
        encoding="utf-8",
    )
    saving = "vectors.usearch.tmp-*"
    # calibration: how long the save on close of `ask` writes its temp file (8 MB,
    # checksummed, fsynced) on this machine
    run = ask_turn(rig, reply_words=25)
    window = max(rig.lifetime(run, saving), 0.005)
    rig.expect_turn(run)
    rig.verify(run, fresh_process=fresh(kills))
    attempts = 0
    wanted = kills * 2  # ask and import-doc
    while not kills_done(rig, wanted, attempts):
        attempts += 1
        if attempts % 2:  # ask: the save on close
            run = ask_turn(rig, reply_words=25)
            delay = rig.rng.uniform(0, window)
            rig.kill_when(run, rig.file_appears(saving), delay, what="ask: index save")
            rig.expect_turn(run)
        else:  # import-doc: the background save after 200 changes, then the one on close
            run = rig.start("import-doc", str(doc), "--json", label="import-doc")
            delay = rig.rng.uniform(0, window * 3)
            rig.kill_when(run, rig.file_appears(saving), delay, what="import-doc: index save")
        rig.verify(run, fresh_process=fresh(kills))
    assert rig.kills >= wanted, rig.replay_hint()
    # the interrupted imports finish without duplicates
    done = rig.finish(rig.start("import-doc", str(doc), "--json", label="import-doc"))
    with rig.replayable():
        assert done.returncode == 0, (done.returncode, done.stderr)
        report = json.loads(done.stdout)
        assert report["added"] + report["updated"] + report["unchanged"] == DOC_SECTIONS
        assert report["removed"] == 0, report
    status = rig.verify(done)
    assert status["points"]["doc"] == DOC_SECTIONS, rig.replay_hint()


@pytest.mark.parametrize("kills", [FAST, SLOW])
def test_kill_status_during_a_migration(
    kills: int,
    rigs: list[CrashRig],
    tmp_path: Path,
    standin: OllamaStandIn,
    seed: int,
    templates: Templates,
) -> None:
    wal = "straylight.duckdb.wal"
    # calibration: how long the upgrade writes (WAL appears … disappears at the checkpoint)
    probe = new_rig(rigs, tmp_path / "migration-probe", standin, seed, "migration")
    copy_tree(templates.v1_home, probe.home)
    run = probe.start("status", "--json", label="status (calibration)")
    wal_at = gone_at = None
    while run.proc.poll() is None:
        exists = (probe.home / wal).exists()
        now = time.monotonic()
        if exists and wal_at is None:
            wal_at = now
        elif wal_at is not None and not exists and gone_at is None:
            gone_at = now
        time.sleep(0.0005)
    probe.finish(run)
    assert run.returncode == 0 and wal_at is not None, (run.returncode, run.stderr)
    window = (gone_at or time.monotonic()) - wal_at
    probe.note(f"calibration: the upgrade writes for {window:.3f} s")
    versions: list[int] = []
    attempts = 0
    landed = 0
    while landed < kills and attempts < kills * 3:
        attempts += 1
        rig = new_rig(rigs, tmp_path / f"migration-{attempts}", standin, seed, "migration")
        rig.trail = probe.trail
        rig.rng = probe.rng
        copy_tree(templates.v1_home, rig.home)
        run = rig.start("status", "--json", label="status (upgrade)")
        delay = rig.rng.uniform(0, window * 1.1)
        rig.kill_when(run, rig.file_appears(wal), delay, what="upgrade started")
        landed += rig.kills
        with rig.replayable():
            version, count = inspect_schema(rig.home / "straylight.duckdb")
            versions.append(version)
            rig.note(f"after the kill: schema version {version}")
            assert count == TEMPLATE_POINTS
            db = rig.home / "straylight.duckdb"
            assert vector_sample(db, templates.sample_ids) == templates.sample
        rig.known.points = {}
        rig.foreign = set(range(1, TEMPLATE_POINTS + 1))
        status = rig.verify(run, fresh_process=fresh(kills))
        with rig.replayable():
            assert status["points"]["total"] == TEMPLATE_POINTS, status["points"]
            assert inspect_schema(rig.home / "straylight.duckdb") == (
                SCHEMA_VERSION,
                TEMPLATE_POINTS,
            )
            assert vector_sample(rig.home / "straylight.duckdb", templates.sample_ids) == (
                templates.sample
            )
    print(f"migration: schema versions found after the kills: {versions}")
    assert landed >= kills, probe.replay_hint()


@pytest.mark.parametrize("kills", [FAST, SLOW])
def test_kill_the_tui_under_the_pilot(
    kills: int, rigs: list[CrashRig], tmp_path: Path, standin: OllamaStandIn, seed: int
) -> None:
    rig = new_rig(rigs, tmp_path / "tui", standin, seed, "tui")
    standin.token_delay = 0.01

    def start() -> tuple[object, list[str]]:
        texts = [random_text(rig.rng) for _ in range(3)]
        messages = rig.io / f"messages-{len(rig.trail)}.json"
        messages.write_text(json.dumps(texts), encoding="utf-8")
        standin.clear_replies()  # default replies: "Stand-in reply to: " + the message
        for text in texts:
            rig.known.texts.update((text, DEFAULT_REPLY_PREFIX + text[:200]))
        run = rig.start("tui", str(messages), label="tui", module="tests.reliability.crash_support")
        return run, texts

    # calibration: an uninterrupted session
    run, texts = start()
    began = time.monotonic()
    rig.finish(run)
    duration = time.monotonic() - began
    with rig.replayable():
        assert run.returncode == 0 and "closed" in run.stdout, (run.stdout, run.stderr)
    rig.note(f"calibration: a 3-message session takes {duration:.2f} s")
    expect_tui_turns(rig, run, texts)
    rig.verify(run, fresh_process=fresh(kills))
    attempts = 0
    while not kills_done(rig, kills, attempts):
        attempts += 1
        run, texts = start()
        rig.kill_when(run, lambda: True, rig.rng.uniform(0.2, duration), what="tui")
        expect_tui_turns(rig, run, texts)
        rig.verify(run, fresh_process=fresh(kills))
    assert rig.kills >= kills, rig.replay_hint()


def expect_tui_turns(rig: CrashRig, run: Run, texts: list[str]) -> None:
    for text in texts:
        rig.expect_turn(replace(run, user_text=text, reply_text=DEFAULT_REPLY_PREFIX + text[:200]))


# --------------------------------------------------------------------------- found by the loop


@pytest.mark.parametrize("cut", [1, 6])
def test_a_write_cut_inside_the_next_header_leaves_the_message_before_intact(
    tmp_path: Path, cut: int
) -> None:
    """A SIGKILL during `write()` ends it at a page boundary (Linux checks for a fatal signal
    before copying each page), so when the log's size is 4096·n − `cut`, a kill during the
    next append can leave just the first `cut` bytes of it ("#", "### us"). Only the message
    being written may be cut short (README, Daily logs); the one before it was committed."""
    from datetime import UTC, date, datetime

    from store.daily_log import DailyLog, LogMessage, format_message

    day, when = date(2031, 2, 3), datetime(2031, 2, 3, 4, 5, 6, tzinfo=UTC)
    log = DailyLog(tmp_path / "conversation")
    committed = LogMessage("assistant", "Paris.", conversation_id="c1", time=when, model="m")
    log.append(committed, day)
    cut_short = LogMessage("user", "And Spain?", conversation_id="c1", time=when, model="m")
    with log.path_for(day).open("ab") as handle:  # what the killed append left on disk
        handle.write(format_message(cut_short).encode()[:cut])
    log.append(LogMessage("user", "after the restart", conversation_id="c2", time=when), day)
    first = log.read_day(day)[0]
    assert (first.content, first.status) == ("Paris.", "complete")
