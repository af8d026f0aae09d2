"""Create files and folders only the owner can read: files 0600, folders 0700; and open
them without following symbolic links.

Anyone who can write to the data dir could otherwise point `straylight.lock` at
`~/important.txt` or `longterm.md` at `/etc/passwd`: every file in the data dir is opened with
`O_NOFOLLOW` (`open_private`), Straylight's own folders are checked with `lstat`, and a link
is refused with `SymlinkRefused`, one line naming it. The data dir itself may be a link (the
user's own choice, e.g. `--home` pointing at one); what is inside it may not.
"""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

FILE_MODE = 0o600
DIR_MODE = 0o700
_NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC


class UnsafeDataDir(OSError):
    """A data dir (or a file in it) Straylight refuses to use; `str()` is the user's one line
    (the CLI exits 2)."""

    def __init__(self, code: int, problem: str, path: Path) -> None:
        super().__init__(code, problem, str(path))
        self.path = path


class SymlinkRefused(UnsafeDataDir):
    """A file or folder in the data dir is a symbolic link."""

    def __init__(self, path: Path) -> None:
        super().__init__(errno.ELOOP, "is a symbolic link", path)

    def __str__(self) -> str:
        return (
            f"{self.path} is a symbolic link; Straylight does not follow links inside its"
            " data dir — remove it or put the file itself there"
        )


class NotRegularFile(UnsafeDataDir):
    """A data-dir file that is a FIFO, a device or a folder where a file belongs."""

    def __init__(self, path: Path) -> None:
        super().__init__(errno.EINVAL, "is not a regular file", path)

    def __str__(self) -> str:
        return f"{self.path} is not a regular file; move it aside"


class NotASocket(UnsafeDataDir):
    """Something other than a socket where the owner's socket belongs (`straylight.sock`):
    a regular file, a folder, a FIFO. Refused like a planted link, never replaced."""

    def __init__(self, path: Path) -> None:
        super().__init__(errno.EINVAL, "is not a socket", path)

    def __str__(self) -> str:
        return (
            f"{self.path} is not a socket (Straylight's owner socket belongs there); move it aside"
        )


def open_private(path: Path, flags: int, mode: int = FILE_MODE) -> int:
    """`os.open` that never follows a link in the last component (`SymlinkRefused`)."""
    try:
        return os.open(path, flags | _NOFOLLOW, mode)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise SymlinkRefused(path) from None
        raise


def map_private(
    path: Path, too_small: Callable[[int], Exception | None], not_regular: Exception
) -> mmap.mmap:
    """A read-only `mmap` of a derived file, opened without following a link
    (`SymlinkRefused`): `not_regular` is raised for anything but a regular file, and
    `too_small(size)`'s error when it returns one. The descriptor is closed on return; the
    mapping lives as long as the views of it."""
    fd = open_private(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise not_regular
        error = too_small(info.st_size)
        if error is not None:
            raise error
        return mmap.mmap(fd, info.st_size, prot=mmap.PROT_READ)
    finally:
        os.close(fd)


def lstat_unlinked(path: Path) -> os.stat_result | None:
    """`lstat` of `path` (None when it is missing); `SymlinkRefused` if it is a link."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        raise SymlinkRefused(path)
    return info


def refuse_symlink(path: Path) -> None:
    """Raise `SymlinkRefused` if `path` is a symbolic link (checked with `lstat`)."""
    lstat_unlinked(path)


def read_private_bytes(path: Path) -> bytes:
    """The whole file, opened without following a link and only if it is a regular file
    (a FIFO would block the reader forever). FileNotFoundError when it is missing."""
    fd = open_private(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFile(path)
        chunks: list[bytes] = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def keep_new_files_private() -> None:
    """Take the group and other bits out of this process's umask, for the rest of its life.

    DuckDB makes its write-ahead log (`straylight.duckdb.wal`) anew, by path, at the first
    write after every checkpoint, from whichever thread writes: only the umask reaches that
    file, which otherwise came out 0644 with the usual umask 022. A stricter umask stays as
    it is, and the umask is never 0 in between (a file another thread made then would be
    0666)."""
    old = os.umask(0o077)
    os.umask(old | 0o077)


def ensure_private_dir(path: Path, *, tighten_existing: bool = False) -> Path:
    """Create `path` (and missing parents) as 0700 folders.

    An existing folder keeps its mode — the data dir may be a folder the user chose and
    shares — unless `tighten_existing` says the folder is Straylight's own (`conversation/`);
    such a folder must not be a symbolic link (`SymlinkRefused`): its target would be
    chmodded and filled with the logs.
    """
    if tighten_existing:
        refuse_symlink(path)
    if not path.is_dir():
        # `mkdir(parents=True)` makes the parents by the umask (0755): each one made here
        # is 0700 too, so `--home /tmp/x/a/b` leaves no readable folder on the way
        missing = [path]
        while not missing[-1].parent.exists() and missing[-1].parent != missing[-1]:
            missing.append(missing[-1].parent)
        for folder in reversed(missing):
            folder.mkdir(mode=DIR_MODE, exist_ok=True)
            os.chmod(folder, DIR_MODE)
    elif tighten_existing and (path.stat().st_mode & 0o777) != DIR_MODE:
        os.chmod(path, DIR_MODE)
    return path


def write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    """Write all of `data` to `fd` (a `write` may take only part of it)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def fsync_dir(folder: Path) -> None:
    """Make a rename or unlink in `folder` durable: fsync the folder itself."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_private_text(path: Path, text: str) -> None:
    """`write_private_bytes` of `text` in UTF-8."""
    write_private_bytes(path, text.encode("utf-8"))


def write_private_bytes(path: Path, data: bytes) -> None:
    """Write a whole file atomically with mode 0600: into a temp file of a unique name
    (`mkstemp` in the same folder, `.NAME.XXXXXXXX.tmp`, created exclusively, so nothing
    planted at any fixed name — a link, a FIFO, a folder, a hard link — is ever opened),
    fsync, rename over `path`. The file is not followed if it is a link (`SymlinkRefused`). A
    write that fails (a full disk) raises OSError, leaves the file as it was and removes the
    temp file."""
    ensure_private_dir(path.parent)
    refuse_symlink(path)
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        try:  # all of it: on a full disk one `write` takes a part and reports no error
            os.fchmod(fd, FILE_MODE)  # (mkstemp makes it 0600; said here, not assumed)
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:  # (ENOSPC, EFBIG, a signal): `path` keeps what it held
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def append_private_bytes(path: Path, data: bytes) -> None:
    """Append `data` in one write to a 0600 file, then fsync.

    One `write` on an O_APPEND descriptor: a crash can cut only these bytes short, never
    touch what the file held before. A write that fails (disk full: ENOSPC, or EFBIG past a
    file size limit, often after a short write) takes back the part that got in, so the file
    ends where it did, and raises OSError naming the file.
    """
    ensure_private_dir(path.parent)
    fd = open_private(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFile(path)
        size = os.fstat(fd).st_size
        try:
            write_all(fd, data)
            os.fsync(fd)
        except OSError as error:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
            raise OSError(error.errno, error.strerror, str(path)) from error
    finally:
        os.close(fd)


def replace_atomically(path: Path, write: Callable[[int], None]) -> None:
    """Make `path` what `write(fd)` writes, whole or not at all: into a 0600 temp file
    `<name>.tmp-<pid>` (not followed if it is a link), fsync, rename over `path`, fsync the
    folder. The temp file is removed if anything fails."""
    ensure_private_dir(path.parent)
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    try:
        fd = open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        try:
            os.fchmod(fd, FILE_MODE)
            write(fd)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    fsync_dir(path.parent)
