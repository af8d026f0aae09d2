"""The file `vectors.usearch`: usearch's bytes plus a footer (length, checksum, and the
identity of the database and embedding model it was made for), written atomically
(0600 temp file, fsync, rename, fsync the folder) and checked on load; temp files of processes
that died mid-save are removed. `store.vector_index` keeps the index itself.

The checksum is a CRC-32 since issue 18 (footer `STRAYVX3`): it finds a torn or damaged file
as well as the SHA-256 before it (`STRAYVX1`, `STRAYVX2`: still read) did, at a third of the
time (1.6 GB at 1M points: ~0.5 s instead of ~1.4 s). The file is read through a read-only
mapping, checked, and handed to usearch from there: no 1.6 GB zeroed buffer and copy first.
"""

from __future__ import annotations

import contextlib
import hashlib
import mmap
import os
import struct
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from store.private_files import map_private, replace_atomically, write_all

IndexDType = Literal["f16", "f32"]

_FOOTER_MAGIC: Final = b"STRAYVX1"  # length, checksum
_FOOTER: Final = struct.Struct("<8sQ32s")
_IDENTITY_MAGIC: Final = b"STRAYVX2"  # length, checksum, identity
_IDENTITY_FOOTER: Final = struct.Struct("<8sQ32s32s")
_CRC_MAGIC: Final = b"STRAYVX3"  # length, CRC-32, identity (written since issue 18)
_CRC_FOOTER: Final = struct.Struct("<8sQI32s")
INDEX_FILENAME: Final = "vectors.usearch"
NO_IDENTITY: Final = bytes(32)
# dtype -> the name of usearch's ScalarKind (usearch itself is imported when a file is read)
SCALAR_KINDS: Final[dict[str, str]] = {"f16": "F16", "f32": "F32"}


class IndexFileError(Exception):
    """The index file cannot be used; the message says why."""


def index_identity(database_id: str, embed_model: str) -> bytes:
    """The 32 bytes a file carries to say whose vectors it holds: the database's random id
    (meta `database.id`) and the embedding model. A file copied from another data dir, or
    made for another model, carries other bytes and is rebuilt."""
    return hashlib.sha256(f"{database_id}\0{embed_model}".encode()).digest()


def _encode(payload: bytes | bytearray, identity: bytes) -> bytes:
    return _CRC_FOOTER.pack(_CRC_MAGIC, len(payload), zlib.crc32(payload), identity)


def read_index_payload(path: Path) -> bytearray:
    """The usearch bytes of a file written by `VectorIndex.save`; IndexFileError if unusable."""
    return read_index_file(path)[0]


def read_index_file(path: Path) -> tuple[bytearray, bytes]:
    """The usearch bytes of a file written by `VectorIndex.save` (a copy) and the identity it
    carries (`NO_IDENTITY` for a file written before identities); IndexFileError if unusable."""
    with mapped_index_file(path) as (payload, identity):
        return bytearray(payload), identity


@contextlib.contextmanager
def mapped_index_file(path: Path) -> Iterator[tuple[memoryview, bytes]]:
    """The usearch bytes of a file written by `VectorIndex.save`, checked, as a read-only
    view of the file for the block's time, and the identity it carries; IndexFileError if
    unusable. The view must not outlive the block. A check started ahead for this file
    (`store.vector_index_ahead`) is used when it is of the file still at `path`."""
    with checked_index_file(path) as checked:
        yield checked.payload, checked.identity


@contextlib.contextmanager
def checked_index_file(path: Path) -> Iterator[CheckedIndexFile]:
    """`mapped_index_file`'s checked mapping, closed after the block."""
    checked = take_checked_index_file(path)
    try:
        yield checked
    finally:
        checked.close()


def take_checked_index_file(path: Path) -> CheckedIndexFile:
    """The checked mapping of the index file at `path` (taken from a check started ahead if
    any), for the caller to close; IndexFileError or OSError if unusable."""
    from store.vector_index_ahead import take_check

    return take_check(path) or check_index_file(path)


@dataclass
class CheckedIndexFile:
    """A read-only mapping of an index file whose footer and checksum held: `payload` is
    usearch's bytes, `identity` the footer's. `close` when done (views must be gone)."""

    mapped: mmap.mmap
    whole: memoryview
    payload: memoryview
    identity: bytes

    def close(self) -> None:
        self.payload.release()
        self.whole.release()
        with contextlib.suppress(BufferError):  # a view still held: unmapped when it is freed
            self.mapped.close()


def check_index_file(path: Path) -> CheckedIndexFile:
    """Map `path` and check its footer and checksum; IndexFileError if unusable (OSError
    subclasses for a link, a missing or unreadable file)."""
    mapped = map_private(path, _too_small, IndexFileError("not a regular file"))
    whole = memoryview(mapped)
    payload: memoryview | None = None
    try:
        length, check, identity = _footer(whole)
        payload = whole[:length]
        if not check(payload):
            raise IndexFileError("checksum mismatch: the file is corrupt")
        return CheckedIndexFile(mapped, whole, payload, identity)
    except BaseException:
        if payload is not None:
            payload.release()
        whole.release()
        with contextlib.suppress(BufferError):
            mapped.close()
        raise


def _too_small(size: int) -> IndexFileError | None:
    if size == 0:
        return IndexFileError("empty file")
    if size < _FOOTER.size:
        return IndexFileError(f"truncated or not an index ({size} bytes)")
    return None


def _footer(whole: memoryview) -> tuple[int, Callable[[memoryview], bool], bytes]:
    """(payload length, its checksum test, identity) from the footer of a mapped file."""
    size = len(whole)
    if size >= _CRC_FOOTER.size:
        magic, length, crc, identity = _CRC_FOOTER.unpack(whole[size - _CRC_FOOTER.size :])
        if magic == _CRC_MAGIC:
            _check_length(length, size - _CRC_FOOTER.size)
            return length, lambda payload: zlib.crc32(payload) == crc, identity
    identity, footer = NO_IDENTITY, _FOOTER.size
    magic, length, digest = _FOOTER.unpack(whole[size - footer :])
    if magic != _FOOTER_MAGIC and size >= _IDENTITY_FOOTER.size:
        footer = _IDENTITY_FOOTER.size
        magic, length, digest, identity = _IDENTITY_FOOTER.unpack(whole[size - footer :])
        magic = _FOOTER_MAGIC if magic == _IDENTITY_MAGIC else magic
    if magic != _FOOTER_MAGIC:
        raise IndexFileError("no checksum footer: truncated, or not written by Straylight")
    _check_length(length, size - footer)
    return length, lambda payload: hashlib.sha256(payload).digest() == digest, identity


def _check_length(length: int, expected: int) -> None:
    if length != expected:
        raise IndexFileError(f"length mismatch: footer says {length}, file has {expected}")


def file_vector_count(payload: bytes | bytearray | memoryview) -> int | None:
    """How many vectors the usearch bytes hold, by their header (nothing loaded); None when
    the header cannot be read. For `status` to say what a file it will not use holds."""
    from usearch.index import Index

    try:
        meta = Index.metadata(payload)
    except (ValueError, RuntimeError):
        return None
    count = meta.get("count_present") if meta else None
    return int(count) if isinstance(count, int) else None


def check_header(payload: bytes | bytearray | memoryview, ndim: int, dtype: IndexDType) -> None:
    from usearch.compiled import MetricKind
    from usearch.index import Index

    try:
        meta = Index.metadata(payload)
    except (ValueError, RuntimeError) as exc:
        raise IndexFileError(f"not a usearch index: {exc}") from exc
    if meta is None:
        raise IndexFileError("not a usearch index")
    if meta["dimensions"] != ndim:
        raise IndexFileError(f"ndim {meta['dimensions']} in file, expected {ndim}")
    if meta["kind_metric"] != MetricKind.Cos:
        raise IndexFileError(f"metric {meta['kind_metric'].name} in file, expected Cos")
    if meta["kind_scalar"].name != SCALAR_KINDS[dtype]:
        raise IndexFileError(f"dtype {meta['kind_scalar'].name} in file, expected {dtype}")


def write_atomically(path: Path, payload: bytes | bytearray, identity: bytes = NO_IDENTITY) -> None:
    """Write payload + footer (with `identity`) whole or not at all (a 0600 temp file, fsync,
    rename over `path`, fsync the dir: `store.private_files.replace_atomically`)."""

    def write(fd: int) -> None:
        write_all(fd, payload)
        write_all(fd, _encode(payload, identity))

    replace_atomically(path, write)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_temp_files(path: Path) -> list[Path]:
    """Delete `<name>.tmp-<pid>` files left by processes that died mid-save."""
    removed: list[Path] = []
    for tmp in path.parent.glob(f"{path.name}.tmp-*"):
        pid_text = tmp.name.rsplit("-", 1)[-1]
        if not pid_text.isdigit() or int(pid_text) == os.getpid() or _pid_alive(int(pid_text)):
            continue
        with contextlib.suppress(OSError):
            tmp.unlink()
            removed.append(tmp)
    return removed
