"""Create files and folders only the owner can read: files 0600, folders 0700."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

FILE_MODE = 0o600
DIR_MODE = 0o700


def ensure_private_dir(path: Path, *, tighten_existing: bool = False) -> Path:
    """Create `path` (and missing parents) as 0700 folders.

    An existing folder keeps its mode — the data dir may be a folder the user chose and
    shares — unless `tighten_existing` says the folder is Straylight's own (`conversation/`).
    """
    if not path.is_dir():
        path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        os.chmod(path, DIR_MODE)
    elif tighten_existing and (path.stat().st_mode & 0o777) != DIR_MODE:
        os.chmod(path, DIR_MODE)
    return path


def write_private_text(path: Path, text: str) -> None:
    """Write a whole file atomically (temp file, fsync, rename) with mode 0600."""
    ensure_private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    try:
        os.write(fd, text.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def append_private_bytes(path: Path, data: bytes) -> None:
    """Append `data` in one write to a 0600 file, then fsync.

    One `write` on an O_APPEND descriptor: a crash can cut only these bytes short, never
    touch what the file held before. A write that fails (disk full: ENOSPC, or EFBIG past a
    file size limit, often after a short write) takes back the part that got in, so the file
    ends where it did, and raises OSError naming the file.
    """
    ensure_private_dir(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE)
    try:
        size = os.fstat(fd).st_size
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        except OSError as error:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
            raise OSError(error.errno, error.strerror, str(path)) from error
    finally:
        os.close(fd)
