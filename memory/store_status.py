"""The memory part of `straylight status`: points, skips, the vector index's state, the
embedding, the RAM estimate and headroom, and the two counters it reports.

These functions are `MemoryStore`'s methods (`store.status()`), kept apart from opening the
memory and writing points. The counters (embedding requests, recall failures) are bumped by
the turn, never by a reading command. A data dir with no database yet answers with
`memory.deferred_store.empty_status`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from memory.headroom import headroom, ram_estimate_bytes
from store import meta, point_reads
from store.vector_upkeep import INDEX_FILENAME

if TYPE_CHECKING:
    from memory.memory_store import MemoryStore

META_EMBED_REQUESTS = "embed.requests"
META_RECALL_FAILURES = "recall.failures"


READING_COMMAND: ContextVar[bool] = ContextVar("straylight_reading_command", default=False)
"""Set while a reading command (`recall`, `status`, …) runs on a memory another process
opened for writing: forwarded to the chat, or run by `straylight mcp` as the owner. Such a
command leaves the counters as they were, as it does on a read-only store of its own."""


@contextlib.contextmanager
def reading_command(reads_only: bool) -> Iterator[None]:
    """Within: the counters are left alone when `reads_only`."""
    token = READING_COMMAND.set(reads_only)
    try:
        yield
    finally:
        READING_COMMAND.reset(token)


def _counts(store: MemoryStore) -> bool:
    return not store.read_only and not READING_COMMAND.get()


def count_embed_requests(store: MemoryStore, n: int = 1) -> None:
    if _counts(store):  # a reading command leaves the counters as they were
        _bump_meta(store, META_EMBED_REQUESTS, n)


def count_recall_failure(store: MemoryStore) -> None:
    if _counts(store):
        _bump_meta(store, META_RECALL_FAILURES, 1)


def index_state(store: MemoryStore) -> tuple[str, int]:
    """(state, size): a reading command reports a file it may not rebuild (another data
    dir's, another model's, damaged) as `stale`; a writing one is rebuilding it."""
    found = store.vectors.state()
    if found is None:
        return ("in_sync" if store.embed_dim is None else "missing"), 0
    state, size = found
    if state == "stale" and not store.read_only:
        return "missing", size
    return state, size


def index_note(store: MemoryStore) -> str | None:
    """For the plain `status` line of a stale index (a reading command): what the file
    is, what it holds and what the next writing command rebuilds it from; None when
    the index is not stale. Not part of `status --json` (its `index` fields stay)."""
    detail = store.vectors.stale_detail()
    if detail is None:
        return None
    reason, held = detail
    dim = store.embed_dim
    stored = len(point_reads.vector_ids(store.db, store.config.embed_model, dim)) if dim else 0
    what = (
        f"{INDEX_FILENAME} is not usable ({reason})"
        if held is None
        else f"{INDEX_FILENAME} holds {_vectors(held)}: {reason}"
    )
    return (
        f"not used: {what}; recall searches the stored vectors exactly, and the next "
        f"writing command rebuilds it from the database's {_vectors(stored)}"
    )


def embedding_status(store: MemoryStore) -> dict[str, Any]:
    """`status`'s `embedding`: the model, its dimension here, the model the index was
    made for when that was another, and how many points wait for (re-)embedding."""
    return {
        "model": store.config.embed_model,
        "dim": store.embed_dim,
        "changed_from": store.space.changed_from,
        "to_embed": len(store.ids_to_embed()),
    }


def status(store: MemoryStore) -> dict[str, Any]:
    """The memory part of `straylight status --json` (see the README for every field)."""
    counts = store.points.counts()
    embedding = store.embedding_status()
    # what waits for backfill: no vector, or one of another embedding model (a model
    # change left the old vectors in place; "0 without vector" beside "1 point waits
    # for backfill" contradicted itself)
    counts["without_vector"] = embedding["to_embed"]
    state, size = store.index_state()
    sizes = point_reads.stored_sizes(store.db)
    ram = ram_estimate_bytes(
        vectors=size,
        dim=store.embed_dim or 0,
        lexical_docs=sizes.lexical_docs,
        lexical_postings=sizes.lexical_postings,
    )
    return {
        "points": counts,
        "skips": store.points.skip_counts(),
        "embed_requests": int(_meta(store, META_EMBED_REQUESTS) or 0),
        "recall_failures": int(_meta(store, META_RECALL_FAILURES) or 0),
        "index": {"state": state, "size": size},
        "embedding": embedding,
        "ram_estimate_bytes": ram,
        "headroom": headroom(ram, store.config.ram_warn_bytes, store.config.ram_crit_bytes),
    }


def _vectors(count: int) -> str:
    return f"{count} vector" if count == 1 else f"{count} vectors"


def _meta(store: MemoryStore, key: str) -> str | None:
    with store.db.cursor() as cur:
        return meta.get(cur, key)


def _bump_meta(store: MemoryStore, key: str, by: int) -> None:
    with store.db.transaction() as cur:
        meta.bump(cur, key, by)
