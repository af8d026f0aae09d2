"""The client side of "one owner, many clients": run a command here, or have the owner run it.

A command that needs the memory (`FORWARDED_COMMANDS`) and finds the data dir owned by
another Straylight process sends its command line to the owner's socket and prints what
comes back, exiting with the owner's exit code: the output is the command's own. When nobody
owns the dir, this process takes the lock and runs the command itself (and, while its memory
is open, serves the others). A lock held with no socket answering (an owner starting, or
dying) is retried for `RETRY_SECONDS` (`BRIEF_HOLDER_SECONDS` for a short command that does
not serve, such as `facts set`), then refused with exit 6 as before. Ctrl+C closes the
connection, which cancels the command in the owner.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from tui.owner_request import CommandRequest, settings_environment

if TYPE_CHECKING:
    from agent.settings import ResolvedSettings
    from store.data_dir_lock import DataDirLocked

log = logging.getLogger("straylight.owner")

FORWARDED_COMMANDS = frozenset(
    {
        "ask",
        "status",
        "remember",
        "forget",
        "recall",
        "import-doc",
        "facts",
        "candidates",
        "reflect",
        "jobs",
        "hypotheses",
        "conversations",
    }
)
"""Commands that open the memory. `history`, `config`, `models`, `pull` read no database and
always run here; the TUI never forwards (a second chat on one data dir is refused)."""

SERVING_COMMANDS = FORWARDED_COMMANDS - {"facts", "candidates", "hypotheses"}
"""Commands that serve the others while they run here: those that open the whole memory.
The fact drawer's commands open only the database and are short; the others wait for them."""

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
RETRY_SECONDS = 3.0
FIRST_ANSWER_SECONDS = 3.0
"""How long the owner may take to say it has a command (it does so at once, from a thread of
its own): an owner that is stopped (Ctrl+Z) or hung still accepts connections, and without
a limit every client waited for it for ever. It is then "in use", exit 6, as a holder that
does not serve."""
SEND_BYTES_PER_SECOND = 1024 * 1024
"""A large request (stdin) gets a second more a MiB: an owner whose other threads are busy
reads 64 KiB a `recv`, each after winning the GIL back (60 MB took 10 s beside two busy
threads)."""
BRIEF_HOLDER_SECONDS = 15.0
"""How long a command waits for a holder that said it is brief (`DataDirLocked.brief`: a
`facts`, `candidates` or `hypotheses` command, done in well under a second on a quiet
machine, several on a loaded one) before exit 6."""
READ_WAIT_SECONDS = 8.0  # a reading command takes no lock (issue 15 §5), so serves no one
_RETRY_PAUSE = 0.05
EXIT_UNEXPECTED = 1
EXIT_USAGE = 2
EXIT_DATA_DIR_IN_USE = 6
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141


class NotServed(Exception):
    """Nobody answers on the socket (no owner, or it ended before taking the command)."""


class RequestTooLarge(Exception):
    """The command line with its stdin is more than a frame may carry (`MAX_FRAME_BYTES`);
    `str()` is the one line for the user."""


class OwnerGone(Exception):
    """The owner ended while running the command: it may or may not have been done."""


class Stopped(Exception):
    """SIGTERM or SIGHUP while the owner ran the command (the connection closes: the owner
    cancels it, as for Ctrl+C); the exit code is 128 + the signal, as for `ask` alone."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _stop(signum: int, _frame: object) -> None:
    raise Stopped(signum)


@contextlib.contextmanager
def _stopped_by_signals() -> Iterator[None]:
    """While forwarding: SIGTERM and SIGHUP raise `Stopped` (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {signum: signal.signal(signum, _stop) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)


def served_by_another_user(home: Path, refused: Exception) -> str:
    """The line for a data dir whose socket answers from another user's process (a `sudo
    straylight` chat): nothing is sent to it (`store.owner_socket.check_peer`)."""
    return (
        f"{home} is served by a Straylight process of another user ({refused}): stop it, "
        "or use --home"
    )


def forwards(args: argparse.Namespace) -> bool:
    return args.command in FORWARDED_COMMANDS


def forward(home: Path, request: CommandRequest, out: TextIO, err: TextIO) -> int:
    """Send `request` to the owner of `home`; its output to `out` / `err`; its exit code.

    `NotServed` when nobody takes it; `OwnerGone` when the owner ended mid-command;
    `RequestTooLarge` when it is too large to send (the owner would drop it unanswered)."""
    from store.owner_socket import (
        MAX_FRAME_BYTES,
        FrameReader,
        OwnerSocketError,
        connect,
        encode_frame,
    )

    try:
        sock = connect(home)
    except OSError as error:  # no socket, refused, timed out: not served
        raise NotServed(str(error)) from None
    owner: object = None
    open_line = False  # what `out` got last did not end its line (a reply streaming)
    try:
        data = encode_frame(request.to_frame())
        if len(data) > MAX_FRAME_BYTES:  # stdin, mostly (`remember -` of a large file)
            raise RequestTooLarge(
                f"too large to pass to the Straylight process that has {home}: the command "
                f"and its input are {len(data):,} bytes, at most {MAX_FRAME_BYTES:,} (64 MiB)"
            )
        try:  # a stopped (Ctrl+Z, SIGSTOP) or hung owner still accepts: its answer is timed
            sock.settimeout(FIRST_ANSWER_SECONDS + len(data) / SEND_BYTES_PER_SECOND)
            sock.sendall(data)
            reader = FrameReader(sock)
            first = reader.read()
            sock.settimeout(None)  # the command itself takes as long as it takes
        except TimeoutError:
            raise NotServed(
                f"the owner did not answer within {FIRST_ANSWER_SECONDS:.0f} s"
            ) from None
        except (OSError, OwnerSocketError) as error:
            raise NotServed(str(error)) from None
        if first is None or "owner" not in first:
            raise NotServed("the owner did not take the command")
        owner = first["owner"]
        while True:
            try:
                frame = reader.read()
            except (OSError, OwnerSocketError):
                frame = None
            if frame is None:
                raise OwnerGone(f"the owner of {home} (PID {owner}) ended during the command")
            if "out" in frame:
                text = str(frame["out"])
                # set first: a signal may come as soon as the text is out
                open_line = not text.endswith("\n") if text else open_line
                out.write(text)
                out.flush()
            elif "err" in frame:
                err.write(str(frame["err"]))
                err.flush()
            elif "exit" in frame:
                code = frame["exit"]
                return code if isinstance(code, int) else EXIT_UNEXPECTED
    except BaseException as stopped:
        # A signal, or the reader of stdout gone: the owner is told why before the connection
        # closes, so a cancelled reply's logged reason is the one `ask` alone gives it.
        reason = _stop_reason(stopped)
        if reason is not None:
            with contextlib.suppress(OSError):
                sock.sendall(encode_frame({"stop": reason}))
        # Ctrl+C, a signal or the owner gone mid-reply: the error line that follows must not
        # run on from the partial reply (as `ask` run here ends it); a reader gone keeps its error
        if open_line:
            with contextlib.suppress(OSError, ValueError):
                out.write("\n")
                out.flush()
        raise
    finally:
        sock.close()  # before the command ended (Ctrl+C, a closed pipe): the owner cancels it


def _stop_reason(error: BaseException) -> str | None:
    """Why the client stops the owner's command, as `ask` alone logs it; None for Ctrl+C
    (the owner's plain cancel is "cancelled by the user") and anything else."""
    if isinstance(error, Stopped):
        return f"stopped by {error}"
    if isinstance(error, BrokenPipeError):
        return "the reader of the output went away"
    return None


def output_of_owner(argv: Sequence[str], resolved: ResolvedSettings) -> tuple[int, str] | None:
    """(exit code, stdout) of `straylight ARGV` run by the data dir's owner, read here rather
    than printed — for a client that must show the owner's data before it forwards its own
    command (`conversations delete` asks with the title the owner's database holds); None
    when nobody serves (no owner, or one that cannot be reached: `OwnerGone` included)."""
    import io

    from store.owner_socket import PeerRefused

    home = resolved.settings.home
    if not home.is_dir():
        return None
    out, err = io.StringIO(), io.StringIO()
    try:
        code = forward(home, _request(argv, resolved, None), out, err)
    except (NotServed, OwnerGone, PeerRefused):  # (the command itself then says why)
        return None
    return code, out.getvalue()


def run_or_forward(
    argv: Sequence[str],
    resolved: ResolvedSettings,
    run_here: Callable[[], int],
    command: str,
    *,
    reads_only: bool = False,
) -> int:
    """`straylight ARGV` for a command that needs the memory: forwarded to the data dir's
    owner, else run here (`run_here`) with the data-dir lock held."""
    from tui.cli_output import fail, stdin_kept

    home = resolved.settings.home
    if not home.is_dir():
        return run_here()  # no data dir yet: nobody to ask; the command decides what to create
    stdin: str | None = None
    if "-" in argv:  # the command reads stdin: read it once, for the owner or for us
        stdin = stdin_kept()
    request = _request(argv, resolved, stdin)
    try:
        return _forward_or_own(home, request, run_here, command, reads_only=reads_only)
    except KeyboardInterrupt:  # while waiting for the owner or the lock
        return fail("interrupted", EXIT_INTERRUPTED)


def _forward_or_own(
    home: Path,
    request: CommandRequest,
    run_here: Callable[[], int],
    command: str,
    *,
    reads_only: bool = False,
) -> int:
    from store.data_dir_lock import DataDirLock, DataDirLocked
    from store.owner_socket import PeerRefused
    from tui.cli_output import fail

    deadline = time.monotonic() + RETRY_SECONDS
    while True:
        try:
            with _stopped_by_signals():
                return forward(home, request, sys.stdout, sys.stderr)
        except NotServed:
            pass
        except Stopped as stop:  # the line `ask` alone gives (the owner logged it so)
            kept = (
                "" if command != "ask" else " (what arrived is kept in the log, marked cancelled)"
            )
            return fail(f"stopped by {stop}{kept}", 128 + stop.signum)
        except OwnerGone as error:
            log.warning("%s", error)
            return fail(f"{error}; it may or may not have been done", EXIT_UNEXPECTED)
        except RequestTooLarge as error:
            return fail(str(error), EXIT_USAGE)
        except PeerRefused as refused:  # its socket is another user's process (sudo?)
            return fail(served_by_another_user(home, refused), EXIT_DATA_DIR_IN_USE)
        except KeyboardInterrupt:
            return fail("interrupted", EXIT_INTERRUPTED)
        except BrokenPipeError:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            return EXIT_BROKEN_PIPE
        if reads_only:  # a reading command writes nothing, the lock file included (§5):
            from store.data_dir_check import check_not_in_use  # asked, not taken

            try:
                check_not_in_use(home)
            except DataDirLocked as locked:  # it cannot serve: it waits for a gap longer
                if time.monotonic() >= max(
                    deadline + READ_WAIT_SECONDS - RETRY_SECONDS, give_up_at(deadline, locked)
                ):
                    return fail(str(locked), EXIT_DATA_DIR_IN_USE)
                time.sleep(_RETRY_PAUSE)
                continue
            except OSError as error:  # its lock file unreadable (another user's): one line
                from tui.data_dir_access import unreadable_data_dir

                return fail(unreadable_data_dir(error, home), EXIT_USAGE)
            return run_here()  # DuckDB's own lock: a writer starting meanwhile waits for it
        try:
            lock = DataDirLock(home, brief=command not in SERVING_COMMANDS).acquire()
        except DataDirLocked as locked:  # owned, but not answering (yet): starting or ending
            if time.monotonic() >= give_up_at(deadline, locked):
                return fail(str(locked), EXIT_DATA_DIR_IN_USE)
            time.sleep(_RETRY_PAUSE)
            continue
        except OSError:  # a data dir we cannot lock (read-only): the command itself says so
            return run_here()
        from tui.owner_server import OwnerServer

        server = None
        if command in SERVING_COMMANDS:  # while it runs, it serves the others
            server = OwnerServer.start_soft(home, one_shot=True)
        try:
            return run_here()  # ours now: the command's own lock is this one (re-entrant)
        finally:
            if server is not None:
                server.stop()
            lock.release()


def give_up_at(deadline: float, locked: DataDirLocked) -> float:
    """When to stop waiting for a held data dir: `deadline` (`RETRY_SECONDS` after the
    start), later for a holder that said it is brief — or that has not said anything yet
    (no PID in the lock file: it took the lock a moment ago and is writing it; ten
    commands started at once failed with exit 6 after as little as 8 s when they read it
    then)."""
    said_brief = locked.brief or locked.pid is None
    return deadline + (BRIEF_HOLDER_SECONDS - RETRY_SECONDS if said_brief else 0.0)


def _request(argv: Sequence[str], resolved: ResolvedSettings, stdin: str | None) -> CommandRequest:
    from agent.workspace import resolve_workspace

    settings = resolved.settings
    return CommandRequest(
        argv=list(argv),
        home=str(settings.home),
        env=settings_environment(os.environ),
        cwd=os.getcwd(),
        workspace=resolve_workspace(settings.workspace),
        config=str(resolved.config_path),
        stdin=stdin,
        tty_stdout=_isatty(sys.stdout),
        tty_stderr=_isatty(sys.stderr),
    )


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
