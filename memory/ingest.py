"""Ingest: a document's entries as pinned `doc` points, planned first, then applied.

`plan_ingest` compares the entries `(key, content)` with the doc points stored under a
source prefix (new, changed, unchanged, gone); the caller embeds what the plan says needs a
vector, and `apply_ingest` writes it (changed entries are a forget plus a save), audited as
one 'ingest' event.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from memory.secret_masking import mask_secrets
from store.point_store import content_hash

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

    def to_json(self) -> dict[str, int]:
        return asdict(self)


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
        text = mask_secrets(content).strip()
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
    """Write a planned ingest: pinned `doc` points, audited as 'ingest'."""
    for point_id in plan.remove + [old_id for _s, _t, old_id in plan.update]:
        store.forget(point_id, reason=f"ingest: gone from {plan.prefix}")
    for source, text in plan.add + [(s, t) for s, t, _old in plan.update]:
        store.save(
            "doc",
            text,
            vector=vectors.get(source),
            source=source,
            pinned=True,
            channel="doc",
            use_filter=False,
        )
    store.points.record_event(
        "ingest",
        reason=plan.prefix,
        detail=json.dumps(
            {
                "added": len(plan.add),
                "updated": len(plan.update),
                "unchanged": plan.unchanged,
                "removed": len(plan.remove),
            }
        ),
    )
    return IngestReport(len(plan.add), len(plan.update), plan.unchanged, len(plan.remove))
