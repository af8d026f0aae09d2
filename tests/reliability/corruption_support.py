"""Helpers for the reliability suite: run `straylight` as a user does, seed a data dir with
committed turns, and check that nothing outside the data dir was touched.

Every run (in-process through tests/support/cli.py, or a process where one is needed) gets
its own `HOME`, `TMPDIR` and working directory inside the test's tmp dir, so a stray write
anywhere but the data dir shows up in `outside_snapshot`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support import cli
from tests.support.cli import DAY, NOW, CliResult, Env, printed_json
from tests.support.ollama_standin import OllamaStandIn

MODEL = "llama3.2"

# The committed turn every case starts from: both messages pass the save filter (≥ 50 chars),
# so the seed holds two points with vectors.
SEED_QUESTION = "What powers the lighthouse beacon on the northern island these days?"
SEED_REPLY = "The keeper says the lighthouse beacon runs on a rebuilt diesel generator now."
SEED_QUERY = "lighthouse beacon diesel generator"
SEED_POINTS = 2


# `python -m tui.cli` with RLIMIT_FSIZE: every file the process writes stops growing at `limit`
# bytes (EFBIG, "File too large" — the kernel's disk-full for one process, unprivileged and as
# root alike; SIGXFSZ is ignored so the write raises instead of killing the process).
_LIMITED = (
    "import resource, runpy, signal, sys\n"
    "limit = int(sys.argv[1])\n"
    "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
    "resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))\n"
    "sys.argv = ['straylight', *sys.argv[2:]]\n"
    "runpy.run_module('tui.cli', run_name='__main__', alter_sys=True)\n"
)


def make_env(home: Path, tmp: Path, ollama_host: str, **extra: str) -> Env:
    """The environment of one user: data dir, Ollama, a frozen clock, private HOME and TMPDIR."""
    for name in ("user-home", "tmpdir", "cwd", "xdg-config"):
        (tmp / name).mkdir(exist_ok=True)
    return cli.sandboxed_env(home, tmp, ollama_host, TMPDIR=str(tmp / "tmpdir"), **extra)


def _cwd(env: Env) -> Path:
    return Path(env["HOME"]).parent / "cwd"


def _limited_command(file_size_limit: int) -> Callable[..., list[str]]:
    return lambda *args: [sys.executable, "-c", _LIMITED, str(file_size_limit), *args]


def run_cli(env: Env, *args: str, file_size_limit: int | None = None) -> CliResult:
    """`straylight ARGS` in the user's working dir: in-process, or with a file size limit as
    a process of its own (the limit is per process)."""
    if file_size_limit is None:
        return cli.run_cli(env, *args, cwd=_cwd(env))
    command = _limited_command(file_size_limit)(*args)
    return cli.run_process(command, env, cwd=_cwd(env))


def popen_cli(env: Env, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        cli.cli_command(*args),
        env=env,
        cwd=_cwd(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def run_many(env: Env, *commands: list[str]) -> list[CliResult]:
    """Independent commands, one after the other, in-process."""
    return cli.run_many(env, *commands, cwd=_cwd(env))


def spawn_many(env: Env, *commands: list[str]) -> list[CliResult]:
    """Commands as processes side by side (for what must meet another process, or must not
    start the TUI in this one if it regressed)."""
    return cli.spawn_many([(env, command, None) for command in commands], cwd=_cwd(env))


def history_json(env: Env, *args: str) -> list[dict[str, Any]]:
    return printed_json(run_cli(env, "history", "--json", "--date", DAY, *args), quiet=True)


def status_json(env: Env) -> dict[str, Any]:
    return printed_json(run_cli(env, "status", "--json"), quiet=True)


def recall_json(env: Env, query: str = SEED_QUERY) -> dict[str, Any]:
    return printed_json(run_cli(env, "recall", "--json", query), quiet=True)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def outside_snapshot(tmp: Path, home: Path) -> dict[str, str]:
    """Every file and folder under `tmp` except the data dir: path → content hash ("dir")."""
    found: dict[str, str] = {}
    for root, dirs, files in os.walk(tmp):
        here = Path(root)
        if here == home or home in here.parents:
            dirs[:] = []
            continue
        for name in dirs:
            if here / name != home:
                found[str((here / name).relative_to(tmp))] = "dir"
        for name in files:
            found[str((here / name).relative_to(tmp))] = sha256(here / name)
    return found


def data_dir_listing(home: Path) -> set[str]:
    return {str(p.relative_to(home)) for p in home.rglob("*")}


def day_log(home: Path) -> Path:
    return home / "conversation" / f"{DAY}.md"


def log_block(role: str, content: str, conversation: str, *, meta: bool = True) -> str:
    """One message in the daily log's documented on-disk format."""
    header = f"### {role}\n"
    if meta:
        data = json.dumps({"time": NOW, "conversation": conversation, "model": MODEL})
        header += f"<!-- straylight {data} -->\n"
    return f"{header}{content}\n\n"


def seed_data_dir(template: Path, tmp: Path, ollama_host: str, standin: Any) -> None:
    """One committed turn (two points) in `template`, made by the real `ask`."""
    standin.script_reply(SEED_REPLY)
    proc = run_cli(make_env(template, tmp, ollama_host), "ask", SEED_QUESTION)
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr
    assert proc.stdout == SEED_REPLY + "\n"


def copy_seed(template: Path, home: Path) -> None:
    shutil.copytree(template, home)


def seed_messages() -> list[tuple[str, str, str]]:
    return [("user", SEED_QUESTION, "complete"), ("assistant", SEED_REPLY, "complete")]


def summary(messages: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [(m["role"], m["content"], m["status"]) for m in messages]


def history_and_status(env: Env) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Today's messages (`history --json`) and `status --json`."""
    return history_json(env), status_json(env)


def assert_seed_intact(env: Env, *, points: int = SEED_POINTS, recall: bool = False) -> None:
    """The committed turn is all there: its two log messages first in today's log, `points`
    points in the database, and — with `recall` — recall finds it."""
    messages, status = history_and_status(env)
    assert summary(messages)[:2] == seed_messages()
    assert status["points"]["total"] == points
    if recall:
        hits = recall_json(env)["hits"]
        assert SEED_QUESTION in [hit["content"] for hit in hits]


# ---- fixtures shared by the corruption, second-instance and disk-full tests ----------------
# (imported by those files: a conftest.py here would replace the suite-wide `home` fixture
# for every reliability test)


@pytest.fixture(scope="module")
def seed_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir with one saved turn, made once per module by the real `straylight ask`."""
    tmp = tmp_path_factory.mktemp("seed")
    with OllamaStandIn() as server:
        seed_data_dir(tmp / "home", tmp, server.host, server)
    return tmp / "home"


@pytest.fixture
def home(tmp_path: Path, seed_template: Path) -> Path:
    """A fresh copy of the seeded data dir for one test."""
    copy_seed(seed_template, tmp_path / "home")
    return tmp_path / "home"


@pytest.fixture
def env(home: Path, tmp_path: Path, standin: OllamaStandIn) -> Env:
    """The environment of `straylight` subprocesses on that data dir (sandboxed HOME etc.)."""
    return make_env(home, tmp_path, standin.host)
