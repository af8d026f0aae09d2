"""Ingest: a document's entries as pinned `doc` points, planned first, then applied.

`plan_ingest` compares the entries `(key, content)` with the doc points stored under a
source prefix (new, changed, unchanged, gone); the caller embeds what the plan says needs a
vector, and `apply_ingest` writes it (changed entries are a delete plus an insert), audited as
one 'ingest' event, all in one database transaction.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from memory.point_traits import point_traits
from memory.recall import lexical_text
from memory.stored_text import stored_text
from store import lexical_index
from store.database import Cursor
from store.point_store import NewPoint, content_hash

if TYPE_CHECKING:
    from memory.memory_store import MemoryStore


@dataclass(slots=True)
class IngestPlan:
    """What an ingest must do: new and changed entries need a vector each."""

    prefix: str
    add: list[tuple[str, str]] = field(default_factory=list)  # (source, text)
    update: list[tuple[str, str, int]] = field(default_factory=list)  # (source, text, old id)
    unchanged: int = 0
    remove: list[int] = field(default_factory=list)

    def texts_to_embed(self) -> list[tuple[str, str]]:
        return self.add + [(source, text) for source, text, _old in self.update]


@dataclass(frozen=True, slots=True)
class IngestReport:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    embed_requests: int = 0
    without_vector: int = 0
    """Added or updated sections stored without a vector (a failed batch): they wait for
    backfill. Not in the JSON, whose fields are the issue's contract; the CLI notes it."""

    def to_json(self) -> dict[str, int]:
        data = asdict(self)
        del data["without_vector"]
        return data

    def summary(self) -> str:
        """What `import-doc` and `/import` say: "N added, … (M embedding requests)"."""
        return (
            f"{self.added} added, {self.updated} updated, {self.unchanged} unchanged, "
            f"{self.removed} removed ({self.embed_requests} embedding "
            f"request{'' if self.embed_requests == 1 else 's'})"
        )

    def vector_note(self, problem: str | None) -> str | None:
        """The note on sections stored without a vector (`problem`: why the embedding
        failed); None when every section has one."""
        if not self.without_vector:
            return None
        why = problem or "Ollama was not reachable"
        return (
            f"{self.without_vector} section{'' if self.without_vector == 1 else 's'} stored "
            f"without a vector ({why}); "
            "found by their words until backfill"
        )


def plan_ingest(
    store: MemoryStore, source_prefix: str, entries: Sequence[tuple[str, str]]
) -> IngestPlan:
    """Compare a document's entries `(key, content)` with its stored doc points."""
    stored = {p.source: p for p in store.points.by_source_prefix(source_prefix)}
    plan = IngestPlan(source_prefix)
    wanted: set[str] = set()
    for key, content in entries:
        source = f"{source_prefix}{key}"
        wanted.add(source)
        text = stored_text(content)
        old = stored.get(source)
        if old is None:
            plan.add.append((source, text))
        elif old.content_hash != content_hash(text):
            plan.update.append((source, text, old.id))
        else:
            plan.unchanged += 1
    plan.remove = [p.id for src, p in stored.items() if src not in wanted]
    return plan


def apply_ingest(
    store: MemoryStore, plan: IngestPlan, vectors: Mapping[str, Sequence[float] | None]
) -> IngestReport:
    """Write a planned ingest in one database transaction: the gone and changed sections'
    old points are deleted and the new versions inserted (pinned `doc` points with their
    words), audited as 'ingest'. A kill midway leaves the old version whole; the vector
    index and the pins follow after the commit (the index is reconciled on every open)."""
    now = store.db.clock.now()
    written = plan.add + [(s, t) for s, t, _old in plan.update]
    written = [(source, text) for source, text in written if text]
    usable = {source: store.usable_vector(vectors.get(source)) for source, _text in written}
    news = [
        NewPoint(
            role="doc",
            content=text,
            source=source,
            channel="doc",
            pinned=True,
            created_at=now,
            embedding=None if usable[source] is None else np.asarray(usable[source], np.float32),
            embed_model=None if usable[source] is None else store.config.embed_model,
        )
        for source, text in written
    ]
    gone = plan.remove + [old_id for _s, _t, old_id in plan.update]

    def index_words(cur: Cursor, ids: list[int]) -> None:
        for point_id in gone:
            lexical_index.remove_point(cur, point_id, cache=store.lexical)
        for point_id, (_source, text) in zip(ids, written, strict=True):
            words = lexical_text(text, when=now)
            traits = point_traits(text, now)
            lexical_index.index_point(
                cur, point_id, words, cache=store.lexical, new=True, traits=traits
            )

    detail = {
        "added": len(plan.add),
        "updated": len(plan.update),
        "unchanged": plan.unchanged,
        "removed": len(plan.remove),
    }
    ids = store.points.replace_many(
        news,
        gone,
        remove_reason=f"ingest: gone from {plan.prefix}",
        event=("ingest", plan.prefix, json.dumps(detail)),
        also=index_words,
    )
    added = [(pid, usable[source]) for pid, (source, _t) in zip(ids, written, strict=True)]
    store.after_replace(gone, added)
    missing = sum(1 for vector in usable.values() if vector is None)
    return IngestReport(
        len(plan.add), len(plan.update), plan.unchanged, len(plan.remove), 0, missing
    )
