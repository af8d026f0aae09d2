"""`straylight` without a terminal (`echo hi | straylight`, a cron job, `straylight 2> log`):
the chat reads keys from stdin and draws on stderr, so it drew its screen into the pipe or
file and waited for keys that never came, for ever. Now it says so in one line, exit 2,
before it draws anything."""

from __future__ import annotations

import os
import pty
import subprocess
from pathlib import Path

from tests.support.cli import REPO_ROOT, cli_command, cli_env
from tests.support.ollama_standin import OllamaStandIn

WAIT = 30.0
ESC = b"\x1b"


def test_the_chat_without_a_terminal_says_so_and_ends(
    tmp_path: Path, standin: OllamaStandIn
) -> None:
    env = cli_env(tmp_path / "home", tmp_path, OLLAMA_HOST=standin.host, TERM="xterm")
    proc = subprocess.run(
        cli_command(),
        cwd=REPO_ROOT,
        env=env,
        input=b"hello\n",  # a pipe, as `echo hello | straylight`
        capture_output=True,
        timeout=WAIT,
        check=False,
    )
    assert proc.returncode == 2, proc
    assert proc.stderr.decode() == (
        "straylight: the chat needs a terminal: neither stdin nor stderr is one "
        '(one turn without one: straylight ask "TEXT")\n'
    )
    assert proc.stdout == b""
    assert standin.chat_requests() == []  # "hello" was not sent anywhere
    assert not (tmp_path / "home").exists()  # nor its lock and log made for a refusal


def test_the_chat_with_its_screen_redirected_says_so_and_draws_nothing(
    tmp_path: Path, standin: OllamaStandIn
) -> None:
    """Keys from a terminal, but stderr (where Textual draws) into a file."""
    env = cli_env(tmp_path / "home", tmp_path, OLLAMA_HOST=standin.host, TERM="xterm")
    leader, follower = pty.openpty()
    log_path = tmp_path / "err.log"
    try:
        with log_path.open("wb") as log:
            proc = subprocess.run(
                cli_command(),
                cwd=REPO_ROOT,
                env=env,
                stdin=follower,
                stdout=follower,
                stderr=log,
                timeout=WAIT,
                check=False,
            )
        os.set_blocking(leader, False)
        try:
            drawn = os.read(leader, 65536)
        except BlockingIOError:
            drawn = b""
    finally:
        os.close(follower)
        os.close(leader)
    said = log_path.read_bytes()
    assert proc.returncode == 2, said
    assert said.startswith(b"straylight: the chat needs a terminal: stderr is not one"), said
    assert ESC not in said and ESC not in drawn  # no screen drawn into either
