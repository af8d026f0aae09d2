"""A data dir in which a run as another user (`sudo straylight`, a container as root) left its
files. A reading command (`status`, `recall`) ended in a traceback (PermissionError opening
`straylight.lock` for its shared lock), and a writing one said "no permission … copy it
somewhere writable". Both now name the file, its owner and the `chown` that gives the data
dir back, in one line, exit 2.

It takes two users: the test runs as root, makes the store, hands it to `nobody` but for the
lock file, then runs `straylight` as `nobody` in a forked child (no exec: the interpreter may
live where `nobody` cannot read).
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import traceback
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import assert_ok, cli_env, run_cli
from tui.cli import main

NOBODY = 65534

pytestmark = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="handing files to another user"
)


@pytest.fixture
def shared_root() -> Iterator[Path]:
    """A folder `nobody` can enter (pytest's tmp_path lies under a root-only one)."""
    root = Path(tempfile.mkdtemp(prefix="straylight-owner-"))
    root.chmod(0o755)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def as_nobody(env: dict[str, str], *argv: str) -> tuple[int, str]:
    """`straylight ARGV` as user nobody in a forked child: (exit code, stderr)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 99
        try:
            signal.alarm(60)  # a lock some thread held at the fork: ended, not a hung suite
            os.close(read_end)
            sys.stderr = open(write_end, "w", encoding="utf-8")  # noqa: SIM115 - until _exit
            sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115
            os.environ.clear()
            os.environ.update(env)
            os.setgroups([])
            os.setresgid(NOBODY, NOBODY, NOBODY)
            os.setresuid(NOBODY, NOBODY, NOBODY)
            code = main(list(argv))
        except BaseException:  # noqa: BLE001 - a traceback is what the test looks for
            sys.stderr.write(traceback.format_exc())
        finally:
            sys.stderr.flush()
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as stderr:
        said = stderr.read().decode(errors="replace")
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), said


def test_files_another_user_left_are_named_with_the_way_back(shared_root: Path) -> None:
    home = shared_root / "home"
    env = cli_env(home, shared_root, OLLAMA_HOST="127.0.0.1:9", HOME=str(shared_root))
    assert_ok(run_cli(env, "remember", "The night ferry leaves from pier four at nine."))
    assert_ok(run_cli(env, "status"))  # (this process imports what the child will use)
    for path in [shared_root, *shared_root.rglob("*")]:
        os.chown(path, NOBODY, NOBODY, follow_symlinks=False)
    lock = home / "straylight.lock"
    os.chown(lock, 0, 0)
    lock.chmod(0o600)
    expected = (
        f"straylight: {lock} belongs to root, not to you (nobody): a run as another user "
        f"(sudo straylight?) left it; `sudo chown -R nobody {home}` gives the data dir back"
    )
    for argv in (["status"], ["recall", "ferry"], ["remember", "pier four again, at ten"]):
        code, said = as_nobody(env, *argv)
        assert (code, said.splitlines()) == (2, [expected]), (argv, said)


def test_a_data_dir_served_by_another_user_s_process_is_one_line(shared_root: Path) -> None:
    """Its socket answers, but from another user's process (a `sudo straylight` chat):
    the peer check refuses it, which ended in a traceback."""
    import socket

    from store.owner_socket import SOCKET_FILENAME
    from tests.support.cli import assert_one_line

    home = shared_root / "home"
    env = cli_env(home, shared_root, OLLAMA_HOST="127.0.0.1:9", HOME=str(shared_root))
    assert_ok(run_cli(env, "remember", "The night ferry leaves from pier four at nine."))
    ready_read, ready_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # a listener as nobody on the data dir's socket
        try:
            os.close(ready_read)
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.bind(str(home / SOCKET_FILENAME))  # (the data dir stays the user's own:
            (home / SOCKET_FILENAME).chmod(0o777)  # one of another user's is refused first)
            os.setgroups([])
            os.setresgid(NOBODY, NOBODY, NOBODY)
            os.setresuid(NOBODY, NOBODY, NOBODY)
            server.listen(4)  # a peer's credentials are the listener's at listen()
            os.write(ready_write, b"1")
            while True:
                server.accept()[0].close()
        finally:
            os._exit(0)
    try:
        os.close(ready_write)
        assert os.read(ready_read, 1) == b"1"
        line = assert_one_line(run_cli(env, "status"), 6)
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    assert line.startswith(f"straylight: {home} is served by a Straylight process of another"), line
    assert "refused a peer running as uid 65534" in line and line.endswith("stop it, or use --home")


OTHER = 4242  # a user who is neither nobody nor root


@pytest.mark.parametrize("name", ["", "conversation", "longterm.md", "config.toml"])
def test_a_data_dir_or_file_another_user_owns_is_refused_but_not_to_root(
    shared_root: Path, name: str
) -> None:
    """Its owner can change its mode and contents whenever they like (a config.toml could
    point `ollama_host` elsewhere and receive every prompt): refused in one line, exit 2,
    for a user. Root is not refused (a container over a bind-mounted data dir, a backup
    extracted with its owners kept)."""
    home = shared_root / "home"
    config = shared_root / "config.toml"
    env = cli_env(home, shared_root, OLLAMA_HOST="127.0.0.1:9", HOME=str(shared_root))
    env["STRAYLIGHT_CONFIG"] = str(config)
    config.write_text('model = "llama3.2"\n')
    assert_ok(run_cli(env, "remember", "The night ferry leaves from pier four at nine."))
    assert_ok(run_cli(env, "status"))  # (this process imports what the child will use)
    (home / "conversation").mkdir(mode=0o700, exist_ok=True)
    (home / "longterm.md").write_text("- I take my tea without sugar.\n")
    for path in [shared_root, *shared_root.rglob("*")]:
        os.chown(path, NOBODY, NOBODY, follow_symlinks=False)
    path = {"": home, "config.toml": config}.get(name, home / name)
    os.chown(path, OTHER, OTHER, follow_symlinks=False)
    code, said = as_nobody(env, "status")
    assert code == 2 and said.count("\n") == 1, said
    assert f"{path} belongs to another user (uid {OTHER})" in said, said
    assert_ok(run_cli(env, "status"))  # root
