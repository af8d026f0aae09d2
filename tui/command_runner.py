"""Run a `straylight` command on behalf of a long-lived process (the MCP server).

The contract: `await CommandRunner().run(["recall", "deploy", "--json"])` gives the exit code,
stdout and stderr the same command would give in a terminal. What runs it is this module's
business: today a child process (`python -m tui …`), which takes the data dir for the length
of the command; the owner's socket (issue 14) will run it inside whichever process owns the
data dir, with the memory already open.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class CommandOutcome:
    """What one command returned: its exit code and everything it printed."""

    exit_code: int
    stdout: str
    stderr: str


class CommandRunner:
    """Runs `straylight ARGV` with the given environment and working directory."""

    def __init__(self, env: Mapping[str, str] | None = None, cwd: Path | None = None) -> None:
        self.env = dict(os.environ if env is None else env)
        self.cwd = cwd

    async def run(self, argv: Sequence[str], *, stdin: str | None = None) -> CommandOutcome:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tui",
            *argv,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self.env,
            cwd=self.cwd,
        )
        data = stdin.encode() if stdin is not None else None
        out, err = await process.communicate(data)
        code = process.returncode if process.returncode is not None else 1
        return CommandOutcome(code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))

    async def aclose(self) -> None:
        """Release what the runner holds (nothing for child processes)."""
