"""Hostile text on the way out: what a hand-edited day file holds is masked before it goes
to the model; a server's error text is masked in `pull`'s line and shown without its ESC
sequences by `jobs` and `status` on a terminal; a reply that comes in one chunk larger than
`reply_max_chars` keeps what fits; stdout on a full disk is named, not logged as a cancel;
a password with `&`, `;` or `,` in it is masked whole."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from memory.secret_masking import mask_secrets
from tests.support.cli import (
    NOW,
    REPO_ROOT,
    Env,
    cli_command,
    on_a_terminal,
    printed_json,
    run_cli,
)
from tests.support.ollama_standin import OllamaStandIn

GITHUB_TOKEN = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"
ESC = "\x1b[31m"


@pytest.fixture
def env(cli_env: Callable[..., Env], standin: OllamaStandIn) -> Env:
    return cli_env(OLLAMA_HOST=standin.host, STRAYLIGHT_NOW=NOW)


def test_a_secret_typed_into_a_day_file_is_masked_before_the_model(
    env: Env, home: Path, standin: OllamaStandIn
) -> None:
    assert run_cli(env, "ask", "-c", "handmade", "Remember the deploy steps.").returncode == 0
    day = next((home / "conversation").glob("*.md"))
    text = day.read_text(encoding="utf-8")
    day.write_text(
        text.replace("Remember the deploy steps.", f"The token is {GITHUB_TOKEN} for the ci."),
        encoding="utf-8",
    )
    assert run_cli(env, "ask", "-c", "handmade", "What was the token?").returncode == 0
    sent = str(standin.chat_requests()[-1]["messages"])
    assert GITHUB_TOKEN not in sent and "[REDACTED:github_token]" in sent


def test_pull_masks_what_the_server_said(env: Env, standin: OllamaStandIn) -> None:
    standin.fail_next("status", status=500, path="/api/pull", message=f"disk full {GITHUB_TOKEN}")
    pulled = run_cli(env, "pull", "qwen3")
    assert pulled.returncode == 1
    assert GITHUB_TOKEN not in pulled.stderr and "[REDACTED:github_token]" in pulled.stderr


def test_a_servers_escape_sequences_do_not_reach_the_terminal(
    env: Env, standin: OllamaStandIn
) -> None:
    related = (
        "The staging host ferret-7 runs the nightly deploy of the billing service.",
        "The nightly deploy of the billing service on ferret-7 needs the ci box.",
    )
    for fact in related:
        assert run_cli(env, "remember", fact).returncode == 0
    standin.fail_next("status", status=500, path="/api/chat", message=f"boom {ESC}red", count=None)
    ran = on_a_terminal(env, "jobs", "run", "dream")
    listed = on_a_terminal(env, "jobs", "list")
    standin.fail_next("status", status=500, path="/api/version", message=f"v{ESC}", count=None)
    status = on_a_terminal(env, "status")
    for shown in (ran, listed, status):
        assert "\x1b[31m" not in shown and "␛" in shown, shown


def test_a_reply_in_one_chunk_over_the_limit_keeps_what_fits(
    env: Env, standin: OllamaStandIn
) -> None:
    reply = "A" * 100
    standin.script_reply(reply, tokens=[reply])
    asked = run_cli({**env, "STRAYLIGHT_REPLY_MAX_CHARS": "30"}, "ask", "one big chunk please")
    assert asked.returncode == 5
    logged = printed_json(run_cli(env, "history", "--json"), quiet=True)
    answer = logged[-1]
    assert answer["status"] == "cut_off" and answer["content"] == "A" * 30, answer


def test_a_full_disk_under_stdout_is_named_and_logged_as_such(env: Env) -> None:
    with open("/dev/full", "w") as full:
        asked = subprocess.run(
            cli_command("ask", "hello there"),
            env=env,
            cwd=REPO_ROOT,
            stdin=subprocess.DEVNULL,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    assert asked.returncode == 1
    assert asked.stderr.strip() == "straylight: cannot write the output: No space left on device"
    logged = printed_json(run_cli(env, "history", "--json"), quiet=True)
    assert logged[-1]["status"] == "cancelled"
    assert "could not be written" in logged[-1]["reason"], logged[-1]


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("password=Tr0ub4dor&3 ok", ["Tr0ub4dor", "&3"]),
        ("password: p@ss&w0rd!x", ["p@ss", "w0rd"]),
        ("DB_PASS=ab#cd;ef", ["ab#cd", ";ef"]),
    ],
)
def test_a_password_with_separators_in_it_is_masked_whole(text: str, kept: list[str]) -> None:
    masked = mask_secrets(text)
    assert "[REDACTED:password]" in masked
    assert not any(piece in masked for piece in kept), masked


@pytest.mark.parametrize(
    ("text", "left"),
    [
        ("https://x/?password=abc123&user=bob", "&user=bob"),
        ("PASS=hunter22; echo done", "; echo done"),
        ("the password: hunter22, and then", ", and then"),
    ],
)
def test_what_follows_a_password_stays(text: str, left: str) -> None:
    masked = mask_secrets(text)
    assert "[REDACTED:password]" in masked and masked.endswith(left), masked
