"""Before a command uses a data dir: refuse one that other users can write to, and links or
odd files where Straylight's own files belong (and anything but a socket at `straylight.sock`).

Opening every file with `O_NOFOLLOW` (`store.private_files.open_private`) already keeps
Straylight from reading or writing through a link; this check runs first so the user gets
one line naming the offending file (exit 2) instead of a failure halfway through a turn.

Writable by others (`chmod 1777`, or a group with other members): refused, not warned
about. Anyone who can write to the folder can replace `longterm.md` (it goes into every
system prompt) or the database, and no open flag stops a replaced file. A group-writable
folder whose group is the user's own private group (umask 002 on many Linux systems) is
fine. The data dir itself may be a symbolic link (the user chose it, e.g. `--home`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from store.daily_log import DAY_FILE_RE
from store.private_files import (
    NotASocket,
    NotRegularFile,
    SymlinkRefused,
    UnsafeDataDir,
    lstat_unlinked,
    open_private,
)

# The names Straylight keeps in a data dir (their owners: data_dir_lock, longterm_file,
# database, vector_upkeep, lexical_file, the log setup, daily_log_index). Files only:
# `conversation/` is checked apart.
OWN_FILES = (
    "straylight.lock",
    "longterm.md",
    "straylight.duckdb",
    "straylight.duckdb.wal",
    "vectors.usearch",
    "lexical.idx",
    "straylight.log",
    "straylight.log.1",
    "straylight.log.2",
    "straylight.log.3",
    "conversation-index.json",  # store/daily_log_index.py
    "rows.dat",  # store/row_file.py
    "rows.idx",  # store/row_file_snapshot.py
)
CONVERSATION_DIR = "conversation"
OWNER_SOCKET = "straylight.sock"  # store/owner_socket.py: a socket or nothing


class WritableByOthers(UnsafeDataDir):
    """The data dir, `conversation/` or `longterm.md` can be written by other users."""

    def __init__(self, path: Path, mode: int) -> None:
        super().__init__(errno.EPERM, "is writable by other users", path)
        self.mode = mode

    def __str__(self) -> str:
        return (
            f"{self.path} is writable by other users (mode {self.mode:o}), who could replace "
            f"what Straylight reads; run: chmod go-w {self.path}"
        )


class OwnedByAnother(UnsafeDataDir):
    """The data dir, `conversation/` or `longterm.md` belongs to another user, who can change
    its mode and contents whenever they like."""

    def __init__(self, path: Path, uid: int) -> None:
        super().__init__(errno.EPERM, "belongs to another user", path)
        self.uid = uid

    def __str__(self) -> str:
        return (
            f"{self.path} belongs to another user (uid {self.uid}), who could replace what "
            f"Straylight reads; use a data dir of your own (--home)"
        )


class NotAFolder(UnsafeDataDir):
    """Something other than a folder where `conversation/` belongs (a file, a FIFO)."""

    def __init__(self, path: Path) -> None:
        super().__init__(errno.ENOTDIR, "is not a folder", path)

    def __str__(self) -> str:
        return f"{self.path} is not a folder (Straylight keeps its daily logs there); move it aside"


def check_data_dir(home: Path) -> None:
    """Raise an `UnsafeDataDir` (one line) if `home` may not be used; a missing one is fine."""
    try:
        info = home.stat()  # the data dir itself may be a link
    except (FileNotFoundError, NotADirectoryError):
        return
    if not stat.S_ISDIR(info.st_mode):
        return  # the command names that problem itself
    _check_mode(home, info)
    for name in OWN_FILES:
        _check_file(home / name)
    _check_not_writable_by_others(home / "longterm.md")
    check_socket_path(home / OWNER_SOCKET)
    conversation = home / CONVERSATION_DIR
    found = lstat_unlinked(conversation)
    if found is None:
        return
    if not stat.S_ISDIR(found.st_mode):
        raise NotAFolder(conversation)
    _check_mode(conversation, found)
    with os.scandir(conversation) as entries:  # Straylight's own folder: no link at all
        for entry in entries:  # (day files and their temp files alike)
            if entry.is_symlink():
                raise SymlinkRefused(Path(entry.path))
            if DAY_FILE_RE.match(entry.name) and not entry.is_file(follow_symlinks=False):
                raise NotRegularFile(Path(entry.path))  # a folder or FIFO named as a day


def _check_file(path: Path) -> None:
    info = lstat_unlinked(path)
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise NotRegularFile(path)


def _check_not_writable_by_others(path: Path) -> None:
    """`longterm.md` goes into every prompt, and it is the one file people make by hand (a
    copy, an editor under umask 000): one other users can write is refused like a folder
    they can write to. Straylight's own files are made 0600."""
    info = lstat_unlinked(path)
    if info is None:
        return
    _check_owner(path, info)
    if stat.S_IMODE(info.st_mode) & stat.S_IWOTH:
        raise WritableByOthers(path, stat.S_IMODE(info.st_mode))


def check_socket_path(path: Path) -> None:
    """Raise `SymlinkRefused` / `NotASocket` unless `path` is missing or a socket: a file
    planted where the owner's socket belongs is hostile input, refused and left alone
    rather than silently replaced by the next owner."""
    info = lstat_unlinked(path)
    if info is not None and not stat.S_ISSOCK(info.st_mode):
        raise NotASocket(path)


def owned_by_another(info: os.stat_result) -> bool:
    """Whether a file or folder is neither yours nor root's (a data dir under /var made by
    an admin for you is root's). Root itself is refused nothing: a container run as root
    over a bind-mounted data dir, a backup extracted with its owners kept (the reading
    commands must work on it). config.toml is judged the same way (agent/settings.py)."""
    me = os.geteuid()
    return me != 0 and info.st_uid not in (me, 0)


def _check_owner(path: Path, info: os.stat_result) -> None:
    if owned_by_another(info):
        raise OwnedByAnother(path, info.st_uid)


def _check_mode(path: Path, info: os.stat_result) -> None:
    _check_owner(path, info)
    mode = stat.S_IMODE(info.st_mode)
    if mode & stat.S_IWOTH or (mode & stat.S_IWGRP and not _private_group(info.st_gid)):
        raise WritableByOthers(path, mode)


def _private_group(gid: int) -> bool:
    """The user's own group, holding nobody else (the user-private-group scheme)."""
    import grp
    import pwd

    try:
        me = pwd.getpwuid(os.getuid()).pw_name
        group = grp.getgrgid(gid)
    except KeyError:
        return False
    return gid == os.getgid() and group.gr_name == me and set(group.gr_mem) <= {me}


def check_not_in_use(home: Path) -> None:
    """Raise `DataDirLocked` when another process owns `home`, without writing the lock file
    (a reading command leaves the data dir as it was): a shared lock is tried and let go."""
    with shared_hold(home):
        pass


@contextlib.contextmanager
def shared_hold(home: Path) -> Iterator[None]:
    """Hold a shared lock on `home`'s lock file for a reading command, without writing it:
    readers run side by side, a writer (`DataDirLock`, exclusive) waits for them, and a
    reader meeting a writer gets `DataDirLocked`. Nothing to hold when this process owns the
    data dir already, or when there is no lock file yet (it is not created: that would write)."""
    import fcntl

    from store.data_dir_lock import LOCK_FILENAME, DataDirLocked, held_here, read_holder

    if held_here(home):
        yield
        return
    try:
        fd = open_private(home / LOCK_FILENAME, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            pid, brief = read_holder(fd)
            raise DataDirLocked(home, pid, brief=brief) from None
        yield
    finally:
        os.close(fd)  # closing drops the shared lock
