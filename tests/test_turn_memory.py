"""The turn with layer 3: recall into the prompt, two points saved after, ≤ 2 embeddings."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agent.ollama_gateway import OllamaGateway
from agent.settings import Settings
from agent.turn import TurnEngine
from agent.turn_events import AfterTurnEvent, MemstatusDue, PointsSaved, Recalled, ReplyFinished
from memory.memory_store import MemoryStore
from memory.turn_memory import TurnMemory
from store.clock import parse_instant
from tests.support.ollama_standin import OllamaStandIn
from tui.memory_session import embedder_for

FACT = "My staging server for the blyck project is called nebula-7 and runs Debian 12"
REPLY = "Noted: blyck's staging server is nebula-7, running Debian 12. I will remember it."


@pytest.fixture
def engine(settings: Settings, standin: OllamaStandIn) -> Iterator[TurnEngine]:
    gateway = OllamaGateway(settings.ollama.host, read_timeout=5)
    store = MemoryStore.open(settings.home, settings.memory, clock=settings.clock)
    memory = TurnMemory(store, embedder_for(gateway, settings.memory.embed_model))
    yield TurnEngine(settings, gateway, memory)
    store.close()


def embed_requests(standin: OllamaStandIn) -> int:
    return sum(1 for r in standin.requests if r.path == "/api/embed")


async def turn(engine: TurnEngine, text: str, conversation: str) -> list[object]:
    events = [e async for e in engine.run(text, conversation_id=conversation, model="llama3.2")]
    await engine.drain()
    return events


async def test_a_turn_saves_two_points_with_at_most_two_embeddings(
    engine: TurnEngine, standin: OllamaStandIn
) -> None:
    standin.script_reply(REPLY)
    before = embed_requests(standin)
    events = await turn(engine, FACT, "first")
    assert isinstance(events[-1], ReplyFinished)
    assert embed_requests(standin) - before <= 2
    store = engine.memory.store  # type: ignore[union-attr]
    counts = store.points.counts()
    assert (counts["user"], counts["assistant"], counts["without_vector"]) == (1, 1, 0)
    assert store.status()["embed_requests"] == embed_requests(standin)


async def test_a_later_conversation_recalls_it_into_the_system_prompt(
    engine: TurnEngine, standin: OllamaStandIn
) -> None:
    standin.script_reply(REPLY)
    await turn(engine, FACT, "first")
    standin.clear_requests()
    events = await turn(engine, "What is the name of the blyck staging server again?", "second")
    recalled = [e for e in events if isinstance(e, Recalled)]
    assert recalled and any("nebula-7" in hit.content for hit in recalled[0].result.hits)
    system = standin.chat_requests()[-1]["messages"][0]["content"]
    assert "## Recalled context" in system and "> My staging server" in system


async def test_history_is_not_recalled_twice(engine: TurnEngine, standin: OllamaStandIn) -> None:
    standin.script_reply(REPLY)
    await turn(engine, FACT, "same")
    await turn(engine, "And which Debian version runs on the blyck staging server?", "same")
    system = standin.chat_requests()[-1]["messages"][0]["content"]
    assert "> My staging server for the blyck project" not in system  # it is in the history


async def test_ollama_down_while_saving_then_backfill(
    engine: TurnEngine, standin: OllamaStandIn
) -> None:
    standin.script_reply(REPLY)
    standin.fail_next("status", status=500, path="/api/embed", count=None)
    await turn(engine, FACT, "first")
    store = engine.memory.store  # type: ignore[union-attr]
    assert store.points.counts()["without_vector"] == 2
    # Recall still works, by words.
    hits = store.recall("nebula-7 staging server").hits
    assert any("nebula-7" in hit.content for hit in hits)
    standin.clear_faults()
    assert await engine.memory.backfill() == 2  # type: ignore[union-attr]
    assert store.points.counts()["without_vector"] == 0
    assert store.index_state() == ("in_sync", 2)


async def test_secrets_never_reach_the_log_or_the_store(
    engine: TurnEngine, standin: OllamaStandIn, settings: Settings
) -> None:
    secret = "postgres://app:S3cretPassw0rd@db.internal:5432/blyck"
    standin.script_reply("Connected fine to the database with that connection string, thanks.")
    await turn(engine, f"Please remember that our database url is {secret} for later", "c")
    log_text = "".join(p.read_text() for p in (settings.home / "conversation").glob("*.md"))
    assert "S3cretPassw0rd" not in log_text and "[REDACTED:password]" in log_text
    store = engine.memory.store  # type: ignore[union-attr]
    assert all("S3cretPassw0rd" not in p.content for p in store.points.list_points())
    assert "S3cretPassw0rd" not in str(standin.chat_requests()[-1]["messages"])


async def test_recall_failure_is_fail_soft(engine: TurnEngine, standin: OllamaStandIn) -> None:
    store = engine.memory.store  # type: ignore[union-attr]

    def broken(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("disk on fire")

    store.recall = broken  # type: ignore[method-assign]
    events = await turn(engine, "Does the turn survive a broken recall at all, really?", "c")
    assert isinstance(events[-1], ReplyFinished)
    assert store.status()["recall_failures"] == 1


async def test_ingest_is_idempotent_and_costs_nothing_when_unchanged(
    engine: TurnEngine, standin: OllamaStandIn, tmp_path: Path
) -> None:
    doc = tmp_path / "LESSONS.md"
    doc.write_text(
        "# Lessons\nWhat we learnt.\n\n## Timeouts\nslow calls\n\n## Parser\nanchored headers\n"
    )
    memory = engine.memory
    assert memory is not None
    first = await memory.ingest_doc(doc)
    assert (first.added, first.unchanged, first.removed) == (3, 0, 0)
    before = embed_requests(standin)
    second = await memory.ingest_doc(doc)
    assert (second.added, second.updated, second.unchanged, second.embed_requests) == (0, 0, 3, 0)
    assert embed_requests(standin) == before
    doc.write_text(
        "# Lessons\nWhat we learnt.\n\n## Timeouts\nslow calls time out\n\n## Dates\nUTC\n"
    )
    third = await memory.ingest_doc(doc)
    assert (third.added, third.updated, third.unchanged, third.removed) == (1, 1, 1, 1)
    docs = memory.store.points.list_points(role="doc")
    assert len(docs) == 3 and all(p.pinned for p in docs)


async def test_the_background_save_reports_the_point_ids_and_when_memstatus_is_due(
    engine: TurnEngine, standin: OllamaStandIn
) -> None:
    engine.settings = engine.settings.model_copy(
        update={"memory": engine.settings.memory.model_copy(update={"status_every_n": 2})}
    )
    heard: list[AfterTurnEvent] = []
    engine.after_turn = heard.append
    standin.script_reply(REPLY)
    events = await turn(engine, FACT, "first")
    finished = next(e for e in events if isinstance(e, ReplyFinished))
    saved = [e for e in heard if isinstance(e, PointsSaved)]
    assert len(saved) == 1 and saved[0].turn == finished.turn
    store = engine.memory.store  # type: ignore[union-attr]
    by_role = {p.role: p.id for p in store.points.iter_points()}
    assert (saved[0].user_point_id, saved[0].reply_point_id) == (
        by_role["user"],
        by_role["assistant"],
    )
    assert not any(isinstance(e, MemstatusDue) for e in heard)  # 1 turn of 2
    standin.script_reply("Second answer, on another subject: the weather in Lisbon is mild.")
    await turn(engine, "How is the weather in Lisbon these days, roughly?", "first")
    assert [e.turns for e in heard if isinstance(e, MemstatusDue)] == [2]


async def test_the_users_text_is_scanned_for_secrets_once_per_turn(
    engine: TurnEngine, standin: OllamaStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Masked where it enters the turn; the log, the points, the classifier and the prompt
    reuse that text (the scan is the expensive part: ~4.5 ms per 100 KB)."""
    import memory.secret_masking as masking

    text = FACT + " and the deploy token is ghp_ZZZZYYYYXXXXWWWWVVVVUUUUTTTTSSSSRRRR"
    scanned: list[str] = []
    real = masking.find_secrets

    def counting(value: str) -> list[masking.SecretMatch]:
        scanned.append(value)
        return real(value)

    monkeypatch.setattr(masking, "find_secrets", counting)
    standin.script_reply(REPLY)
    await turn(engine, text, "once")
    assert sum(1 for value in scanned if "nebula-7 and runs Debian 12 and" in value) == 1
    store = engine.memory.store  # type: ignore[union-attr]
    saved = store.texts_of([row.id for row in store.points.page_rows(limit=5)])
    assert any("[REDACTED:" in t and "ghp_" not in t for t in saved.values())


async def test_a_point_is_found_by_the_words_of_the_message_two_turns_back(
    engine: TurnEngine, standin: OllamaStandIn
) -> None:
    standin.script_reply("The Orsay is a fine pick, go early in the morning.")
    await turn(engine, "Which museum should I visit in Paris next week?", "trip")
    standin.script_reply("Enjoy the day out, and take the metro there.")
    answer = "Booked the tickets for Tuesday morning with my sister and her two kids."
    await turn(engine, answer, "trip")
    store = engine.memory.store  # type: ignore[union-attr]
    hits = store.recall("museum in Paris", k=10, mode="lexical").hits
    assert answer in [hit.content for hit in hits]  # only its earlier neighbour says "museum"


async def test_the_prompt_holds_the_turns_around_a_recalled_hit(
    make_settings: Callable[..., Settings], standin: OllamaStandIn
) -> None:
    """One hit (`MEMORY_TOP_K` 1) brings the turns next to it into the block, not into the
    hits (search and the sidebar show ranked hits only)."""
    settings = make_settings(ollama_host=standin.host, memory_top_k=1)
    gateway = OllamaGateway(settings.ollama.host, read_timeout=5)
    store = MemoryStore.open(settings.home, settings.memory, clock=settings.clock)
    try:
        engine = TurnEngine(
            settings, gateway, TurnMemory(store, embedder_for(gateway, settings.memory.embed_model))
        )
        standin.script_reply("Lovely! Which of the museums in Paris was it in the end?")
        await turn(engine, "I finally went to the big museum in Paris last weekend", "trip")
        standin.script_reply("The Orsay is a fine choice; the station building alone is worth it.")
        await turn(
            engine, "It was the Orsay, and the room with the Van Gogh paintings was packed", "trip"
        )
        standin.clear_requests()
        events = await turn(engine, "Which museum did I visit in Paris?", "later")
        result = next(e for e in events if isinstance(e, Recalled)).result
        assert len(result.hits) == 1 and result.around
        system = standin.chat_requests()[-1]["messages"][0]["content"]
        for hit in result.in_block():
            assert hit.content.splitlines()[0] in system
        assert "Van Gogh paintings" in system and "big museum in Paris" in system
    finally:
        store.close()


class Notices:
    """The chat's `notice` callback, recording (text, kind)."""

    def __init__(self) -> None:
        self.said: list[tuple[str, str]] = []

    async def __call__(self, text: str, kind: str = "info") -> None:
        self.said.append((text, kind))


async def slash_commands(
    settings: Settings, commands: list[tuple[str, str]]
) -> tuple[list[list[tuple[str, str]]], dict[str, int]]:
    """Run the chat's memory slash commands on a fresh store, as the chat does; each
    command's (text, kind) notices, and the store's point counts at the end."""
    from tui.memory_commands import run_memory_command

    gateway = OllamaGateway(settings.ollama.host, read_timeout=5)
    store = MemoryStore.open(settings.home, settings.memory, clock=settings.clock)
    said: list[list[tuple[str, str]]] = []
    try:
        memory = TurnMemory(store, embedder_for(gateway, settings.memory.embed_model))
        for command, argument in commands:
            record = Notices()
            await run_memory_command(memory, "", command, argument, record)
            said.append(record.said)
        counts = store.points.counts()
    finally:
        store.close()
    return said, counts


OFF = "memory is off (memory_enabled = false)"


@pytest.mark.parametrize("enabled", [True, False])
async def test_slash_remember_with_memory_off_says_the_pin_is_not_recalled(
    make_settings: Callable[..., Settings], standin: OllamaStandIn, enabled: bool
) -> None:
    """`/remember` stores the pin either way (an explicit request); with memory off its
    notice says it will not reach a prompt until memory is on (as `remember` says)."""
    settings = make_settings(ollama_host=standin.host, memory_enabled=enabled)
    [[(text, kind), *_]], counts = await slash_commands(settings, [("/remember", FACT)])
    assert counts["pinned"] == 1
    assert text.startswith("Remembered #1 (pinned).")
    assert (OFF in text, kind) == ((True, "warning") if not enabled else (False, "info"))


@pytest.mark.parametrize("enabled", [True, False])
async def test_slash_recall_with_memory_off_says_nothing_reaches_the_prompt(
    make_settings: Callable[..., Settings], standin: OllamaStandIn, enabled: bool
) -> None:
    """`/recall` shows what is stored either way; with memory off it says none of it reaches
    a prompt (as `straylight recall` does), instead of looking like a working memory."""
    settings = make_settings(ollama_host=standin.host, memory_enabled=enabled)
    commands = [("/remember", FACT), ("/recall", "staging server blyck")]
    [_, recalled], _ = await slash_commands(settings, commands)
    assert recalled and recalled[0][0].startswith("Recalled:\n#1 ")
    said = [(kind, OFF in text) for text, kind in recalled if OFF in text]
    assert said == ([] if enabled else [("warning", True)])


async def test_slash_recall_dates_a_hit_by_its_local_day(
    make_settings: Callable[..., Settings], standin: OllamaStandIn, monkeypatch
) -> None:
    """`/recall` printed the UTC day: at 21:04 UTC a memory made at 11:04 on the 30th in
    UTC+14 read "2026-11-29", a day the browser and `recall --json` do not give it."""
    import time

    monkeypatch.setenv("TZ", "Etc/GMT-14")  # (POSIX sign: UTC+14)
    time.tzset()
    settings = make_settings(ollama_host=standin.host).model_copy(
        update={"now": parse_instant("2026-11-29T21:04:38Z")}
    )
    commands = [("/remember", FACT), ("/recall", "staging server blyck")]
    [_, recalled], _ = await slash_commands(settings, commands)
    assert recalled[0][0].startswith("Recalled:\n#1 · user · 2026-11-30 · ")


async def test_slash_import_names_a_folder_and_takes_a_quoted_path(
    make_settings: Callable[..., Settings], standin: OllamaStandIn, tmp_path: Path
) -> None:
    """`/import DIR` said "No such file: DIR"; a path pasted with quotes (as `/image` takes
    it) was looked up with its quotes."""
    settings = make_settings(ollama_host=standin.host)
    doc = tmp_path / "my notes" / "deploy notes.md"
    doc.parent.mkdir()
    doc.write_text("# Deploy\n\nnpm run dist, then aws s3 cp to the bucket.\n")
    commands = [("/import", str(doc.parent)), ("/import", f"'{doc}'")]
    [[folder], imported], counts = await slash_commands(settings, commands)
    assert folder == (f"Cannot import: {doc.parent} is a directory, not a Markdown file", "error")
    assert imported[-1][0].startswith(f"Imported {doc}: ")
    assert counts["doc"] == 1


async def test_slash_recall_without_the_query_vector_says_it_matched_words_only(
    make_settings: Callable[..., Settings], standin: OllamaStandIn
) -> None:
    """Ollama away: `/recall` listed word matches as if recall were whole; the browser and
    `straylight recall` say "words only" and why."""
    settings = make_settings(ollama_host=standin.host)
    standin.stop()
    commands = [("/remember", FACT), ("/recall", "staging server blyck"), ("/recall", "zebra")]
    [_, [(found, _)], [(nothing, _)]], _ = await slash_commands(settings, commands)
    assert found.startswith("Recalled (words only: Ollama is not reachable at ")
    assert "\n#1 · user · " in found
    assert nothing.startswith("Nothing recalled. (words only: Ollama is not reachable at ")


async def test_slash_memstatus_counts_one_point_in_the_singular(
    make_settings: Callable[..., Settings], standin: OllamaStandIn
) -> None:
    """`/memstatus` on a store of one pin says "1 point" and "1 embedding request", as
    `straylight status` does (it said "1 points")."""
    settings = make_settings(ollama_host=standin.host)
    [_, [(line, _kind)]], _ = await slash_commands(
        settings, [("/remember", FACT), ("/memstatus", "")]
    )
    assert line.startswith("Memory: 1 point (1 pinned, 0 without vector)"), line
    assert "· 1 embedding request" in line and "1 embedding requests" not in line


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (TimeoutError(), "the embedding request timed out"),
        (ConnectionRefusedError(), "Ollama was not reachable"),
        (ValueError("odd"), "the embedding request failed (ValueError; details in"),
    ],
)
async def test_an_embedder_error_it_did_not_name_is_worded_by_what_it_is(
    settings: Settings, error: Exception, said: str
) -> None:
    """A timeout is never reported as an unreachable Ollama, nor an unknown error as one."""

    async def failing(texts: object) -> list[list[float]]:
        raise error

    store = MemoryStore.open(settings.home, settings.memory, clock=settings.clock)
    try:
        memory = TurnMemory(store, failing)
        assert await memory.embed_one("the office wifi is lighthouse-5g") is None
        assert memory.embed_problem is not None and memory.embed_problem.startswith(said)
    finally:
        store.close()


def closed_port_host() -> str:
    """An address on 127.0.0.1 where nothing listens (a port bound, then let go)."""
    from tests.support.ports import closed_port

    return f"http://127.0.0.1:{closed_port()}"


async def test_an_embedding_request_that_found_no_ollama_is_not_counted(
    settings: Settings, standin: OllamaStandIn
) -> None:
    """`status`'s `embed_requests` counts requests Ollama got: one refused by Ollama (a model
    not pulled) counts, one that found no connection (Ollama down) does not."""
    store = MemoryStore.open(settings.home, settings.memory, clock=settings.clock)
    try:
        down = TurnMemory(
            store, embedder_for(OllamaGateway(closed_port_host()), "nomic-embed-text")
        )
        assert await down.embed_texts(["the staging host is nebula-7"]) is None
        assert down.embed_problem is not None and "not reachable" in down.embed_problem
        assert store.status()["embed_requests"] == 0
        gateway = OllamaGateway(settings.ollama.host, read_timeout=5)
        not_pulled = TurnMemory(store, embedder_for(gateway, "no-such-embedder"))
        assert await not_pulled.embed_texts(["the staging host is nebula-7"]) is None
        assert store.status()["embed_requests"] == embed_requests(standin) == 1
    finally:
        store.close()


async def test_a_turn_that_fails_on_an_error_logs_the_reply_as_failed_not_cancelled(
    engine: TurnEngine, standin: OllamaStandIn
) -> None:
    """A database write that failed inside the turn (a full disk at its first commit) left
    the reply in the log as `cancelled`, "cancelled by the user": nobody cancelled."""
    from store.database import DatabaseError

    standin.script_reply(REPLY)
    store = engine.memory.store  # type: ignore[union-attr]
    store.wait_until_ready()  # (its loads in the background are done)
    store.db.close()  # every write now fails
    with pytest.raises(DatabaseError):
        await turn(engine, FACT, "failing")
    reply = engine.daily_log.recent("failing", 5)[-1]
    assert (reply.role, reply.status) == ("assistant", "failed")
    assert reply.reason is not None and reply.reason.startswith("DatabaseError: ")
