"""Issue 7, part 6: the disk fills up while a turn is being saved.

The fault is injected with RLIMIT_FSIZE in the `straylight ask` process (see
`corruption_support.run_cli`): no file that process writes can grow past the limit, so real
writes through the real code fail with EFBIG ("File too large"), like ENOSPC on a full disk —
unprivileged, as root too, and without mocking any of our code. (A small tmpfs needs mount
rights CI does not have; a read-only data dir does not stop root.) The limit is per file, so
each case picks it from the sizes of the files in the data dir to hit one write:

- the daily log cannot take the user's message (the turn stops before the model is asked);
- the daily log takes the message but not the reply;
- the database's write-ahead log cannot take the turn's two points;
- `straylight.log` itself cannot grow.

Every case checks the exit code and stderr, that what was committed before (log messages,
points) is intact, and that a turn without the limit works again.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.reliability.corruption_support import (  # noqa: F401 - the fixtures
    DAY,
    MODEL,
    NOW,
    SEED_POINTS,
    SEED_QUESTION,
    Env,
    assert_seed_intact,
    copy_seed,
    day_log,
    env,
    history_and_status,
    home,
    log_block,
    make_env,
    outside_snapshot,
    recall_json,
    run_cli,
    seed_data_dir,
    seed_messages,
    seed_template,
    sha256,
    status_json,
    summary,
)
from tests.support.cli import CliResult, assert_one_line, assert_quiet
from tests.support.ollama_standin import OllamaStandIn

EXIT_UNEXPECTED = 1  # README: "unexpected error (details in the log file)"
QUESTION = "When does the last ferry of the evening leave the northern harbour these days?"
REPLY = "The last ferry of the evening leaves the northern harbour at twenty past ten."
PADDING_BYTES = 64 * 1024
WAL_LIMIT = 8192  # the day log and straylight.log stay below it; one turn's WAL does not


def _pad_day_log(home: Path) -> list[tuple[str, str, str]]:
    """Append older, committed messages to today's log until it is PADDING_BYTES long, so a
    limit at its size leaves room for straylight.log (a traceback is a few KB)."""
    path = day_log(home)
    added: list[tuple[str, str, str]] = []
    with path.open("a", encoding="utf-8") as handle:
        while path.stat().st_size < PADDING_BYTES:
            role = "user" if len(added) % 2 == 0 else "assistant"
            text = f"Earlier message {len(added)} about the harbour timetable. " * 8
            handle.write(log_block(role, text.strip(), "c-earlier"))
            handle.flush()
            added.append((role, text.strip(), "complete"))
    return added


def _user_block(conversation: str, text: str) -> bytes:
    meta = json.dumps({"time": NOW, "conversation": conversation, "model": MODEL})
    return f"### user\n<!-- straylight {meta} -->\n{text}\n\n".encode()


def test_a_full_disk_before_the_message_is_logged_stops_the_turn(
    env: Env, home: Path, tmp_path: Path, standin: OllamaStandIn
) -> None:
    earlier = _pad_day_log(home)
    path = day_log(home)
    digest = sha256(path)
    outside = outside_snapshot(tmp_path, home)

    standin.script_reply(REPLY)
    proc = run_cli(env, "ask", QUESTION, file_size_limit=path.stat().st_size)
    assert_one_line(proc, EXIT_UNEXPECTED, str(path), "File too large")
    assert proc.stdout == ""
    assert standin.chat_requests() == []  # nothing was sent that could not be recorded
    assert sha256(path) == digest  # not even a part of the message got in
    assert outside_snapshot(tmp_path, home) == outside

    # Space again: the next turn works and everything before it is there.
    assert_quiet(run_cli(env, "ask", QUESTION))
    messages, status = history_and_status(env)
    assert summary(messages) == [
        *seed_messages(),
        *earlier,
        ("user", QUESTION, "complete"),
        ("assistant", REPLY, "complete"),
    ]
    assert status["points"]["total"] == SEED_POINTS + 2


def test_a_full_disk_while_the_reply_is_logged_keeps_the_question_whole(
    env: Env, home: Path, tmp_path: Path, standin: OllamaStandIn
) -> None:
    earlier = _pad_day_log(home)
    path = day_log(home)
    before = path.read_bytes()
    question = _user_block("c-full", QUESTION)
    outside = outside_snapshot(tmp_path, home)

    standin.script_reply(REPLY)
    # Room for the question and 40 bytes of the reply's block.
    limit = len(before) + len(question) + 40
    proc = run_cli(env, "ask", "--conversation", "c-full", QUESTION, file_size_limit=limit)
    assert_one_line(proc, EXIT_UNEXPECTED, str(path), "File too large")
    assert proc.stdout.rstrip("\n") == REPLY  # it streamed before the log write failed
    # The question is committed whole; no half reply is left behind in the log.
    assert path.read_bytes() == before + question
    assert outside_snapshot(tmp_path, home) == outside

    standin.script_reply(REPLY)
    assert_quiet(run_cli(env, "ask", "--conversation", "c-full", QUESTION))
    messages, status = history_and_status(env)
    assert summary(messages) == [
        *seed_messages(),
        *earlier,
        ("user", QUESTION, "complete"),
        ("user", QUESTION, "complete"),
        ("assistant", REPLY, "complete"),
    ]
    assert status["points"]["total"] == SEED_POINTS + 2  # the failed turn saved none


def _ask_with_a_full_wal(env: Env, home: Path, standin: OllamaStandIn) -> CliResult:
    assert day_log(home).stat().st_size + 2048 < WAL_LIMIT, "precondition"
    assert (home / "straylight.log").stat().st_size + 4096 < WAL_LIMIT, "precondition"
    standin.script_reply(REPLY)
    return run_cli(env, "ask", QUESTION, file_size_limit=WAL_LIMIT)


def test_points_that_cannot_be_saved_leave_everything_earlier_intact(
    env: Env, home: Path, tmp_path: Path, standin: OllamaStandIn
) -> None:
    database = home / "straylight.duckdb"
    outside = outside_snapshot(tmp_path, home)
    proc = _ask_with_a_full_wal(env, home, standin)
    assert "Traceback" not in proc.stderr
    assert proc.stdout == REPLY + "\n"
    assert outside_snapshot(tmp_path, home) == outside
    # The daily log has the turn; the database rolled back the point that did not fit (the
    # user's may have got in before the write-ahead log was full) and opens fine.
    messages, status = history_and_status(env)
    assert summary(messages) == [
        *seed_messages(),
        ("user", QUESTION, "complete"),
        ("assistant", REPLY, "complete"),
    ]
    saved = status["points"]["total"]
    assert SEED_POINTS <= saved <= SEED_POINTS + 1
    assert status["index"]["state"] == "in_sync"
    assert SEED_QUESTION in [hit["content"] for hit in recall_json(env)["hits"]]
    assert database.exists()

    standin.script_reply(REPLY + " Space is back again.")
    assert_quiet(run_cli(env, "ask", "Space is back: " + QUESTION))
    assert status_json(env)["points"]["total"] == saved + 2


def test_points_that_cannot_be_saved_are_reported(
    env: Env, home: Path, standin: OllamaStandIn
) -> None:
    proc = _ask_with_a_full_wal(env, home, standin)
    assert_one_line(proc, EXIT_UNEXPECTED, "straylight.duckdb", "File too large")
    assert proc.stdout == REPLY + "\n"


def test_a_full_log_file_puts_no_traceback_on_the_screen(
    env: Env, home: Path, standin: OllamaStandIn
) -> None:
    log_file = home / "straylight.log"
    line = f"{DAY}T04:05:06 INFO straylight.cli: ask finished with exit code 0\n"
    log_file.write_text(line * (PADDING_BYTES // len(line) + 1), encoding="utf-8")
    standin.script_reply(REPLY)
    proc = run_cli(env, "ask", QUESTION, file_size_limit=log_file.stat().st_size)
    assert "Traceback" not in proc.stderr
    assert (proc.returncode, proc.stdout) == (0, REPLY + "\n")
    assert len(proc.stderr.splitlines()) <= 1  # at most one line saying the log is full
    assert_seed_intact(env, points=SEED_POINTS + 2)
