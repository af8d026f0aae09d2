"""Which embedding space a data dir's vectors live in, and what a change of model or of
dimension does.

`meta` holds the model `vectors.usearch` was made for (`embed.model`), the dimension of its
vectors (`embed.dim`) and a random id of the database (`database.id`, made once). The index
file carries the id and the model (`store.vector_index_file.index_identity`), so a file from
another data dir or for another model is rebuilt from the database, never trusted.

A changed `STRAYLIGHT_EMBED_MODEL` deletes nothing: the stored vectors keep their model's
name. A writing process records the new model; its points are embedded by `backfill` while
recall uses words, and the index is rebuilt from the vectors the new model already made
(none after a mistyped name, whose embedding requests fail: switching back finds the old
vectors and the old index as they were). A reading process (`status`, `recall`) only looks.
A new dimension under the same model name (a model re-pulled) is taken up by `backfill`
when the server consistently returns it (`MemoryStore.change_dimension`).

`nomic-embed-text` and `nomic-embed-text:latest` are one model (`memory.model_names`): a
setting spelled the other way than the data dir recorded is read as the recorded spelling
(`stored_spelling`), so it changes nothing — no re-embedding, no index rebuild.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass

from memory.model_names import same_model
from store import meta, point_reads, point_sizes
from store.database import Database
from store.vector_index_file import index_identity

log = logging.getLogger("straylight.memory")

META_EMBED_MODEL = "embed.model"
META_EMBED_DIM = "embed.dim"
META_DATABASE_ID = "database.id"


@dataclass(frozen=True, slots=True)
class EmbeddingSpace:
    """The configured model, the dimension of its vectors here (None before the first), the
    identity the index file must carry (None: a read-only open of a database without an id
    yet), and the model the index was last made for when that was another."""

    model: str
    dim: int | None
    identity: bytes | None
    changed_from: str | None = None


def stored_spelling(db: Database, model: str) -> str:
    """`model` as this data dir recorded it when the two spellings name one model
    (`x` / `x:latest`), else `model`: the points' vectors are filed under that spelling."""
    with db.cursor() as cur:
        stored = meta.get(cur, META_EMBED_MODEL)
    return stored if stored is not None and same_model(stored, model) else model


def resolve_space(db: Database, model: str, *, read_only: bool) -> EmbeddingSpace:
    """The space of `model` in this database; a writing process records a model change and
    the database's id (made once)."""
    with db.cursor() as cur:
        stored_model = meta.get(cur, META_EMBED_MODEL)
        dim = meta.get_int(cur, META_EMBED_DIM)
        database_id = meta.get(cur, META_DATABASE_ID)
    changed_from = None
    if stored_model is not None and stored_model != model:
        changed_from = stored_model
        dim = point_reads.vector_dim(db, model)  # what this model made here before, if any
        log.info("embedding model changed from %s to %s (vectors: %s)", stored_model, model, dim)
    if not read_only and (database_id is None or changed_from is not None):
        with db.transaction() as cur:
            if database_id is None:
                database_id = uuid.uuid4().hex
                meta.put(cur, META_DATABASE_ID, database_id)
            if changed_from is not None:
                meta.put(cur, META_EMBED_MODEL, model)
                if dim is None:
                    meta.delete(cur, META_EMBED_DIM)
                else:
                    meta.put(cur, META_EMBED_DIM, str(dim))
    identity = index_identity(database_id, model) if database_id else None
    return EmbeddingSpace(model, dim, identity, changed_from)


def record_space(db: Database, model: str, dim: int) -> None:
    """The first vector of `model` (or its new dimension) decides the index's space."""
    with db.transaction() as cur:
        meta.put(cur, META_EMBED_MODEL, model)
        meta.put(cur, META_EMBED_DIM, str(dim))
        point_sizes.forget(cur, model)  # vectors of another size may be left: check again
