"""A data dir Straylight cannot write to (a backup on a read-only mount, a directory without
write permission): one line, exit 2, instead of "unexpected error: OSError … straylight.lock".

The reading commands (`status`, `recall`, `history`, `conversations`, `facts list|history`,
`candidates list`, `hypotheses list`, `jobs list`) write nothing (issue 15 §5: no lock file
written, DuckDB read-only), so they work on such a data dir, as do `facts get|search`
without counting the read; this line is for a command that writes.
"""

from __future__ import annotations

import argparse
import errno
import os
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tui.cli_output import PROG, one_line
from tui.command_kinds import COMMANDS_THAT_WRITE, READ_ACTIONS, READS_DATA_DIR

if TYPE_CHECKING:
    from agent.settings import ResolvedSettings

_UNWRITABLE = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})


def unwritable_data_dir(error: BaseException, home: Path) -> str | None:
    """The line for an OSError saying a file in the data dir cannot be written, else None."""
    if not isinstance(error, OSError) or error.errno not in _UNWRITABLE:
        return None
    if error.filename is None or not _inside(Path(str(error.filename)), home):
        return None
    path = Path(str(error.filename))
    if (foreign := foreign_owner(path, home)) is not None:
        return foreign
    if error.errno != errno.EROFS and (mode_line := _file_mode_line(path, home)) is not None:
        return mode_line
    why = "it is on a read-only file system" if error.errno == errno.EROFS else "no permission"
    return (
        f"cannot write to data dir {home} ({why}); the reading commands (status, recall, "
        f"history, conversations, facts list) work on it, this one writes: copy it somewhere "
        f"writable and use --home COPY"
    )


def _file_mode_line(path: Path, home: Path) -> str | None:
    """A file of the data dir whose own mode shuts this user out (`chmod 000` on a daily
    log or `straylight.log`) while the data dir itself may be written: that file, named
    with the fix, and not "cannot write to data dir" (which `status` and `history` said
    of a log they could not read). None for the data dir itself or a folder in it."""
    try:
        info = path.lstat()
        folder = home.stat()
    except OSError:
        return None
    mine = os.geteuid()
    if not stat.S_ISREG(info.st_mode) or info.st_uid != mine or folder.st_uid != mine:
        return None  # (another user's file: `foreign_owner` says so)
    if folder.st_mode & 0o300 != 0o300 or info.st_mode & 0o600 == 0o600:
        return None  # the data dir itself is shut, or the file's mode is not the cause
    return (
        f"cannot read or write {one_line(str(path))} (mode {stat.S_IMODE(info.st_mode):o}): "
        f"Straylight keeps it 0600; run: chmod u+rw {one_line(str(path))}"
    )


def shut_data_dir(home: Path) -> str | None:
    """For a command that writes: the line for a data dir whose folder this user may not
    write to (`chmod 500` on a copied backup), where its files still may be. Found only
    when DuckDB could not make its `.wal` ("unexpected error: TransactionException"), after
    `ask` had logged the message. None when it may be written (or does not exist yet)."""
    if not home.is_dir() or os.access(home, os.W_OK | os.X_OK):
        return None
    try:
        read_only = bool(os.statvfs(home).f_flag & os.ST_RDONLY)
    except OSError:
        read_only = False
    code = errno.EROFS if read_only else errno.EACCES
    return unwritable_data_dir(OSError(code, os.strerror(code), str(home)), home)


def unusable_data_dir(error: BaseException, home: Path) -> str | None:
    """The line for any other OSError on the data dir or a file in it (a path that cannot
    be a folder: `--home /proc/x`), as the commands that make the data dir say it; else None."""
    if not isinstance(error, OSError) or error.filename is None or error.errno not in _NO_SUCH:
        return None
    if not _inside(Path(str(error.filename)), home):
        return None
    return f"cannot use data dir {one_line(str(home))}: {error.strerror or error}"


_NO_SUCH = frozenset({errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.ENAMETOOLONG})
"""A data dir path that cannot be a folder: it, or a folder on its way, cannot be made."""


def unreadable_data_dir(error: OSError, home: Path) -> str:
    """The line for a file of the data dir a reading command cannot open (its lock file,
    whose shared lock tells whether a writer is busy): whose it is, or why."""
    from store.private_files import UnsafeDataDir

    if isinstance(error, UnsafeDataDir):  # a link or an odd file there: its own line
        return str(error)
    path = Path(str(error.filename)) if error.filename is not None else home
    if error.errno in _UNWRITABLE and (foreign := foreign_owner(path, home)) is not None:
        return foreign
    return f"cannot read {one_line(str(path))}: {error.strerror or error}"


def foreign_owner(path: Path, home: Path) -> str | None:
    """When `path` (a file of the data dir `home`, or `home`) belongs to another user — a run
    as root (`sudo straylight`, a container) left it — the line that says so and how to take
    the data dir back; None when it is this user's (or cannot be looked at)."""
    import shlex

    try:
        owner = path.lstat().st_uid  # (the link itself, were it one: nothing is followed)
    except OSError:
        return None
    me = os.geteuid()
    if owner == me:
        return None
    return (
        f"{one_line(str(path))} belongs to {_user(owner)}, not to you ({_user(me)}): a run as "
        f"another user (sudo straylight?) left it; `sudo chown -R {_user(me)} "
        f"{shlex.quote(str(home))}` gives the data dir back"
    )


def _user(uid: int) -> str:
    """A user's name, else their number."""
    import pwd

    try:
        return pwd.getpwuid(uid).pw_name
    except (KeyError, OSError):
        return str(uid)


def _inside(path: Path, home: Path) -> bool:
    try:
        path.absolute().relative_to(home.absolute())
    except ValueError:
        return False
    return True


def data_dir_problem(home: Path) -> str | None:
    """Why the data dir may not be used (a link or an odd file where Straylight's own files
    belong, writable by others, not enterable), as one line; None when it may."""
    from store.data_dir_check import check_data_dir
    from store.private_files import UnsafeDataDir

    try:
        check_data_dir(home)
    except UnsafeDataDir as error:
        return str(error)
    except OSError as error:  # a data dir (or its conversation/) this user may not enter
        where = f" ({error.filename})" if error.filename else ""
        return f"cannot use data dir {home}: {error.strerror}{where}"
    return None


def hint_missing_home(args: argparse.Namespace, resolved: ResolvedSettings) -> None:
    """One stderr line when a read-only command looks at a data dir that does not exist:
    `no data dir at … — mistyped --home?`; exit 0 is kept (an empty store is a valid answer,
    and scripts polling `status` before the first chat must not fail)."""
    if args.command not in READS_DATA_DIR:
        return
    if args.command in COMMANDS_THAT_WRITE and getattr(args, "action", None) not in READ_ACTIONS:
        return
    if args.command == "conversations" and getattr(args, "action", None) not in (None, "list"):
        return  # rename/export/delete already say "no conversation …"
    if args.command == "hypotheses" and getattr(args, "action", None) != "list":
        return  # validate/refute/delete already say "no hypothesis #N"
    home = resolved.settings.home
    if home.exists():
        return
    where = resolved.provenance.get("home")
    if where is not None and where.source != "default":
        named = where.origin if where.source != "file" else f"home in {where.origin}"
        print(f"{PROG}: no data dir at {one_line(str(home))} — mistyped {named}?", file=sys.stderr)
    else:
        print(
            f"{PROG}: no data dir at {one_line(str(home))} yet (nothing stored so far)",
            file=sys.stderr,
        )
