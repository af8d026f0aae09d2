"""SIGTERM (`kill`), SIGHUP (the terminal window closed, an ssh session dropped) and SIGINT
(`kill -INT`) while the TUI streams a reply: it quits as Ctrl+Q does, the reply that arrived
is kept in the log, marked cancelled with the signal as its reason, and the terminal is
restored (exit 143 / 129 / 130; SIGINT exited 0, logged "cancelled by the user").
By default both killed the process at once: the reply was lost and the terminal left in the
app's alternate screen with mouse reporting on."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.cli import (
    REPO_ROOT,
    cli_env,
    read_terminal_for,
    run_cli_process,
    start_tui,
)
from tests.support.ollama_standin import OllamaStandIn

WAIT = 30.0
LEAVE_ALTERNATE_SCREEN = b"\x1b[?1049l"


def _wait_for(condition: object, what: str, fd: int) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        read_terminal_for(fd, 0.1)  # keep the terminal drained: a full pty would block the TUI


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_stop_signal_mid_reply_keeps_what_arrived(
    tmp_path: Path, standin: OllamaStandIn, signum: signal.Signals
) -> None:
    home = tmp_path / "home"
    env = cli_env(
        home, tmp_path, OLLAMA_HOST=standin.host, STRAYLIGHT_JOBS_ENABLED="false", TERM="xterm"
    )
    standin.script_reply(" ".join(f"word{i}" for i in range(300)))
    standin.token_delay = 0.05
    process, leader = start_tui(env)
    try:
        # the first frame is painted, then Ollama is checked: the message box takes text
        _wait_for(lambda: any(r.path == "/api/tags" for r in standin.requests), "start", leader)
        os.write(leader, b"tell me a long story\r")
        _wait_for(lambda: standin.chat_requests(), "the reply", leader)
        read_terminal_for(leader, 1.0)  # some words arrive
        process.send_signal(signum)
        screen = read_terminal_for(leader, WAIT)
        assert process.wait(timeout=WAIT) == 128 + signum
        assert LEAVE_ALTERNATE_SCREEN in screen  # the terminal is given back
    finally:
        standin.token_delay = 0.0
        if process.poll() is None:
            process.kill()
            process.wait(timeout=WAIT)
        os.close(leader)
    history = json.loads(run_cli_process(env, "history", "--json").stdout)
    assert [(m["role"], m["status"]) for m in history] == [
        ("user", "complete"),
        ("assistant", "cancelled"),
    ]
    assert history[0]["content"] == "tell me a long story"
    assert history[1]["content"].startswith("word0 word1")
    assert history[1]["reason"] == f"stopped by {signum.name}"


def test_a_stop_signal_ends_a_tui_whose_terminal_is_notread_terminal_for(
    tmp_path: Path, standin: OllamaStandIn
) -> None:
    """Nobody reads the terminal (a frozen ssh session, a lost pty): the screen writer
    blocks on the full terminal, the event loop behind it, and SIGTERM waited for a loop that
    never ran again. Now the process ends anyway, 143, within a few seconds."""
    home = tmp_path / "home"
    env = cli_env(
        home, tmp_path, OLLAMA_HOST=standin.host, STRAYLIGHT_JOBS_ENABLED="false", TERM="xterm"
    )
    standin.script_reply(" ".join(f"word{i} " * 20 for i in range(400)))
    standin.token_delay = 0.01
    process, leader = start_tui(env)
    try:
        _wait_for(lambda: any(r.path == "/api/tags" for r in standin.requests), "start", leader)
        os.write(leader, b"tell me a long story\r")
        _wait_for(lambda: standin.chat_requests(), "the reply", leader)
        time.sleep(8.0)  # not read: the terminal fills and the screen writer blocks
        process.send_signal(signal.SIGTERM)
        started = time.monotonic()
        while process.poll() is None and time.monotonic() - started < WAIT:
            time.sleep(0.1)
        assert process.poll() == 128 + signal.SIGTERM, "SIGTERM did not end the TUI"
    finally:
        standin.token_delay = 0.0
        if process.poll() is None:
            process.kill()
            process.wait(timeout=WAIT)
        os.close(leader)


SHUTDOWN_HANGS = """
import asyncio, os, signal, sys, time
import tui.stop_signals as stop_signals
stop_signals.SHUTDOWN_SECONDS = 1.0

async def main() -> None:
    holder = {}

    def on_stop(signum):
        holder["signals"].taken(shutdown=True)  # the chat's loop took the stop ...
        time.sleep(60)  # ... and its shutdown then blocks (a writer on a terminal that is gone)

    signals = stop_signals.StopSignals(asyncio.get_running_loop(), (signal.SIGHUP,), on_stop)
    holder["signals"] = signals
    assert signals.install()
    print("ready", flush=True)
    await asyncio.sleep(60)

asyncio.run(main())
"""


def test_a_shutdown_that_blocks_after_the_stop_was_taken_still_ends_the_process() -> None:
    """SIGHUP with a screen open left the chat hung for ever, holding the data dir: the loop
    took the stop (which cancelled the watchdog), then Textual's shutdown blocked. The
    watchdog now stays armed for the shutdown (`SHUTDOWN_SECONDS`)."""
    process = subprocess.Popen(
        [sys.executable, "-c", SHUTDOWN_HANGS],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        process.send_signal(signal.SIGHUP)
        assert process.wait(timeout=20) == 128 + signal.SIGHUP
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
