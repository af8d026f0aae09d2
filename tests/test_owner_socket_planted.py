"""Anything at `<data dir>/straylight.sock` that is not a socket — a regular file, a link, a
folder, a FIFO — is hostile input, treated like a link planted where a data-dir file belongs:
every command (except `config`) stops with one line naming it, exit 2, and nothing replaces
or removes it; the owner that would bind there refuses it too (a file planted after the
check). (A stale socket, its owner killed, is still replaced:
tests/test_owner_socket.py.)"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from store.owner_socket import SOCKET_FILENAME, Listener
from store.private_files import NotASocket, SymlinkRefused
from tests.support.cli import NOW, Env, assert_one_line, run_cli
from tests.support.ollama_standin import OllamaStandIn


@pytest.fixture
def data_dir(home: Path) -> Path:
    home.mkdir(mode=0o700)
    return home


def plant(path: Path, kind: str, target: Path) -> None:
    if kind == "file":
        path.write_text("keep me\n")
    elif kind == "link":
        target.write_text("the link's target\n")
        path.symlink_to(target)
    elif kind == "folder":
        path.mkdir()
        (path / "inside").write_text("keep me\n")
    else:
        os.mkfifo(path)


@pytest.mark.parametrize("kind", ["file", "link", "folder", "fifo"])
@pytest.mark.parametrize("command", [("remember", "the staging box is heron"), ("status",)])
def test_a_command_refuses_what_is_not_a_socket(
    cli_env: Callable[..., Env],
    standin: OllamaStandIn,
    data_dir: Path,
    tmp_path: Path,
    kind: str,
    command: tuple[str, ...],
) -> None:
    path = data_dir / SOCKET_FILENAME
    target = tmp_path / "elsewhere.txt"
    plant(path, kind, target)
    before = path.lstat()
    env = cli_env(OLLAMA_HOST=standin.host, STRAYLIGHT_NOW=NOW)
    result = run_cli(env, *command)
    expected = "is a symbolic link" if kind == "link" else "is not a socket"
    assert_one_line(result, 2, str(path), expected)
    after = path.lstat()
    assert (after.st_ino, after.st_mode, after.st_mtime_ns) == (
        before.st_ino,
        before.st_mode,
        before.st_mtime_ns,
    )
    if kind == "file":
        assert path.read_text() == "keep me\n"
    if kind == "link":
        assert target.read_text() == "the link's target\n"
    assert not (data_dir / "straylight.duckdb").exists()  # nothing was opened or written


def test_config_still_shows_the_settings(cli_env: Callable[..., Env], data_dir: Path) -> None:
    (data_dir / SOCKET_FILENAME).write_text("keep me\n")
    assert run_cli(cli_env(), "config").returncode == 0


@pytest.mark.parametrize("kind", ["file", "link", "folder"])
def test_the_owner_does_not_bind_over_it(data_dir: Path, tmp_path: Path, kind: str) -> None:
    path = data_dir / SOCKET_FILENAME
    plant(path, kind, tmp_path / "elsewhere.txt")
    with pytest.raises(SymlinkRefused if kind == "link" else NotASocket):
        Listener.bind(data_dir)
    assert path.is_symlink() if kind == "link" else path.exists()
    assert not path.is_socket()
    assert not list(data_dir.glob(f"{SOCKET_FILENAME}.*"))  # its temp socket is gone too
