"""A data dir with no database yet: the memory is created at its first write (issue 18).

The stand-ins of memory/deferred_store.py answer the idle app's reads as a fresh store does,
without DuckDB; the first write opens the real store, and nothing it writes differs from an
eager start. In the app (pilot): no database and no jobs until the first turn; the turn's
points land in the database, the daily log, the word and vector index; other clients are
served meanwhile, and their writes create the database in the owning process.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from agent.ollama_gateway import OllamaGateway
from agent.settings import Settings
from agent.workspace import resolve_workspace
from memory.deferred_store import (
    DATABASE_FILE,
    OPENING_COROUTINES,
    DeferredMemory,
    empty_status,
)
from memory.fact_drawer import FactDrawer
from memory.memory_store import MemoryStore
from memory.turn_memory import TurnMemory
from store.data_dir_lock import DataDirLock
from store.database import DATABASE_FILENAME, database_path, open_database
from tests.support.cli import assert_ok, printed_json, run_cli, run_cli_process
from tests.support.cli import cli_env as client_env
from tests.support.ollama_standin import OllamaStandIn
from tests.support.pilot_helpers import type_text, wait_until
from tui.app import StraylightApp
from tui.memory_session import embedder_for
from tui.widgets.chat_message import ChatMessage, ChatNotice
from tui.widgets.status_sidebar import StatusSidebar

SIZE = (110, 32)
FACT = "My staging server for the blyck project is called nebula-7 and runs Debian 12"
REPLY = "Noted: blyck's staging server is nebula-7, running Debian 12. I will remember it."


def test_the_stand_in_knows_the_database_file_and_every_coroutine_of_turn_memory() -> None:
    assert DATABASE_FILE == DATABASE_FILENAME
    coroutines = {
        name
        for name, member in inspect.getmembers(TurnMemory, inspect.iscoroutinefunction)
        if not name.startswith("_")
    }
    assert coroutines == OPENING_COROUTINES


def test_the_stand_ins_know_which_attributes_of_the_real_objects_are_values(
    make_settings: Callable[..., Settings], standin: OllamaStandIn, tmp_path: Path
) -> None:
    """A value opens the memory when read; everything else is taken for a method (opened
    when called): a new attribute of the real objects must be named in `VALUES`."""
    settings = make_settings(ollama_host=standin.host)
    gateway = OllamaGateway(settings.ollama.host, read_timeout=5)
    real = Opener(settings, gateway)()
    other = make_settings(ollama_host=standin.host, home=str(tmp_path / "other"))
    stand_in = deferred(other, Opener(other, gateway))
    pairs = [
        (stand_in.store, real.store),
        (stand_in.facts, real.facts),
        (stand_in, real),
        (stand_in.hypotheses, real.hypotheses),
    ]
    try:
        for fake, actual in pairs:
            answered = set(vars(fake)) | set(vars(type(fake)))
            values = set(vars(actual)) | {
                name
                for name, member in inspect.getmembers(type(actual))
                if isinstance(member, property)
            }
            public = {name for name in values if not name.startswith("_")}
            assert public - answered <= type(fake).VALUES, type(fake).__name__
    finally:
        real.store.close()
    assert not (tmp_path / "other" / DATABASE_FILE).exists()


class Opener:
    """Opens a real memory for `home` and counts how often it was asked to."""

    def __init__(self, settings: Settings, gateway: OllamaGateway) -> None:
        self.settings, self.gateway, self.calls = settings, gateway, 0
        self.store: MemoryStore | None = None

    def __call__(self) -> TurnMemory:
        self.calls += 1
        s = self.settings
        self.store = MemoryStore.open(s.home, s.memory, clock=s.clock)
        facts = FactDrawer(self.store.db, resolve_workspace(s.workspace), s.facts)
        return TurnMemory(self.store, embedder_for(self.gateway, s.memory.embed_model), facts)


def deferred(settings: Settings, opener: Opener) -> DeferredMemory:
    return DeferredMemory(
        settings.home,
        settings.memory,
        resolve_workspace(settings.workspace),
        settings.facts,
        opener,
    )


async def test_reads_answer_as_a_fresh_store_and_the_first_write_opens_it_once(
    make_settings: Callable[..., Settings], standin: OllamaStandIn, tmp_path: Path
) -> None:
    settings = make_settings(ollama_host=standin.host)
    gateway = OllamaGateway(settings.ollama.host, read_timeout=5)
    opener = Opener(settings, gateway)
    memory = deferred(settings, opener)
    fresh = MemoryStore.open(tmp_path / "other", settings.memory, clock=settings.clock)
    try:
        assert memory.store.status() == fresh.status() == empty_status(settings.memory)
    finally:
        fresh.close()
    assert memory.store.recall("anything").hits == []
    assert memory.store.embed_dim is None
    assert memory.facts.counts() == {"active": 0, "stale": 0, "retired": 0}
    assert memory.facts.pending() == []
    assert memory.hypotheses.counts(settings.clock.now()) == {"open": 0, "overdue": 0}
    assert (opener.calls, database_path(settings.home).exists()) == (0, False)

    point_id = await asyncio.gather(memory.remember(FACT), memory.remember(FACT + " too"))
    assert opener.calls == 1 and memory.opened
    assert memory.store.status()["points"]["total"] == 2
    assert memory.store.texts_of(point_id) == {point_id[0]: FACT, point_id[1]: FACT + " too"}
    assert memory.facts.set("ferry:pier", "fact", "Pier four.").key == "ferry:pier"
    assert memory.facts.counts()["active"] == 1
    assert opener.calls == 1
    assert opener.store is not None
    opener.store.close()
    await gateway.aclose()


def test_a_database_made_elsewhere_is_read_by_the_next_read(
    make_settings: Callable[..., Settings], standin: OllamaStandIn, cli_env: Callable[..., dict]
) -> None:
    settings = make_settings(ollama_host=standin.host)
    gateway = OllamaGateway(settings.ollama.host, read_timeout=5)
    opener = Opener(settings, gateway)
    memory = deferred(settings, opener)
    assert memory.store.status()["points"]["total"] == 0
    assert_ok(run_cli(cli_env(OLLAMA_HOST=standin.host), "remember", FACT))
    assert memory.store.status()["points"]["total"] == 1  # opened by this read
    assert opener.calls == 1
    assert opener.store is not None
    opener.store.close()


# --- in the app ------------------------------------------------------------------------


def memory_line(app: StraylightApp) -> str:
    state = app.query_one(StatusSidebar).state
    return state.memory_line if state is not None else ""


async def test_a_new_data_dir_gets_its_database_and_jobs_at_the_first_turn(
    make_settings: Callable[..., Settings],
    standin: OllamaStandIn,
    home: Path,
    cli_env: Callable[..., dict],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    standin.script_reply(REPLY)
    app = StraylightApp(make_settings(ollama_host=standin.host))  # jobs on (the default)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: memory_line(app).startswith("0 points"), what="0 points")
        assert isinstance(app.engine.memory, DeferredMemory)
        assert app.scheduler is None and not database_path(home).exists()
        await type_text(pilot, FACT)
        await pilot.press("enter")
        await wait_until(
            pilot, lambda: memory_line(app).startswith("2 points"), what="2 points", timeout=15
        )
        assert isinstance(app.engine.memory, TurnMemory)
        await wait_until(pilot, lambda: app.scheduler is not None, what="the jobs")
        [user] = [m for m in app.query(ChatMessage) if m.role == "user"]
        await wait_until(pilot, lambda: user.point_id is not None, what="the message's point")
    env = cli_env(OLLAMA_HOST=standin.host)
    found = printed_json(
        await asyncio.to_thread(run_cli_process, env, "recall", "nebula-7", "--json")
    )
    assert {FACT, REPLY} <= {hit["content"] for hit in found["hits"]}
    day_logs = list((home / "conversation").glob("*.md"))
    assert day_logs and FACT in day_logs[0].read_text()
    with open_database(database_path(home), clock=app.settings.clock) as db, db.cursor() as cur:
        (vectors,) = cur.execute(
            "SELECT count(*) FROM points WHERE embedding IS NOT NULL"
        ).fetchone()
    assert vectors == 2
    assert (home / "vectors.usearch").exists()  # saved at close, as in an eager start
    assert "memory database opened at its first write" in caplog.text
    assert "on the event loop" not in caplog.text
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


async def test_a_data_dir_with_a_database_opens_it_at_start(
    make_settings: Callable[..., Settings], standin: OllamaStandIn, home: Path
) -> None:
    settings = make_settings(ollama_host=standin.host, jobs_enabled=False)
    open_database(database_path(home), clock=settings.clock).close()
    app = StraylightApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: memory_line(app).startswith("0 points"), what="0 points")
        assert isinstance(app.engine.memory, TurnMemory)
        assert app.memory_session is not None


class SlowOpeningApp(StraylightApp):
    """The app, its memory's open held until the test lets it go (an old store's upgrade or
    a big index takes seconds; a reply can end first)."""

    CSS_PATH = str(Path(inspect.getfile(StraylightApp)).with_name("app.tcss"))

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.open_allowed = threading.Event()

    def _open_session(self) -> TurnMemory:
        self.open_allowed.wait(30)
        return super()._open_session()


async def test_a_turn_that_ends_before_the_memory_opens_is_saved_once_it_opens(
    make_settings: Callable[..., Settings], standin: OllamaStandIn, home: Path
) -> None:
    settings = make_settings(ollama_host=standin.host, jobs_enabled=False)
    open_database(database_path(home), clock=settings.clock).close()
    standin.script_reply(REPLY)
    app = SlowOpeningApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        await type_text(pilot, FACT)
        await pilot.press("enter")
        await wait_until(
            pilot,
            lambda: any(m.role == "assistant" and REPLY in m.text for m in app.query(ChatMessage)),
            what="the reply",
        )
        assert app.engine.memory is None  # still opening
        app.open_allowed.set()
        await wait_until(pilot, lambda: memory_line(app).startswith("2 points"), what="2 points")
    with open_database(database_path(home), clock=settings.clock) as db, db.cursor() as cur:
        saved = {row[0] for row in cur.execute("SELECT content FROM points").fetchall()}
    assert saved == {FACT, REPLY}


async def test_other_clients_while_deferred_read_empty_and_their_write_opens_the_store(
    make_settings: Callable[..., Settings], standin: OllamaStandIn, home: Path, tmp_path: Path
) -> None:
    env = client_env(home, tmp_path, OLLAMA_HOST=standin.host, STRAYLIGHT_JOBS_ENABLED="false")
    settings = make_settings(ollama_host=standin.host, jobs_enabled=False)
    with DataDirLock(settings.home):  # as `straylight` takes it before the app starts
        app = StraylightApp(settings)
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.owner_server is not None, what="serving")
            # the worker serves before the app's loop has taken its MemoryOpened message
            await wait_until(
                pilot, lambda: isinstance(app.engine.memory, DeferredMemory), what="deferred"
            )
            status = await asyncio.to_thread(run_cli_process, env, "status", "--json")
            assert_ok(status)
            assert json.loads(status.stdout)["points"]["total"] == 0
            recalled = await asyncio.to_thread(run_cli_process, env, "recall", "x", "--json")
            assert json.loads(recalled.stdout)["hits"] == []
            assert not database_path(home).exists()
            saved = await asyncio.to_thread(run_cli_process, env, "remember", FACT)
            assert (saved.returncode, saved.stdout, saved.stderr) == (0, "remembered #1\n", "")
            await wait_until(pilot, lambda: memory_line(app).startswith("1 point"), what="1")
            await wait_until(pilot, lambda: isinstance(app.engine.memory, TurnMemory), what="open")


async def test_a_first_open_that_fails_is_named_and_the_chat_goes_on_without_memory(
    make_settings: Callable[..., Settings], standin: OllamaStandIn, home: Path
) -> None:
    standin.script_reply(REPLY)
    app = StraylightApp(make_settings(ollama_host=standin.host, jobs_enabled=False))
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: memory_line(app).startswith("0 points"), what="0 points")
        (home / DATABASE_FILE).mkdir(mode=0o700)  # no database can be opened there
        await type_text(pilot, FACT)  # typing starts the open
        await wait_until(pilot, lambda: app.engine.memory is None, what="the failed open")
        assert memory_line(app).startswith("unavailable:")
        state = app.query_one(StatusSidebar).state
        assert state is not None and state.facts_line == "unavailable"  # not "opening…" for ever
        await pilot.press("enter")
        await wait_until(
            pilot,
            lambda: [m.status for m in app.query(ChatMessage)] == ["complete", "complete"],
            what="the reply, without memory",
        )
        notices = [str(n.render()) for n in app.query(ChatNotice)]
        assert any("Memory is not available" in n for n in notices)


async def test_a_job_run_by_hand_on_a_new_data_dir_opens_the_memory_first(
    make_settings: Callable[..., Settings], standin: OllamaStandIn, home: Path
) -> None:
    app = StraylightApp(make_settings(ollama_host=standin.host, jobs_enabled=False))
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: memory_line(app).startswith("0 points"), what="0 points")
        app.run_job_now("dream", announce=True)  # as /dream, before anything was typed
        await wait_until(
            pilot,
            lambda: any(str(n.render()).startswith("dream:") for n in app.query(ChatNotice)),
            what="the dream's answer",
        )
        assert isinstance(app.engine.memory, TurnMemory)
        assert database_path(home).exists()


@pytest.mark.parametrize(
    ("key", "screen"),
    [
        ("f2", "MemoryBrowserScreen"),
        ("f3", "FactsScreen"),
        ("f4", "CandidatesScreen"),
        ("f5", "HypothesesScreen"),
    ],
)
async def test_a_memory_screen_on_a_new_data_dir_opens_no_database_on_the_event_loop(
    make_settings: Callable[..., Settings],
    standin: OllamaStandIn,
    caplog: pytest.LogCaptureFixture,
    key: str,
    screen: str,
) -> None:
    """F3 and F5 before the first turn read `drawer.db` while the screen was built: DuckDB's
    import and the new database's schema ran on the event loop (the UI froze ~1 s)."""
    caplog.set_level(logging.INFO)
    app = StraylightApp(make_settings(ollama_host=standin.host, jobs_enabled=False))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: memory_line(app).startswith("0 points"), what="0 points")
        await pilot.press(key)
        await wait_until(pilot, lambda: type(app.screen).__name__ == screen, what=screen)
        await pilot.pause(0.5)
    assert "on the event loop" not in caplog.text
