"""The `conversations` table (schema v5): what a user sets on a conversation — its title and
its own system prompt. The one home of its SQL, and of what a conversation's edits do to its
points' rows (their ids; a tag on a pinned point a retry superseded). The messages stay in
the daily logs."""

from __future__ import annotations

from dataclasses import dataclass

from store.database import Database
from store.point_values import as_utc


@dataclass(frozen=True, slots=True)
class ConversationRecord:
    """A conversation's settings; None where the user set nothing."""

    conversation_id: str
    title: str | None = None
    system_prompt: str | None = None


class ConversationStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def get(self, conversation_id: str) -> ConversationRecord:
        """Its record (an empty one when nothing is set)."""
        with self.db.cursor() as cur:
            rows = cur.execute(
                "SELECT title, system_prompt FROM conversations WHERE id = ?", [conversation_id]
            ).fetchall()
        if not rows:
            return ConversationRecord(conversation_id)
        return ConversationRecord(conversation_id, rows[0][0], rows[0][1])

    def all(self) -> dict[str, ConversationRecord]:
        with self.db.cursor() as cur:
            rows = cur.execute("SELECT id, title, system_prompt FROM conversations").fetchall()
        return {row[0]: ConversationRecord(row[0], row[1], row[2]) for row in rows}

    def set_title(self, conversation_id: str, title: str | None) -> None:
        self._set(conversation_id, "title", title)

    def set_system_prompt(self, conversation_id: str, prompt: str | None) -> None:
        self._set(conversation_id, "system_prompt", prompt)

    def _set(self, conversation_id: str, column: str, value: str | None) -> None:
        assert column in ("title", "system_prompt")
        now = as_utc(self.db.clock.now())
        with self.db.transaction() as cur:
            cur.execute(
                f"INSERT INTO conversations (id, {column}, updated_at) VALUES (?, ?, ?) "
                f"ON CONFLICT (id) DO UPDATE SET {column} = excluded.{column}, "
                "updated_at = excluded.updated_at",
                [conversation_id, value, now],
            )

    def delete(self, conversation_id: str) -> None:
        with self.db.transaction() as cur:
            cur.execute("DELETE FROM conversations WHERE id = ?", [conversation_id])

    def point_ids(self, conversation_id: str, *, pinned: bool = False) -> list[int]:
        """The ids of the conversation's points (unpinned ones by default)."""
        with self.db.cursor() as cur:
            rows = cur.execute(
                "SELECT id FROM points WHERE conversation_id = ? AND pinned = ? ORDER BY id",
                [conversation_id, pinned],
            ).fetchall()
        return [int(row[0]) for row in rows]

    def tag_points(self, point_ids: list[int], tag: str) -> list[int]:
        """Add `tag` to these points' tags (once); the ids that exist."""
        if not point_ids:
            return []
        marks = ", ".join("?" for _ in point_ids)
        with self.db.transaction() as cur:
            rows = cur.execute(
                "UPDATE points SET tags = CASE WHEN list_contains(tags, ?) THEN tags "
                f"ELSE list_append(tags, ?) END WHERE id IN ({marks}) RETURNING id",
                [tag, tag, *point_ids],
            ).fetchall()
        return sorted(int(row[0]) for row in rows)
