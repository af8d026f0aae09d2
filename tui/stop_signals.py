"""SIGTERM and SIGHUP for the chat and `ask`: the stop is handed to the event loop (the chat
quits as Ctrl+Q does, `ask` as Ctrl-C does), and a watchdog ends the process when that loop
does not answer.

Why not `loop.add_signal_handler`: its callback runs only when the loop runs. When nobody
reads the output (a frozen ssh session or a lost pty under the chat; `ask … | less` left
unscrolled), the write blocks: Textual's writer thread on the full terminal with the loop
behind it on the writer's queue, or `ask`'s own write to the full pipe, and the signal
waited for ever. A Python-level handler still runs there (a blocked write or lock acquire
lets signal handlers run): it hands the stop to the loop (`call_soon_threadsafe`, as
asyncio's docs advise) and starts a timer; if the loop has not taken the stop within
`GRACE_SECONDS`, the process ends with 128 + the signal; once the chat's loop has taken
it, its shutdown gets `SHUTDOWN_SECONDS` (Textual's own shutdown can block on a terminal
that is gone; `ask`'s save after the reply is never cut short). What the loop would have
kept (a partial reply) is lost then; the user's message is in the daily log already, and
the lock and the database are as after a crash, which they are built for.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import threading
from collections.abc import Callable, Sequence
from types import FrameType

log = logging.getLogger("straylight.tui")

GRACE_SECONDS = 5.0
"""How long the event loop has to take a stop signal before the process ends without it."""
SHUTDOWN_SECONDS = 45.0
"""How long the chat's shutdown may take once its loop took the stop (`taken(shutdown=True)`;
it waits up to 30 s for the last turn's save), for Textual's own shutdown can block (its
writer thread on a terminal that is gone: SIGHUP with a screen open left the chat hung for
ever, holding the data dir)."""


class StopSignals:
    """The handlers of `signals` while installed: `on_stop(signum)` on the loop, the
    watchdog behind it. `taken()` (from `on_stop`) stops the watchdog."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        signals: Sequence[signal.Signals],
        on_stop: Callable[[signal.Signals], None],
    ) -> None:
        self._loop = loop
        self._signals = tuple(signals)
        self._on_stop = on_stop
        self._previous: dict[signal.Signals, object] = {}
        self._watchdog: threading.Timer | None = None
        self._stop: signal.Signals | None = None  # the signal caught, once one was

    def install(self) -> bool:
        """Take the signals (only the main thread can); False elsewhere."""
        if threading.current_thread() is not threading.main_thread():
            return False
        for signum in self._signals:
            self._previous[signum] = signal.signal(signum, self._caught)
        return True

    def uninstall(self) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)  # type: ignore[arg-type]
        self._previous = {}

    def taken(self, *, shutdown: bool = False) -> None:
        """The loop has taken the stop: no forced exit; with `shutdown` (the chat, whose
        own shutdown can block) the shutdown gets `SHUTDOWN_SECONDS` first (a normal exit
        comes before it; the timer dies with the process)."""
        stop = self._stop
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        if shutdown and stop is not None:
            self._watchdog = self._arm(SHUTDOWN_SECONDS, stop)

    def _caught(self, signum: int, _frame: FrameType | None) -> None:
        stop = signal.Signals(signum)
        try:
            self._loop.call_soon_threadsafe(self._on_stop, stop)
        except RuntimeError:  # the loop is closed: nothing is left to keep
            self._force_exit(stop, 0.0)
        if self._watchdog is None:
            self._stop = stop
            self._watchdog = self._arm(GRACE_SECONDS, stop)

    def _arm(self, seconds: float, stop: signal.Signals) -> threading.Timer:
        timer = threading.Timer(seconds, self._force_exit, args=(stop, seconds))
        timer.daemon = True
        timer.start()
        return timer

    @staticmethod
    def _force_exit(stop: signal.Signals, seconds: float) -> None:
        """End the process. Nothing is written to the terminal: a full one would block this
        thread too (the log file has the line; its handler flushes every record)."""
        log.warning("stopped by %s: the screen did not answer for %.0f s", stop.name, seconds)
        os._exit(128 + stop)
