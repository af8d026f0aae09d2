"""One `straylight` command run inside the owner's process for another process.

The request is the command line as the client would have run it (`argv`), with what the
command's result depends on besides: its stdin, the settings variables of its environment,
its working directory and workspace, the data dir and config file it resolved, and whether
its stdout / stderr are terminals. The owner parses and dispatches it through the same
code as `straylight` itself (`tui.cli._run`), so output and exit codes are the same; only
file logging is not set up again (the owner's log is the data dir's log already).
"""

from __future__ import annotations

import argparse
import functools
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tui.owner_streams import CommandStreams, Sink, routed

ENV_PREFIXES = ("STRAYLIGHT_", "MEMORY_", "OLLAMA_")
"""The environment a command's settings come from; the rest of it stays with the client."""


class BadRequest(Exception):
    """A request frame that is not a command; `str()` is one line."""


def settings_environment(environ: Mapping[str, str]) -> dict[str, str]:
    return {name: value for name, value in environ.items() if name.startswith(ENV_PREFIXES)}


@dataclass(frozen=True)
class CommandRequest:
    """What a client asks the owner to run (the first frame of a connection)."""

    argv: list[str]
    home: str
    env: dict[str, str] = field(default_factory=dict)
    cwd: str = "/"
    workspace: str | None = None
    config: str | None = None
    stdin: str | None = None
    tty_stdout: bool = False
    tty_stderr: bool = False

    def client_path(self, path: str) -> str:
        """`path` as the client meant it: `~` expanded, a relative one in its folder; an empty
        one stays empty, for the command to refuse as it would alone (joined, it named the
        client's folder: `import-doc ""` read as a directory)."""
        if not path.strip():
            return path
        return os.path.join(self.cwd, os.path.expanduser(path))

    def to_frame(self) -> dict[str, Any]:
        return {
            "argv": self.argv,
            "stdin": self.stdin,
            "env": self.env,
            "cwd": self.cwd,
            "workspace": self.workspace,
            "home": self.home,
            "config": self.config,
            "tty": {"stdout": self.tty_stdout, "stderr": self.tty_stderr},
        }

    @classmethod
    def from_frame(cls, frame: Mapping[str, Any]) -> CommandRequest:
        argv, env, tty = frame.get("argv"), frame.get("env") or {}, frame.get("tty") or {}
        if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
            raise BadRequest("a request needs argv, a list of strings")
        if not isinstance(env, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in env.items()
        ):
            raise BadRequest("env must map strings to strings")
        for name in ("home", "cwd"):
            if not isinstance(frame.get(name), str):
                raise BadRequest(f"a request needs {name}, a string")
        for name in ("stdin", "workspace", "config"):
            if frame.get(name) is not None and not isinstance(frame.get(name), str):
                raise BadRequest(f"{name} must be a string or null")
        if not isinstance(tty, dict):
            raise BadRequest("tty must be an object")
        return cls(
            argv=list(argv),
            home=frame["home"],
            env=settings_environment(env),
            cwd=frame["cwd"],
            workspace=frame.get("workspace"),
            config=frame.get("config"),
            stdin=frame.get("stdin"),
            tty_stdout=bool(tty.get("stdout")),
            tty_stderr=bool(tty.get("stderr")),
        )


@functools.cache
def command_parser() -> argparse.ArgumentParser:
    """`straylight`'s parser, built once for the commands run here (~20 ms a build; parsing
    does not change it, so threads share it)."""
    from tui.cli_parser import build_parser

    return build_parser()


def command_words(argv: Sequence[str]) -> list[str]:
    """The command line's words without its options and the global options' values:
    `["--home", "/d", "facts", "set", "k", …]` gives `["facts", "set", "k", …]`, so the
    command's name comes first wherever the client put `--home DIR` (README: before or
    after the command name)."""
    from tui.cli_parser import GLOBAL_OPTIONS

    words: list[str] = []
    skip = False
    for word in argv:
        if skip:
            skip = False
        elif word in GLOBAL_OPTIONS:
            skip = True  # its value is the next word
        elif not word.startswith("-"):
            words.append(word)
    return words


def execute(request: CommandRequest, out: Sink, err: Sink) -> int:
    """Run the request in this thread with its own standard streams; the exit code."""
    streams = CommandStreams.of(
        out, err, request.stdin, tty_out=request.tty_stdout, tty_err=request.tty_stderr
    )
    with routed(streams):
        return run_request(request)


def run_request(request: CommandRequest) -> int:
    """Parse and dispatch like `tui.cli.main`, with the request's settings (its data dir and
    workspace as the client resolved them; relative paths against its working directory)."""
    from agent.gateway_errors import EXIT_USAGE
    from agent.settings import SettingsError, load_settings
    from tui.cli import _run, setting_flags
    from tui.cli_output import fail

    try:
        args = command_parser().parse_args(request.argv)
    except SystemExit as stop:  # usage errors and --help are printed already
        return stop.code if isinstance(stop.code, int) else 0 if stop.code is None else 2
    if isinstance(getattr(args, "path", None), str):
        args.path = request.client_path(args.path)
    if getattr(args, "output", None) not in (None, "-"):  # conversations export -o FILE
        args.output = request.client_path(args.output)
    flags = {
        **setting_flags(args),
        "home": request.home,
        "workspace": request.workspace or args.workspace,
    }
    # a relative --config / STRAYLIGHT_CONFIG names a file in the client's folder
    config = Path(request.client_path(request.config)) if request.config else None
    try:
        resolved = load_settings(flags=flags, environ=request.env, config_path=config)
    except SettingsError as error:
        return fail(str(error), EXIT_USAGE)
    from memory.store_status import reading_command
    from store.clock import command_clock
    from tui.command_kinds import reads_only

    # the client's STRAYLIGHT_NOW, or none; a reading command counts nothing on our memory
    with command_clock(resolved.settings.clock), reading_command(reads_only(args)):
        return _run(args, resolved, forwarded=True)
