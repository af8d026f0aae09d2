"""Writing layer 3's points: a message saved through the save filter, a pinned
`/remember`, a forget, a pin, backfill's vectors, the pins and vector index after an ingest.

These functions are `MemoryStore`'s methods (`store.save(…)`), kept apart from opening and
closing the memory (`memory.memory_store`). A point and its lexical postings are written in
one transaction; its vector goes into the index after the commit, in the index thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Literal

import numpy as np

from memory.conversation_notes import SUPERSEDED_TAG
from memory.point_traits import point_traits
from memory.recall import lexical_text
from memory.secret_masking import mask_secrets
from memory.stored_text import stored_text
from store import lexical_index, point_reads
from store.database import Cursor
from store.point_records import NewPoint

if TYPE_CHECKING:
    from memory.memory_store import MemoryStore

Role = Literal["user", "assistant", "doc"]


@dataclass(frozen=True, slots=True)
class SaveResult:
    """A saved point's id, or the rule that skipped it."""

    point_id: int | None
    skipped: str | None = None


def save(
    store: MemoryStore,
    role: Role,
    content: str,
    *,
    conversation_id: str = "",
    vector: Sequence[float] | None = None,
    recalled_texts: Sequence[str] = (),
    created_at: datetime | None = None,
    channel: str = "tui",
    source: str = "turn",
    pinned: bool = False,
    use_filter: bool = True,
    context: str = "",
) -> SaveResult:
    """Save one message as a point, through the save filter unless `use_filter` is off.

    A skip is audited with its rule. `vector` may be None (embedded later by backfill).
    Returns once the point is committed; its vector goes into the index in the index
    thread, and the next search waits for that (`VectorKeeper.flush`)."""
    text = stored_text(content)
    if use_filter:
        rule = store.skip_rule(role, text, conversation_id, recalled_texts)
        if rule is not None:
            return SaveResult(None, rule)
    if not text:
        return SaveResult(None, "empty")
    usable = store.usable_vector(vector)
    new = NewPoint(
        role=role,
        content=text,
        source=source,
        conversation_id=conversation_id,
        channel=channel,
        pinned=pinned,
        created_at=created_at,
        embedding=np.asarray(usable, dtype=np.float32) if usable is not None else None,
        embed_model=store.config.embed_model if usable is not None else None,
    )
    when = new.created_at or store.db.clock.now()
    words = lexical_text(text, context=mask_secrets(context), when=when)
    traits = point_traits(text, when)
    word_rows = lexical_index.analyse(words, cache=store.lexical, traits=traits)

    with store.lexical.write_in_flight():
        point_id = store.points.add(new, words=word_rows)
        store.lexical.stage_add(point_id, word_rows.length, word_rows.counts, traits)
    if new.embedding is not None:  # a read-only copy: the caller may reuse `vector`
        store.vectors.submit_add([point_id], new.embedding[None, :])
    if source == "turn" and role in ("user", "assistant"):
        store.filter.record_saved(role, text, conversation_id)
    if pinned:
        store.pins.add(point_id, usable)
    return SaveResult(point_id)


def skip_rule(
    store: MemoryStore,
    role: Role,
    content: str,
    conversation_id: str,
    recalled_texts: Sequence[str] = (),
) -> str | None:
    """The save filter's verdict for an auto-saved message; a skip is audited."""
    if not store.config.filter_enabled or role == "doc":
        return None
    text = stored_text(content)
    rule = store.filter.skip_reason(role, text, conversation_id, recalled_texts)
    if rule is not None:
        store.points.record_skip(role, rule, conversation_id, text[:200])
    return rule


def load_dedup_memory(store: MemoryStore, conversation_id: str) -> None:
    """Give the save filter the conversation's last saves when this process has not
    seen it (`ask --conversation ID`, a chat continued after a restart), so dedup
    compares with them as it would in the process that saved them."""
    lookback = store.filter.config.dedup_lookback
    for role in ("user", "assistant"):
        if not store.filter.knows(role, conversation_id):
            texts = store.points.recent_turn_texts(
                conversation_id, role, lookback, without_tag=SUPERSEDED_TAG
            )
            store.filter.seed(role, conversation_id, texts)


def remember(
    store: MemoryStore,
    text: str,
    *,
    conversation_id: str = "",
    vector: Sequence[float] | None = None,
    channel: str = "tui",
    role: Role = "user",
) -> int:
    """A pinned point that bypasses the filter (`/remember`, `straylight remember`; a chat
    message pinned after the filter skipped it keeps its `role`)."""
    result = store.save(
        role,
        text,
        conversation_id=conversation_id,
        vector=vector,
        channel=channel,
        source="remember",
        pinned=True,
        use_filter=False,
    )
    if result.point_id is None:
        raise ValueError("nothing to remember: the text is empty")
    return result.point_id


def forget(store: MemoryStore, point_id: int, *, reason: str = "forgotten by the user") -> bool:
    """Delete a point from DuckDB, the lexical index and the vector index; audited."""

    def unindex(cur: Cursor, pid: int) -> None:
        lexical_index.remove_point(cur, pid, cache=store.lexical)

    if not store.points.delete(point_id, reason=reason, also=unindex):
        return False
    store.pins.discard(point_id)
    store.vectors.remove([point_id])
    return True


def set_pinned(store: MemoryStore, point_id: int, pinned: bool) -> bool:
    done = store.points.set_pinned(point_id, pinned, reason="by the user")
    if done and pinned:
        store.pins.add(point_id)
        store.pins.set_vectors(
            point_reads.vectors_of(store.db, [point_id], store.config.embed_model)
        )
    elif done:
        store.pins.discard(point_id)
    return done


def store_vectors(store: MemoryStore, items: Sequence[tuple[int, Sequence[float] | None]]) -> int:
    """Backfill: store vectors for existing points (and index them); unusable ones are
    left out (those points wait for the next backfill)."""
    usable = [(pid, vec) for pid, vec in items if vec is not None and store.usable_vector(vec)]
    if not usable:
        return 0
    stored = store.points.set_embeddings(
        (pid, np.asarray(vec, dtype=np.float32), store.config.embed_model) for pid, vec in usable
    )
    store.vectors.add([pid for pid, _ in usable], [vec for _, vec in usable])
    for pid, vec in usable:
        if pid in store.pins:
            store.pins.add(pid, vec)
    return stored


def after_replace(
    store: MemoryStore, removed: Sequence[int], added: Sequence[tuple[int, Sequence[float] | None]]
) -> None:
    """The vector index and the pins follow a committed `PointStore.replace_many`."""
    for point_id in removed:
        store.pins.discard(point_id)
    store.vectors.remove(list(removed))
    with_vectors = [(pid, vec) for pid, vec in added if vec is not None]
    if with_vectors:
        store.vectors.add([pid for pid, _ in with_vectors], [vec for _, vec in with_vectors])
    for point_id, vector in added:
        store.pins.add(point_id, vector)
