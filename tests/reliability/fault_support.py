"""Helpers of the reliability suite: run `straylight` as a user does, check what it left.

Every case runs the real command against the real-HTTP Ollama stand-in, from an empty
working directory (`tui.cli.main` in-process through tests/support/cli.py; a real
`python -m tui.cli` process where the interpreter's decoding matters), and checks the data
dir with the product's own parser (`store.daily_log.parse_messages`) and a read-only look at
the database.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from store.daily_log import LogMessage, parse_messages
from tests.support import cli
from tests.support.cli import DAY, PROG, CliResult, assert_ok
from tests.support.ollama_standin import OllamaStandIn

SEED_QUESTION = "How does the blue service get deployed to the staging cluster these days?"
SEED_REPLY = "The blue service deploys with just deploy-blue, which pushes to the staging cluster."
REPLY = "alpha beta gamma delta"  # streamed by the stand-in as four chunks
PARTIAL = "alpha beta "  # what arrives before a fault injected with after=2


def assert_one_line(result: CliResult, code: int, *fragments: str) -> str:
    """Exit `code`, exactly one stderr line (no traceback) starting with `straylight: ` and
    containing every fragment; the line without that prefix."""
    line = cli.assert_one_line(result, code, *fragments)
    assert line.startswith(PROG), (result.returncode, result.stderr[-2000:])
    return line.removeprefix(PROG)


def log_path(home: Path, day: str = DAY) -> Path:
    return home / "conversation" / f"{day}.md"


def read_log(home: Path, day: str = DAY) -> list[LogMessage]:
    """The day's messages through the product's parser, as `history` reads them."""
    path = log_path(home, day)
    if not path.exists():
        return []
    return parse_messages(path.read_bytes().decode("utf-8", errors="replace"))


def query(home: Path, sql: str) -> list[tuple[Any, ...]]:
    """Rows of one query on the data dir's database, opened read-only (no lock, no writes;
    only between subprocesses)."""
    import duckdb

    database = home / "straylight.duckdb"
    if not database.exists():
        return []
    with duckdb.connect(str(database), read_only=True) as connection:
        return connection.execute(sql).fetchall()


def points(home: Path) -> list[tuple[int, str, str]]:
    """(id, role, content) of every stored point."""
    rows = query(home, "SELECT id, role, content FROM points ORDER BY id")
    return [(int(pid), str(role), str(content)) for pid, role, content in rows]


def vectorless(home: Path) -> list[int]:
    """Ids of the points that wait for `backfill`."""
    return [int(r[0]) for r in query(home, "SELECT id FROM points WHERE embedding IS NULL")]


def tree(root: Path, *, skip: Path | None = None) -> dict[str, tuple[int, int]]:
    """Every file under `root` (except under `skip`) with its size and mtime, to prove
    nothing outside the data dir was written."""
    found: dict[str, tuple[int, int]] = {}
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        if skip is not None:
            dirs[:] = [d for d in dirs if here / d != skip]
        for name in [*files, *dirs]:
            path = here / name
            info = path.lstat()
            found[str(path.relative_to(root))] = (info.st_size, info.st_mtime_ns)
    return found


@dataclass
class Workspace:
    """One case's world: a data dir, an empty working dir, the env, the stand-in."""

    root: Path
    home: Path
    cwd: Path
    env: dict[str, str]
    standin: OllamaStandIn

    def run(
        self, *args: str, stdin: str | bytes | None = None, env: dict[str, str] | None = None
    ) -> CliResult:
        """`straylight ARGS` in-process, in this world's env and working dir."""
        return cli.run_cli(env or self.env, *args, stdin=stdin, cwd=self.cwd)

    def run_process(
        self, *args: str, stdin: str | bytes | None = None, env: dict[str, str] | None = None
    ) -> CliResult:
        """`python -m tui.cli ARGS` as a real process (the interpreter's own decoding of
        argv, stdin and stdout, which the in-process run does not go through)."""
        return cli.run_cli_process(env or self.env, *args, stdin=stdin, cwd=self.cwd)

    def outside(self) -> dict[str, tuple[int, int]]:
        """The test's tmp dir minus the data dir."""
        return tree(self.root, skip=self.home)


def cli_environment(root: Path, home: Path, ollama_host: str) -> dict[str, str]:
    return cli.sandboxed_env(home, root, ollama_host, XDG_CACHE_HOME=str(root / "xdg-cache"))


@pytest.fixture(scope="session")
def seeded_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir after one complete turn (two messages logged, two points saved); each test
    gets a copy, so "earlier lines and points intact" has something to lose."""
    root = tmp_path_factory.mktemp("seed")
    home = root / "home"
    (root / "cwd").mkdir()
    with OllamaStandIn() as standin:
        standin.script_reply(SEED_REPLY)
        env = cli_environment(root, home, standin.host)
        proc = cli.run_cli(env, "ask", SEED_QUESTION, cwd=root / "cwd")
    assert_ok(proc)
    assert [p[1] for p in points(home)] == ["user", "assistant"], points(home)
    return home


@pytest.fixture
def world(tmp_path: Path, seeded_template: Path, standin: OllamaStandIn) -> Iterator[Workspace]:
    """A copy of the seeded data dir, an empty cwd, and the env pointing at the stand-in."""
    home = tmp_path / "home"
    shutil.copytree(seeded_template, home, symlinks=True)
    (home / "straylight.lock").unlink(missing_ok=True)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    env = cli_environment(tmp_path, home, standin.host)
    yield Workspace(tmp_path, home, cwd, env, standin)
