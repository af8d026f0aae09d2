"""The background jobs with the injected clock: each job's effect, catch-up after a week of
downtime, and the scheduler starting and stopping with the app (pilot) without errors."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agent.ollama_gateway import OllamaGateway
from agent.settings import Settings
from jobs.background_jobs import JOBS, JobContext
from jobs.runner import JobRunner, next_at_hour
from memory.dream import CardDraft
from memory.fact_drawer import FactDrawer
from memory.hypotheses import Hypotheses
from memory.memory_store import MemoryStore
from memory.turn_memory import TurnMemory
from store.database import database_path, open_database
from store.point_store import PointStore
from tests.support.ollama_standin import OllamaStandIn
from tests.support.pilot_helpers import wait_until
from tests.test_cli_memory import assert_ok, make_env, run_cli
from tests.test_dream import add_twelve_related_points
from tui.app import StraylightApp
from tui.memory_session import embedder_for

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


class Memory:
    """A store, drawer and runner at one instant; `at(t)` reopens at another (as after
    downtime)."""

    def __init__(self, make_settings: Callable[..., Settings], host: str) -> None:
        self.make_settings = make_settings
        self.host = host
        self.store: MemoryStore | None = None

    def at(self, when: datetime, **overrides: object) -> JobRunner:
        self.close()
        settings = self.make_settings(ollama_host=self.host, now=when.isoformat(), **overrides)
        self.settings = settings
        gateway = OllamaGateway(
            settings.ollama.host, read_timeout=5, num_ctx=settings.ollama.num_ctx
        )
        self.store = MemoryStore.open(settings.home, settings.memory, clock=settings.clock)
        self.drawer = FactDrawer(self.store.db, "demo", settings.facts)
        memory = TurnMemory(
            self.store, embedder_for(gateway, settings.memory.embed_model), self.drawer
        )
        self.memory = memory
        return JobRunner(JobContext(settings, memory, gateway, settings.ollama.model))

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
            self.store = None


@pytest.fixture
def mem(make_settings: Callable[..., Settings], standin: OllamaStandIn) -> Iterator[Memory]:
    m = Memory(make_settings, standin.host)
    yield m
    m.close()


async def test_every_job_runs_and_is_recorded(mem: Memory) -> None:
    runner = mem.at(T0)
    for name in JOBS:
        result = await runner.run(name)
        assert result.status in ("ok", "skipped"), (name, result)
    infos = {info.name: info for info in runner.infos()}
    assert set(infos) == set(JOBS)
    assert all(info.last_run == T0 for info in infos.values())
    assert infos["decay"].next_run == T0 + timedelta(days=1)
    assert infos["memstatus"].next_run == T0 + timedelta(minutes=10)


async def test_catch_up_after_a_week_of_downtime(mem: Memory) -> None:
    runner = mem.at(T0)
    for name in JOBS:
        await runner.run(name)
    soon = mem.at(T0 + timedelta(seconds=30))
    assert soon.due() == ["overdue-hypotheses"]  # only the start-up job
    later = mem.at(T0 + timedelta(days=7))
    assert set(later.due()) == set(JOBS)  # everything was missed, the dream's hour too
    for name in later.due():
        await later.run(name)
    assert mem.at(T0 + timedelta(days=7, seconds=30)).due() == ["overdue-hypotheses"]


def test_the_dream_is_due_at_its_local_hour() -> None:
    after = datetime(2026, 6, 1, 1, 0, tzinfo=UTC)
    first = next_at_hour(after, 3)
    assert first > after and first.astimezone().hour == 3
    assert next_at_hour(first, 3) == first + timedelta(days=1)


async def test_decay_job_makes_an_unseen_decision_stale(mem: Memory) -> None:
    runner = mem.at(T0)
    mem.drawer.set("db:engine", "decision", "We chose Postgres.")
    mem.drawer.set("deploy:blyck", "capability", "This PC deploys blyck.")
    later = mem.at(T0 + timedelta(days=90))
    result = await later.run("decay")
    assert result.data["stale"] == ["db:engine"]
    statuses = {f.key: f.status for f in mem.drawer.list_facts()}
    assert statuses == {"db:engine": "stale", "deploy:blyck": "active"}
    assert runner is not later


async def test_memstatus_announces_an_escalation_once(mem: Memory) -> None:
    runner = mem.at(T0, memory_ram_warn_bytes=1, memory_ram_crit_bytes=10**12)
    await mem.memory.remember("A pinned note that takes some room in the memory.")
    first = await runner.run("memstatus")
    assert first.data["headroom"] == "warn" and len(first.notices) == 1
    assert "warn" in first.notices[0].text.lower()
    second = await runner.run("memstatus")
    assert second.notices == []  # never twice in a row for the same level
    critical = mem.at(T0, memory_ram_warn_bytes=1, memory_ram_crit_bytes=2)
    third = await critical.run("memstatus")
    assert len(third.notices) == 1 and third.notices[0].level == "error"


async def test_backfill_after_ollama_comes_back(mem: Memory, standin: OllamaStandIn) -> None:
    runner = mem.at(T0)
    await mem.memory.remember("A pin saved while the embedding model answered.")
    standin.stop()
    await mem.memory.remember("A pin saved while Ollama was down, without a vector.")
    assert mem.store is not None and mem.store.points.counts()["without_vector"] == 1
    down = await runner.run("backfill")
    assert down.status == "skipped" and "not reachable" in down.summary
    standin.start()
    up = await runner.run("backfill")
    assert up.status == "ok" and up.data["embedded"] == 1
    assert mem.store.points.counts()["without_vector"] == 0
    assert (await runner.run("backfill")).status == "skipped"


async def test_index_upkeep_reconciles_and_saves(mem: Memory) -> None:
    runner = mem.at(T0)
    await mem.memory.remember("One pinned note with a vector in the index.")
    result = await runner.run("index-upkeep")
    assert result.status == "ok" and result.data["saved"] is True
    assert (mem.settings.home / "vectors.usearch").is_file()
    again = await runner.run("index-upkeep")
    assert again.data["saved"] is False


async def test_index_upkeep_on_a_memory_without_vectors_says_so_in_words(mem: Memory) -> None:
    result = await mem.at(T0).run("index-upkeep")
    assert result.status == "ok" and result.data["state"] == "none"
    assert result.summary == "no vector index yet: no point has a vector"


async def test_bindings_job_names_the_procedure_and_the_broken_binding(mem: Memory) -> None:
    runner = mem.at(T0)
    mem.drawer.set(
        "deploy:blyck",
        "procedure",
        "npm run dist, then aws s3 cp.",
        requires=["aws:credentials", "build:npm"],
    )
    mem.drawer.set("build:npm", "capability", "npm run dist builds blyck.")
    result = await runner.run("bindings")
    assert len(result.notices) == 1
    assert "deploy:blyck" in result.notices[0].text and "aws:credentials" in result.notices[0].text


async def test_overdue_hypotheses_alert_once_a_day(mem: Memory) -> None:
    runner = mem.at(T0)
    assert mem.store is not None
    draft = CardDraft(
        statement="Saves get slower when the word index is large.",
        source_ids=("fact:1", "point:2"),
        prediction="save p95 grows above 5 ms at 200k points",
        measurement="run bench.memory_scale at 200k points",
    )
    Hypotheses(mem.store.db).create(draft, workspace="demo", reason="")
    assert (await runner.run("overdue-hypotheses")).notices == []
    late = mem.at(T0 + timedelta(days=14))
    first = await late.run("overdue-hypotheses")
    assert len(first.notices) == 1 and first.data == {"open": 1, "overdue": 1}
    # a toast in the chat, a stderr line in the shell: it names the way to act in both
    assert (
        "/hypotheses" in first.notices[0].text and "straylight hypotheses" in first.notices[0].text
    )
    assert (await late.run("overdue-hypotheses")).notices == []  # once per card per day
    next_day = mem.at(T0 + timedelta(days=15))
    assert len((await next_day.run("overdue-hypotheses")).notices) == 1


async def test_a_failing_job_is_recorded_not_raised(mem: Memory, standin: OllamaStandIn) -> None:
    """The dream's model call fails (HTTP 500): recorded as `skipped` with the reason, as
    backfill is without Ollama (it said `ok`, so `jobs list` and a cron job saw no outage)."""
    runner = mem.at(T0)
    mem.drawer.set("a:b", "fact", "One fact about alpha beta.")
    mem.drawer.set("a:c", "fact", "Another fact about alpha gamma.")
    standin.fail_next("status", status=500, path="/api/chat")
    result = await runner.run("dream")
    assert result.status == "skipped" and result.summary.startswith("no card: model call failed")
    assert [i.last_status for i in runner.infos() if i.name == "dream"] == ["skipped"]
    result = await runner.run("dream")  # Ollama answers again: a run judged is `ok`
    assert result.status == "ok", result


async def test_a_dream_whose_window_holds_no_two_memories_is_skipped(
    mem: Memory, standin: OllamaStandIn
) -> None:
    """`num_ctx` 1,024 and memories of ~400 characters: no request is sent, and the run is
    `skipped` with the reason (it said `ok` every night, so `jobs list` never showed that
    the dream cannot run with this window); with room, the same memories are judged."""
    runner = mem.at(T0, num_ctx=1024)
    assert mem.store is not None
    add_twelve_related_points(PointStore(mem.store.db))
    result = await runner.run("dream")
    assert result.status == "skipped", result
    assert result.summary == (
        "no card: the model's 1,024-token window is too small for two memories"
    )
    assert [i.last_status for i in runner.infos() if i.name == "dream"] == ["skipped"]
    assert standin.chat_requests() == []
    roomy = mem.at(T0, num_ctx=4096)
    assert (await roomy.run("dream")).status == "ok"
    assert len(standin.chat_requests()) == 1


# --- the scheduler inside the app ------------------------------------------------------------


async def test_the_scheduler_starts_and_stops_with_the_app(
    settings: Settings, standin: OllamaStandIn, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    open_database(database_path(settings.home), clock=settings.clock).close()  # (a new data
    # dir's jobs start with its database, at the first write: tests/test_deferred_memory.py)
    app = StraylightApp(settings)
    async with app.run_test(size=(110, 32)) as pilot:
        await wait_until(pilot, lambda: app.scheduler is not None, what="scheduler")
        scheduler = app.scheduler
        assert scheduler is not None and scheduler.started
        assert scheduler.next_run("memstatus") is not None
        await wait_until(pilot, lambda: "catching up" in caplog.text, what="the start-up catch-up")
    assert not scheduler.started
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == [], [r.getMessage() for r in errors]
    assert "was missed" not in caplog.text


def test_jobs_from_the_shell(tmp_path: Path, standin: OllamaStandIn) -> None:
    env = make_env(tmp_path / "home", tmp_path, standin)
    proc = run_cli(env, "jobs", "run", "decay", "--json")
    assert_ok(proc)
    ran = json.loads(proc.stdout)
    assert (ran["name"], ran["status"]) == ("decay", "ok")
    proc = run_cli(env, "jobs", "list", "--json")
    assert_ok(proc)
    listed = {job["name"]: job for job in json.loads(proc.stdout)}
    assert set(listed) == set(JOBS)
    assert set(listed["decay"]) >= {"name", "last_run", "next_run", "last_result"}
    assert listed["decay"]["last_run"] is not None and listed["memstatus"]["last_run"] is None
    table = run_cli(env, "jobs", "list")
    assert_ok(table)
    lines = table.stdout.splitlines()
    assert len(lines) == len(JOBS) and all(line == line.rstrip() for line in lines), lines
    assert any(line.startswith("memstatus") and "last never" in line for line in lines)


def test_ask_prints_one_memstatus_line_on_escalation_only(
    tmp_path: Path, standin: OllamaStandIn
) -> None:
    env = make_env(
        tmp_path / "home",
        tmp_path,
        standin,
        MEMORY_STATUS_EVERY_N="1",
        MEMORY_RAM_WARN_BYTES="1",
    )
    standin.script_reply("A reply long enough to be saved as a point of its own, surely.")
    first = run_cli(env, "ask", "Tell me something worth remembering about the blyck project.")
    assert_ok(first)
    assert "past the warn line" in first.stderr
    assert "straylight status" in first.stderr  # a command the shell has, not only /memstatus
    standin.script_reply("Another reply that is long enough to be kept as a point too.")
    second = run_cli(env, "ask", "And one more thing worth remembering about the blyck project?")
    assert_ok(second)
    assert "past the warn line" not in second.stderr  # never twice in a row


def test_status_reports_hypotheses(tmp_path: Path, standin: OllamaStandIn) -> None:
    env = make_env(tmp_path / "home", tmp_path, standin)
    assert_ok(run_cli(env, "remember", "A pin so that the database exists."))
    proc = run_cli(env, "status", "--json")
    assert_ok(proc)
    assert json.loads(proc.stdout)["hypotheses"] == {"open": 0, "overdue": 0}
    listed = run_cli(env, "hypotheses", "list", "--json")
    assert_ok(listed)
    assert json.loads(listed.stdout) == []


def test_the_first_turn_warns_even_when_its_points_are_filtered_out(
    tmp_path: Path, standin: OllamaStandIn
) -> None:
    """Issue 16: an empty store read ~0.0 MiB, so with MEMORY_RAM_WARN_BYTES=1 the first warning
    came a turn late. An open memory has a fixed cost: the first turn's check warns."""
    env = make_env(
        tmp_path / "home", tmp_path, standin, MEMORY_STATUS_EVERY_N="1", MEMORY_RAM_WARN_BYTES="1"
    )
    standin.script_reply("Hi.")  # too short for the save filter: no point is stored
    first = run_cli(env, "ask", "Hi")
    assert_ok(first)
    assert "past the warn line" in first.stderr


def test_a_job_run_from_the_shell_says_it_ran_without_a_level_word(
    tmp_path: Path, standin: OllamaStandIn
) -> None:
    """`memstatus: ok: headroom critical` read as if "ok" were the headroom level."""
    env = make_env(tmp_path / "home", tmp_path, standin, MEMORY_RAM_WARN_BYTES="1")
    proc = run_cli(env, "jobs", "run", "memstatus")
    assert proc.returncode == 0, proc.stderr
    line = proc.stdout.strip()
    assert line.startswith("memstatus ran: ") and "ok" not in line.split(":")[0], line


async def test_the_start_up_catch_up_reads_the_job_runs_off_the_event_loop(
    settings: Settings,
    standin: OllamaStandIn,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """`JobScheduler.start` read the `job_runs` table (DuckDB) on the event loop: behind a
    save's write lock or a cache drop, the chat froze at start."""
    import threading

    threads: list[threading.Thread] = []
    due = JobRunner.due

    def watched_due(self: JobRunner) -> list[str]:
        threads.append(threading.current_thread())
        return due(self)

    monkeypatch.setattr(JobRunner, "due", watched_due)
    open_database(database_path(settings.home), clock=settings.clock).close()
    app = StraylightApp(settings)
    caplog.set_level(logging.INFO)
    async with app.run_test(size=(110, 32)) as pilot:
        await wait_until(pilot, lambda: "catching up" in caplog.text, what="the catch-up")
    assert threads and threading.main_thread() not in threads
