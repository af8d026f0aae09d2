"""Run a `straylight` command on behalf of a long-lived process (the MCP server).

The contract: `await CommandRunner().run(["recall", "deploy", "--json"])` gives the exit code,
stdout and stderr the same command would give in a terminal. How, depends on who owns the
data dir (tui/owner_client.py, docs/owner-socket.md):

- this process owns it: the command runs here, in a worker thread, with the memory already
  open (borrowed) and its output captured;
- another process owns it (the TUI, a long CLI command): the command is forwarded to it over
  `<data dir>/straylight.sock`;
- nobody does: the runner takes the data-dir lock, opens the memory and stays the owner,
  serving the other processes too, until `aclose()` — or until a starting TUI asks for the
  data dir (tui/owner_handover.py): the runner then releases it and forwards to the chat
  (it does not take the dir back for `RETAKE_PAUSE` after letting go, so the chat gets it, and
  waits up to `HANDOVER_SECONDS` for the chat to serve; a chat that quits is taken over from).

Commands that need no memory (`history`, `config`, `models`) run here in every case.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent.settings import ResolvedSettings
    from store.data_dir_lock import DataDirLock, DataDirLocked
    from tui.memory_session import MemorySession
    from tui.owner_request import CommandRequest
    from tui.owner_server import OwnerServer

RETRY_SECONDS = 3.0
RETAKE_PAUSE = 2.0  # the starting chat polls the lock every 0.1 s
EXIT_USAGE = 2
EXIT_DATA_DIR_IN_USE = 6
EXIT_INTERRUPTED = 130


@dataclass(frozen=True, slots=True)
class CommandOutcome:
    """What one command returned: its exit code and everything it printed."""

    exit_code: int
    stdout: str
    stderr: str


@dataclass
class _Ownership:
    """What the runner holds while it owns a data dir."""

    lock: DataDirLock
    server: OwnerServer | None
    session: MemorySession | None


class CommandRunner:
    """Runs `straylight ARGV` with the given environment and working directory."""

    def __init__(self, env: Mapping[str, str] | None = None, cwd: Path | None = None) -> None:
        self.env = dict(os.environ if env is None else env)
        self.cwd = cwd
        self._owned: dict[str, _Ownership] = {}  # real path of a data dir -> what we hold
        # real path -> (loop times) not taken back before, waited for the chat until
        self._yielded: dict[str, tuple[float, float]] = {}
        self._handovers: set[asyncio.Task[None]] = set()
        self._take_over = asyncio.Lock()

    async def run(self, argv: Sequence[str], *, stdin: str | None = None) -> CommandOutcome:
        parsed = _parse(argv, self.env)
        if isinstance(parsed, CommandOutcome):
            return parsed
        args, resolved = parsed
        from tui.command_kinds import may_create_data_dir
        from tui.owner_client import forwards, give_up_at

        request = self._request(argv, resolved, stdin)
        if not forwards(args):
            return await _in_process(request)
        if not resolved.settings.home.is_dir() and not may_create_data_dir(args):
            return await _in_process(request)  # nobody to ask, nothing to own: nothing created
        loop = asyncio.get_running_loop()
        home = resolved.settings.home
        deadline = loop.time() + RETRY_SECONDS
        while True:
            if self._owns(home):
                return await _in_process(request)
            forwarded = await _forward(request)
            if forwarded is not None:
                return forwarded
            handed = self._yielded.get(os.path.realpath(home))
            if handed is not None:  # handed to a chat that is starting: wait for it to serve
                deadline = max(deadline, handed[1])
            try:
                problem = await self._own(resolved)
            except Exception:  # noqa: BLE001 - a damaged database: the command itself says so
                return await _in_process(request)
            if problem is None:
                continue  # ours now: in-process
            give_up = deadline if isinstance(problem, str) else give_up_at(deadline, problem)
            if asyncio.get_running_loop().time() >= give_up:
                return CommandOutcome(EXIT_DATA_DIR_IN_USE, "", f"straylight: {problem}\n")
            await asyncio.sleep(0.05)

    async def aclose(self) -> None:
        """Stop serving and release the data dirs this runner owns."""
        for task in list(self._handovers):
            await task
        owned, self._owned = list(self._owned.values()), {}
        for ownership in owned:
            await asyncio.to_thread(_release, ownership)

    # ---- owning -----------------------------------------------------------------------
    def _owns(self, home: Path) -> bool:
        """This process owns the data dir (through this runner, or a TUI or session here)."""
        from store.data_dir_lock import held_here

        return os.path.realpath(home) in self._owned or held_here(home)

    async def _own(self, resolved: ResolvedSettings) -> DataDirLocked | str | None:
        """Take the data dir: the lock, the memory, the socket. None, or why not (the
        holder's refusal, or a line)."""
        async with self._take_over:
            if self._owns(resolved.settings.home):
                return None
            from store.data_dir_lock import DataDirLocked

            key = os.path.realpath(resolved.settings.home)
            handed = self._yielded.get(key)
            if handed is not None and asyncio.get_running_loop().time() < handed[0]:
                return "the data dir was handed to the chat, which is starting"
            handover = self._handover_hook(key)
            try:
                ownership = await asyncio.to_thread(_take, resolved, handover)
            except DataDirLocked as locked:  # someone else is the owner (starting or ending)
                return locked
            self._owned[key] = ownership
            return None

    def _handover_hook(self, key: str) -> Callable[[], bool]:
        """What the owner server calls (in its thread) when a starting TUI asks for the data
        dir: agree, and release it from the runner's loop once the answer has gone."""
        from tui.owner_handover import HANDOVER_SECONDS

        loop = asyncio.get_running_loop()

        def agree() -> bool:
            def begin() -> None:  # not taken back until released (`_hand_over`)
                self._yielded[key] = (loop.time() + HANDOVER_SECONDS,) * 2
                task = loop.create_task(self._hand_over(key))
                self._handovers.add(task)
                task.add_done_callback(self._handovers.discard)

            loop.call_soon_threadsafe(begin)
            return True

        return agree

    async def _hand_over(self, key: str) -> None:
        """Release a data dir a chat asked for; its commands running here end first."""
        from tui.owner_handover import HANDOVER_SECONDS

        async with self._take_over:
            ownership = self._owned.pop(key, None)
            if ownership is not None:
                await asyncio.to_thread(_release, ownership)
            now = asyncio.get_running_loop().time()
            self._yielded[key] = (now + RETAKE_PAUSE, now + HANDOVER_SECONDS)

    def _request(
        self, argv: Sequence[str], resolved: ResolvedSettings, stdin: str | None
    ) -> CommandRequest:
        from agent.workspace import resolve_workspace
        from tui.owner_request import CommandRequest, settings_environment

        cwd = self.cwd or Path.cwd()
        settings = resolved.settings
        return CommandRequest(
            argv=list(argv),
            home=str(settings.home),
            env=settings_environment(self.env),
            cwd=str(cwd),
            workspace=resolve_workspace(settings.workspace, cwd),
            config=str(resolved.config_path),
            stdin=stdin,
        )


def _parse(
    argv: Sequence[str], env: Mapping[str, str]
) -> tuple[argparse.Namespace, ResolvedSettings] | CommandOutcome:
    """The parsed command line and its settings, or the usage error the command would give."""
    from agent.settings import SettingsError
    from tui import owner_streams
    from tui.cli import _resolve
    from tui.owner_request import command_parser

    out: list[str] = []
    err: list[str] = []
    streams = owner_streams.CommandStreams.of(
        out.append, err.append, None, tty_out=False, tty_err=False
    )
    owner_streams.install()  # argparse prints usage errors and --help: into this outcome
    try:
        with owner_streams.routed(streams):
            args = command_parser().parse_args(list(argv))
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 0 if stop.code is None else 2
        return CommandOutcome(code, "".join(out), "".join(err))
    finally:
        owner_streams.uninstall()
    try:
        resolved = _resolve(args, env)
    except SettingsError as error:
        return CommandOutcome(EXIT_USAGE, "", f"straylight: {error}\n")
    return args, resolved


async def _in_process(request: CommandRequest) -> CommandOutcome:
    """Run the command in a worker thread of this process, its output captured; cancelling
    the caller cancels the command."""
    from tui import owner_streams
    from tui.owner_run import CommandRun

    out: list[str] = []
    err: list[str] = []
    loop = asyncio.get_running_loop()
    finished: asyncio.Future[None] = loop.create_future()

    def settle() -> None:
        if not finished.done():
            finished.set_result(None)

    def done(_run: CommandRun) -> None:
        loop.call_soon_threadsafe(settle)

    owner_streams.install()
    run = CommandRun(request, out.append, err.append, done).start()
    try:
        await asyncio.shield(finished)
    except asyncio.CancelledError:
        run.cancel()
        await asyncio.to_thread(run.join)
        raise
    finally:
        await asyncio.to_thread(run.join)
        owner_streams.uninstall()
    code = run.exit_code if run.exit_code is not None else 1
    return CommandOutcome(code, "".join(out), "".join(err))


async def _forward(request: CommandRequest) -> CommandOutcome | None:
    """The outcome from the data dir's owner, or None when nobody serves it."""
    from store.owner_socket import PeerRefused
    from tui.owner_client import (
        NotServed,
        OwnerGone,
        RequestTooLarge,
        forward,
        served_by_another_user,
    )

    out, err = io.StringIO(), io.StringIO()
    try:
        code = await asyncio.to_thread(forward, Path(request.home), request, out, err)
    except NotServed:
        return None
    except PeerRefused as refused:
        err.write(f"straylight: {served_by_another_user(Path(request.home), refused)}\n")
        code = EXIT_DATA_DIR_IN_USE
    except OwnerGone as gone:
        err.write(f"straylight: {gone}; it may or may not have been done\n")
        code = 1
    except RequestTooLarge as error:
        err.write(f"straylight: {error}\n")
        code = EXIT_USAGE
    return CommandOutcome(code, out.getvalue(), err.getvalue())


def _take(resolved: ResolvedSettings, on_handover: Callable[[], bool]) -> _Ownership:
    """The lock, then the socket, then the memory (kept open while the runner owns it)."""
    from agent.ollama_gateway import OllamaGateway
    from store.data_dir_lock import DataDirLock
    from store.database import database_path
    from tui.memory_session import MemorySession
    from tui.owner_server import OwnerServer

    settings = resolved.settings
    lock = DataDirLock(settings.home).acquire()
    session: MemorySession | None = None
    try:
        if database_path(settings.home).exists():  # a data dir with nothing saved stays empty
            session = MemorySession(settings, OllamaGateway.from_config(settings.ollama))
            session.open()
        server = OwnerServer.start_soft(settings.home, on_handover=on_handover)
    except BaseException:
        if session is not None:
            session.close()
        lock.release()
        raise
    return _Ownership(lock, server, session)


def _release(ownership: _Ownership) -> None:
    if ownership.server is not None:
        ownership.server.stop()
    if ownership.session is not None:
        ownership.session.close()
    ownership.lock.release()
