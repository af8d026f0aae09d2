"""Issue 7, part 3: Ollama faults, end to end through `straylight ask`.

Each case runs `straylight ask` (in-process, tests/support/cli.py) against the stand-in with one
fault injected, on a copy of a data dir that already holds one complete turn (two log
messages, two points). Every case must end with: the exit code the README names (3
unreachable, 4 model not pulled, 5 timeout / cut off / other model error), exactly one
stderr line naming the problem (never a traceback), the user's message in the daily log, a
partial reply kept and marked `cut_off` (or an empty reply marked `failed` with the same
reason), the earlier log bytes and points untouched, nothing written outside the data dir,
and the next normal `ask` working.

Unit tests that already pin the classification (not repeated here): tests/test_gateway.py
(unreachable, 404, 500, stall beyond the read timeout, drop / malformed / error line mid
stream), tests/test_turn.py (partial kept and marked, failed before any text),
tests/test_cli.py (`ask` exit codes and the one line for those faults on a fresh data dir,
including a delay before the headers, a drop and a malformed line before any text),
tests/test_fact_turn.py (unknown tools and bad arguments in-process),
tests/test_turn_memory.py (embedding down: points wait for backfill).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import pytest

from tests.reliability import fault_support
from tests.reliability.fault_support import (
    PARTIAL,
    REPLY,
    SEED_QUESTION,
    SEED_REPLY,
    Workspace,
    assert_ok,
    assert_one_line,
    log_path,
    points,
    query,
    read_log,
    vectorless,
)

# The shared fixtures (a seeded data dir per test, the stand-in and the env).
seeded_template = fault_support.seeded_template
world = fault_support.world

QUESTION = "What is the status of the blue service deployment today?"
SHORT_TIMEOUT = {"STRAYLIGHT_HTTP_TIMEOUT_SECONDS": "0.5"}
OTHER_REPLY = "Green is on hold until Friday: the canary failed its latency budget twice."
SLOW_LIMIT = 8.0  # seconds: a failing ask must not hang (generous for a loaded machine)
KEPT = "(the partial reply is kept in the log, marked cut off)"


@dataclass
class Before:
    log: bytes
    points: list[tuple[int, str, str]]
    outside: dict[str, tuple[int, int]]


def snapshot(w: Workspace) -> Before:
    before = Before(log_path(w.home).read_bytes(), points(w.home), w.outside())
    assert [(m.role, m.content) for m in read_log(w.home)] == [
        ("user", SEED_QUESTION),
        ("assistant", SEED_REPLY),
    ]
    assert len(before.points) == 2
    return before


def assert_committed_kept(w: Workspace, before: Before) -> None:
    """The earlier log bytes are a prefix of the file now, earlier points are unchanged,
    and nothing outside the data dir was written."""
    assert log_path(w.home).read_bytes().startswith(before.log)
    now = points(w.home)
    assert now[: len(before.points)] == before.points
    assert w.outside() == before.outside


def assert_turn_logged(w: Workspace, question: str, reply: str, status: str, reason: str | None):
    seed_user, seed_reply, user, assistant = read_log(w.home)
    assert (seed_user.content, seed_reply.content) == (SEED_QUESTION, SEED_REPLY)
    assert (user.role, user.content, user.status) == ("user", question, "complete")
    assert (assistant.role, assistant.content, assistant.status) == ("assistant", reply, status)
    assert assistant.reason == reason
    assert assistant.conversation_id == user.conversation_id != seed_user.conversation_id


def assert_next_ask_works(w: Workspace, before: Before, **env: str) -> None:
    w.standin.clear_faults()
    w.standin.clear_replies()
    w.standin.script_reply(REPLY)
    proc = w.run("ask", "Are you back?", env=dict(w.env, **env) if env else None)
    assert_ok(proc)
    assert proc.stdout == REPLY + "\n"
    *_, user, reply = read_log(w.home)
    assert (user.content, reply.content, reply.status) == ("Are you back?", REPLY, "complete")
    assert_committed_kept(w, before)


def ask_with_fault(w: Workspace, env: dict[str, str] | None = None) -> Any:
    started = time.monotonic()
    proc = w.run("ask", QUESTION, env=dict(w.env, **env) if env else None)
    assert time.monotonic() - started < SLOW_LIMIT, "a failing ask must not hang"
    return proc


# ------------------------------------------------------------------ unreachable, not pulled


def test_refused_connection_exits_3_and_recovers_when_ollama_is_back(world: Workspace) -> None:
    before = snapshot(world)
    world.standin.stop()  # the port now refuses connections
    proc = ask_with_fault(world)
    line = assert_one_line(proc, 3, "Ollama is not reachable at", str(world.standin.port))
    assert "ollama serve" in line
    assert proc.stdout == ""
    assert_turn_logged(world, QUESTION, "", "failed", line)
    assert_committed_kept(world, before)
    world.standin.start()  # same port
    assert_next_ask_works(world, before)


def test_model_not_pulled_exits_4_naming_the_fix(world: Workspace) -> None:
    before = snapshot(world)
    proc = world.run("ask", "--model", "phi9:404b", QUESTION)
    line = assert_one_line(
        proc, 4, "model 'phi9:404b' is not pulled", "ollama pull phi9:404b", "straylight pull"
    )
    assert proc.stdout == ""
    assert_turn_logged(world, QUESTION, "", "failed", line)
    assert_committed_kept(world, before)
    assert_next_ask_works(world, before)


# ------------------------------------------------------------- model errors: exit code 5


@dataclass(frozen=True)
class Fault:
    kind: str
    params: dict[str, Any]
    line: str  # the one stderr line, without the `straylight: ` prefix
    partial: str = ""  # what stays in the log (and on stdout) before the fault
    env: dict[str, str] | None = None


FAULTS = {
    "http-500": Fault(
        "status",
        {"status": 500, "message": "CUDA out of memory"},
        "Ollama answered HTTP 500: CUDA out of memory",
    ),
    "stall-before-text": Fault(
        "stall",
        {"after": 0, "seconds": 3.0},
        "Ollama did not answer within 0.5 s "
        "(raise STRAYLIGHT_HTTP_TIMEOUT_SECONDS if the model is just slow)",
        env=SHORT_TIMEOUT,
    ),
    "stall-mid-stream": Fault(
        "stall",
        {"after": 2, "seconds": 3.0},
        "Ollama sent nothing more for 0.5 s in the middle of the reply "
        f"(raise STRAYLIGHT_HTTP_TIMEOUT_SECONDS if the model is just slow) {KEPT}",
        PARTIAL,
        env=SHORT_TIMEOUT,
    ),
    "drop-mid-stream": Fault(
        "drop",
        {"after": 2},
        f"the reply was cut off mid-stream: the connection to Ollama dropped {KEPT}",
        PARTIAL,
    ),
    "malformed-mid-stream": Fault(
        "malformed",
        {"after": 2, "line": "{not json"},
        f"the reply was cut off mid-stream: Ollama sent a malformed line {KEPT}",
        PARTIAL,
    ),
    "malformed-not-an-object": Fault(
        "malformed",
        {"after": 2, "line": "[1, 2, 3]"},
        f"the reply was cut off mid-stream: Ollama sent a malformed line {KEPT}",
        PARTIAL,
    ),
    "error-line-mid-stream": Fault(
        "error_line",
        {"after": 2, "message": "model runner crashed"},
        f"the reply was cut off mid-stream: Ollama reported: model runner crashed {KEPT}",
        PARTIAL,
    ),
}


@pytest.mark.parametrize("case", list(FAULTS), ids=list(FAULTS))
def test_model_faults_exit_5_with_one_line_and_keep_what_arrived(
    world: Workspace, case: str
) -> None:
    fault = FAULTS[case]
    before = snapshot(world)
    world.standin.script_reply(REPLY)
    world.standin.fail_next(fault.kind, path="/api/chat", **fault.params)  # type: ignore[arg-type]
    proc = ask_with_fault(world, fault.env)
    line = assert_one_line(proc, 5)
    assert line == fault.line
    assert proc.stdout == (fault.partial + "\n" if fault.partial else "")
    # The reason in the log is the message without the "kept" note.
    reason = line.removesuffix(f" {KEPT}")
    status = "cut_off" if fault.partial else "failed"
    assert_turn_logged(world, QUESTION, fault.partial, status, reason)
    assert_committed_kept(world, before)
    # A failed turn saves no points: a partial reply never becomes a memory.
    assert len(points(world.home)) == 2
    assert_next_ask_works(world, before, **(fault.env or {}))


# ------------------------------------------------------------------------- embeddings


def test_an_embedding_of_the_wrong_dimension_waits_for_backfill(world: Workspace) -> None:
    """README (Storage): the first vector decides the dimension; a point whose vector does
    not fit is stored without one and found by its words until `backfill` embeds it."""
    before = snapshot(world)
    world.standin.script_reply(OTHER_REPLY)
    world.standin.fail_next("embed_dim", dim=3, count=None, path="/api/embed")
    proc = ask_with_fault(world)
    assert_ok(proc)
    assert proc.stderr == (
        "straylight: note: no embedding this turn (nomic-embed-text now gives vectors of 3 "
        "numbers, the memory holds 768; `straylight jobs run backfill` re-embeds): memory was "
        "searched and saved by its words only\n"
    )
    assert proc.stdout == OTHER_REPLY + "\n"
    assert_turn_logged(world, QUESTION, OTHER_REPLY, "complete", None)
    assert_committed_kept(world, before)
    assert [p[2] for p in points(world.home)[2:]] == [QUESTION, OTHER_REPLY]
    assert vectorless(world.home) == [3, 4]  # both new points wait; the old ones keep theirs
    world.standin.clear_faults()
    assert_ok(backfill := world.run("jobs", "run", "backfill"))
    assert "embedded 2 of 2" in backfill.stdout
    assert vectorless(world.home) == []
    recalled = json.loads(world.run("recall", "canary latency budget", "--json").stdout)
    assert OTHER_REPLY in [hit["content"] for hit in recalled["hits"]]
    assert_next_ask_works(world, before)


def test_an_embedding_model_that_is_not_pulled_does_not_stop_the_turn(world: Workspace) -> None:
    """Recall and saving are fail-soft (README, Recall): the reply comes, the new point is
    stored without a vector and waits for backfill."""
    before = snapshot(world)
    world.standin.script_reply(REPLY)
    missing = 'model "nomic-embed-text" not found, try pulling it first'
    world.standin.fail_next("status", status=404, message=missing, count=None, path="/api/embed")
    proc = ask_with_fault(world)
    assert_ok(proc)
    assert proc.stdout == REPLY + "\n"
    assert_turn_logged(world, QUESTION, REPLY, "complete", None)
    assert_committed_kept(world, before)
    assert [p[2] for p in points(world.home)[2:]] == [QUESTION]  # the reply is too short
    assert vectorless(world.home) == [3]
    assert_next_ask_works(world, before)


# ------------------------------------------------------------------------------ tools


def tool_results(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [json.loads(m["content"]) for m in request["messages"] if m.get("role") == "tool"]


BAD_CALLS = [
    {"name": "shell_exec", "arguments": {"cmd": "rm -rf /"}},
    {"name": "", "arguments": {}},
    {"name": "memory_write", "arguments": {"key": "x"}},
    {"name": "memory_write", "arguments": {"key": "k", "body": "b", "type": "bogus"}},
    {"name": "memory_write", "arguments": {"key": 7, "body": ["b"], "type": "fact"}},
    {
        "name": "memory_write",
        "arguments": {"key": "k:x", "body": "b", "type": "fact", "scope": "universe"},
    },
    {"name": "memory_read", "arguments": {}},
    {"name": "memory_read", "arguments": {"key": {"nested": [1, 2]}, "query": None}},
]


def test_unknown_tools_and_invalid_arguments_get_error_results(world: Workspace) -> None:
    before = snapshot(world)
    world.standin.script_reply("", tool_calls=BAD_CALLS)
    world.standin.script_reply("Sorry, I cannot do that here.")
    proc = ask_with_fault(world)
    assert_ok(proc)
    assert proc.stdout == "Sorry, I cannot do that here.\n"
    assert "candidate" not in proc.stderr
    first, second = world.standin.chat_requests()[-2:]
    assert first["tools"] and [t["function"]["name"] for t in first["tools"]] == [
        "memory_read",
        "memory_write",
    ]
    results = tool_results(second)
    assert len(results) == len(BAD_CALLS)
    assert all(set(result) == {"error"} for result in results), results
    assert "unknown tool" in results[0]["error"] and "unknown tool" in results[1]["error"]
    assert "needs key, body and type" in results[2]["error"]
    assert "needs a key or a query" in results[6]["error"]
    assert_turn_logged(world, QUESTION, "Sorry, I cannot do that here.", "complete", None)
    assert_committed_kept(world, before)
    assert query(world.home, "SELECT count(*) FROM facts") == [(0,)]
    assert query(world.home, "SELECT count(*) FROM candidates") == [(0,)]
    assert_next_ask_works(world, before)


def test_a_model_that_only_calls_tools_gets_three_rounds_then_must_answer(
    world: Workspace,
) -> None:
    """README (Design notes): at most 3 tool rounds per turn, then the model must answer in
    text — the last request carries no tools, and a model that still answers with tool
    calls alone ends the turn with a named error instead of an empty "complete" reply."""
    before = snapshot(world)
    for _ in range(5):
        world.standin.script_reply("", tool_calls=[{"name": "shell_exec", "arguments": {}}])
    proc = ask_with_fault(world)
    line = assert_one_line(proc, 5, "asked for tools again after 3 rounds")
    assert proc.stdout == ""
    requests = world.standin.chat_requests()[-4:]
    assert [bool(r.get("tools")) for r in requests] == [True, True, True, False]
    assert len(tool_results(requests[-1])) == 3
    assert_turn_logged(world, QUESTION, "", "failed", line)
    assert_committed_kept(world, before)
    assert_next_ask_works(world, before)


def test_after_three_tool_rounds_a_text_answer_finishes_the_turn(world: Workspace) -> None:
    before = snapshot(world)
    for _ in range(3):
        world.standin.script_reply("", tool_calls=[{"name": "shell_exec", "arguments": {}}])
    world.standin.script_reply(REPLY)
    proc = ask_with_fault(world)
    assert_ok(proc)
    assert proc.stdout == REPLY + "\n"
    assert not world.standin.chat_requests()[-1].get("tools")
    assert_turn_logged(world, QUESTION, REPLY, "complete", None)
    assert_next_ask_works(world, before)


def test_tool_arguments_that_are_not_an_object_are_a_malformed_reply(world: Workspace) -> None:
    """Ollama sends arguments as a JSON object; a string there fails the client's schema,
    which is a malformed reply (exit 5), not a crash."""
    before = snapshot(world)
    world.standin.script_reply(
        "", tool_calls=[{"function": {"name": "memory_read", "arguments": "key=deploy"}}]
    )
    proc = ask_with_fault(world)
    line = assert_one_line(proc, 5, "Ollama sent a malformed reply")
    assert_turn_logged(world, QUESTION, "", "failed", line)
    assert_committed_kept(world, before)
    assert_next_ask_works(world, before)
