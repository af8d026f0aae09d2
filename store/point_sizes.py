"""Whether every stored vector of a model has one size, known without reading the vectors.

Asking DuckDB for the size of each vector (`octet_length(embedding)`) reads every block of
the `embedding` column: ~1 s and 296 MiB of DuckDB's buffer pool at 100k points, ~3 GB at 1M,
on every open, every index upkeep and every backfill run (docs/memory-scale.md). Vectors of
another size under one model name exist only after that model was re-pulled with another
dimension. So a writing process that found every vector of `model` of `dim` floats records
it in meta (`embed.sizes_checked:<model>` = dim), and the id reads skip the size test while
that holds; `forget` (called whenever a model's dimension is recorded: the first vector, a
new dimension) makes the next read check again.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from store import meta
from store.database import Cursor, Database

SIZES_CHECKED_KEY = "embed.sizes_checked:"  # + the model's name; the value: the dimension


def checked(cur: Cursor, model: str, dim: int) -> bool:
    """True when every vector of `model` is known to have `dim` floats."""
    return meta.get_int(cur, SIZES_CHECKED_KEY + model) == dim


def forget(cur: Cursor, model: str) -> None:
    """The sizes of `model`'s vectors are no longer known (its dimension was recorded)."""
    meta.delete(cur, SIZES_CHECKED_KEY + model)


def ids_of_size(db: Database, model: str, dim: int) -> npt.NDArray[np.int64]:
    """Ids of the points with a vector of `model` of `dim` floats; checks the sizes only
    when they are not known to be all `dim` (and records it, in a writing process, when
    they are)."""
    base = "SELECT id{} FROM points WHERE embed_model = ? AND embedding IS NOT NULL"
    with db.cursor() as cur:
        if checked(cur, model, dim):
            found = cur.execute(base.format(""), [model]).fetchnumpy()["id"]
            return np.asarray(found, dtype=np.int64)
        sized = base.format(", octet_length(embedding) = ?")
        rows: list[Any] = cur.execute(sized, [4 * dim, model]).fetchall()
    db.drop_cached_blocks()  # that read cached the whole vector column
    ids = np.asarray([r[0] for r in rows if r[1]], dtype=np.int64)
    if len(ids) == len(rows) and not db.read_only:
        with db.transaction() as cur:
            meta.put(cur, SIZES_CHECKED_KEY + model, str(dim))
    return ids
