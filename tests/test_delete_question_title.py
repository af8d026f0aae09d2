"""`conversations delete ID` asks its `[y/N]` question with the conversation's title as the
user set it (`rename`, `/title`), not the one proposed from its first message — both when the
command runs in the user's process and when another process owns the data dir (the question
is asked where the terminal is; the title comes from the owner, which holds the database)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from store.data_dir_lock import DataDirLock
from tests.support.cli import NOW, Env, assert_ok, printed_json, run_cli
from tests.support.ollama_standin import OllamaStandIn
from tests.test_cli_conversations import _on_a_terminal
from tui.owner_server import OwnerServer

FIRST = "How do I keep sourdough starter alive over a two-week holiday?"
RENAMED = "Starter care while away"


@pytest.fixture
def env(cli_env: Callable[..., Env], standin: OllamaStandIn) -> Env:
    return cli_env(OLLAMA_HOST=standin.host, STRAYLIGHT_NOW=NOW)


def renamed_conversation(env: Env) -> str:
    assert_ok(run_cli(env, "ask", FIRST))
    cid = str(printed_json(run_cli(env, "history", "--json"))[-1]["conversation_id"])
    assert_ok(run_cli(env, "conversations", "rename", cid, RENAMED))
    return cid


def test_the_question_names_the_title_set_by_rename(env: Env) -> None:
    cid = renamed_conversation(env)
    code, said = _on_a_terminal(env, "n\n", "conversations", "delete", cid)
    assert code == 1 and "nothing deleted" in said
    assert f"Delete conversation {cid} ('{RENAMED}')" in said


def test_the_question_names_it_while_another_process_owns_the_data_dir(
    env: Env, home: Path
) -> None:
    cid = renamed_conversation(env)
    with DataDirLock(home):
        server = OwnerServer(home).start()
        try:
            code, said = _on_a_terminal(env, "n\n", "conversations", "delete", cid)
            assert code == 1 and "nothing deleted" in said
            assert f"Delete conversation {cid} ('{RENAMED}')" in said
            code, said = _on_a_terminal(env, "y\n", "conversations", "delete", cid)
            assert code == 0 and f"deleted {cid}" in said
        finally:
            server.stop()
    assert printed_json(run_cli(env, "conversations", "--json"), quiet=True) == []


def test_an_owner_that_does_not_serve_is_waited_for_then_the_title_is_the_set_one(
    env: Env, home: Path
) -> None:
    """A process holding the data dir without serving it (a short `facts` command) is waited
    for: once it lets go, the command runs here and asks with the title set by rename."""
    cid = renamed_conversation(env)
    lock = DataDirLock(home).acquire()
    threading.Timer(0.8, lock.release).start()
    code, said = _on_a_terminal(env, "y\n", "conversations", "delete", cid)
    assert f"Delete conversation {cid} ('{RENAMED}')" in said, said
    assert code == 0 and f"deleted {cid}" in said, said


def test_an_owner_that_never_serves_is_named_before_anything_is_asked(env: Env, home: Path) -> None:
    """Held without serving for longer than the wait: exit 6 with the owner's PID, and no
    question (an answer could not be acted on); nothing is deleted."""
    cid = renamed_conversation(env)
    with DataDirLock(home):
        started = time.monotonic()
        code, said = _on_a_terminal(env, "y\n", "conversations", "delete", cid)
        assert time.monotonic() - started < 10  # RETRY_SECONDS (3 s), then exit 6: no hang
    assert code == 6 and f"in use by PID {os.getpid()}" in said, said
    assert "Delete conversation" not in said, said
    listed = printed_json(run_cli(env, "conversations", "--json"), quiet=True)
    assert [row["title"] for row in listed] == [RENAMED]
