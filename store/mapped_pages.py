"""Handing back the resident pages of a read-only file mapping after a one-off read.

Checking `lexical.idx` when it is mapped (every section's CRC and shape) reads every page of
the file through the mapping, so the whole file counted in the process's RSS for the session
(47 MiB at 100k points, ~465 MiB at 1M) though a recall touches only its query words' lists.
Those are clean pages of a file: `MADV_DONTNEED` takes them out of this process's page
tables (the kernel's page cache keeps them as long as it likes), and the next touch maps them
again — from the page cache (a minor fault) or from the file. Same bytes, nothing copied.
Where `madvise` or the constant is missing (not Linux), nothing happens.
"""

from __future__ import annotations

import logging
import mmap
from typing import Any

log = logging.getLogger(__name__)


def mapping_of(view: Any) -> mmap.mmap | None:
    """The `mmap` behind a numpy array or memoryview made from one (None if there is none):
    follows numpy's `.base` and memoryview's `.obj`."""
    seen = 0
    while view is not None and seen < 16:  # a chain of views is short; never loop forever
        if isinstance(view, mmap.mmap):
            return view
        view = getattr(view, "base", None) if hasattr(view, "base") else getattr(view, "obj", None)
        seen += 1
    return None


def release_pages(mapped: mmap.mmap | None) -> bool:
    """Drop `mapped`'s resident pages from this process (read-only file mappings only: a
    private mapping's written pages would be lost). True when the kernel was asked."""
    advice = getattr(mmap, "MADV_DONTNEED", None)
    if mapped is None or advice is None or not hasattr(mapped, "madvise") or mapped.closed:
        return False
    try:
        mapped.madvise(advice)
    except (OSError, ValueError) as problem:  # refused: the pages just stay resident
        log.info("the mapped pages stay resident: %s", problem)
        return False
    return True
