"""Standard streams per forwarded command: what `print()` means in the owner's worker threads.

The owner runs other processes' commands in-process, several at once, beside its own work
(the TUI's screen, an `ask`'s reply). The commands print to `sys.stdout` / `sys.stderr` and
read `sys.stdin`, so while the owner serves, those three are proxies: each looks up the
streams of the command running in the current context (a contextvar, set in the command's
worker thread and inherited by its asyncio tasks and `to_thread` calls) and falls back to
the stream it replaced everywhere else. Installed only once the owner runs (in the TUI after
Textual has captured the real streams, so the proxies wrap Textual's capture), removed when
it stops serving.
"""

from __future__ import annotations

import contextlib
import io
import sys
import threading
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

Sink = Callable[[str], None]
"""Where one stream of a forwarded command goes (a frame to the client, a buffer)."""


class CommandOutput:
    """A forwarded command's stdout or stderr: text to its sink, the client's tty-ness."""

    encoding = "utf-8"
    errors = "strict"

    def __init__(self, sink: Sink, *, tty: bool) -> None:
        self._sink = sink
        self._tty = tty

    def write(self, text: str) -> int:
        if text:
            self._sink(text)
        return len(text)

    def writelines(self, lines: list[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        """Every write is sent at once."""

    def isatty(self) -> bool:
        return self._tty

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def fileno(self) -> int:
        raise io.UnsupportedOperation("a forwarded command's stream has no file descriptor")

    @property
    def closed(self) -> bool:
        return False


@dataclass(frozen=True)
class CommandStreams:
    """The three standard streams of one forwarded command."""

    stdin: io.TextIOWrapper
    stdout: CommandOutput
    stderr: CommandOutput

    @classmethod
    def of(
        cls, out: Sink, err: Sink, stdin: str | None, *, tty_out: bool, tty_err: bool
    ) -> CommandStreams:
        """Streams writing to `out` / `err`; stdin is the text given (None: empty, as
        /dev/null)."""
        data = (stdin or "").encode("utf-8", "surrogateescape")
        return cls(
            io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"),
            CommandOutput(out, tty=tty_out),
            CommandOutput(err, tty=tty_err),
        )


_current: ContextVar[CommandStreams | None] = ContextVar("straylight_command_streams", default=None)


class _StreamProxy:
    """Stands in for `sys.<name>`: the current command's stream, else the original."""

    def __init__(self, name: str, original: Any) -> None:
        self._name = name
        self._original = original

    def _target(self) -> Any:
        streams = _current.get()
        return self._original if streams is None else getattr(streams, self._name)

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self._target(), attribute)

    def __iter__(self) -> Iterator[str]:
        return iter(self._target())


_NAMES = ("stdin", "stdout", "stderr")
_install_lock = threading.Lock()
_installs = 0


def install() -> None:
    """Put the proxies on `sys` (counted: every `install` has its `uninstall`)."""
    global _installs
    with _install_lock:
        _installs += 1
        if _installs == 1:
            for name in _NAMES:
                current = getattr(sys, name)
                if not isinstance(current, _StreamProxy):
                    setattr(sys, name, _StreamProxy(name, current))


def uninstall() -> None:
    """Take the proxies off `sys` again when the last user is done; a stream someone else
    put there since (Textual restoring its own at exit) is left alone."""
    global _installs
    with _install_lock:
        _installs = max(0, _installs - 1)
        if _installs == 0:
            for name in _NAMES:
                current = getattr(sys, name)
                if isinstance(current, _StreamProxy):
                    setattr(sys, name, current._original)


@contextlib.contextmanager
def routed(streams: CommandStreams) -> Iterator[None]:
    """Within this block (this thread, its tasks and `to_thread` calls) the standard
    streams are `streams`."""
    token = _current.set(streams)
    try:
        yield
    finally:
        _current.reset(token)
