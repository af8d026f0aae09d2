"""Conversations you manage, on the memory's side: titles and system prompts (the
`conversations` table), and what deleting or retrying does to a conversation's points.

The messages are the daily logs' (store/daily_log_rewrite.py edits them); here is what the
database holds about a conversation: its record, its points, and the audit row of a delete.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memory.secret_masking import mask_secrets
from memory.stored_text import stored_text
from store.conversation_store import ConversationRecord, ConversationStore
from store.point_values import content_hash

if TYPE_CHECKING:
    from memory.memory_store import MemoryStore

DELETE_EVENT = "conversation_delete"
SUPERSEDED_REASON = "superseded by a retry or an edit"
SUPERSEDE_EVENT = "point_superseded"  # the audit row of a pinned point a retry superseded
SUPERSEDED_TAG = "superseded"  # the tag it gets (shown in the memory browser's preview)


@dataclass(frozen=True, slots=True)
class PointsRemoved:
    """What a delete did to a conversation's points."""

    forgotten: list[int]
    pinned_kept: int


@dataclass(frozen=True, slots=True)
class PointsSuperseded:
    """What a retry or an edit did to the points of one superseded message."""

    forgotten: list[int]  # unpinned: gone
    tagged: list[int]  # pinned: kept, tagged `superseded`
    kept: list[int]  # pinned, holding the user message sent again: left as they are


class ConversationNotes:
    """The records and points of conversations, for one open memory store."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self.records = ConversationStore(store.db)

    def get(self, conversation_id: str) -> ConversationRecord:
        return self.records.get(conversation_id)

    def all(self) -> dict[str, ConversationRecord]:
        return self.records.all()

    def set_title(self, conversation_id: str, title: str | None) -> None:
        """Set (None: clear) the conversation's title, masked like every stored text."""
        self.records.set_title(conversation_id, mask_secrets(title) if title else None)

    def set_system_prompt(self, conversation_id: str, prompt: str | None) -> None:
        """Set (None: clear) the conversation's system prompt, masked like every stored
        text; it is never saved as a memory point."""
        self.records.set_system_prompt(conversation_id, mask_secrets(prompt) if prompt else None)

    def remove(self, conversation_id: str, *, messages: int, days: list[str]) -> PointsRemoved:
        """Forget the conversation's unpinned points (pinned ones stay: the user pinned them),
        drop its record, and record one `conversation_delete` audit row."""
        forgotten = []
        for point_id in self.records.point_ids(conversation_id):
            if self.store.forget(point_id, reason=f"conversation {conversation_id} deleted"):
                forgotten.append(point_id)
        pinned = len(self.records.point_ids(conversation_id, pinned=True))
        self.records.delete(conversation_id)
        detail = {
            "conversation_id": conversation_id,
            "messages": messages,
            "days": days,
            "points_forgotten": forgotten,
            "pinned_kept": pinned,
        }
        self.store.points.record_event(
            DELETE_EVENT, reason="deleted by the user", detail=json.dumps(detail)
        )
        return PointsRemoved(forgotten, pinned)

    def supersede_message_points(
        self, conversation_id: str, role: str, text: str, *, sent_again: str | None = None
    ) -> PointsSuperseded:
        """What a retry or an edit does to the points that hold a superseded message of this
        conversation. Unpinned ones are forgotten (the new turn saves its own: replaced, not
        duplicated). A pinned one stays pinned — the pin is the user's own act, and it does
        not move to the new reply, a text the user never chose — tagged `superseded` with a
        `point_superseded` audit row. `sent_again`: the user message the turn sends next; a
        pinned user point holding exactly it is left as it is, and the save filter is told
        it is saved, so the new turn does not save the same text a second time."""
        stored = stored_text(text)
        again = sent_again is not None and stored_text(sent_again) == stored
        mine = [
            point
            for point in self.store.points.find_by_hash(content_hash(stored))
            if point.conversation_id == conversation_id and point.role == role
        ]
        pinned = [point.id for point in mine if point.pinned]
        kept = pinned if role == "user" and again else []
        if kept:
            self.store.filter.record_saved(role, stored, conversation_id)
        else:
            self.store.filter.forget_saved(role, stored, conversation_id)
        gone = [
            point.id
            for point in mine
            if not point.pinned and self.store.forget(point.id, reason=SUPERSEDED_REASON)
        ]
        tagged = [] if kept else self.records.tag_points(pinned, SUPERSEDED_TAG)
        for point_id in tagged:
            self.store.points.record_event(
                SUPERSEDE_EVENT,
                point_id=point_id,
                reason=SUPERSEDED_REASON,
                detail=json.dumps({"conversation_id": conversation_id, "role": role}),
            )
        return PointsSuperseded(gone, tagged, kept)
