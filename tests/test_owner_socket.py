"""One owner, many clients (issue 14 §2): the socket's bytes, a CLI owner serving other
processes, kill -9 of the owner, a stale socket, and `CommandRunner` in its three modes.

The TUI as the owner (under the pilot) is in tests/test_owner_tui.py; a running `ask` as
the owner of a seeded data dir in tests/reliability/test_second_instance.py.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from store.data_dir_lock import DataDirLock, held_here
from store.owner_socket import (
    SOCKET_FILENAME,
    FrameReader,
    Listener,
    PeerRefused,
    check_peer,
    connect,
    send_frame,
)
from tests.support.cli import (
    REPO_ROOT,
    assert_ok,
    cli_command,
    cli_env,
    run_cli_process,
    spawn_many,
)
from tests.support.ollama_standin import OllamaStandIn
from tui.command_runner import CommandRunner
from tui.owner_handover import ask_handover
from tui.owner_server import OwnerServer

WAIT = 20.0


def env_for(home: Path, tmp_path: Path, standin: OllamaStandIn) -> dict[str, str]:
    return cli_env(home, tmp_path, OLLAMA_HOST=standin.host, STRAYLIGHT_WORKSPACE="demo")


def client_process(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    """A `straylight` client as a process, its output read as text."""
    return subprocess.Popen(
        cli_command(*args),
        env=env,
        cwd=REPO_ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


class SlowOwner:
    """A `straylight ask` as a process of its own, mid-reply (the stand-in streams slowly):
    it holds the data dir, its memory is open, and it serves the others."""

    def __init__(self, env: dict[str, str], question: str) -> None:
        self.process = subprocess.Popen(
            cli_command("ask", question),
            env=env,
            cwd=REPO_ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.received = b""
        assert self.process.stdout is not None
        deadline = time.monotonic() + WAIT
        while not self.received and time.monotonic() < deadline:
            ready, _, _ = select.select([self.process.stdout], [], [], 0.05)
            if ready:
                self.received += os.read(self.process.stdout.fileno(), 4096)
        assert self.received, "the owner never started its reply"

    def finish(self) -> tuple[int, str, str]:
        out, err = self.process.communicate(timeout=WAIT)
        return self.process.returncode, (self.received + out).decode(), err.decode()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.communicate(timeout=WAIT)


# ---------------------------------------------------------------------- the socket's bytes


def test_the_socket_is_0600_replaces_a_stale_one_and_goes_with_the_owner(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(home / SOCKET_FILENAME))  # a kill -9'd owner's: the name, nobody behind it
    stale.close()
    with pytest.raises(ConnectionRefusedError):
        connect(home)
    with DataDirLock(home):
        server = OwnerServer(home).start()
        try:
            mode = os.stat(home / SOCKET_FILENAME).st_mode
            assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600
            sock = connect(home)
            with sock:
                assert check_peer(sock) == os.getpid()
                send_frame(sock, {"argv": "not a list"})
                reader = FrameReader(sock)
                frames = [reader.read(), reader.read(), reader.read(), reader.read()]
            assert frames == [
                {"owner": os.getpid()},
                {"err": "straylight: a request needs argv, a list of strings\n"},
                {"exit": 2},
                None,
            ]
        finally:
            server.stop()
    assert not (home / SOCKET_FILENAME).exists()
    assert sorted(p.name for p in home.iterdir()) == ["straylight.lock"]


def test_a_peer_of_another_user_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    listener = Listener.bind(tmp_path)
    try:
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.connect(str(tmp_path / SOCKET_FILENAME))
        server_side = listener.accept()
        with client, server_side:
            real_uid = os.getuid()
            monkeypatch.setattr(os, "getuid", lambda: real_uid + 1)  # we are someone else
            with pytest.raises(PeerRefused, match="refused a peer running as uid"):
                check_peer(server_side)
    finally:
        listener.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/fd is Linux's")
def test_a_long_data_dir_path_still_gets_a_socket(tmp_path: Path) -> None:
    home = tmp_path / ("deep-" * 20) / "home"  # beyond sun_path's 108 bytes
    home.mkdir(parents=True, mode=0o700)
    assert len(str(home / SOCKET_FILENAME)) > 108
    listener = Listener.bind(home)
    try:
        with connect(home) as sock:
            assert check_peer(sock) == os.getpid()
    finally:
        listener.close()
    assert not (home / SOCKET_FILENAME).exists()


# ---------------------------------------------------------------- a CLI owner serves others


def test_a_long_cli_command_serves_the_others_and_they_print_what_they_would_alone(
    home: Path, tmp_path: Path, standin: OllamaStandIn
) -> None:
    env = env_for(home, tmp_path, standin)
    assert_ok(run_cli_process(env, "remember", "The night ferry leaves from pier four."))
    alone = [
        run_cli_process(env, "recall", "night ferry", "--json"),
        run_cli_process(env, "facts", "list", "--json"),
        run_cli_process(env, "forget", "999"),
    ]
    standin.script_reply("A long story about the ferry, told slowly, chunk by chunk.")
    standin.token_delay = 1.0
    owner = SlowOwner(env, "Tell me about the ferry")
    try:
        served = spawn_many(
            [
                (env, ["recall", "night ferry", "--json"], None),
                (env, ["facts", "list", "--json"], None),
                (env, ["forget", "999"], None),
                # the data dir named before the command, as the README shows it
                (
                    env,
                    ["--home", str(home), "remember", "-"],
                    "The day ferry leaves from pier two.\r\n",
                ),
                (env, [], None),  # a second TUI is still refused
            ]
        )
        assert owner.process.poll() is None, "the owner ended before the clients ran"
        for before, after in zip(alone, served[:3], strict=True):
            assert (after.returncode, after.stdout, after.stderr) == (
                before.returncode,
                before.stdout,
                before.stderr,
            )
        assert (served[3].returncode, served[3].stderr) == (0, "")
        assert served[3].stdout.startswith("remembered #")
        tui = served[4]
        assert tui.returncode == 6
        assert f"is in use by PID {owner.process.pid}" in tui.stderr
        standin.token_delay = 0.0
        code, out, err = owner.finish()
        assert (code, out, err) == (
            0,
            "A long story about the ferry, told slowly, chunk by chunk.\n",
            "",
        )
    finally:
        owner.kill()
    recalled = json.loads(run_cli_process(env, "recall", "ferry pier", "--json").stdout)
    contents = [hit["content"] for hit in recalled["hits"]]
    assert "The night ferry leaves from pier four." in contents
    assert "The day ferry leaves from pier two." in contents
    assert not (home / SOCKET_FILENAME).exists()  # the owner took its socket with it
    log = (home / "straylight.log").read_text()
    assert "ran remember for a client: exit 0" in log
    assert "The day ferry" not in log  # the log names commands, never their text


def test_kill_9_of_the_owner_mid_command_then_the_clients_go_on(
    home: Path, tmp_path: Path, standin: OllamaStandIn
) -> None:
    env = env_for(home, tmp_path, standin)
    assert_ok(run_cli_process(env, "remember", "The night ferry leaves from pier four."))
    standin.script_reply("one two three four five six seven eight nine ten")
    standin.token_delay = 1.0
    owner = SlowOwner(env, "Count slowly")
    client = client_process(env, "ask", "Count slowly again")  # mid-reply when the owner dies
    try:
        deadline = time.monotonic() + WAIT
        while len(standin.chat_requests()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(standin.chat_requests()) == 2, "the client's turn never reached the model"
        os.kill(owner.process.pid, signal.SIGKILL)
        _out, err = client.communicate(timeout=WAIT)
        assert client.returncode == 1
        [line] = err.splitlines()
        assert line == (
            f"straylight: the owner of {home} (PID {owner.process.pid}) ended during the "
            "command; it may or may not have been done"
        )
    finally:
        owner.kill()
        if client.poll() is None:
            client.kill()
            client.communicate(timeout=WAIT)
    assert (home / SOCKET_FILENAME).exists()  # left behind by kill -9
    standin.token_delay = 0.0
    results = spawn_many(
        [
            (env, ["remember", "The ferry runs again after the storm."], None),
            (env, ["recall", "ferry", "--json"], None),
            (env, ["status", "--json"], None),
        ]
    )
    for result in results:
        assert_ok(result)
    # A new owner replaces the stale socket and serves again.
    standin.token_delay = 1.0
    standin.script_reply("a slow reply for the new owner")
    owner = SlowOwner(env, "Are you there?")
    try:
        forwarded = run_cli_process(env, "status", "--json")
        assert_ok(forwarded)
        assert f"PID {owner.process.pid}" not in forwarded.stderr
        log = (home / "straylight.log").read_text()
        assert log.count("ran status for a client: exit 0") >= 1
    finally:
        standin.token_delay = 0.0
        owner.kill()
    status = json.loads(run_cli_process(env, "status", "--json").stdout)
    listed = json.loads(run_cli_process(env, "recall", "ferry", "--json").stdout)
    assert status["points"]["total"] >= 2
    assert "The ferry runs again after the storm." in [h["content"] for h in listed["hits"]]


# ------------------------------------------------------------------------ CommandRunner


async def test_command_runner_takes_over_runs_in_process_and_serves_the_others(
    home: Path, tmp_path: Path, standin: OllamaStandIn
) -> None:
    import asyncio

    env = env_for(home, tmp_path, standin)
    assert_ok(run_cli_process(env, "remember", "The night ferry leaves from pier four."))
    runner = CommandRunner(env=env, cwd=tmp_path)
    try:
        first = await runner.run(["recall", "night ferry", "--json"])
        assert first.exit_code == 0, first.stderr
        assert (home / SOCKET_FILENAME).exists()  # the runner owns the dir now, and serves
        saved = await runner.run(["remember", "-"], stdin="Pier four has a new ramp.\n")
        assert (saved.exit_code, saved.stderr) == (0, "")
        # Another process is served by the runner: its command runs here.
        other = await asyncio.to_thread(run_cli_process, env, "recall", "ramp", "--json")
        assert_ok(other)
        assert "Pier four has a new ramp." in [
            h["content"] for h in json.loads(other.stdout)["hits"]
        ]
        missing = await runner.run(["forget", "999"])
        assert (missing.exit_code, missing.stdout) == (1, "")
        assert missing.stderr == "straylight: no memory point #999\n"
        usage = await runner.run(["recall", "x", "--k", "0"])
        assert (usage.exit_code, usage.stderr) == (2, "straylight: --k must be at least 1\n")
        unparsed = await runner.run(["recall"])
        assert unparsed.exit_code == 2
        assert "the following arguments are required: QUERY" in unparsed.stderr
        local = await runner.run(["config", "--json"])
        assert local.exit_code == 0 and json.loads(local.stdout)["home"]["value"] == str(home)
    finally:
        await runner.aclose()
    assert not (home / SOCKET_FILENAME).exists()
    with DataDirLock(home) as lock:  # released
        assert lock.held


async def test_command_runner_forwards_to_another_owner(
    home: Path, tmp_path: Path, standin: OllamaStandIn
) -> None:
    env = env_for(home, tmp_path, standin)
    assert_ok(run_cli_process(env, "remember", "The night ferry leaves from pier four."))
    alone = run_cli_process(env, "recall", "night ferry", "--json")
    standin.script_reply("slowly, slowly")
    standin.token_delay = 1.0
    owner = SlowOwner(env, "Say something slowly")
    runner = CommandRunner(env=env, cwd=tmp_path)
    try:
        outcome = await runner.run(["recall", "night ferry", "--json"])
        assert (outcome.exit_code, outcome.stdout, outcome.stderr) == (
            alone.returncode,
            alone.stdout,
            alone.stderr,
        )
        assert not runner._owned  # forwarded, not taken over
    finally:
        await runner.aclose()
        standin.token_delay = 0.0
        owner.kill()
    log = (home / "straylight.log").read_text()
    assert "ran recall for a client: exit 0" in log


@pytest.mark.parametrize(
    ("signum", "code", "line", "reason"),
    [
        (signal.SIGINT, 130, "straylight: interrupted\n", "cancelled by the user"),
        (
            signal.SIGTERM,
            143,  # the line and the logged reason `ask` alone gives (they said less)
            "straylight: stopped by SIGTERM (what arrived is kept in the log, marked cancelled)\n",
            "stopped by SIGTERM",
        ),
    ],
)
def test_ctrl_c_in_a_client_cancels_its_command_in_the_owner(
    home: Path,
    tmp_path: Path,
    standin: OllamaStandIn,
    signum: int,
    code: int,
    line: str,
    reason: str,
) -> None:
    env = env_for(home, tmp_path, standin)
    assert_ok(run_cli_process(env, "remember", "The night ferry leaves from pier four."))
    standin.script_reply("one two three four five six seven eight nine ten eleven twelve")
    standin.token_delay = 0.5
    owner = SlowOwner(env, "Count slowly")
    client = client_process(env, "ask", "Count slowly again")
    try:
        assert client.stdout is not None
        first = client.stdout.read(4)  # the forwarded reply streams: the command runs
        assert first
        client.send_signal(signum)
        out, err = client.communicate(timeout=WAIT)
        assert (client.returncode, err) == (code, line)
        # the partial reply's line is ended, as `ask` run alone ends it: on a terminal the
        # error line ran on from the reply's last word
        assert (first + out).endswith("\n") and (first + out).count("\n") == 1, first + out
        log = home / "straylight.log"
        deadline = time.monotonic() + WAIT
        while "exit 130" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "ran ask for a client: exit 130" in log.read_text()
        assert "(cancelled)" in log.read_text()
        assert owner.process.poll() is None  # the owner goes on
        standin.token_delay = 0.0
        owner_code, out, owner_err = owner.finish()
        assert (owner_code, owner_err) == (0, "")
        assert out.startswith("one two three")
    finally:
        standin.token_delay = 0.0
        owner.kill()
        if client.poll() is None:
            client.kill()
            client.communicate(timeout=WAIT)
    history = json.loads(run_cli_process(env, "history", "--json").stdout)
    said = [(m["role"], m["content"]) for m in history]
    assert ("user", "Count slowly again") in said  # logged before the reply began
    cancelled = [m for m in history if m["status"] == "cancelled"]
    assert [m["reason"] for m in cancelled] == [reason]
    assert (
        said.count(("assistant", "one two three four five six seven eight nine ten eleven twelve"))
        == 1
    )


async def test_command_runner_hands_the_data_dir_to_a_chat_but_not_mid_command(
    home: Path, tmp_path: Path, standin: OllamaStandIn
) -> None:
    """A starting TUI asks `straylight mcp`'s runner for the data dir (tui/owner_handover.py):
    refused while a client's command runs in it (the `ask` would be cut), given otherwise."""
    import asyncio

    env = env_for(home, tmp_path, standin)
    runner = CommandRunner(env=env, cwd=tmp_path)
    try:
        saved = await runner.run(["remember", "-"], stdin="The night ferry leaves at nine.\n")
        assert saved.exit_code == 0, saved.stderr  # the runner owns the data dir now
        standin.script_reply("one two three four five six seven eight nine ten")
        standin.token_delay = 0.3
        client = client_process(env, "ask", "When does the ferry leave?")
        assert client.stdout is not None
        ready, _, _ = await asyncio.to_thread(select.select, [client.stdout], [], [], WAIT)
        assert ready, "the forwarded ask never started its reply"
        assert await asyncio.to_thread(ask_handover, home) is False
        standin.token_delay = 0.0
        out, err = await asyncio.to_thread(client.communicate, timeout=WAIT)
        assert (client.returncode, err) == (0, "") and "ten" in out
        assert await asyncio.to_thread(ask_handover, home) is True
        deadline = time.monotonic() + WAIT
        while held_here(home) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert not held_here(home) and not (home / SOCKET_FILENAME).exists()  # let go
    finally:
        standin.token_delay = 0.0
        await runner.aclose()


async def test_a_clients_relative_paths_mean_its_own_folder(
    home: Path, tmp_path: Path, standin: OllamaStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--config FILE` and `conversations export -o FILE` given relative by a client whose
    folder is not the owner's: the served command reads and writes what the same command alone
    would (the owner used to resolve both in its own working directory: the file was silently
    not read, the export written into the owner's folder)."""
    import asyncio

    owner_dir, client_dir = tmp_path / "owner-cwd", tmp_path / "client-cwd"
    owner_dir.mkdir()
    client_dir.mkdir()
    (client_dir / "mine.toml").write_text('model = "qwen3:8b"\n', encoding="utf-8")
    env = env_for(home, tmp_path, standin)
    assert_ok(run_cli_process(env, "ask", "--conversation", "pier-talk", "Where is pier four?"))
    alone = run_cli_process(env, "--config", "mine.toml", "status", "--json", cwd=client_dir)
    assert json.loads(alone.stdout)["ollama"]["model"] == "qwen3:8b"
    monkeypatch.chdir(owner_dir)  # the owner's own working directory
    runner = CommandRunner(env=env, cwd=owner_dir)
    try:
        assert (await runner.run(["recall", "pier", "--json"])).exit_code == 0  # owns, serves
        served = await asyncio.to_thread(
            run_cli_process, env, "--config", "mine.toml", "status", "--json", cwd=client_dir
        )
        assert_ok(served)
        assert json.loads(served.stdout)["ollama"]["model"] == "qwen3:8b"
        exported = await asyncio.to_thread(
            run_cli_process,
            env,
            "conversations",
            "export",
            "pier-talk",
            "-o",
            "pier.md",
            cwd=client_dir,
        )
        assert_ok(exported)
        assert (client_dir / "pier.md").read_text(encoding="utf-8").startswith("# ")
        assert not (owner_dir / "pier.md").exists()
    finally:
        await runner.aclose()


async def test_a_served_command_reads_with_the_clients_own_memory_settings(
    home: Path, tmp_path: Path, standin: OllamaStandIn
) -> None:
    """The owner's memory is open with the owner's settings; `MEMORY_TOP_K=1 straylight
    recall` and `MEMORY_RAM_CRIT_BYTES=1 straylight status` from a client printed what the
    owner's settings gave (two hits, headroom ok), not what the same command alone prints.
    An empty `import-doc ""` read as the client's folder ("… is a directory")."""
    import asyncio

    env = env_for(home, tmp_path, standin)
    for text in ("The night ferry leaves from pier four.", "The night ferry docks at pier six."):
        assert_ok(run_cli_process(env, "remember", text))
    calls: list[tuple[dict[str, str], list[str]]] = [
        ({**env, "MEMORY_TOP_K": "1"}, ["recall", "night ferry", "--json"]),
        ({**env, "MEMORY_MAX_CHARS": "60"}, ["recall", "night ferry", "--json"]),
        ({**env, "MEMORY_RAM_CRIT_BYTES": "1"}, ["status", "--json"]),
        (env, ["import-doc", ""]),
    ]

    def seen(result: Any) -> tuple[int, Any, str]:
        out = json.loads(result.stdout) if result.stdout.startswith("{") else result.stdout
        if isinstance(out, dict) and "hits" in out:
            out = ([h["id"] for h in out["hits"]], out["block"])
        elif isinstance(out, dict):
            out = out["headroom"]
        return result.returncode, out, result.stderr

    alone = [seen(run_cli_process(e, *args)) for e, args in calls]
    assert [a[1] for a in alone[:3]] == [([1], alone[0][1][1]), alone[1][1], "critical"]
    runner = CommandRunner(env=env, cwd=tmp_path)
    try:
        assert (await runner.run(["recall", "pier", "--json"])).exit_code == 0  # owns, serves
        served = [seen(await asyncio.to_thread(run_cli_process, e, *args)) for e, args in calls]
    finally:
        await runner.aclose()
    assert served == alone


async def owner_of_a_ferry_memory(env: dict[str, str], tmp_path: Path) -> CommandRunner:
    """A memory with one point, then a `CommandRunner` that owns it with the memory open (its
    `recall` ran in process); the caller closes it."""
    assert_ok(run_cli_process(env, "remember", "The ferry leaves at nine."))
    runner = CommandRunner(env=env, cwd=tmp_path)
    assert (await runner.run(["recall", "ferry"])).exit_code == 0
    return runner


async def test_a_served_command_embeds_with_the_model_of_the_open_memory(
    home: Path, tmp_path: Path, standin: OllamaStandIn
) -> None:
    """A client whose STRAYLIGHT_EMBED_MODEL differs from the owner's: its `remember` ran in
    the owner's memory but embedded with the client's model, and the vector was filed as one
    of the owner's model (another model's space, searched as if it were this one). The open
    memory's model embeds it."""
    import asyncio

    env = env_for(home, tmp_path, standin)
    other = {**env, "STRAYLIGHT_EMBED_MODEL": "llama3.2"}
    runner = await owner_of_a_ferry_memory(env, tmp_path)
    try:
        standin.clear_requests()
        served = await asyncio.to_thread(
            run_cli_process, other, "remember", "The ferry returns at ten."
        )
        assert_ok(served)
    finally:
        await runner.aclose()
    embedded = [r.body["model"] for r in standin.requests if r.path == "/api/embed"]
    assert embedded == ["nomic-embed-text"]


async def test_a_served_command_keeps_the_clients_clock(
    home: Path, tmp_path: Path, standin: OllamaStandIn
) -> None:
    """`STRAYLIGHT_NOW` given to a client only: its `remember` and `facts set` ran in the
    owner's open memory, whose clock stamped them with the owner's time, not the client's
    frozen one (as the same commands alone do). The owner's own clock is left as it was."""
    import asyncio

    env = env_for(home, tmp_path, standin)
    then = {**env, "STRAYLIGHT_NOW": "2030-01-02T03:04:05Z"}
    runner = await owner_of_a_ferry_memory(env, tmp_path)
    try:
        remembered = await asyncio.to_thread(
            run_cli_process, then, "remember", "The ferry returns at ten.", "--json"
        )
        fact = await asyncio.to_thread(
            run_cli_process, then, "facts", "set", "ferry:x", "--type", "fact", "--body", "Ten."
        )
        assert_ok(remembered)
        assert_ok(fact)
        recalled = await asyncio.to_thread(
            run_cli_process, then, "recall", "ferry returns", "--json"
        )
        own = await runner.run(["remember", "The ferry is blue.", "--json"])
    finally:
        await runner.aclose()
    created = {h["id"]: h["created_at"] for h in json.loads(recalled.stdout)["hits"]}
    assert created[json.loads(remembered.stdout)["id"]] == "2030-01-02T03:04:05Z"
    facts = json.loads(run_cli_process(env, "facts", "get", "ferry:x", "--json").stdout)
    assert facts["updated_at"].startswith("2030-01-02T03:04:05")
    hits = json.loads(run_cli_process(env, "recall", "ferry blue", "--json").stdout)["hits"]
    blue = [h for h in hits if h["id"] == json.loads(own.stdout)["id"]]
    assert not blue[0]["created_at"].startswith("2030")  # the owner's own: its own clock


def test_a_stopped_owner_is_in_use_not_a_hang(
    home: Path, tmp_path: Path, standin: OllamaStandIn
) -> None:
    """An owner stopped by Ctrl+Z (SIGSTOP) still accepts connections but answers nothing:
    a client says the data dir is in use (exit 6) instead of waiting for ever."""
    env = env_for(home, tmp_path, standin)
    assert_ok(run_cli_process(env, "remember", "The night ferry leaves from pier four."))
    standin.script_reply("one two three four five six seven eight nine ten")
    standin.token_delay = 1.0
    owner = SlowOwner(env, "Count slowly")
    os.kill(owner.process.pid, signal.SIGSTOP)
    try:
        clients = [
            client_process(env, "recall", "ferry", "--json"),
            client_process(env, "remember", "The ferry runs again after the storm."),
        ]
        for client in clients:
            _out, err = client.communicate(timeout=60)  # a hang fails here
            assert client.returncode == 6, err
            [line] = err.splitlines()
            assert f"PID {owner.process.pid}" in line, line
    finally:
        os.kill(owner.process.pid, signal.SIGCONT)
        standin.token_delay = 0.0
        owner.kill()


def test_a_chat_starting_while_a_short_command_owns_the_dir_waits_for_it(
    home: Path, tmp_path: Path, standin: OllamaStandIn
) -> None:
    """A `remember` (or an `ask`) holding the data dir as the chat started made it exit 6
    at once ("in use by PID …"): a one-shot command's owner now says it ends, and the chat
    waits for it, as a forwarded command waits for a brief holder."""
    from tui.owner_handover import handover_answer, lock_for_chat

    env = env_for(home, tmp_path, standin)
    assert_ok(run_cli_process(env, "remember", "The night ferry leaves from pier four."))
    standin.script_reply("one two three four five six")
    standin.token_delay = 0.3
    owner = SlowOwner(env, "Count a little")
    try:
        assert handover_answer(home) == "ending"
        lock = lock_for_chat(home)  # the old code raised DataDirLocked here
        lock.release()
        code, out, _err = owner.finish()  # taken once the command had let go: it finished
        assert code == 0 and out.startswith("one two three four five six")
    finally:
        standin.token_delay = 0.0
        owner.kill()
