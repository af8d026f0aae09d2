"""The capability facts a conversation's next prompt must carry: the "verify before claiming
impossibility" check found a reply that said it could not do what an active capability fact
says was done from here before. Kept in the `meta` table (`facts.carry`: conversation id →
fact keys), so the next turn carries them whichever process runs it: the next `ask
--conversation` as much as the chat's next message. Taken once: the turn after carries them,
the one after that no longer (unless the check finds them again)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from store import meta

if TYPE_CHECKING:
    from store.database import Database

CARRY_KEY: Final = "facts.carry"
_MAX_CONVERSATIONS: Final = 64
"""Conversations kept waiting at most (the oldest dropped): a carry no turn took is forgotten."""


def _read(raw: str | None) -> dict[str, list[str]]:
    try:
        data = json.loads(raw) if raw else {}
    except (ValueError, RecursionError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {
        str(conversation): [str(key) for key in keys if isinstance(key, str)]
        for conversation, keys in data.items()
        if isinstance(keys, list)
    }


def keep_carry(db: Database, conversation_id: str, keys: Sequence[str]) -> None:
    """The keys `conversation_id`'s next prompt must carry (replacing what it had)."""
    with db.transaction() as cur:
        waiting = _read(meta.get(cur, CARRY_KEY))
        waiting.pop(conversation_id, None)
        if keys:
            waiting[conversation_id] = list(dict.fromkeys(keys))
        while len(waiting) > _MAX_CONVERSATIONS:
            waiting.pop(next(iter(waiting)))
        if waiting:
            meta.put(cur, CARRY_KEY, json.dumps(waiting, ensure_ascii=False))
        else:
            meta.delete(cur, CARRY_KEY)


def take_carry(db: Database, conversation_id: str) -> list[str]:
    """The keys waiting for `conversation_id`'s next prompt, removed as they are read."""
    with db.cursor() as cur:
        waiting = _read(meta.get(cur, CARRY_KEY))
    if conversation_id not in waiting:
        return []
    keys = waiting[conversation_id]
    keep_carry(db, conversation_id, [])
    return keys
