"""What `rows.dat`'s load asks of the database and of the file it found (store/row_file.py):
whether the file is worth making anew, and the stored fields of the points it lacks."""

from __future__ import annotations

from typing import Final

import numpy as np
import numpy.typing as npt

from store.database import Database
from store.point_values import as_utc
from store.row_file_format import GONE, MAX_RECORD, StoredRow

# At the open, a file over 4 MiB that is more than half zeroed records is made anew from
# the database (in the background, as a first build: ~10 s at 1M points), so the space of
# forgotten points comes back; below that the holes are not worth a rebuild.
COMPACT_ABOVE: Final = 4 << 20


def mostly_dead(offsets: npt.NDArray[np.uint64], stored: npt.NDArray[np.int64], end: int) -> bool:
    """Whether the file is worth making anew: over `COMPACT_ABOVE` bytes, less than half of
    them records of points the database still has (the rest zeroed by forgets and imports'
    replaces, or records of points deleted while the file did not follow)."""
    if end <= COMPACT_ABOVE:
        return False
    entries = offsets[stored[stored < len(offsets)]]
    live = int((entries[entries > GONE] & np.uint64(MAX_RECORD)).sum())
    return live * 2 < end


def rows_from(db: Database, ids: npt.NDArray[np.int64]) -> list[StoredRow]:
    """The stored fields of `ids` (ascending) from the database, in id order: one range
    query (the column's min/max skip the rest; a list of ids joins the whole table)."""
    wanted = set(ids.tolist())
    with db.cursor() as cur:
        found = cur.execute(
            "SELECT id, role, created_at, conversation_id, content FROM points "
            "WHERE id BETWEEN ? AND ? ORDER BY id",
            [int(ids[0]), int(ids[-1])],
        ).fetchall()
    return [StoredRow(int(p), r, as_utc(w), c, t) for p, r, w, c, t in found if int(p) in wanted]
