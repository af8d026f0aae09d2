"""A data dir Straylight cannot write to (a backup on a read-only mount, a directory without
write permission): one line, exit 2, instead of "unexpected error: OSError … straylight.lock".

The reading commands (`status`, `recall`, `history`, `conversations`, `facts list|history`,
`candidates list`, `hypotheses list`, `jobs list`) write nothing (issue 15 §5: no lock file
written, DuckDB read-only), so they work on such a data dir, as do `facts get|search`
without counting the read; this line is for a command that writes.
"""

from __future__ import annotations

import errno
from pathlib import Path

_UNWRITABLE = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})


def unwritable_data_dir(error: BaseException, home: Path) -> str | None:
    """The line for an OSError saying a file in the data dir cannot be written, else None."""
    if not isinstance(error, OSError) or error.errno not in _UNWRITABLE:
        return None
    if error.filename is None or not _inside(Path(str(error.filename)), home):
        return None
    why = "it is on a read-only file system" if error.errno == errno.EROFS else "no permission"
    return (
        f"cannot write to data dir {home} ({why}); the reading commands (status, recall, "
        f"history, conversations, facts list) work on it, this one writes: copy it somewhere "
        f"writable and use --home COPY"
    )


def _inside(path: Path, home: Path) -> bool:
    try:
        path.absolute().relative_to(home.absolute())
    except ValueError:
        return False
    return True
