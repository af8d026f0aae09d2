"""One process owns a data dir at a time: an advisory lock on `<data dir>/straylight.lock`.

Taken before anything else opens the data dir — cheap (no DuckDB import), so the TUI can
refuse a second instance before it paints. The file holds the owner's PID so the second
process can name it, followed by ` brief` when the holder is a short command that does not
serve the others (a `facts` command): a waiting command then waits longer for it
(`tui.owner_client.BRIEF_HOLDER_SECONDS`) than for an owner that should be answering. The
kernel drops the lock when the owner exits, even on kill -9; a stale PID in the file is
harmless.

Within one process the lock is re-entrant: the owner runs other processes' commands in its
own threads (tui/owner_server.py), and a command taking the lock there shares the owner's
(counted; the flock goes with the last release). `held_here(home)` says whether this process
holds it.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path
from types import TracebackType

from store.private_files import ensure_private_dir, open_private

LOCK_FILENAME = "straylight.lock"
BRIEF_MARK = " brief"  # after the PID: a short command that does not serve
_held: dict[str, list[int]] = {}  # real path of a data dir -> [fd, holders] in this process
_held_guard = threading.Lock()


def _key(home: Path) -> str:
    return os.path.realpath(home)


def held_here(home: Path) -> bool:
    """Whether this process holds the lock of `home`."""
    with _held_guard:
        return _key(home) in _held


class DataDirLocked(Exception):
    """Another process holds the data dir; `str()` is the one line for the user. `brief`:
    the holder said it is a short command that serves no one."""

    def __init__(self, home: Path, pid: int | None, *, brief: bool = False) -> None:
        holder = f"PID {pid}" if pid else "another process"
        super().__init__(
            f"{home} is in use by {holder} (another Straylight?); close it or use --home"
        )
        self.home = home
        self.pid = pid
        self.brief = brief


class DataDirLock:
    """`with DataDirLock(home):` — raises `DataDirLocked` if another process has it.
    `brief`: this process will hold it a short while without serving (written in the file)."""

    def __init__(self, home: Path, *, brief: bool = False) -> None:
        self.home = home
        self.brief = brief
        self.path = home / LOCK_FILENAME
        self._fd: int | None = None

    def acquire(self) -> DataDirLock:
        import fcntl

        if self._fd is not None:
            return self
        with _held_guard:
            shared = _held.get(_key(self.home))
            if shared is not None:  # this process owns it already: share
                shared[1] += 1
                self._fd = shared[0]
                return self
            ensure_private_dir(self.home)
            fd = open_private(self.path, os.O_RDWR | os.O_CREAT)  # never through a link
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                pid, brief = read_holder(fd)
                os.close(fd)
                raise DataDirLocked(self.home, pid, brief=brief) from None
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}{BRIEF_MARK if self.brief else ''}\n".encode())
            _tighten_logs(self.home)
            _held[_key(self.home)] = [fd, 1]
            self._fd = fd
            return self

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        with _held_guard:
            key = _key(self.home)
            shared = _held.get(key)
            if shared is not None and shared[0] == fd:
                shared[1] -= 1
                if shared[1] > 0:
                    return
                del _held[key]
            os.close(fd)  # closing drops the flock

    @property
    def held(self) -> bool:
        return self._fd is not None

    def __enter__(self) -> DataDirLock:
        return self.acquire()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()


def mark_brief(home: Path) -> None:
    """This process, which holds the lock of `home`, from now on holds it briefly without
    serving: an owner that ends lets its clients' running commands finish (up to
    `tui.owner_server.GRACE_SECONDS`) before it lets go, and a command arriving meanwhile
    waits for it as for a brief holder, not the 3 s an answering owner gets."""
    with _held_guard:
        shared = _held.get(_key(home))
        if shared is None:
            return
        with contextlib.suppress(OSError):  # never longer than what it replaces: no truncate
            os.pwrite(shared[0], f"{os.getpid()}{BRIEF_MARK}\n".encode(), 0)


def read_holder(fd: int) -> tuple[int | None, bool]:
    """The holder's PID (None when the file does not say) and whether it is brief."""
    try:
        text = os.pread(fd, 32, 0).decode("ascii", errors="replace").strip()
    except OSError:
        return None, False
    brief = text.endswith(BRIEF_MARK)
    text = text.removesuffix(BRIEF_MARK) if brief else text
    return (int(text) if text.isdigit() else None), brief


def _tighten_logs(home: Path) -> None:
    """`conversation/` is always 0700 (README, "Data layout"): an existing folder of yours is
    tightened by the process that takes the data dir, not only by the first message written
    to it. A link there is left alone (writing a message refuses it, named)."""
    from store.data_dir_check import CONVERSATION_DIR

    folder = home / CONVERSATION_DIR
    if folder.is_dir() and not folder.is_symlink():
        with contextlib.suppress(OSError):  # another user's folder: the writes say so
            ensure_private_dir(folder, tighten_existing=True)
