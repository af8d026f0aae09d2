"""A command that holds the data dir briefly without serving (`facts`, `candidates`,
`hypotheses`) says so in the lock file, and a writer finding it waits for it longer
(`BRIEF_HOLDER_SECONDS`) than for an owner that should answer on the socket
(`RETRY_SECONDS`, then exit 6): on a loaded machine a `facts get` can hold the dir for more
than 3 s, and the command beside it should not fail for that."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from store.data_dir_check import check_not_in_use
from store.data_dir_lock import DataDirLock, DataDirLocked
from tests.support.cli import NOW, Env, assert_ok, printed_json, run_cli, run_cli_process
from tests.support.ollama_standin import OllamaStandIn
from tui.owner_client import BRIEF_HOLDER_SECONDS, RETRY_SECONDS

ROOT = Path(__file__).resolve().parent.parent
HOLDER = """
import fcntl, os, sys, time
from pathlib import Path
from store.data_dir_lock import DataDirLock
if sys.argv[2] == "unsaid":  # locked, its PID not written yet (the moment after the flock)
    fd = os.open(Path(sys.argv[1]) / "straylight.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.ftruncate(fd, 0)
    print("locked", flush=True)
    time.sleep(float(sys.argv[3]))
    sys.exit(0)
lock = DataDirLock(Path(sys.argv[1]), brief=sys.argv[2] == "brief").acquire()
print("locked", flush=True)
time.sleep(float(sys.argv[3]))
lock.release()
"""
HELD_SECONDS = (
    RETRY_SECONDS + 1.5
)  # longer than the wait for an owner, shorter than for a brief one


@pytest.fixture
def env(cli_env: Callable[..., Env], standin: OllamaStandIn) -> Env:
    return cli_env(OLLAMA_HOST=standin.host, STRAYLIGHT_NOW=NOW)


def hold(home: Path, kind: str, seconds: float) -> subprocess.Popen[str]:
    home.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(home), kind, str(seconds)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    return holder


@pytest.mark.parametrize("kind", ["brief", "owner"])
def test_the_refusal_says_whether_the_holder_is_brief(tmp_path: Path, kind: str) -> None:
    holder = hold(tmp_path, kind, 30)
    try:
        for refuse in (lambda: DataDirLock(tmp_path).acquire(), lambda: check_not_in_use(tmp_path)):
            with pytest.raises(DataDirLocked) as caught:
                refuse()
            assert caught.value.pid == holder.pid and caught.value.brief == (kind == "brief")
            assert str(caught.value) == (  # the user's line does not change
                f"{tmp_path} is in use by PID {holder.pid} (another Straylight?); "
                "close it or use --home"
            )
    finally:
        holder.kill()
        holder.wait()


def test_a_writer_waits_out_a_brief_holder_but_not_a_silent_owner(env: Env, home: Path) -> None:
    assert HELD_SECONDS < BRIEF_HOLDER_SECONDS
    assert_ok(run_cli(env, "status"))  # the data dir exists
    holder = hold(home, "brief", HELD_SECONDS)
    try:
        started = time.monotonic()
        saved = run_cli(env, "remember", "the ferry to Lindau leaves at seven")
        waited = time.monotonic() - started
    finally:
        holder.wait()
    assert_ok(saved)
    assert waited > RETRY_SECONDS, waited  # it waited past the owner's wait, then ran here

    holder = hold(home, "owner", HELD_SECONDS)
    try:
        refused = run_cli(env, "remember", "the ferry back leaves at nine")
    finally:
        holder.wait()
    assert refused.returncode == 6, refused
    assert f"in use by PID {holder.pid}" in refused.stderr
    hits = printed_json(run_cli(env, "recall", "ferry", "--json"), quiet=True)["hits"]
    assert [hit["content"] for hit in hits] == ["the ferry to Lindau leaves at seven"]


def test_a_command_arriving_while_the_owner_ends_waits_for_it(
    env: Env, standin: OllamaStandIn
) -> None:
    """An owner that ends lets its clients' running commands finish (`GRACE_SECONDS`) before
    it lets go: meanwhile it serves no one, and a command arriving then waited only
    `RETRY_SECONDS` and failed, exit 6 (the chat quit while a forwarded `ask` streamed)."""
    from tests.test_owner_socket import SlowOwner, client_process

    assert_ok(run_cli(env, "remember", "the ferry to Lindau leaves at seven"))
    standin.script_reply("one two", tokens=["one ", "two"])  # the owner's own reply
    standin.script_reply("a b c d e f g h", tokens=[f"{w} " for w in "abcdefg"] + ["h"])
    standin.token_delay = 1.0
    owner = SlowOwner(env, "Count")
    served = client_process(env, "ask", "Count longer")  # forwarded, ends ~6 s after the owner's
    try:
        deadline = time.monotonic() + 20
        while len(standin.chat_requests()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(standin.chat_requests()) == 2, "the forwarded ask never reached the model"
        assert owner.process.stdout is not None
        while not owner.received.endswith(b"two\n") and time.monotonic() < deadline:
            owner.received += os.read(owner.process.stdout.fileno(), 4096)
        assert owner.process.poll() is None, "the owner left before its client's command ended"
        started = time.monotonic()
        saved = run_cli_process(env, "remember", "the ferry back leaves at nine")
        waited = time.monotonic() - started
        out, err = served.communicate(timeout=20)
    finally:
        standin.token_delay = 0.0
        owner.kill()
        if served.poll() is None:
            served.kill()
            served.communicate()
    assert (served.returncode, out, err) == (0, "a b c d e f g h\n", "")
    assert_ok(saved)
    assert waited > RETRY_SECONDS, waited  # the owner still ended its client's command
    hits = printed_json(run_cli(env, "recall", "ferry", "--json"), quiet=True)["hits"]
    assert "the ferry back leaves at nine" in [hit["content"] for hit in hits]


def test_a_holder_that_has_not_written_its_pid_yet_is_waited_for_like_a_brief_one(
    env: Env, home: Path
) -> None:
    """A holder takes the lock, then writes its PID and whether it is brief: a command that
    read the lock file in between saw nobody and gave up at its 3 s (ten commands started at
    once: one or two exited 6 after 8-13 s, the line naming no PID)."""
    assert_ok(run_cli(env, "status"))
    holder = hold(home, "unsaid", HELD_SECONDS)
    try:
        saved = run_cli(env, "remember", "the ferry to Lindau leaves at seven")
    finally:
        holder.wait()
    assert_ok(saved)
