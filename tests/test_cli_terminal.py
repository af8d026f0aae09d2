"""Text from the logs or the model that reaches a terminal cannot drive it: `history` and
`ask` show control characters as symbols on a terminal, and pass them through to a pipe."""

from __future__ import annotations

import json
import os
import pty
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from store.daily_log import DailyLog, LogMessage
from tests.support.cli import cli_command, on_a_terminal, run_cli
from tests.support.ollama_standin import OllamaStandIn

HOSTILE = "clear \x1b[2J title \x1b]0;PWNED\x07 done"


def test_history_ask_and_recall_show_escape_sequences_as_symbols_on_a_terminal(
    cli_env: Callable[..., dict[str, str]], standin: OllamaStandIn, home
) -> None:
    env = cli_env(OLLAMA_HOST=standin.host)
    when = datetime.now(UTC)
    DailyLog(home / "conversation").append(
        LogMessage("user", HOSTILE, "c-1", when), when.astimezone().date()
    )
    shown = on_a_terminal(env, "history")
    assert "\x1b]0;PWNED" not in shown and "\x1b[2J" not in shown
    assert "␛[2J" in shown and "␛]0;PWNED␇" in shown

    standin.script_reply(HOSTILE)
    shown = on_a_terminal(env, "ask", "say it")
    assert "\x1b[2J" not in shown and "␛[2J" in shown

    assert run_cli(env, "remember", HOSTILE).returncode == 0  # (its output is not the point)
    shown = on_a_terminal(env, "recall", "clear title done")
    assert "\x1b[2J" not in shown and "␛[2J" in shown

    piped = run_cli(env, "history")  # stdout is a pipe (not a terminal) in-process too
    assert HOSTILE in piped.stdout  # a pipe gets the text as stored


def test_status_shows_a_model_name_with_an_escape_sequence_as_symbols_on_a_terminal(
    cli_env: Callable[..., dict[str, str]], standin: OllamaStandIn
) -> None:
    """`status` printed the chat and embedding model names raw (from `--model`, config.toml
    or the environment): `\\e]52;…` wrote the terminal's clipboard."""
    env = cli_env(
        OLLAMA_HOST=standin.host,
        STRAYLIGHT_MODEL="m\x1b]52;c;aGk=\x07",
        STRAYLIGHT_EMBED_MODEL="e\x1b]0;PWNED\x07",
    )
    shown = on_a_terminal(env, "status")
    assert "\x1b" not in shown and "\x07" not in shown, shown
    assert "m␛]52;c;aGk=␇ (not pulled)" in shown and "e␛]0;PWNED␇" in shown


def test_a_file_name_with_an_escape_sequence_is_printed_back_as_symbols_on_a_terminal(
    cli_env: Callable[..., dict[str, str]], standin: OllamaStandIn, tmp_path: Path
) -> None:
    """`import-doc` and `conversations export -o` name the file they read or wrote; a name
    holding an ESC sequence is shown as symbols on a terminal, like the text they print."""
    env = cli_env(OLLAMA_HOST=standin.host)
    doc = tmp_path / "notes \x1b[2J\x1b]0;PWNED\x07.md"
    doc.write_text("# Ferry\n\nThe last ferry leaves the northern harbour at ten.\n", "utf-8")
    shown = on_a_terminal(env, "import-doc", str(doc))
    assert "\x1b" not in shown and "notes ␛[2J␛]0;PWNED␇.md: 1 added" in shown, shown

    assert run_cli(env, "ask", "When does the last ferry leave?").returncode == 0
    listed = run_cli(env, "conversations", "--json")
    cid = json.loads(listed.stdout)[0]["id"]
    shown = on_a_terminal(env, "conversations", "export", cid, "-o", str(doc))
    assert "\x1b" not in shown and "notes ␛[2J␛]0;PWNED␇.md (2 messages)" in shown, shown


def test_ask_dash_on_a_terminal_says_it_reads_the_message_until_ctrl_d(
    cli_env: Callable[..., dict[str, str]], standin: OllamaStandIn
) -> None:
    """`ask -` typed at a prompt, stdin a terminal, waited in silence for input: it looked
    hung. It now says where the message comes from and how to end it."""
    env = cli_env(OLLAMA_HOST=standin.host)
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        cli_command("ask", "-"),
        env=env,
        stdin=follower,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    os.close(follower)
    try:
        os.write(leader, b"typed at the terminal\n\x04")
        out, err = proc.communicate(timeout=60)
    finally:
        os.close(leader)
    assert proc.returncode == 0, err
    assert out.decode().startswith("Stand-in reply to: typed at the terminal")
    assert err.decode() == "straylight: type the text, then Ctrl+D on a line of its own\n"
