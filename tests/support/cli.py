"""Run `straylight` from a test: in-process through `tui.cli.main` (fast), or as a real
`python -m tui.cli` process (for what only a process shows: exit codes through `entry()`,
signals, locks held by another process, start-up and import hygiene, stdin/TTY behaviour,
crashes). Both give a `CliResult` and share the assertions below.

The in-process run behaves like a process for the command: it sees only the given
environment, cwd, umask and stdin; stdout and stderr are bytes decoded as `text=True` would.
Afterwards everything is put back, and a run that leaves a thread running, a file open (the
data-dir lock, the database, the log), a signal handler changed or a logging handler behind
fails the test: `main` must close what it opened.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 30  # seconds per process; a healthy call takes about one
PROG = "straylight: "
NOW = "2031-02-03T04:05:06Z"  # STRAYLIGHT_NOW of the CLI tests: the clock they freeze
DAY = NOW[:10]

Env = dict[str, str]
Stdin = str | bytes | None


@dataclass(frozen=True)
class CliResult:
    """What one run printed and returned (the shape of `CompletedProcess`; `args` are the
    CLI arguments, or the whole command line of `run_process`)."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str


def cli_env(home: Path, root: Path, **extra: str) -> Env:
    """The environment of a user: this process's, minus every Straylight, `MEMORY_*` and
    Ollama variable, with the data dir `home`, the config dir in `root`, UTC, and `extra`."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("STRAYLIGHT_", "MEMORY_")) and name != "OLLAMA_HOST"
    }
    env.update(
        {
            "STRAYLIGHT_HOME": str(home),
            "XDG_CONFIG_HOME": str(root / "xdg-config"),
            "PYTHONPATH": str(REPO_ROOT),
            "TZ": "UTC",
        }
    )
    env.update(extra)
    return env


def sandboxed_env(home: Path, root: Path, ollama_host: str, **extra: str) -> Env:
    """`cli_env` for the reliability suite: a frozen clock, workspace `demo`, the given
    Ollama, and HOME and the platform data dir inside `root`, so a stray write outside the
    data dir shows up there."""
    settings = {"STRAYLIGHT_NOW": NOW, "STRAYLIGHT_WORKSPACE": "demo", **extra}
    return cli_env(
        home,
        root,
        OLLAMA_HOST=ollama_host,
        HOME=str(root / "user-home"),
        XDG_DATA_HOME=str(root / "xdg-data"),
        PYTHONDONTWRITEBYTECODE="1",
        **settings,
    )


# --------------------------------------------------------------------------- in-process


def run_cli(
    env: Env, *args: str, stdin: Stdin = None, cwd: Path | None = None, umask: int | None = None
) -> CliResult:
    """`straylight ARGS` in this process: `tui.cli.main(args)` with `env` as the whole
    environment, `cwd` (default: the repository) as working directory and `stdin` as
    standard input (none: empty, like /dev/null). Text stdin is UTF-8; with bytes stdin the
    output is decoded with replacement and no newline translation, as in `fault_support`."""
    from tui.cli import main

    data = stdin.encode("utf-8") if isinstance(stdin, str) else (stdin or b"")
    out, err = io.BytesIO(), io.BytesIO()
    with _standard_streams(data, out, err), _process_state(env, cwd or REPO_ROOT, umask):
        try:
            code = main(list(args))
        except SystemExit as stop:  # argparse (usage, --help, --version)
            code = _exit_status(stop)
        except Exception:  # noqa: BLE001 - the interpreter prints it and exits with 1
            traceback.print_exc()
            code = 1
    universal = not isinstance(stdin, bytes)
    return CliResult(
        list(args), code, _decode(out.getvalue(), universal), _decode(err.getvalue(), universal)
    )


def run_many(env: Env, *commands: Sequence[str], cwd: Path | None = None) -> list[CliResult]:
    """Independent commands, one after the other in this process; results in order."""
    return [run_cli(env, *command, cwd=cwd) for command in commands]


def _exit_status(stop: SystemExit) -> int:
    if stop.code is None:
        return 0
    if isinstance(stop.code, int):
        return stop.code
    print(stop.code, file=sys.stderr)
    return 1


def _decode(raw: bytes, universal: bool) -> str:
    if not universal:
        return raw.decode("utf-8", "replace")
    return io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8").read()  # \r\n, \r -> \n


@contextlib.contextmanager
def _standard_streams(stdin: bytes, out: io.BytesIO, err: io.BytesIO) -> Iterator[None]:
    """stdin, stdout and stderr as a process with pipes has them (not terminals), with the
    error handlers this interpreter's own streams use."""
    stdout_errors = getattr(sys.__stdout__, "errors", None) or "strict"
    streams = (
        io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"),
        io.TextIOWrapper(out, encoding="utf-8", errors=stdout_errors, write_through=True),
        io.TextIOWrapper(err, encoding="utf-8", errors="backslashreplace", write_through=True),
    )
    saved = (sys.stdin, sys.stdout, sys.stderr)
    sys.stdin, sys.stdout, sys.stderr = streams
    try:
        yield
    finally:
        for stream in streams[1:]:
            stream.flush()
        sys.stdin, sys.stdout, sys.stderr = saved
        for stream in streams:
            stream.detach()


@contextlib.contextmanager
def _process_state(env: Env, cwd: Path, umask: int | None) -> Iterator[None]:
    """Give the command its environment, cwd, umask and Python's default warning filters;
    put back the environment, cwd, umask, temp dir, logging, signal handlers afterwards,
    and fail if the command left threads, open files or handlers behind."""
    saved_env, saved_cwd, saved_tempdir = dict(os.environ), Path.cwd(), tempfile.tempdir
    threads, files, handlers = set(threading.enumerate()), _open_files(), _signal_handlers()
    logs = _LoggingState()
    os.environ.clear()
    os.environ.update(env)
    time.tzset()
    tempfile.tempdir = None  # honour the command's TMPDIR
    old_umask = os.umask(umask) if umask is not None else None
    os.chdir(cwd)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.resetwarnings()
            for category in (DeprecationWarning, PendingDeprecationWarning, ResourceWarning):
                warnings.simplefilter("ignore", category)
            yield
        for warning in caught:  # printed on stderr, as the interpreter would
            print(warnings.formatwarning(*_warning_parts(warning)), end="", file=sys.stderr)
    finally:
        os.chdir(saved_cwd)
        if old_umask is not None:
            os.umask(old_umask)
        os.environ.clear()
        os.environ.update(saved_env)
        time.tzset()
        tempfile.tempdir = saved_tempdir
        left_handlers = logs.restore()
        changed = [n for n, h in _signal_handlers().items() if handlers.get(n) is not h]
        for number in changed:
            signal.signal(number, handlers[number])
    problems = [f"a logging handler on the root logger: {h!r}" for h in left_handlers]
    problems += [f"a changed handler for {signal.Signals(n).name}" for n in changed]
    problems += [f"a running thread: {t.name}" for t in _new_threads(threads)]
    problems += [f"an open file: {path}" for path in sorted(set(_open_files()) - set(files))]
    assert not problems, "the command left behind " + "; ".join(problems)


def _warning_parts(warning: warnings.WarningMessage) -> tuple[Any, ...]:
    return (warning.message, warning.category, warning.filename, warning.lineno, warning.line)


class _LoggingState:
    """The root logger's handlers and every logger's level, to put back after `main` (which
    routes the root logger to the data dir's log file)."""

    def __init__(self) -> None:
        self.root = logging.getLogger()
        self.handlers = list(self.root.handlers)
        self.levels = {name: logger.level for name, logger in _loggers()}
        self.root_level = self.root.level

    def restore(self) -> list[logging.Handler]:
        """Close the handlers `main` added; returns those it added but did not own (a
        file handler main set up is its own; anything else would be a leak)."""
        unexpected: list[logging.Handler] = []
        for handler in list(self.root.handlers):
            if handler not in self.handlers:
                self.root.removeHandler(handler)
                handler.close()
                if not isinstance(handler, logging.FileHandler | logging.NullHandler):
                    unexpected.append(handler)
        for handler in self.handlers:
            if handler not in self.root.handlers:
                self.root.addHandler(handler)
        self.root.setLevel(self.root_level)
        for name, logger in _loggers():
            logger.setLevel(self.levels.get(name, logging.NOTSET))
        return unexpected


def _loggers() -> list[tuple[str, logging.Logger]]:
    return [
        (name, logger)
        for name, logger in list(logging.root.manager.loggerDict.items())
        if isinstance(logger, logging.Logger)
    ]


def _signal_handlers() -> dict[int, Any]:
    return {int(number): signal.getsignal(number) for number in signal.valid_signals()}


def _new_threads(before: set[threading.Thread]) -> list[threading.Thread]:
    """Threads started during the command and still running a moment after it returned
    (the stand-in's request threads are the test's, not the command's)."""
    left = []
    for thread in threading.enumerate():
        if thread in before or "process_request_thread" in thread.name:
            continue
        thread.join(timeout=1.0)
        if thread.is_alive():
            left.append(thread)
    return left


def _open_files() -> list[str]:
    """What this process's file descriptors point at, but sockets, pipes and the like, and
    the kernel's /proc and /sys files (a library's thread may be reading one right then)."""
    found = []
    with contextlib.suppress(FileNotFoundError):
        for fd in os.listdir("/proc/self/fd"):
            with contextlib.suppress(OSError):
                target = os.readlink(f"/proc/self/fd/{fd}")
                if target.startswith("/") and not target.startswith(("/proc/", "/sys/")):
                    found.append(target)
    return found


# --------------------------------------------------------------------------- processes


def cli_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "tui.cli", *args]


def on_a_terminal(env: Env, *args: str) -> str:
    """Run `straylight ARGS` with its stdout on a pseudo-terminal (exit 0 asserted); what it
    printed there."""
    import pty

    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        cli_command(*args),
        env=env,
        cwd=REPO_ROOT,
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=subprocess.PIPE,
    )
    os.close(follower)
    shown = read_terminal(leader)
    proc.wait(timeout=60)
    os.close(leader)
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
    return shown


def read_terminal_for(fd: int, seconds: float) -> bytes:
    """What a child wrote to the pseudo-terminal whose `fd` end this is within `seconds`
    (less once it closed its end)."""
    import select

    out = b""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.05)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the child ended: its side of the terminal is closed
                break
            if not chunk:
                break
            out += chunk
    return out


def screen_text(screen: bytes) -> str:
    """A terminal's output as one run of text: escapes, the notices' border and all blanks
    removed, so a line the screen wrapped can be found whole (`"cannotwrite" in …`)."""
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", " ", screen.decode("utf-8", "replace"))
    return "".join(text.replace("\u258c", "").split())


def start_tui(env: Env, **popen: Any) -> tuple[subprocess.Popen[bytes], int]:
    """The chat as a user starts it, on a pseudo-terminal of its own (its own session):
    the process and the terminal's other end."""
    import pty

    leader, follower = pty.openpty()
    process = subprocess.Popen(
        cli_command(),
        cwd=REPO_ROOT,
        env=env,
        stdin=follower,
        stdout=follower,
        stderr=follower,
        start_new_session=True,
        **popen,
    )
    os.close(follower)
    return process, leader


def read_terminal(leader: int) -> str:
    """All a child wrote to the pseudo-terminal whose `leader` end this is, until it closed."""
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


def run_process(
    command: Sequence[str],
    env: Env,
    *,
    stdin: Stdin = None,
    cwd: Path | None = None,
    umask: int = -1,
    timeout: float = TIMEOUT,
) -> CliResult:
    """`command` as a process (stdin text, bytes passed through unchanged, or /dev/null).
    Bytes stdin gives output decoded with replacement and no newline translation."""
    extra: dict[str, Any] = {"stdin": subprocess.DEVNULL} if stdin is None else {"input": stdin}
    proc = subprocess.run(
        list(command),
        env=env,
        cwd=cwd or REPO_ROOT,
        capture_output=True,
        text=not isinstance(stdin, bytes),
        timeout=timeout,
        umask=umask,
        check=False,
        **extra,
    )
    if isinstance(stdin, bytes):
        return CliResult(
            list(command), proc.returncode, _decode(proc.stdout, False), _decode(proc.stderr, False)
        )
    return CliResult(list(command), proc.returncode, proc.stdout, proc.stderr)


def run_cli_process(
    env: Env, *args: str, stdin: Stdin = None, cwd: Path | None = None, umask: int = -1
) -> CliResult:
    """`python -m tui.cli ARGS` as a real process."""
    return run_process(cli_command(*args), env, stdin=stdin, cwd=cwd, umask=umask)


def spawn_many(
    calls: Sequence[tuple[Env, Sequence[str], str | None]],
    *,
    cwd: Path | None = None,
    command: Callable[..., list[str]] = cli_command,
) -> list[CliResult]:
    """Processes (env, args, stdin text) started side by side; results in order."""
    processes = []
    for env, args, stdin in calls:
        process = subprocess.Popen(
            command(*args),
            env=env,
            cwd=cwd or REPO_ROOT,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        processes.append((process, list(args), stdin))
    results = []
    try:
        for process, args, stdin in processes:
            out, err = process.communicate(stdin, timeout=TIMEOUT)
            results.append(CliResult(args, process.returncode, out, err))
    finally:
        for process, _, _ in processes:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=TIMEOUT)
    return results


# --------------------------------------------------------------------------- assertions


def assert_ok(result: CliResult) -> None:
    """Exit 0 and no traceback (warnings or notes on stderr are allowed)."""
    seen = (result.args, result.returncode, result.stdout[-500:], result.stderr[-2000:])
    assert result.returncode == 0, seen
    assert "Traceback" not in result.stderr, seen


def assert_quiet(result: CliResult) -> None:
    """Exit 0 and nothing at all on stderr."""
    seen = (result.args, result.stdout[-500:], result.stderr[-2000:])
    assert (result.returncode, result.stderr) == (0, ""), seen


def assert_one_line(result: CliResult, code: int, *fragments: str, label: object = "") -> str:
    """Exit `code`, exactly one stderr line, no traceback, each fragment in it; the line."""
    seen = (label, result.args, result.returncode, result.stdout[-500:], result.stderr[-2000:])
    assert result.returncode == code, seen
    assert "Traceback" not in result.stderr, seen
    lines = result.stderr.splitlines()
    assert len(lines) == 1, seen
    for fragment in fragments:
        assert fragment in lines[0], (fragment, *seen)
    return lines[0]


def printed_json(result: CliResult, *, quiet: bool = False) -> Any:
    """The JSON a command printed, after `assert_quiet` (with `quiet`) or `assert_ok`."""
    (assert_quiet if quiet else assert_ok)(result)
    return json.loads(result.stdout)
