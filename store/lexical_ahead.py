"""The check of `lexical.idx`, started before the open reaches it (issue 18; the registry:
`store.file_checks_ahead`).

The word index's open maps `lexical.idx` and checks every section's CRC (~0.4 s at 1M
points) and the arrays' shapes before it compares the file with the tables. All but that
comparison needs nothing from the database, so `start_check` runs it in a thread while the
opener imports its modules and opens the database; `store.lexical_file.read_file` takes
the result and checks whose file it is then. Light on purpose: `store.lexical_file` (numpy)
is imported in the check's own thread.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from store import file_checks_ahead

LEXICAL_FILENAME: Final = "lexical.idx"


def start_check(path: Path) -> None:
    """Map and check the file at `path` in a thread (nothing when it is missing or a check
    of it is pending)."""

    def run() -> object:
        from store.lexical_file import read_unbound

        return read_unbound(path)

    file_checks_ahead.start(path, run, lambda _arrays: None)
