"""Issue 7, part 5, and issue 14 §2: a second Straylight on the same data dir.

A real `straylight ask` holds the data dir while its reply streams slowly from the Ollama
stand-in (seconds between chunks, until the test lets the rest through); meanwhile the user
runs other commands on the same data dir. The holder serves them over its socket: each one
that opens the memory runs in the holder and prints what it would print alone; a second TUI
stops with one line naming the holder's PID (exit 6, README "Headless commands"); `history`
and `config` still work; the holder finishes its turn as if nothing happened.

Unit-level coverage not repeated here: tests/test_data_dir_lock.py (the lock itself),
tests/test_database.py::test_a_second_process_gets_a_one_line_message_with_the_holders_pid
(DuckDB's own lock), tests/test_cli_memory.py::test_a_held_data_dir_gives_one_line_and_exit_6
(the commands against a bare lock holder that serves nothing), tests/test_owner_socket.py
(the socket, forwarding, kill -9 of the owner).
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.reliability.corruption_support import (  # noqa: F401 - the fixtures
    DAY,
    SEED_POINTS,
    Env,
    assert_seed_intact,
    copy_seed,
    env,
    history_json,
    home,
    make_env,
    outside_snapshot,
    popen_cli,
    run_cli,
    run_many,
    seed_data_dir,
    seed_messages,
    seed_template,
    spawn_many,
    summary,
)
from tests.support.cli import assert_one_line, assert_quiet
from tests.support.ollama_standin import OllamaStandIn

EXIT_DATA_DIR_IN_USE = 6
HOLDER_QUESTION = "Which harbour does the night ferry to the northern island leave from?"
HOLDER_REPLY = "The night ferry leaves from the old harbour, pier four, at a quarter past eleven."
SLOW_CHUNKS = 2.0  # seconds between the holder's reply chunks, until the test says go
WAIT = 20.0


@pytest.fixture
def holder(env: Env, standin: OllamaStandIn) -> Iterator[Holder]:
    """`straylight ask` mid-reply: it holds the data dir until the stall ends."""
    standin.script_reply(HOLDER_REPLY)
    standin.token_delay = SLOW_CHUNKS
    process = popen_cli(env, "ask", HOLDER_QUESTION)
    running = Holder(process)
    try:
        running.wait_for_first_words()
        yield running
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=WAIT)
        assert process.stdout is not None and process.stderr is not None
        process.stdout.close()
        process.stderr.close()


class Holder:
    """The first instance: a running `straylight ask` and what it printed so far."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.received = b""

    @property
    def pid(self) -> int:
        return self.process.pid

    def running(self) -> bool:
        return self.process.poll() is None

    def wait_for_first_words(self) -> None:
        """The first chunk is on stdout: the lock is taken and the memory is open."""
        assert self.process.stdout is not None
        deadline = time.monotonic() + WAIT
        while not self.received and time.monotonic() < deadline:
            ready, _, _ = select.select([self.process.stdout], [], [], 0.05)
            if ready:
                self.received += os.read(self.process.stdout.fileno(), 4096)
        assert self.received, "the holder never started its reply"

    def finish(self) -> tuple[int, str, str]:
        out, err = self.process.communicate(timeout=WAIT)
        return self.process.returncode, (self.received + out).decode(), err.decode()


def test_a_second_instance_is_served_by_the_holder_and_a_second_tui_is_refused(
    env: Env, home: Path, tmp_path: Path, holder: Holder, standin: OllamaStandIn
) -> None:
    outside = outside_snapshot(tmp_path, home)
    # Processes: the contenders meet another process's lock, and a regressed TUI (`[]`)
    # would start here if it were in-process.
    second = spawn_many(
        env,
        ["status", "--json"],
        ["remember", "The night ferry is cancelled when the wind is above force eight."],
        ["recall", "night ferry"],
        [],  # the TUI: refused before it paints
    )
    history, config = run_many(env, ["history", "--json", "--date", DAY], ["config", "--json"])
    assert holder.running(), "the holder ended before the second instances ran"
    *served, tui = second
    status, remembered, recalled = served
    for proc in (status, remembered):
        assert_quiet(proc)
    # side by side: the recall may run before the pin is indexed; then its empty answer is
    # the stderr note `recall` gives for one (stdout stays the block: empty)
    assert recalled.returncode == 0 and recalled.stderr in ("", "nothing recalled\n"), (
        recalled.stdout[-500:],
        recalled.stderr[-2000:],
    )
    assert bool(recalled.stdout) != bool(recalled.stderr)
    # side by side: the pin may come first
    assert json.loads(served[0].stdout)["points"]["total"] in (SEED_POINTS, SEED_POINTS + 1)
    assert served[1].stdout == f"remembered #{SEED_POINTS + 1}\n"
    line = assert_one_line(tui, EXIT_DATA_DIR_IN_USE, f"PID {holder.pid}")
    assert line == (
        f"straylight: {home} is in use by PID {holder.pid} (another Straylight?); "
        "close it or use --home"
    )
    assert tui.stdout == ""
    # Reading the logs and the settings never needs the lock.
    assert_quiet(history)
    assert summary(json.loads(history.stdout)) == [
        *seed_messages(),
        ("user", HOLDER_QUESTION, "complete"),
    ]
    assert_quiet(config)

    # The first instance finishes its turn as if alone.
    standin.token_delay = 0.0
    code, out, err = holder.finish()
    assert (code, out, err) == (0, HOLDER_REPLY + "\n", "")
    assert len(standin.chat_requests()) == 1  # the TUI never reached the model
    messages = history_json(env)
    assert summary(messages) == [
        *seed_messages(),
        ("user", HOLDER_QUESTION, "complete"),
        ("assistant", HOLDER_REPLY, "complete"),
    ]
    assert_seed_intact(env, points=SEED_POINTS + 3)  # the pin and the holder's two points
    assert outside_snapshot(tmp_path, home) == outside


def test_a_holder_killed_mid_reply_frees_the_data_dir(
    env: Env, home: Path, tmp_path: Path, holder: Holder, standin: OllamaStandIn
) -> None:
    outside = outside_snapshot(tmp_path, home)
    os.kill(holder.pid, signal.SIGKILL)
    holder.process.wait(timeout=WAIT)
    standin.token_delay = 0.0

    # The kernel dropped the lock with the process: the next instance starts at once.
    standin.script_reply("Yes, it runs every night of the week except on Mondays in winter.")
    proc = run_cli(env, "ask", "Does the night ferry run on every single night of the week?")
    assert_quiet(proc)
    assert proc.stdout == "Yes, it runs every night of the week except on Mondays in winter.\n"
    # The killed turn's message was committed before the reply began; it stays.
    assert summary(history_json(env)) == [
        *seed_messages(),
        ("user", HOLDER_QUESTION, "complete"),
        ("user", "Does the night ferry run on every single night of the week?", "complete"),
        (
            "assistant",
            "Yes, it runs every night of the week except on Mondays in winter.",
            "complete",
        ),
    ]
    assert_seed_intact(env, points=SEED_POINTS + 2)  # the new turn's; the killed one saved none
    assert outside_snapshot(tmp_path, home) == outside
