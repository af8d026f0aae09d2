"""A command run in a worker thread of the owner, and how it is cancelled.

Each forwarded (or `CommandRunner`) command gets a thread of its own; the command's code
calls `asyncio.run` itself, so it has its own event loop there. Cancelling it (the client
closed the connection: Ctrl+C, a closed pipe, an MCP call cancelled) works like Ctrl+C does
for the command in a process of its own: if its event loop is running, every task of that
loop is cancelled (finally blocks run, the session and the gateway close); between loops
(synchronous database work) `KeyboardInterrupt` is raised in the thread, at its next Python
instruction. Either way the command ends with exit code 130 and the store stays usable.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from tui.owner_request import CommandRequest, command_words, execute
from tui.owner_streams import Sink

log = logging.getLogger("straylight.owner")

EXIT_UNEXPECTED = 1
EXIT_INTERRUPTED = 130
OWNER_ENDING = "the Straylight process serving this command ended before it did"
_GROUPS = frozenset({"facts", "candidates", "jobs", "hypotheses"})  # named with their action

_runs_by_thread: dict[int, CommandRun] = {}
_runs_guard = threading.Lock()


def _watch_new_loops() -> None:
    """Note each event loop a command's thread creates (`asyncio.run` makes it through the
    policy), so that `cancel` can reach it from another thread. Other threads' loops (the
    TUI's) are not noted."""
    policy = asyncio.get_event_loop_policy()
    if getattr(policy, "_straylight_loop_watch", False):
        return
    make_loop = policy.new_event_loop

    def new_event_loop() -> asyncio.AbstractEventLoop:
        loop = make_loop()
        with _runs_guard:
            run = _runs_by_thread.get(threading.get_ident())
            if run is not None:
                run.loops.append(loop)
        return loop

    setattr(policy, "new_event_loop", new_event_loop)  # noqa: B010 - on this instance only
    setattr(policy, "_straylight_loop_watch", True)  # noqa: B010


_SHUTDOWN_STEPS = frozenset(
    {"BaseEventLoop.shutdown_asyncgens", "BaseEventLoop.shutdown_default_executor"}
)
"""What `asyncio.run` runs after its main task ended: let be. Cancelled, Python 3.11's
`shutdown_default_executor` still has its thread set the result of the future it waited on,
and the loop logs an `InvalidStateError` traceback (`status | head` served by the chat)."""


def _cancel_all_tasks(loop: asyncio.AbstractEventLoop) -> None:
    for task in asyncio.all_tasks(loop):
        if getattr(task.get_coro(), "__qualname__", "") not in _SHUTDOWN_STEPS:
            task.cancel()


class CommandRun:
    """`CommandRun(request, out, err).start()`; `.cancel()`, `.join()`, `.exit_code`."""

    def __init__(
        self,
        request: CommandRequest,
        out: Sink,
        err: Sink,
        on_done: Callable[[CommandRun], None] | None = None,
    ) -> None:
        self.request = request
        self.out = out
        self.err = err
        self.on_done = on_done
        self.loops: list[asyncio.AbstractEventLoop] = []
        self.exit_code: int | None = None
        self.cancelled = False
        self.cancel_reason: str | None = None  # the owner's, when it is not the client's
        self.client_reason: str | None = None  # the client's, when it said why
        self.on_cancel: list[Callable[[str], None]] = []  # told that reason, on the loop
        self.started = time.monotonic()
        self._done = False
        self._state = threading.Lock()
        self._thread = threading.Thread(target=self._work, name="owner-command", daemon=True)

    @property
    def command(self) -> str:
        """The command's name, for the log (never its arguments: they may be secrets)."""
        words = command_words(self.request.argv)
        if not words:
            return "?"
        return " ".join(words[:2]) if words[0] in _GROUPS else words[0]

    @property
    def done(self) -> bool:
        return self._done

    def start(self) -> CommandRun:
        _watch_new_loops()
        self._thread.start()
        return self

    def join(self, timeout: float | None = None) -> bool:
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _work(self) -> None:
        ident = threading.get_ident()
        with _runs_guard:
            _runs_by_thread[ident] = self
        code = EXIT_UNEXPECTED
        try:
            try:
                code = execute(self.request, self.out, self.err)
            finally:
                with self._state:
                    self._done = True
        except (KeyboardInterrupt, asyncio.CancelledError):
            code = EXIT_INTERRUPTED
            if self.cancel_reason is not None:  # not the client's doing: one line says why
                kept = "what it did so far is kept; a reply, in the log, marked cancelled"
                self.err(f"straylight: {self.cancel_reason} ({kept})\n")
                code = EXIT_UNEXPECTED
        except BaseException:  # the owner goes on; the client gets exit 1
            log.exception("a forwarded command failed")
            code = EXIT_UNEXPECTED
        finally:
            with _runs_guard:
                _runs_by_thread.pop(ident, None)
            self._done = True
            self.exit_code = code
        log.info(
            "ran %s for a client: exit %d in %.0f ms%s",
            self.command,
            code,
            (time.monotonic() - self.started) * 1000,
            " (cancelled)" if self.cancelled else "",
        )
        if self.on_done is not None:
            try:
                self.on_done(self)
            except Exception:
                log.exception("reporting a command's end failed")

    def cancel(self, reason: str | None = None, *, client_said: str | None = None) -> None:
        """Stop the command as Ctrl+C would (see the module docstring); `reason`: why, when
        the client did not ask for it (the owner is ending, `OWNER_ENDING`); `client_said`:
        why the client stopped it (a signal, its reader gone), for the log's reply only —
        the client says the rest itself."""
        with self._state:
            if self._done or self.cancelled or self._thread.ident is None:
                return
            self.cancelled = True
            self.cancel_reason = reason
            self.client_reason = client_said
            for loop in reversed(self.loops):
                if loop.is_running() and not loop.is_closed():
                    with contextlib.suppress(RuntimeError):  # closed meanwhile: interrupt
                        loop.call_soon_threadsafe(self._cancel_loop, loop)
                        return
            _interrupt(self._thread.ident)

    def _cancel_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        why = self.cancel_reason or self.client_reason
        if why is not None:
            for told in self.on_cancel:  # e.g. `ask` names it as its reply's reason
                told(why)
        _cancel_all_tasks(loop)


def current_run() -> CommandRun | None:
    """The client's command this thread runs in the owner, if it runs one."""
    with _runs_guard:
        return _runs_by_thread.get(threading.get_ident())


def _interrupt(ident: int) -> None:
    """Raise KeyboardInterrupt in thread `ident` at its next Python instruction."""
    set_async_exc: Any = ctypes.pythonapi.PyThreadState_SetAsyncExc
    set_async_exc(ctypes.c_ulong(ident), ctypes.py_object(KeyboardInterrupt))
