"""The limits of a turn (issue 15 §8), end to end through `straylight ask` against the
stand-in: tool calls capped per round and per turn, a reply's size and duration capped (the
partial reply kept, marked cut off, the limit named), and one deadline per turn (a server that
stalls everything is reported at the timeout, not at the timeout plus each call before the
chat)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest

from agent.settings import Settings
from agent.turn_limits import reply_end_notice
from store.daily_log import DailyLog
from tests.support.cli import NOW, CliResult, run_cli
from tests.support.ollama_standin import OllamaStandIn
from tests.support.pilot_helpers import type_text, wait_until
from tui.app import StraylightApp
from tui.widgets.chat_message import ChatMessage, ChatNotice

Env = dict[str, str]


def one_line(proc: CliResult, code: int) -> str:
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


def logged_reply(home: Path) -> tuple[str, str, str | None]:
    log = DailyLog(home / "conversation")
    (day,) = log.days()
    reply = log.read_day(day)[-1]
    assert reply.role == "assistant"
    return reply.content, reply.status, reply.reason


def writes(count: int, round_no: int) -> list[dict[str, object]]:
    return [
        {
            "name": "memory_write",
            "arguments": {
                "key": f"note:r{round_no}-{n}",
                "type": "fact",
                "body": f"Note {n} of round {round_no}: the staging box reboots on Sundays.",
                "proof": "the user said so",
            },
        }
        for n in range(count)
    ]


def test_tool_calls_are_capped_per_round_and_per_turn(
    cli_env: Callable[..., Env], standin: OllamaStandIn, home: Path
) -> None:
    for round_no in range(3):
        standin.script_reply("", tool_calls=writes(300, round_no))
    standin.script_reply("Noted.")
    env = cli_env(
        OLLAMA_HOST=standin.url,
        STRAYLIGHT_NOW=NOW,
        MEMORY_TOOL_CALLS_PER_ROUND="5",
        MEMORY_TOOL_CALLS_PER_TURN="12",
    )
    proc = run_cli(env, "ask", "remember all of these notes please")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Noted.\n"
    assert "the limit is 5 per round (MEMORY_TOOL_CALLS_PER_ROUND)" in proc.stderr
    assert "the limit is 12 per turn (MEMORY_TOOL_CALLS_PER_TURN)" in proc.stderr
    with duckdb.connect(str(home / "straylight.duckdb"), read_only=True) as db:
        (candidates,) = db.execute("SELECT count(*) FROM candidates").fetchone() or (0,)
    assert candidates == 12
    requests = standin.chat_requests()
    assert len(requests) == 4
    assert not requests[-1].get("tools")  # past the turn's cap the model answers in text
    told = [
        json.loads(m["content"])["error"]
        for m in requests[1]["messages"]
        if m["role"] == "tool" and "error" in m["content"]
    ]
    assert told and "295 not run" in told[0]


def test_a_reply_over_its_size_limit_is_stopped_named_and_kept_marked(
    cli_env: Callable[..., Env], standin: OllamaStandIn, home: Path
) -> None:
    standin.script_reply("word " * 400)
    env = cli_env(OLLAMA_HOST=standin.url, STRAYLIGHT_NOW=NOW, STRAYLIGHT_REPLY_MAX_CHARS="100")
    line = one_line(run_cli(env, "ask", "talk forever"), 5)
    assert "the reply reached its limit of 100 characters" in line
    assert "STRAYLIGHT_REPLY_MAX_CHARS" in line and "kept in the log" in line
    content, status, reason = logged_reply(home)
    assert status == "cut_off" and 90 <= len(content) <= 100
    assert reason is not None and "limit of 100 characters" in reason


def test_a_reply_over_its_duration_limit_is_stopped_at_the_limit(
    cli_env: Callable[..., Env], standin: OllamaStandIn, home: Path
) -> None:
    standin.script_reply("one two three four five six")
    standin.fail_next("stall", after=2, seconds=20, path="/api/chat")
    env = cli_env(OLLAMA_HOST=standin.url, STRAYLIGHT_NOW=NOW, STRAYLIGHT_REPLY_MAX_SECONDS="1.5")
    started = time.monotonic()
    line = one_line(run_cli(env, "ask", "take your time"), 5)
    assert time.monotonic() - started < 6  # not the 20 s stall, nor the 300 s read timeout
    assert "the reply reached its limit of 1.5 s" in line and "STRAYLIGHT_REPLY_MAX_SECONDS" in line
    content, status, _ = logged_reply(home)
    assert status == "cut_off" and content.strip() == "one two"


def test_a_stall_of_every_call_is_reported_at_the_timeout(
    cli_env: Callable[..., Env], standin: OllamaStandIn, home: Path
) -> None:
    env = cli_env(OLLAMA_HOST=standin.url, STRAYLIGHT_NOW=NOW, STRAYLIGHT_HTTP_TIMEOUT_SECONDS="2")
    assert run_cli(env, "ask", "warm up").returncode == 0  # capabilities cached, data dir made
    standin.fail_next("delay", seconds=20, count=None)  # embed, show and chat all hang
    before = len(standin.requests)
    line = one_line(run_cli(env, "ask", "anyone there?"), 5)
    standin.clear_faults()
    assert line == (
        "straylight: Ollama did not answer within 2 s "
        "(raise STRAYLIGHT_HTTP_TIMEOUT_SECONDS if the model is just slow)"
    )
    # One deadline for the turn: the embedding's stall used it up, so no chat request waited
    # a second timeout (with a deadline per request the user waited 2 s, then 2 s more).
    paths = [request.path for request in standin.requests[before:]]
    assert "/api/embed" in paths and "/api/chat" not in paths, paths
    _, status, reason = logged_reply(home)
    assert status == "failed" and reason is not None and "within 2 s" in reason


def test_a_stall_mid_reply_says_the_reply_stopped_not_that_ollama_never_answered(
    cli_env: Callable[..., Env], standin: OllamaStandIn, home: Path
) -> None:
    """Half a reply arrived, then nothing for the read timeout: the line said "Ollama did not
    answer within 2 s" next to the words it had answered with."""
    standin.script_reply("one two three four five six")
    standin.fail_next("stall", after=2, seconds=20, path="/api/chat")
    env = cli_env(OLLAMA_HOST=standin.url, STRAYLIGHT_NOW=NOW, STRAYLIGHT_HTTP_TIMEOUT_SECONDS="2")
    line = one_line(run_cli(env, "ask", "take your time"), 5)
    assert line == (
        "straylight: Ollama sent nothing more for 2 s in the middle of the reply (raise "
        "STRAYLIGHT_HTTP_TIMEOUT_SECONDS if the model is just slow) (the partial reply is kept "
        "in the log, marked cut off)"
    )
    content, status, reason = logged_reply(home)
    assert status == "cut_off" and content.strip() == "one two"
    assert reason is not None and reason.startswith("Ollama sent nothing more for 2 s")


async def test_the_tui_names_the_reply_limit_and_keeps_the_partial_reply(
    make_settings: Callable[..., Settings], standin: OllamaStandIn
) -> None:
    standin.script_reply("word " * 400)
    settings = make_settings(ollama_host=standin.host, reply_max_chars=60)
    app = StraylightApp(settings)
    async with app.run_test(size=(110, 32)) as pilot:
        await wait_until(pilot, lambda: app.engine.memory is not None, what="memory open")
        await type_text(pilot, "talk forever")
        await pilot.press("enter")
        await wait_until(pilot, lambda: not app.replying, what="the reply to stop")
        reply = list(app.query(ChatMessage))[-1]
        assert reply.status == "cut_off" and 50 <= len(reply.text) <= 60
        shown = [str(n.render()) for n in app.query(ChatNotice)]
        assert any("the reply reached its limit of 60 characters" in line for line in shown)
        logged = app.engine.daily_log.read_day(app.settings.clock.now().astimezone().date())
        assert (logged[-1].status, logged[-1].content) == ("cut_off", reply.text)


async def test_the_tui_says_when_a_stalled_embedding_left_recall_to_words(
    make_settings: Callable[..., Settings],
    standin: OllamaStandIn,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The query's embedding has `QUERY_EMBED_SECONDS`; a stalled Ollama then costs the turn
    that long, and the chat says why the recalled context came from words only."""
    from memory import turn_memory

    monkeypatch.setattr(turn_memory, "QUERY_EMBED_SECONDS", 0.5)
    standin.script_reply("Noted.")
    app = StraylightApp(make_settings(ollama_host=standin.host))
    async with app.run_test(size=(110, 32)) as pilot:
        await wait_until(pilot, lambda: app.engine.memory is not None, what="memory open")
        standin.fail_next("delay", seconds=20, path="/api/embed")
        await type_text(pilot, "the harbour crane is red")
        await pilot.press("enter")
        await wait_until(pilot, lambda: not app.replying, what="the reply")
        assert list(app.query(ChatMessage))[-1].text == "Noted."
        shown = [str(n.render()) for n in app.query(ChatNotice)]
        assert any(
            "Ollama did not answer the query embedding within 0.5 s: this turn recalled by "
            "words only" in line
            for line in shown
        ), shown


def test_a_reply_whose_embedding_stalls_is_saved_without_a_vector_not_lost(
    cli_env: Callable[..., Env],
    standin: OllamaStandIn,
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The reply's embedding had no limit: one that stalled past the 30 s `ask` waits for
    the save (Ollama swapping the embedding model in) lost the reply's point, exit 0 and
    no word. It now waits `SAVE_EMBED_SECONDS`, stores the point without a vector (the
    backfill embeds it) and says so."""
    from memory import turn_memory

    monkeypatch.setattr(turn_memory, "QUERY_EMBED_SECONDS", 0.3)
    monkeypatch.setattr(turn_memory, "SAVE_EMBED_SECONDS", 0.3)
    reply = "Tomasz repairs vintage radios in his garage every weekend, it seems."
    standin.script_reply(reply)
    standin.fail_next("delay", seconds=3.0, path="/api/embed", count=None)
    env = cli_env(OLLAMA_HOST=standin.url, STRAYLIGHT_NOW=NOW)
    proc = run_cli(env, "ask", "my neighbour Tomasz repairs vintage radios in his garage")
    standin.clear_faults()
    assert proc.returncode == 0, proc.stderr
    assert "the reply's embedding within 0.3 s" in proc.stderr
    with duckdb.connect(str(home / "straylight.duckdb"), read_only=True) as db:
        rows = db.execute("SELECT role, embedding IS NULL FROM points ORDER BY id").fetchall()
    assert rows == [("user", True), ("assistant", True)]


async def test_a_save_still_running_when_the_wait_ends_is_reported_not_dropped() -> None:
    """`drain` stopped waiting after its timeout and reported nothing: `ask` exited 0 and
    the save died with the process. A save still running is now a failure of the drain."""
    import asyncio
    from typing import Any, cast

    from agent.turn_saves import BackgroundSaves

    saves = BackgroundSaves(cast(Any, lambda: None), cast(Any, None))
    stalled = asyncio.get_running_loop().create_task(asyncio.sleep(30))
    saves._tasks.add(stalled)  # (what `start` adds: a save whose embedding stalls)
    try:
        failures = await saves.drain(timeout=0.05)
    finally:
        stalled.cancel()
    assert [str(failure) for failure in failures] == ["still saving after 0.05 s"]
    saves._tasks.clear()
    assert await saves.drain(timeout=0.05) == []


def test_a_length_stop_without_num_predict_names_the_window_and_the_fixes() -> None:
    """No num_predict was sent: the model's own limit or a full window stopped it. The line
    said "(Ollama's length limit (done_reason length))" and named no fix."""
    cut = reply_end_notice("length", None, answered=True, thought_chars=0)
    assert cut is not None and "done_reason" not in cut
    assert "context window" in cut and "raise num_ctx" in cut and "num_predict" in cut
    empty = reply_end_notice("length", None, answered=False, thought_chars=500)
    assert empty is not None and "context window" in empty and "raise num_predict" in empty


def test_remember_with_a_stalled_embedding_stores_the_point_and_says_so(
    cli_env: Callable[..., Env],
    standin: OllamaStandIn,
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`remember` (and MCP `memory_save`, which runs it) waited for a stalled embedding up to
    the 300 s HTTP timeout without a word; an MCP client gives up at ~60 s and calls again,
    and each call pinned another copy. It now waits `SAVE_EMBED_SECONDS`."""
    from memory import turn_memory

    monkeypatch.setattr(turn_memory, "SAVE_EMBED_SECONDS", 0.3)
    standin.fail_next("delay", seconds=3.0, path="/api/embed", count=None)
    env = cli_env(OLLAMA_HOST=standin.url, STRAYLIGHT_NOW=NOW)
    proc = run_cli(env, "remember", "the guest wifi is called Cumulus")
    standin.clear_faults()
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("remembered #1 (no vector yet: Ollama did not answer the ")
    assert "embedding within 0.3 s" in proc.stdout


def test_a_fact_stored_before_its_secret_pattern_existed_reaches_the_model_masked(
    cli_env: Callable[..., Env], standin: OllamaStandIn, home: Path
) -> None:
    """Recalled points and known facts were masked only when stored: a store older than a
    pattern (issue 15 added `hf_`, `npm_`, `xapp-`) sent its secrets to the model raw. The
    request is masked as it leaves now."""
    token = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz012345"
    env = cli_env(OLLAMA_HOST=standin.url, STRAYLIGHT_NOW=NOW)
    body = "The model registry token for the staging deploy is kept in the vault."
    set_fact = ["facts", "set", "deploy:registry", "--type", "fact", "--body", body]
    assert run_cli(env, *set_fact).returncode == 0
    with duckdb.connect(str(home / "straylight.duckdb")) as db:  # as an older version kept it
        db.execute("UPDATE facts SET body = ? WHERE key = 'deploy:registry'", [f"{body} {token}"])
    standin.script_reply("Noted.")
    proc = run_cli(env, "ask", "what is the registry token for the staging deploy?")
    assert proc.returncode == 0, proc.stderr
    (request,) = standin.chat_requests()
    sent = json.dumps(request)
    assert "deploy:registry" in sent and token not in sent and "[REDACTED:" in sent


def test_recall_shows_a_point_stored_before_its_secret_pattern_existed_masked(
    cli_env: Callable[..., Env], standin: OllamaStandIn, home: Path
) -> None:
    """`recall` (and MCP `memory_search`, which runs it for an agent's model) printed such a
    point's secret as it was stored."""
    token = "npm_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
    env = cli_env(OLLAMA_HOST=standin.url, STRAYLIGHT_NOW=NOW)
    text = "The package registry publish credential for the harbour project"
    assert run_cli(env, "remember", text).returncode == 0
    with duckdb.connect(str(home / "straylight.duckdb")) as db:  # as an older version kept it
        db.execute("UPDATE points SET content = ?", [f"{text} {token}"])
    for args in (["recall", "harbour registry credential"], ["recall", "harbour", "--json"]):
        proc = run_cli(env, *args)
        assert proc.returncode == 0, proc.stderr
        assert "harbour" in proc.stdout and token not in proc.stdout, proc.stdout


def test_tool_calls_when_no_tools_were_offered_are_not_run(
    cli_env: Callable[..., Env], standin: OllamaStandIn, home: Path
) -> None:
    """With `memory_tools = false` no tool is offered; a server that answers with
    `memory_write` calls anyway had them run (8 candidates waited for approval, and an
    un-offered `memory_read` was answered with the stored facts)."""
    standin.script_reply("Noted.", tool_calls=writes(3, 0))
    env = cli_env(OLLAMA_HOST=standin.url, STRAYLIGHT_NOW=NOW, MEMORY_TOOLS="false")
    proc = run_cli(env, "ask", "the staging box reboots on Sundays")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Noted.\n"
    (request,) = standin.chat_requests()
    assert not request.get("tools")
    with duckdb.connect(str(home / "straylight.duckdb"), read_only=True) as db:
        (candidates,) = db.execute("SELECT count(*) FROM candidates").fetchone() or (0,)
    assert candidates == 0


def test_a_reply_that_runs_past_the_window_is_named(
    cli_env: Callable[..., Env], standin: OllamaStandIn
) -> None:
    """The prompt fitted, but prompt and reply together (a thinking model's reasoning
    counts in `eval_count`) took more than the window: Ollama shifts the context then and
    drops part of what opened the prompt (the persona, the memory), without a word."""
    standin.script_reply("word " * 2500)
    env = cli_env(
        OLLAMA_HOST=standin.url, STRAYLIGHT_NOW=NOW, STRAYLIGHT_NUM_CTX="2048", MEMORY_TOOLS="false"
    )
    proc = run_cli(env, "ask", "tell me a long story")
    assert proc.returncode == 0, proc.stderr
    assert "took more than the 2,048-token window" in proc.stderr, proc.stderr
    assert "Ollama dropped part of the context while the model answered" in proc.stderr
    standin.script_reply("A short answer.")
    quiet = run_cli(env, "ask", "and a short one")
    assert "took more than" not in quiet.stderr, quiet.stderr
