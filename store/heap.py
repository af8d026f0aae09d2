"""The C heap around the word index's big temporary arrays (glibc; elsewhere nothing).

Loading the word index from the tables and writing `lexical.idx` make and free hundreds of
MiB of numpy arrays. glibc's malloc adapts to that: each freed mapping above its threshold
raises the threshold to that size (up to 32 MiB) and the heap's trim threshold to twice it,
so the next arrays come from the heap, and what they free stays there for the session:
~25 MiB at 100k points, a quarter of a KiB a point (docs/memory-scale.md, "Seventh
session"), which `malloc_trim` does not hand back. Inside `large_blocks_mapped` every block
of 128 KiB or more is its own mapping again, returned to the OS when freed; after it, blocks
below the size a search's temporaries can reach (8 B a slot of the word index) come from the
heap, as glibc's own rule would have it, so a recall does not map and fault in fresh pages
for each of them.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters (malloc.h)
M_MMAP_THRESHOLD = -3
MAPPED_FROM = 128 * 1024  # glibc's default threshold
REUSE_CEILING = 32 * 1024 * 1024  # glibc's own ceiling for the threshold (64-bit)

_lock = threading.Lock()
_reuse_below = MAPPED_FROM  # the threshold outside a load: only ever raised
_inside = 0  # loads inside `large_blocks_mapped` now


def _libc_function(name: str) -> Callable[..., int] | None:
    try:
        return getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):  # not glibc (macOS, musl without it)
        return None


def _set_threshold(size: int) -> None:
    mallopt = _libc_function("mallopt")
    if mallopt is not None:
        mallopt(M_MMAP_THRESHOLD, size)
        mallopt(M_TRIM_THRESHOLD, 2 * size)


@contextmanager
def large_blocks_mapped(reuse_below: Callable[[], int]) -> Iterator[None]:
    """Blocks of 128 KiB or more are mapped on their own inside; once no load of any store
    of the process is inside, the threshold is the largest `reuse_below()` (bytes: a
    search's biggest temporary array) asked for so far, within 128 KiB … 32 MiB."""
    global _inside, _reuse_below
    with _lock:
        _inside += 1
        _set_threshold(MAPPED_FROM)
    try:
        yield
    finally:
        with _lock:
            _inside -= 1
            _reuse_below = max(_reuse_below, min(max(reuse_below(), MAPPED_FROM), REUSE_CEILING))
            if not _inside:
                _set_threshold(_reuse_below)


def return_freed_memory() -> None:
    """Hand the heap what was freed back to the OS (glibc's `malloc_trim`). A few ms.

    The load runs on its own thread, whose malloc arena keeps what it freed (measured when
    DuckDB still ran its queries on worker threads: ~12 MB at 10k points, more at 100k;
    docs/memory-scale.md)."""
    trim = _libc_function("malloc_trim")
    if trim is not None:
        trim(0)
