"""Issue 15 §8 in the reliability suite: signals during `ask`, a crash inside a metadata line,
a read-only data dir, and a server that stalls every call — each on a copy of a data dir that
already holds one complete turn, checked through the product's own parser and the DuckDB
file, as the rest of the suite does.

- SIGTERM or SIGHUP while the reply streams: what arrived is logged, marked `cancelled` with
  the signal as the reason, the user's message before it; exit 143 / 129, one line; the
  earlier turn and points untouched; the next `ask` works.
- A log cut inside a metadata line (`### assistant` then `<!-- straylight {"ti`, what a kill
  during that write leaves): a damaged header, never text the model is sent.
- A read-only data dir (a backup on a read-only mount): the reading commands (`status`,
  `recall`, `history`, the lists, `facts get|search|history`, `conversations export`) answer
  and write nothing; a writing command stops with one line, exit 2 (checked under a
  read-only bind mount in a private mount namespace; skipped where `unshare` cannot make one).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from store.daily_log import LogMessage, format_message
from tests.reliability import fault_support
from tests.reliability.fault_support import (
    SEED_QUESTION,
    SEED_REPLY,
    Workspace,
    assert_ok,
    log_path,
    points,
    read_log,
)
from tests.support.cli import REPO_ROOT, cli_command

seeded_template = fault_support.seeded_template
world = fault_support.world

REPLY = "one two three four five six seven"
WAIT = 30.0  # seconds a step may take on a loaded machine


STOPPED = "stopped by {name} (what arrived is kept in the log, marked cancelled)"


def start_ask(world: Workspace) -> subprocess.Popen[bytes]:
    """`straylight ask "count for me"` as a process, its output piped (bytes)."""
    return subprocess.Popen(
        cli_command("ask", "count for me"),
        env=world.env,
        cwd=REPO_ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


@pytest.mark.parametrize(
    ("signum", "code", "said", "reason"),
    [
        (signal.SIGTERM, 143, STOPPED, "stopped by SIGTERM"),
        (signal.SIGHUP, 129, STOPPED, "stopped by SIGHUP"),
        (signal.SIGINT, 130, "interrupted", "cancelled by the user"),  # Ctrl-C
    ],
)
def test_a_signal_during_the_reply_keeps_what_arrived_marked(
    world: Workspace, signum: signal.Signals, code: int, said: str, reason: str
) -> None:
    before = log_path(world.home).read_bytes()
    world.standin.script_reply(REPLY)
    world.standin.fail_next("stall", after=3, seconds=WAIT, path="/api/chat")
    proc = start_ask(world)
    assert proc.stdout is not None and proc.stderr is not None
    os.set_blocking(proc.stdout.fileno(), False)
    seen = b""
    deadline = time.monotonic() + WAIT
    while b"three" not in seen and proc.poll() is None and time.monotonic() < deadline:
        seen += proc.stdout.read() or b""
        time.sleep(0.02)
    assert b"three" in seen, seen
    proc.send_signal(signum)
    assert proc.wait(WAIT) == code
    lines = proc.stderr.read().decode().strip().splitlines()
    assert lines == [f"straylight: {said.format(name=signum.name)}"]
    seen += proc.stdout.read() or b""
    assert seen.endswith(b"three \n"), seen  # the error line does not run on from the reply
    world.standin.clear_faults()
    assert log_path(world.home).read_bytes().startswith(before)
    messages = read_log(world.home)
    assert [(m.role, m.content) for m in messages[:2]] == [
        ("user", SEED_QUESTION),
        ("assistant", SEED_REPLY),
    ]
    user, reply = messages[2:]
    assert (user.role, user.content, user.status) == ("user", "count for me", "complete")
    assert reply.role == "assistant" and reply.status == "cancelled"
    assert reply.content.strip() == "one two three"
    assert reply.reason == reason
    assert len(points(world.home)) == 2  # a cancelled reply never becomes a memory
    world.standin.script_reply("Still here.")
    assert_ok(after := world.run("ask", "are you there?"))
    assert after.stdout == "Still here.\n"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_before_the_model_was_asked_marks_the_message_cancelled(
    world: Workspace, signum: signal.Signals
) -> None:
    """The message is logged, then recalled with (the embedding model's cold load: seconds)
    before the model is asked. A signal there left the message unanswered in the log, with
    no reply marked `cancelled`, though the line said it was (and the next turn sent two
    user messages in a row)."""
    world.standin.fail_next("delay", seconds=WAIT, path="/api/embed")
    proc = start_ask(world)
    deadline = time.monotonic() + WAIT
    while not any(r.path == "/api/embed" for r in world.standin.requests):
        assert time.monotonic() < deadline and proc.poll() is None, "no embedding asked"
        time.sleep(0.02)
    proc.send_signal(signum)
    assert proc.wait(WAIT) == 128 + signum
    world.standin.clear_faults()
    user, reply = read_log(world.home)[2:]
    assert (user.role, user.content) == ("user", "count for me")
    assert (reply.role, reply.content.strip(), reply.status) == ("assistant", "", "cancelled")
    assert world.standin.chat_requests() == []  # the model was never asked


def test_sigterm_ends_an_ask_whose_output_nobody_reads(world: Workspace) -> None:
    """`straylight ask … | less`, never scrolled: the reply's write blocks on the full pipe,
    the event loop with it, and SIGTERM (handed to that loop) waited for ever. Now the
    process ends anyway, 143, a few seconds later."""
    world.standin.script_reply(" ".join(["a-long-word-of-the-reply"] * 12_000))  # > 64 KiB
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui.cli", "ask", "write me a lot"],
        env=world.env,
        cwd=REPO_ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,  # never read
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + WAIT
        while not world.standin.chat_requests() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(3.0)  # the pipe fills and the write blocks
        assert proc.poll() is None  # it is stuck on the pipe, as a user would see it
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(WAIT) == 143
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(WAIT)
    assert [m.content for m in read_log(world.home) if m.role == "user"][-1] == "write me a lot"


def test_a_crash_inside_a_metadata_line_is_never_sent_to_the_model(world: Workspace) -> None:
    (seed_user,) = [m for m in read_log(world.home) if m.role == "user"]
    user = LogMessage("user", "and then?", conversation_id=seed_user.conversation_id)
    with log_path(world.home).open("ab") as log:  # the kill hit the reply's metadata write
        log.write(format_message(user).encode() + b'### assistant\n<!-- straylight {"ti')
    world.standin.script_reply("Then nothing.")
    assert_ok(world.run("ask", "--conversation", seed_user.conversation_id, "still there?"))
    sent = world.standin.chat_requests()[-1]["messages"]
    assert [m["content"] for m in sent[1:]] == [
        SEED_QUESTION,
        SEED_REPLY,
        "and then?",
        "still there?",
    ]
    damaged = read_log(world.home)[3]
    assert (damaged.role, damaged.content, damaged.status) == ("assistant", "", "truncated")


def _read_only_mount_works(path: Path) -> bool:
    probe = subprocess.run(
        ["unshare", "-rm", "sh", "-c", f"mount --bind -o ro '{path}' '{path}'"],
        capture_output=True,
        check=False,
    )
    return probe.returncode == 0


def _on_a_read_only_mount(world: Workspace, command: list[str]) -> subprocess.CompletedProcess[str]:
    if shutil.which("unshare") is None or not _read_only_mount_works(world.home):
        pytest.skip("no read-only bind mount here (unshare -rm)")
    home = str(world.home)
    args = " ".join(f"'{a}'" for a in command)
    script = f"mount --bind -o ro '{home}' '{home}' && exec '{sys.executable}' -m tui.cli {args}"
    return subprocess.run(
        ["unshare", "-rm", "sh", "-c", script],
        env=world.env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
    )


@pytest.mark.parametrize(
    "command",
    [["status"], ["recall", "blue service"], ["facts", "list"], ["jobs", "list"]],
    ids=lambda c: " ".join(c),
)
def test_a_read_only_data_dir_can_be_read(world: Workspace, command: list[str]) -> None:
    """The reading commands write nothing (issue 15 §5), so a backup on a read-only mount
    can be looked at in place."""
    listing = fault_support.tree(world.home)
    proc = _on_a_read_only_mount(world, command)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "cannot write" not in proc.stderr, proc.stderr
    assert fault_support.tree(world.home) == listing


FACT_BODY = "the staging host is blue-7"


READ_ANSWERS = [
    (["history"], SEED_QUESTION),
    (["conversations"], "{cid}"),
    (["conversations", "--json"], '"id": "{cid}"'),
    (["conversations", "export", "{cid}"], SEED_REPLY),
    (["hypotheses", "list", "--json"], "[]"),
    (["candidates", "list", "--json"], "[]"),
    (["facts", "get", "staging-host"], FACT_BODY),
    (["facts", "search", "staging host"], FACT_BODY),
    (["facts", "history", "staging-host"], FACT_BODY),
]


@pytest.mark.parametrize(
    ("command", "shows"), [pytest.param(*row, id=" ".join(row[0])) for row in READ_ANSWERS]
)
def test_every_reading_command_answers_from_a_read_only_data_dir(
    world: Workspace, command: list[str], shows: str
) -> None:
    """A backup on a read-only mount is looked at in place: the lists, the export to stdout,
    and a fact read (whose use is counted only where it can be written)."""
    assert_ok(
        world.run(
            "facts",
            "set",
            "staging-host",
            "--type",
            "fact",
            "--body",
            FACT_BODY,
            "--scope",
            "global",
        )
    )
    listed = world.run("conversations", "--json")  # writes its summary file while it can
    cid = json.loads(listed.stdout)[0]["id"]
    listing = fault_support.tree(world.home)
    proc = _on_a_read_only_mount(world, [part.format(cid=cid) for part in command])
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "cannot write" not in proc.stderr, proc.stderr
    assert shows.format(cid=cid) in proc.stdout, proc.stdout
    assert fault_support.tree(world.home) == listing


@pytest.mark.parametrize("command", [["remember", "a note"], ["ask", "hello"]], ids=lambda c: c[0])
def test_a_read_only_data_dir_is_one_line_exit_2_for_a_writing_command(
    world: Workspace, command: list[str]
) -> None:
    listing = fault_support.tree(world.home)
    proc = _on_a_read_only_mount(world, command)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert str(world.home) in lines[0] and "read-only file system" in lines[0].lower()
    assert "unexpected error" not in lines[0] and "details in" not in lines[0]
    assert fault_support.tree(world.home) == listing


async def test_a_signal_after_the_reply_is_logged_does_not_cut_the_save_short() -> None:
    """The reply is in the log and its points are being saved: the signal sets the exit code
    (128 + it) but does not cancel the save."""
    from tui.cli_ask import SignalStop

    task = asyncio.current_task()
    assert task is not None
    stop = SignalStop(task)
    stop.finishing = True
    stop._stop(signal.SIGTERM)
    await asyncio.sleep(0)  # a cancellation would be delivered here
    assert stop.received == signal.SIGTERM and not task.cancelling()


def test_a_reader_that_goes_away_mid_reply_is_named_in_the_log(world: Workspace) -> None:
    """`straylight ask … | head -c 20`: the reader leaves while the reply streams. Exit 141
    (README), what arrived is kept, marked cancelled, and the reason says what happened —
    not "cancelled by the user", which is Ctrl-C's."""
    world.standin.script_reply(REPLY)
    world.standin.fail_next("stall", after=3, seconds=1.0, path="/api/chat")
    proc = start_ask(world)
    assert proc.stdout is not None and proc.stderr is not None
    seen = b""
    while b"three" not in seen:
        chunk = proc.stdout.read1(64)
        assert chunk, seen
        seen += chunk
    proc.stdout.close()  # the reader goes away during the stall
    assert proc.wait(WAIT) == 141
    assert proc.stderr.read() == b""
    reply = read_log(world.home)[-1]
    assert (reply.role, reply.status) == ("assistant", "cancelled")
    assert reply.content.startswith("one two three")  # and what came before the write failed
    assert reply.reason == "the reader of the output went away"
