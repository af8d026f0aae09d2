"""Layer 3 from the command line, as a user meets it: `remember`, `forget`, `recall`,
`import-doc`, the memory part of `status`, and what `ask` saves and recalls.

Every command runs through `tui.cli.main` in-process (tests/support/cli.py: its own
environment, stdin and cwd) against the real-HTTP Ollama stand-in, with a real DuckDB file
and a real usearch index in a temp data dir; a lock held by another process is met by real
processes. Read-only checks share one module-scoped data dir.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from memory.doc_splitter import split_markdown
from memory.recall_block import RECALL_PREAMBLE
from tests.support.cli import (
    NOW,
    REPO_ROOT,
    TIMEOUT,
    Env,
    assert_ok,
    assert_one_line,
    cli_command,
    cli_env,
    printed_json,
    run_cli,
    run_process,
    spawn_many,
)
from tests.support.ollama_standin import OllamaStandIn

EMBED = "/api/embed"

# The memory LESSONS §28 is about: symptom words ("empty error") and mechanism words
# ("read timeout") must both find it. Long enough for the 50-character length floor.
TIMEOUT_LESSON = (
    "httpx ReadTimeout gives an empty error envelope when the batch embedding takes "
    "longer than the timeout"
)
TIMEOUT_REPLY = (
    "Noted: when a batch embedding outlasts the read timeout, httpx surfaces it as an "
    "empty error envelope."
)
PIN = "Deploy rule: the batch embedding timeout is raised to 120 seconds in production."
GITHUB_TOKEN = "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"
SECRET_NOTE = f"The staging deploy bot authenticates with {GITHUB_TOKEN} on every push."


# --------------------------------------------------------------------------- helpers


def make_env(home: Path, tmp: Path, standin: OllamaStandIn, **extra: str) -> Env:
    """Like conftest's `cli_env`, usable from module-scoped fixtures too."""
    return cli_env(home, tmp, OLLAMA_HOST=standin.host, STRAYLIGHT_NOW=NOW, **extra)


def cli_json(env: Env, *args: str) -> Any:
    return printed_json(run_cli(env, *args, "--json"))


def remember(env: Env, text: str) -> int:
    proc = run_cli(env, "remember", text, "--json")
    assert_ok(proc)
    data = json.loads(proc.stdout)
    assert list(data) == ["id"] and type(data["id"]) is int, proc.stdout
    return data["id"]


def recall(env: Env, query: str, *args: str) -> dict[str, Any]:
    return cli_json(env, "recall", query, *args)


def status(env: Env) -> dict[str, Any]:
    return cli_json(env, "status")


def ask(env: Env, standin: OllamaStandIn, text: str, reply: str, *args: str) -> int:
    """One `ask` turn with a scripted reply; returns the /api/embed requests it made."""
    before = embed_requests_seen(standin)
    standin.script_reply(reply)
    proc = run_cli(env, "ask", *args, text)
    assert_ok(proc)
    assert proc.stdout == reply + "\n"
    return embed_requests_seen(standin) - before


def embed_requests_seen(standin: OllamaStandIn) -> int:
    return sum(1 for request in standin.requests if request.path == EMBED)


def contents(result: dict[str, Any]) -> list[str]:
    return [hit["content"] for hit in result["hits"]]


def system_prompt(standin: OllamaStandIn) -> str:
    return standin.chat_requests()[-1]["messages"][0]["content"]


@pytest.fixture
def env(cli_env: Callable[..., Env], standin: OllamaStandIn) -> Env:
    return cli_env(OLLAMA_HOST=standin.host, STRAYLIGHT_NOW=NOW)


@pytest.fixture
def listening_but_full() -> Iterator[str]:
    """The address of a socket that listens but whose backlog is full: the kernel drops
    new connection attempts, so a client's connect times out (as with a firewall that drops
    packets) instead of being refused."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    port = server.getsockname()[1]
    fillers = []
    for _ in range(3):
        filler = socket.socket()
        filler.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            filler.connect(("127.0.0.1", port))
        fillers.append(filler)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        for filler in fillers:
            filler.close()
        server.close()


# ------------------------------------------------------------ the shared data dir


@dataclass
class Corpus:
    home: Path
    env: Env
    standin: OllamaStandIn
    pin_id: int
    secret_id: int
    lesson_embeds: int  # /api/embed requests made by the `ask` that saved the lesson


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Corpus]:
    """A pinned rule, a pinned note with a secret, and one `ask` turn about a timeout."""
    tmp = tmp_path_factory.mktemp("corpus")
    home = tmp / "home"
    with OllamaStandIn() as standin:
        env = make_env(home, tmp, standin)
        pin_id = remember(env, PIN)
        secret_id = remember(env, SECRET_NOTE)
        embeds = ask(env, standin, f"Note for later: {TIMEOUT_LESSON}.", TIMEOUT_REPLY)
        yield Corpus(home, env, standin, pin_id, secret_id, embeds)


# ------------------------------------------------------------------ remember / recall


def test_remember_prints_the_new_id_only(corpus: Corpus) -> None:
    # `remember` (in the fixture) checked stdout is exactly {"id": <int>}; ids are distinct.
    assert corpus.pin_id != corpus.secret_id


def test_recall_json_shape_and_pinned_first(corpus: Corpus) -> None:
    result = recall(corpus.env, "batch embedding timeout")
    assert set(result) == {"hits", "block"}
    hits = result["hits"]
    assert hits, result
    for hit in hits:
        assert set(hit) == {
            "id",
            "role",
            "score",
            "pinned",
            "created_at",
            "date",
            "content",
            "in_block",
        }, hit
        assert hit["in_block"] is True  # the default budget holds these few short hits
        assert hit["date"] == NOW[:10]  # the local day (TZ=UTC here)
        assert type(hit["id"]) is int
        assert hit["role"] in ("user", "assistant", "doc")
        assert isinstance(hit["score"], int | float)
        assert type(hit["pinned"]) is bool
        assert datetime.fromisoformat(hit["created_at"].replace("Z", "+00:00")) == (
            datetime.fromisoformat(NOW.replace("Z", "+00:00"))
        )
        assert isinstance(hit["content"], str) and hit["content"]
    # The remembered rule is pinned and ranked first; every pin comes before the rest.
    assert hits[0]["id"] == corpus.pin_id
    assert hits[0]["pinned"] is True and hits[0]["content"] == PIN
    flags = [hit["pinned"] for hit in hits]
    assert flags == sorted(flags, reverse=True), flags
    # The saved turn is found too (unpinned).
    assert any(not hit["pinned"] and TIMEOUT_LESSON in hit["content"] for hit in hits)
    # The block is what would be injected: the memories, one `[#id · …]` entry per hit.
    block = result["block"]
    assert block.startswith("Memories")
    for hit in hits:
        assert f"[#{hit['id']} ·" in block
    assert block.index(f"[#{corpus.pin_id} ·") < block.index(f"[#{hits[-1]['id']} ·")
    assert PIN in block


def test_the_blocks_entries_carry_the_local_day_as_the_hits_date(corpus: Corpus) -> None:
    """West of UTC the block's entries named the UTC day while `date` named the local one
    (`NOW` is 04:05 UTC: the day before in Anchorage)."""
    result = recall({**corpus.env, "TZ": "America/Anchorage"}, "batch embedding timeout")
    days = {hit["date"] for hit in result["hits"]}
    assert days == {"2031-02-02"}, days
    assert "· 2031-02-02 ·" in result["block"] and "· 2031-02-03 ·" not in result["block"]


def test_recall_says_which_hits_reach_the_prompt(corpus: Corpus) -> None:
    """`block` is what the prompt would get and each hit's `in_block` says whether it is
    there: a budget with room for one hit, for none, or memory off (nothing is injected)."""
    query = "batch embedding timeout"
    hits = recall(corpus.env, query)["hits"]
    top = hits[0]
    first = f"[#{top['id']} · user · {NOW[:10]} · {top['score']:.2f} · pinned]\n> {PIN}"
    room_for_one = str(len(RECALL_PREAMBLE) + len(first) + 2)
    one = recall({**corpus.env, "MEMORY_MAX_CHARS": room_for_one}, query)
    assert [hit["in_block"] for hit in one["hits"]] == [True] + [False] * (len(hits) - 1)
    assert PIN in one["block"] and f"[#{hits[1]['id']} ·" not in one["block"]
    for extra in ({"MEMORY_MAX_CHARS": "40"}, {"MEMORY_ENABLED": "false"}):
        none = recall({**corpus.env, **extra}, query)
        assert [h["id"] for h in none["hits"]] == [h["id"] for h in hits]  # still searched
        assert none["block"] == "" and not any(h["in_block"] for h in none["hits"]), none
        plain = run_cli({**corpus.env, **extra}, "recall", query)
        assert_ok(plain)
        assert plain.stdout == ""  # an empty answer is a note on stderr
        assert plain.stderr.startswith("nothing recalled into the prompt"), plain.stderr
        assert f"{len(hits)} hits" in plain.stderr
        reason = "memory_max_chars = 40" if "MEMORY_MAX_CHARS" in extra else "memory is off"
        assert reason in plain.stderr, plain.stderr


def test_a_hit_too_long_for_the_block_leaves_room_for_the_ones_after_it(
    env: Env, standin: OllamaStandIn, tmp_path: Path
) -> None:
    """An imported section longer than `memory_max_chars` ranked first: it is left out
    whole, and the shorter hits after it still reach the prompt (the block used to stop at
    the first hit that did not fit, so one long section emptied it for every query it led)."""
    steps = " ".join(
        f"Step {n}: check the zookeeper quorum before the kafka recovery." for n in range(90)
    )
    doc = tmp_path / "ops.md"
    doc.write_text(
        f"# Ops\n\n## Kafka recovery\n\n{steps}\n\n## Short\n\n"
        "The kafka recovery needs the zookeeper quorum first.\n",
        encoding="utf-8",
    )
    assert_ok(run_cli(env, "import-doc", str(doc)))
    result = recall(env, "kafka recovery zookeeper quorum")
    long_hit = next(h for h in result["hits"] if len(h["content"]) > 4000)
    short_hit = next(h for h in result["hits"] if "needs the zookeeper quorum" in h["content"])
    assert long_hit["in_block"] is False and short_hit["in_block"] is True, result["hits"]
    assert "needs the zookeeper quorum first" in result["block"]
    assert "Step 89" not in result["block"]
    ask(env, standin, "How do I do the kafka recovery with the zookeeper quorum?", "Like so.")
    assert "## Recalled context" in system_prompt(standin)
    assert "needs the zookeeper quorum first" in system_prompt(standin)


def test_recall_k_limits_the_unpinned_hits(corpus: Corpus) -> None:
    unpinned = [h for h in recall(corpus.env, "empty error envelope")["hits"] if not h["pinned"]]
    assert len(unpinned) >= 2, unpinned  # the user message and the reply both match
    limited = recall(corpus.env, "empty error envelope", "--k", "1")["hits"]
    assert len([h for h in limited if not h["pinned"]]) == 1, limited
    assert len([h for h in limited if h["pinned"]]) <= 1, limited


@pytest.mark.parametrize("query", ["empty error message", "read timeout"])
def test_recall_finds_a_memory_by_symptom_and_by_mechanism(corpus: Corpus, query: str) -> None:
    result = recall(corpus.env, query)
    assert any(TIMEOUT_LESSON in text for text in contents(result)), result
    assert TIMEOUT_LESSON in result["block"]


def test_secrets_are_masked_before_they_are_stored(corpus: Corpus) -> None:
    result = recall(corpus.env, "staging deploy bot")
    (hit,) = [h for h in result["hits"] if h["id"] == corpus.secret_id]
    assert "[REDACTED:" in hit["content"], hit
    assert GITHUB_TOKEN not in hit["content"]
    assert GITHUB_TOKEN not in result["block"]
    assert hit["content"].startswith("The staging deploy bot authenticates with ")
    db = corpus.home / "straylight.duckdb"
    assert GITHUB_TOKEN.encode() not in db.read_bytes()


# ------------------------------------------------------------------------ status


def test_status_json_reports_memory(corpus: Corpus) -> None:
    report = status(corpus.env)
    points = report["points"]
    assert points == {
        "total": 4,
        "user": 3,  # two remembered, one from the turn
        "assistant": 1,
        "doc": 0,
        "pinned": 2,
        "without_vector": 0,
    }
    assert isinstance(report["skips"], dict)
    assert all(type(n) is int for n in report["skips"].values())
    # Every embedding request of a writing command was counted; `recall` (checks run before
    # this one in file order) writes nothing, so its requests are not (issue 15 §5).
    assert type(report["embed_requests"]) is int
    assert 4 <= report["embed_requests"] <= embed_requests_seen(corpus.standin)
    assert report["index"] == {"state": "in_sync", "size": 4}
    assert type(report["ram_estimate_bytes"]) is int and report["ram_estimate_bytes"] > 0
    assert report["headroom"] == "ok"
    assert type(report["longterm_bytes"]) is int
    ollama = report["ollama"]
    assert ollama["host"].endswith(corpus.standin.host)
    assert ollama["reachable"] is True
    assert ollama["model"] == "llama3.2"
    assert ollama["embed_model"] == "nomic-embed-text"


@pytest.mark.parametrize(
    ("variable", "expected"),
    [("MEMORY_RAM_WARN_BYTES", "warn"), ("MEMORY_RAM_CRIT_BYTES", "critical")],
)
def test_status_headroom_follows_the_ram_thresholds(
    corpus: Corpus, variable: str, expected: str
) -> None:
    report = status(dict(corpus.env, **{variable: "1"}))
    assert report["headroom"] == expected


def test_status_does_not_create_a_missing_data_dir(env: Env, home: Path) -> None:
    assert not home.exists()
    report = status(env)
    assert not home.exists()
    assert report["points"]["total"] == 0
    assert report["index"]["state"] in ("in_sync", "rebuilding", "missing")
    assert report["headroom"] == "ok"


# ------------------------------------------------------------------ remember / forget


def test_remember_with_ollama_down_still_stores_the_point(env: Env, standin: OllamaStandIn) -> None:
    standin.stop()
    point_id = remember(env, "The office wifi is called lighthouse-5g and it drops at noon.")
    report = status(env)
    assert report["ollama"]["reachable"] is False
    assert report["points"]["total"] == 1
    assert report["points"]["pinned"] == 1
    assert report["points"]["without_vector"] == 1
    # Found by its words until backfill gives it a vector.
    result = recall(env, "office wifi")
    assert [hit["id"] for hit in result["hits"]] == [point_id]


def test_recall_with_a_stalled_ollama_answers_by_words_without_waiting_for_it(
    env: Env, standin: OllamaStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An Ollama that takes the query embedding and never answers held `recall` (and MCP
    `memory_search`, which runs it) for the whole HTTP timeout: it gives up on the vector
    after `QUERY_EMBED_SECONDS`, answers by words and says why."""
    from memory import turn_memory

    point_id = remember(env, "The office wifi is called lighthouse-5g and it drops at noon.")
    monkeypatch.setattr(turn_memory, "QUERY_EMBED_SECONDS", 0.5)
    standin.fail_next("delay", seconds=30, path=EMBED)
    found = run_cli(env, "recall", "office wifi")
    assert_ok(found)
    assert "lighthouse-5g" in found.stdout
    assert "no query vector (Ollama did not answer the query embedding within 0.5 s)" in (
        found.stderr
    )
    assert "words only" in found.stderr
    as_json = run_cli(env, "recall", "office wifi", "--json")  # the stand-in answers again
    assert [hit["id"] for hit in printed_json(as_json)["hits"]] == [point_id]


def test_a_chat_turn_with_a_stalled_embedding_recalls_by_words_and_answers(
    env: Env, standin: OllamaStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The turn's own recall waited the whole HTTP timeout (300 s by default) for a query
    vector a stalled Ollama never sent; it gives up after `QUERY_EMBED_SECONDS` like
    `recall`, the recalled block comes from the words, and the model answers. The user's
    message is saved without the vector it never got (backfill embeds it later); waiting
    for the late answer would have given it one."""
    from memory import turn_memory

    remember(env, "The zanzibar lighthouse keeper works three night shifts each winter week.")
    monkeypatch.setattr(turn_memory, "QUERY_EMBED_SECONDS", 0.5)
    standin.fail_next("delay", seconds=20, path=EMBED)
    standin.script_reply("Three nights.")
    asked = run_cli(env, "ask", "How often does the zanzibar lighthouse keeper work?")
    assert_ok(asked)
    assert asked.stdout == "Three nights.\n"
    assert asked.stderr == (
        "straylight: warning: Ollama did not answer the query embedding within 0.5 s: "
        "this turn recalled by words only\n"
    )
    prompt = system_prompt(standin)
    assert "## Recalled context" in prompt
    assert "three night shifts each winter week" in prompt
    assert status(env)["points"]["without_vector"] == 1  # the user's message


def test_an_embedding_model_not_pulled_is_named_not_an_unreachable_ollama(
    env: Env, standin: OllamaStandIn, tmp_path: Path
) -> None:
    """The first thing a new user meets (README: pull both models): Ollama is up, the
    embedding model is not. Every note names the model and the fix, never "not reachable"."""
    missing = {**env, "STRAYLIGHT_EMBED_MODEL": "mxbai-embed-large"}
    fix = (
        "model 'mxbai-embed-large' is not pulled: run `ollama pull mxbai-embed-large` "
        "or `straylight pull mxbai-embed-large`"
    )
    saved = run_cli(
        missing, "remember", "The office wifi is called lighthouse-5g, it drops at noon."
    )
    assert_ok(saved)
    assert fix in saved.stdout and "reachable" not in saved.stdout, saved.stdout
    found = run_cli(missing, "recall", "office wifi")
    assert "lighthouse-5g" in found.stdout
    assert fix in found.stderr and "reachable" not in found.stderr, found.stderr
    doc = tmp_path / "wifi.md"
    doc.write_text("# Office\n\n## Wifi\n\nThe guest network is lighthouse-guest.\n")
    imported = run_cli(missing, "import-doc", str(doc))
    assert_ok(imported)
    assert fix in imported.stderr and "reachable" not in imported.stderr, imported.stderr
    backfill = run_cli(missing, "jobs", "run", "backfill")
    assert_ok(backfill)
    assert backfill.stdout == f"backfill ran: embedded 0 of 2 ({fix})\n"


def test_remember_with_memory_off_stores_the_pin_and_says_it_is_not_recalled(
    env: Env, standin: OllamaStandIn
) -> None:
    """`remember` is an explicit request, so memory off (README: no recall into prompts, no
    auto-save) still stores it; one stderr note says it will not reach a prompt until
    memory is on. `ask` with memory off neither injects it nor saves the turn."""
    off = {**env, "MEMORY_ENABLED": "false"}
    text = "The office wifi is called lighthouse-5g and it drops at noon every day."
    for args in (("remember", text), ("remember", text + " Again.", "--json")):
        proc = run_cli(off, *args)
        assert_ok(proc)
        line = proc.stderr.strip()
        assert len(proc.stderr.splitlines()) == 1, proc.stderr
        assert "memory is off (memory_enabled = false)" in line, line
        assert "not recalled into prompts" in line, line
    assert json.loads(proc.stdout).keys() == {"id"}
    assert status(off)["points"]["pinned"] == 2
    standin.script_reply("A reply long enough to be saved as a point if memory were on, yes.")
    assert_ok(run_cli(off, "ask", "What is the office wifi called, and when does it drop?"))
    assert "lighthouse-5g" not in system_prompt(standin)
    assert status(off)["points"]["total"] == 2
    # Memory on: the same pin is recalled, and `remember` says nothing extra.
    on = run_cli(env, "remember", "The printer on floor two jams on thick paper stock.")
    assert on.returncode == 0 and on.stderr == "", on.stderr


def test_an_embedding_timeout_says_it_timed_out_naming_the_model_and_host(
    env: Env, standin: OllamaStandIn, tmp_path: Path
) -> None:
    """A slow embedding server is not an unreachable one: every note of the embedding path
    says the request timed out, with the model, the host and the setting to raise."""
    slow = {**env, "STRAYLIGHT_HTTP_TIMEOUT_SECONDS": "1"}
    standin.fail_next("delay", seconds=2, path=EMBED, count=None)
    timed_out = f"embedding with nomic-embed-text at http://{standin.host} timed out after 1 s"
    saved = run_cli(slow, "remember", "The office wifi is called lighthouse-5g, it drops at noon.")
    assert_ok(saved)
    found = run_cli(slow, "recall", "office wifi")
    doc = tmp_path / "wifi.md"
    doc.write_text("# Office\n\n## Wifi\n\nThe guest network is lighthouse-guest.\n")
    imported = run_cli(slow, "import-doc", str(doc))
    backfill = run_cli(slow, "jobs", "run", "backfill")
    for proc, said in ((saved, saved.stdout), (found, found.stderr), (imported, imported.stderr)):
        assert_ok(proc)
        assert timed_out in said and "STRAYLIGHT_HTTP_TIMEOUT_SECONDS" in said, said
        assert "reachable" not in said, said
    assert timed_out in backfill.stdout and "reachable" not in backfill.stdout, backfill.stdout


def test_an_embedding_host_that_never_accepts_says_the_connection_timed_out(
    env: Env, listening_but_full: str
) -> None:
    """A host that takes no connection (a firewall dropping packets, a full backlog) is
    named as a connect timeout, not as a refused connection (`ollama serve` is running)."""
    dead = {**env, "OLLAMA_HOST": listening_but_full, "STRAYLIGHT_CONNECT_TIMEOUT_SECONDS": "1"}
    saved = run_cli(dead, "remember", "The office wifi is called lighthouse-5g, it drops at noon.")
    assert_ok(saved)
    said = saved.stdout
    assert f"Ollama at {listening_but_full} did not accept the connection within 1 s" in said
    assert "timed out" in said and "STRAYLIGHT_CONNECT_TIMEOUT_SECONDS" in said, said
    asked = run_cli(dead, "ask", "hello there")
    line = assert_one_line(asked, 3, "did not accept the connection within 1 s", "timed out")
    assert "ollama serve" not in line, line


def test_a_refused_embedding_connection_names_the_host(env: Env, standin: OllamaStandIn) -> None:
    host = standin.host
    standin.stop()
    saved = run_cli(env, "remember", "The office wifi is called lighthouse-5g, it drops at noon.")
    assert_ok(saved)
    assert f"no vector yet: Ollama is not reachable at http://{host}" in saved.stdout, saved.stdout
    assert "timed out" not in saved.stdout
    # --json keeps stdout to {"id": n}; the note that the point has no vector goes to stderr
    as_json = run_cli(env, "remember", "--json", "The harbour ferry leaves at seven each day.")
    assert json.loads(as_json.stdout).keys() == {"id"}
    line = assert_one_line(as_json, 0, "straylight: note: no vector yet", "until backfill")
    assert f"Ollama is not reachable at http://{host}" in line, line


def test_forget_removes_a_point_and_an_unknown_id_exits_1(env: Env) -> None:
    keep = remember(env, "The harbour ferry leaves at seven every morning except Sunday.")
    gone = remember(env, "The zanzibar lighthouse keeper works night shifts in the winter.")
    assert gone in [hit["id"] for hit in recall(env, "zanzibar lighthouse keeper")["hits"]]

    proc = run_cli(env, "forget", str(gone))
    assert_ok(proc)
    assert proc.stderr == ""
    assert str(gone) in proc.stdout

    result = recall(env, "zanzibar lighthouse keeper")
    assert gone not in [hit["id"] for hit in result["hits"]]
    assert "zanzibar" not in result["block"]
    report = status(env)
    assert report["points"]["total"] == 1
    assert report["index"]["size"] == 1
    assert keep != gone

    # Forgetting it again: the id is unknown now.
    line = assert_one_line(run_cli(env, "forget", str(gone)), 1, f"#{gone}")
    assert "no memory point" in line


# ------------------------------------------------------------------------ ask


def test_ask_saves_two_points_per_turn_and_skips_short_messages(
    env: Env, standin: OllamaStandIn
) -> None:
    embeds = ask(
        env,
        standin,
        "How should I size the connection pool for a small Postgres database server?",
        "Start with twice the CPU cores plus the number of disks, then measure under load.",
    )
    assert 1 <= embeds <= 2, embeds  # the query vector is reused for the user's point
    short_embeds = ask(env, standin, "hi", "Hello there!")
    assert short_embeds <= 2
    report = status(env)
    assert report["points"]["user"] == 1
    assert report["points"]["assistant"] == 1
    assert report["points"]["total"] == 2
    assert report["points"]["pinned"] == 0
    assert report["points"]["without_vector"] == 0
    assert report["skips"].get("length_floor") == 2, report["skips"]  # "hi" and its reply
    assert report["embed_requests"] == embeds + short_embeds == embed_requests_seen(standin)


def test_points_saved_from_the_command_line_say_so(env: Env, standin: OllamaStandIn) -> None:
    """The memory browser shows each point's channel: `ask` and `remember` are "cli" (they
    were "tui", the default, as if said in the chat); an imported doc is "doc"."""
    import duckdb

    ask(
        env,
        standin,
        "How should I size the connection pool for a small Postgres database server?",
        "Start with twice the CPU cores plus the number of disks, then measure under load.",
    )
    remember(env, PIN)
    with duckdb.connect(
        str(Path(env["STRAYLIGHT_HOME"]) / "straylight.duckdb"), read_only=True
    ) as con:
        rows = con.execute("SELECT role, source, channel FROM points ORDER BY id").fetchall()
    assert rows == [
        ("user", "turn", "cli"),
        ("assistant", "turn", "cli"),
        ("user", "remember", "cli"),
    ]


def test_ask_turns_make_at_most_two_embedding_requests(corpus: Corpus) -> None:
    # The lesson turn in the shared data dir: recall (query), then the reply's vector.
    assert 1 <= corpus.lesson_embeds <= 2


def test_recalled_context_only_when_relevant_and_never_repeats_history(
    env: Env, standin: OllamaStandIn
) -> None:
    a_user = "Tell me about the zanzibar lighthouse keeper schedule during the winter months."
    a_reply = "The zanzibar lighthouse keeper works night shifts in winter, three nights a week."
    ask(env, standin, a_user, a_reply, "--conversation", "conv-a")
    assert "## Recalled context" not in system_prompt(standin)  # nothing stored yet

    # Unrelated: no word and no meaning in common with what is stored.
    c_user = "Which bread recipe suits rye flour and a sourdough starter baked at home?"
    c_reply = "Use a long cold proof for rye sourdough, then bake hot with plenty of steam."
    ask(env, standin, c_user, c_reply, "--conversation", "conv-c")
    assert "## Recalled context" not in system_prompt(standin)

    b_user = "Does the zanzibar lighthouse keeper get paid extra for those night shifts?"
    b_reply = "Yes, the zanzibar lighthouse keeper earns a bonus for every winter night shift."
    ask(env, standin, b_user, b_reply, "--conversation", "conv-b")
    prompt = system_prompt(standin)
    assert "## Recalled context" in prompt
    assert a_user in prompt and a_reply in prompt

    ask(
        env,
        standin,
        "Remind me once more: what does the zanzibar lighthouse keeper do in winter?",
        "In winter the zanzibar lighthouse keeper covers three night shifts every week.",
        "--conversation",
        "conv-b",
    )
    messages = standin.chat_requests()[-1]["messages"]
    prompt = messages[0]["content"]
    assert "## Recalled context" in prompt
    assert a_user in prompt  # from another conversation: recalled
    # conv-b's first turn is in the history messages, so it is not recalled again.
    history = [m["content"] for m in messages[1:-1]]
    assert b_user in history and b_reply in history
    assert b_user not in prompt
    assert b_reply not in prompt
    assert c_user not in prompt


# ------------------------------------------------------------------------ import-doc


def test_import_docs_report_counts_the_requests_that_reached_ollama(
    env: Env, standin: OllamaStandIn, tmp_path: Path
) -> None:
    """Like `status`'s counter: with Ollama down, no request got anywhere, and the report said
    it had made one per batch."""
    doc = tmp_path / "runbook.md"
    doc.write_text("## Alpha\nRestart the ingest worker at ten thousand.\n", encoding="utf-8")
    standin.stop()
    report = cli_json(env, "import-doc", str(doc))
    assert (report["added"], report["embed_requests"]) == (1, 0)
    standin.start()
    assert status(env)["embed_requests"] == 0


def test_an_embedding_request_ollama_got_stays_counted_when_the_command_is_killed(
    env: Env, standin: OllamaStandIn
) -> None:
    """`status`'s `embed_requests` counts what reached Ollama. A `remember` killed while
    Ollama works on its embedding had made a request the counter lost: it was counted only
    once the answer came (a crash test found it, one kill in some thousands)."""
    standin.fail_next("delay", path=EMBED, seconds=20)
    process = subprocess.Popen(
        cli_command("remember", "the ferry leaves pier 4 at 06:10"),
        env=env,
        cwd=REPO_ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + TIMEOUT
        while embed_requests_seen(standin) == 0 and process.poll() is None:
            assert time.monotonic() < deadline, "the embedding request never came"
            time.sleep(0.02)
    finally:
        process.kill()
        process.wait(timeout=TIMEOUT)
    assert embed_requests_seen(standin) == 1
    assert status(env)["embed_requests"] == 1


def test_import_doc_is_idempotent_across_edits(
    env: Env, standin: OllamaStandIn, tmp_path: Path
) -> None:
    doc = tmp_path / "runbook.md"
    alpha = "## Alpha\nRestart the ingest worker when the queue depth exceeds ten thousand.\n"
    beta = "## Beta\nRotate the ferry schedule credentials on the first Monday of a month.\n"
    gamma = "## Gamma\nThe lighthouse beacon runs a self test every night at three.\n"
    doc.write_text(f"{alpha}\n{beta}\n{gamma}", encoding="utf-8")
    assert len(split_markdown(doc.read_text(encoding="utf-8"))) == 3

    first = cli_json(env, "import-doc", str(doc))
    assert set(first) == {"added", "updated", "unchanged", "removed", "embed_requests"}
    assert first["added"] == 3
    assert first["updated"] == first["unchanged"] == first["removed"] == 0
    assert first["embed_requests"] >= 1

    before = embed_requests_seen(standin)
    second = cli_json(env, "import-doc", str(doc))
    assert second == {"added": 0, "updated": 0, "unchanged": 3, "removed": 0, "embed_requests": 0}
    assert embed_requests_seen(standin) == before  # not one /api/embed request

    beta_edited = "## Beta\nRotate the ferry schedule credentials on the last Friday instead.\n"
    delta = "## Delta\nThe harbour crane needs a grease service after every storm.\n"
    doc.write_text(f"{alpha}\n{beta_edited}\n{delta}", encoding="utf-8")
    assert len(split_markdown(doc.read_text(encoding="utf-8"))) == 3
    third = cli_json(env, "import-doc", str(doc))
    assert {k: third[k] for k in ("added", "updated", "unchanged", "removed")} == {
        "added": 1,
        "updated": 1,
        "unchanged": 1,
        "removed": 1,
    }
    assert third["embed_requests"] >= 1

    report = status(env)
    assert report["points"]["doc"] == 3
    assert report["points"]["pinned"] == 3
    assert report["points"]["total"] == 3
    assert report["points"]["without_vector"] == 0

    result = recall(env, "ferry schedule credentials harbour crane lighthouse beacon")
    hits = result["hits"]
    assert hits and all(hit["role"] == "doc" and hit["pinned"] for hit in hits), hits
    texts = "\n".join(contents(result))
    assert "last Friday" in texts and "harbour crane" in texts
    assert "first Monday" not in texts and "lighthouse beacon" not in texts

    line = assert_one_line(run_cli(env, "import-doc", str(tmp_path / "missing.md"), "--json"), 2)
    assert "missing.md" in line
    for empty in ("", "  "):  # said ". is a directory, not a Markdown file"
        assert_one_line(run_cli(env, "import-doc", empty), 2, "import-doc needs a PATH")
        # said "nothing recalled", exit 0, where `facts search` and memory_search refuse it
        assert_one_line(run_cli(env, "recall", empty), 2, "recall needs a non-empty QUERY")


def test_a_path_with_a_line_break_or_an_escape_is_named_on_one_printable_line(
    env: Env, tmp_path: Path
) -> None:
    """A file name may hold a line break or an ESC sequence: the error that names it stays
    one stderr line (it was split in two) and never writes the sequence to the terminal."""
    for name in ("notes\nold.md", "notes\x1b[2J\x1b]0;PWNED\x07.md"):
        line = assert_one_line(run_cli(env, "import-doc", str(tmp_path / name)), 2, "no such")
        assert "\x1b" not in line and "\x07" not in line, line
        assert "notes␊old.md" in line or "notes␛[2J␛]0;PWNED␇.md" in line, line
    folder = tmp_path / "a\nfolder"
    folder.mkdir()
    assert_one_line(run_cli(env, "import-doc", str(folder)), 2, "a␊folder is a directory")


def test_import_doc_of_a_file_this_user_may_not_read_is_named_exit_2(
    env: Env, tmp_path: Path
) -> None:
    """An unreadable file was "unexpected error: PermissionError … (details in the log)",
    exit 1, where every other bad PATH is one line, exit 2. As root (who reads anything) the
    command runs with the capabilities that bypass file modes dropped (setpriv)."""
    command = [sys.executable, "-m", "tui.cli"]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("root reads any file, and setpriv is not there to drop that")
        command = [setpriv, "--bounding-set=-dac_override,-dac_read_search", *command]
    doc = tmp_path / "private.md"
    doc.write_text("# Private\n\nThe safe's code is written on the back of the map.\n", "utf-8")
    doc.chmod(0)
    proc = run_process([*command, "import-doc", str(doc)], env)
    assert_one_line(proc, 2, f"cannot read {doc}: permission denied")
    assert status(env)["points"]["total"] == 0


def test_import_doc_of_a_file_saved_with_a_byte_order_mark_keeps_its_first_heading(
    env: Env, tmp_path: Path
) -> None:
    """A Markdown file a Windows editor saved (a UTF-8 byte-order mark, CRLF line ends): the
    mark was read as text before `# Ferry`, so the first section lost its heading (stored as
    the preamble, the mark in its content). It is read like the same file without one."""
    doc = tmp_path / "ferry.md"
    body = "# Ferry\r\n\r\nThe last ferry leaves the northern harbour at ten past ten.\r\n"
    doc.write_bytes(b"\xef\xbb\xbf" + body.encode("utf-8"))
    assert cli_json(env, "import-doc", str(doc))["added"] == 1
    hits = recall(env, "last ferry northern harbour")["hits"]
    assert [hit["content"] for hit in hits] == [
        "# Ferry\n\nThe last ferry leaves the northern harbour at ten past ten."
    ]
    doc.write_text(body.replace("\r\n", "\n"), "utf-8")  # the same text without the mark
    assert cli_json(env, "import-doc", str(doc))["unchanged"] == 1


def test_import_doc_names_sections_left_without_a_vector_by_an_early_batch(
    env: Env, standin: OllamaStandIn, tmp_path: Path
) -> None:
    """A long document is embedded in batches; when one fails and a later one works, the
    sections of the failed one still wait for backfill, and the note says so."""
    doc = tmp_path / "long.md"
    doc.write_text(
        "\n".join(f"## Part {i}\nThe body of part {i} names gadget {i * 7}.\n" for i in range(40)),
        encoding="utf-8",
    )
    standin.fail_next("status", status=500, path=EMBED)  # the first batch only
    proc = run_cli(env, "import-doc", str(doc), "--json")
    assert_ok(proc)
    assert json.loads(proc.stdout)["added"] == 40
    assert status(env)["points"]["without_vector"] == 16
    notes = [line for line in proc.stderr.splitlines() if not line.startswith("embedding ")]
    assert len(notes) == 1 and "16 sections stored without a vector" in notes[0], proc.stderr


def test_import_doc_stops_embedding_after_a_batch_that_timed_out(
    env: Env, standin: OllamaStandIn, tmp_path: Path
) -> None:
    """Each batch of 16 waited the whole HTTP timeout again when the embedding stalled
    (three in a row for 40 sections; 15 minutes at the default): after one that timed out,
    the rest are stored without vectors for the backfill, as the backfill itself stops."""
    doc = tmp_path / "long.md"
    doc.write_text(
        "\n".join(f"## Part {i}\nThe body of part {i} names gadget {i * 7}.\n" for i in range(40)),
        encoding="utf-8",
    )
    standin.fail_next("delay", seconds=8.0, path=EMBED, count=None)
    before = sum(1 for r in standin.requests if r.path == EMBED)
    proc = run_cli({**env, "STRAYLIGHT_HTTP_TIMEOUT_SECONDS": "6"}, "import-doc", str(doc))
    standin.clear_faults()
    assert_ok(proc)
    assert sum(1 for r in standin.requests if r.path == EMBED) - before == 1
    assert status(env)["points"]["without_vector"] == 40
    assert "40 sections stored without a vector" in proc.stderr


# ------------------------------------------------------------------ a second process

HOLDER = """
import sys, time
from pathlib import Path
from store.data_dir_lock import DataDirLock
lock = DataDirLock(Path(sys.argv[1])).acquire()
print("locked", flush=True)
time.sleep(30)
"""


def test_a_held_data_dir_gives_one_line_and_exit_6(env: Env, home: Path) -> None:
    # `status` only opens (and locks) a data dir that has a database: give it one.
    from memory.memory_store import MemoryConfig, MemoryStore
    from store.clock import Clock

    MemoryStore.open(home, MemoryConfig(), clock=Clock()).close()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(home)],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "locked"
        # Real processes: the lock is another process's, met by what a user starts.
        commands = [["ask", "hi"], ["remember", "one more thing to keep"], ["status", "--json"]]
        results = spawn_many([(env, command, None) for command in commands])
        for proc in results:
            line = assert_one_line(proc, 6)
            assert line.startswith(f"straylight: {home} is in use by PID {holder.pid}"), line
            assert proc.stdout == ""
    finally:
        holder.kill()
        holder.wait(timeout=TIMEOUT)


# ------------------------------------------------------------ Ollama down, then backfill


def test_points_saved_while_embedding_fails_are_backfilled(
    env: Env, standin: OllamaStandIn, home: Path
) -> None:
    standin.fail_next("status", path=EMBED, count=None, status=503, message="embedder down")
    ask(
        env,
        standin,
        "Where did we leave the spare keys for the boathouse after the autumn regatta?",
        "They are in the blue tin on the top shelf of the boathouse workshop, left side.",
    )
    before = status(env)["points"]
    assert before["total"] == 2
    assert before["without_vector"] >= 1
    standin.clear_faults()

    from agent.ollama_gateway import OllamaGateway
    from memory.memory_store import MemoryConfig, MemoryStore
    from memory.turn_memory import TurnMemory
    from store.clock import Clock

    async def backfill(store: MemoryStore) -> int:
        gateway = OllamaGateway(standin.url)

        async def embed(texts: Any) -> list[list[float]]:
            return await gateway.embed("nomic-embed-text", texts)

        try:
            return await TurnMemory(store, embed).backfill()
        finally:
            await gateway.aclose()

    store = MemoryStore.open(home, MemoryConfig(), clock=Clock())
    try:
        assert asyncio.run(backfill(store)) == before["without_vector"]
        after = store.status()
        assert after["points"]["without_vector"] == 0
        assert after["points"]["total"] == 2
        assert after["index"]["size"] == 2
    finally:
        store.close()


def test_status_of_a_new_data_dir_estimates_what_an_empty_memory_costs(
    tmp_path: Path, standin: OllamaStandIn
) -> None:
    env = make_env(tmp_path / "home", tmp_path, standin)
    before = status(env)  # no database yet: nothing is created
    assert not (tmp_path / "home").exists()
    assert_ok(run_cli(env, "facts", "set", "k:v", "--type", "fact", "--body", "b"))
    opened = status(env)  # a database with no point
    assert opened["points"]["total"] == 0
    assert before["ram_estimate_bytes"] == opened["ram_estimate_bytes"] > 32 * 2**20


def test_dedup_remembers_a_conversation_across_ask_runs(env: Env, standin: OllamaStandIn) -> None:
    """`ask --conversation ID` is a new process each time; the dedup rule still sees the
    conversation's last saves (they are read back from the database), so the same message
    sent again is not saved twice. Another conversation is not affected."""
    text = "I have decided that the release of version two happens on the fifteenth of March."
    reply = "Understood: version two is released on the fifteenth of March, as you decided."
    ask(env, standin, text, reply, "--conversation", "release")
    ask(env, standin, text + "!", reply, "--conversation", "release")
    assert status(env)["skips"] == {"dedup": 2}
    assert status(env)["points"]["total"] == 2
    ask(
        env,
        standin,
        text,
        "Noted here as well: the fifteenth of March it is, for this conversation too.",
        "--conversation",
        "other",
    )
    assert status(env)["points"]["total"] == 4


# ------------------------------------------------------------------ size limits


def test_import_doc_over_4_mib_is_refused_unread_and_stores_nothing(
    env: Env, tmp_path: Path
) -> None:
    """A file over 4 MiB is refused by its size, before it is read: one line naming the
    file and the limit, exit 2, nothing stored."""
    doc = tmp_path / "huge.md"
    section = "## Part\nThe lighthouse beacon runs a self test every night at three.\n\n"
    doc.write_text(section * (4 * 1024 * 1024 // len(section) + 1), encoding="utf-8")
    proc = run_cli(env, "import-doc", str(doc))
    assert_one_line(proc, 2, str(doc), "4,194,304 bytes")
    assert status(env)["points"]["total"] == 0


def test_import_doc_with_one_section_over_the_limit_stores_none_of_it(
    env: Env, tmp_path: Path
) -> None:
    """One section over 65,536 characters: the line names it and the limit, and the
    sections before it, within the limit, are not stored either."""
    doc = tmp_path / "runbook.md"
    fine = "## Alpha\nRestart the ingest worker when the queue depth exceeds ten thousand.\n\n"
    doc.write_text(fine + "## Huge log\n" + "x" * 70_000 + "\n", encoding="utf-8")
    proc = run_cli(env, "import-doc", str(doc))
    assert_one_line(proc, 2, str(doc), "'Huge log'", "65,536")
    assert status(env)["points"]["total"] == 0


def test_a_section_over_the_limit_is_named_by_its_heading_masked_and_cut(
    env: Env, tmp_path: Path
) -> None:
    """The refusal repeated the heading as written: a token in it reached the terminal (and
    MCP's agent), and a 1 MB heading made a 1 MB line."""
    doc = tmp_path / "deploy.md"
    token = "ghp_" + "Z" * 36
    doc.write_text(f"## deploy token {token}\n" + "x" * 70_000 + "\n", encoding="utf-8")
    line = assert_one_line(run_cli(env, "import-doc", str(doc)), 2, "[REDACTED:", "65,536")
    assert token not in line
    doc.write_text("## " + "h" * 1_000_000 + "\n" + "x" * 70_000 + "\n", encoding="utf-8")
    line = assert_one_line(run_cli(env, "import-doc", str(doc)), 2, "65,536")
    assert len(line) < 500 and "…'" in line


def test_remember_over_65536_characters_is_refused_and_stores_nothing(env: Env) -> None:
    long_text = "The ferry timetable changes. " * 2_300  # about 66,700 characters
    assert len(long_text) > 65_536
    proc = run_cli(env, "remember", "-", stdin=long_text)
    assert_one_line(proc, 2, "65,536")
    assert status(env)["points"]["total"] == 0
    assert remember(env, long_text[:65_536]) >= 1  # at the limit: stored


def test_a_nul_in_a_remembered_text_is_dropped_and_a_token_it_split_is_masked(
    env: Env,
) -> None:
    """A NUL (a pasted binary, a hostile client) is no stored character: `recall` returns the
    text without it, the database holds none, and a token a NUL split is masked whole."""
    import duckdb

    text = f"  The harbour\x00 crane key is gh\x00{GITHUB_TOKEN[2:]} for the night shift.\n"
    proc = run_cli(env, "remember", "-", "--json", stdin=text)
    point_id = printed_json(proc)["id"]
    hits = recall(env, "harbour crane night shift")["hits"]
    assert [hit["content"] for hit in hits if hit["id"] == point_id] == [
        "The harbour crane key is [REDACTED:github_token] for the night shift."
    ]
    with duckdb.connect(
        str(Path(env["STRAYLIGHT_HOME"]) / "straylight.duckdb"), read_only=True
    ) as con:
        (nul_rows,) = con.execute(
            "SELECT count(*) FROM points WHERE contains(content, chr(0))"
        ).fetchone() or (None,)
    assert nul_rows == 0


def test_ids_are_taken_as_printed_with_their_hash(env: Env) -> None:
    """`remember` prints `#1`, `candidates list` `#1 …`, `hypotheses list` `#1 [open]`: the
    id copied with its `#` is the id, as in the chat's /forget #1."""
    point = remember(env, "The harbour crane is serviced every second Thursday.")
    forgot = run_cli(env, "forget", f"#{point}", "--json")
    assert printed_json(forgot) == {"id": point, "forgotten": True}
    assert run_cli(env, "candidates", "approve", "#7").stderr.strip() == (
        "straylight: no candidate #7"
    )
    assert run_cli(env, "hypotheses", "refute", "#7").returncode == 1
    wrong = run_cli(env, "forget", "seven")
    assert wrong.returncode == 2 and "seven" in wrong.stderr and "Traceback" not in wrong.stderr


def test_index_upkeep_names_a_rebuild_from_the_database(env: Env, home: Path) -> None:
    """`vectors.usearch` deleted (or another data dir's): the open rebuilds it from the
    database, and `jobs run index-upkeep` said only `index in_sync: +0 −0`. It names the
    rebuild once."""
    remember(env, "The harbour ferry leaves at seven every morning except Sunday.")
    remember(env, "The zanzibar lighthouse keeper works night shifts in the winter.")
    kept = run_cli(env, "jobs", "run", "index-upkeep")
    assert_ok(kept)
    assert "rebuilt" not in kept.stdout, kept.stdout
    (home / "vectors.usearch").unlink()
    rebuilt = run_cli(env, "jobs", "run", "index-upkeep", "--json")
    assert_ok(rebuilt)
    data = json.loads(rebuilt.stdout)
    assert data["data"]["rebuilt"] == "rebuilt with 2 vectors", data
    assert "(rebuilt with 2 vectors from the database)" in data["result"], data
    again = json.loads(run_cli(env, "jobs", "run", "index-upkeep", "--json").stdout)
    assert again["data"]["rebuilt"] is None and "rebuilt" not in again["result"]


def test_ask_says_what_it_waits_for_when_the_turns_save_is_slow(
    env: Env, standin: OllamaStandIn
) -> None:
    """The reply was printed, then `ask` waited for the save's embedding (up to 30 s) with
    no word: it says so once the save takes more than 5 s."""
    standin.token_delay = 0.05
    standin.script_reply(" ".join(f"w{i}" for i in range(30)))
    proc = subprocess.Popen(
        cli_command("ask", "Where does the ferry to Lindau leave from these days?"),
        env=env,
        cwd=REPO_ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while not standin.chat_requests():
        assert time.monotonic() < deadline and proc.poll() is None, "no chat request"
        time.sleep(0.02)
    standin.fail_next("delay", seconds=9.0, path=EMBED)  # the save's embedding, not the query's
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert out.startswith("w0 w1")
    assert "note: saving this turn's memory (waiting up to 30 s" in err, err


async def test_a_connect_timeout_is_not_waited_for_twice_in_one_turn(
    listening_but_full: str,
) -> None:
    """`ask` to a host that takes no connection waited the connect timeout for the query's
    embedding, then again for the chat (12 s for a 5 s limit, where the README promises a
    dead host is named quickly): the chat's request now gets the same answer at once."""
    from agent.gateway_errors import OllamaUnreachable
    from agent.ollama_gateway import OllamaGateway

    gateway = OllamaGateway(listening_but_full, connect_timeout=0.5)
    try:
        with pytest.raises(OllamaUnreachable) as first:
            await gateway.embed("nomic-embed-text", ["the harbour crane"])
        assert first.value.connect_timed_out == 0.5
        with pytest.raises(OllamaUnreachable) as again:
            async for _event in gateway.stream_chat(
                "llama3.2", [{"role": "user", "content": "hi"}]
            ):
                pass
        assert again.value is first.value  # named from the first try, not waited for again
        status = await gateway.check()  # the status check always tries
        assert not status.reachable and status.error_kind == "unreachable"
    finally:
        await gateway.aclose()
