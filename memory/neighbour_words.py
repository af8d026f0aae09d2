"""The messages a conversation point's words are indexed with (document expansion), at save
and when the word index is rebuilt, so both give a point the same words.

A user message is indexed with the user message before the reply it followed (`earlier`),
that reply (`answered`) and its own reply; a reply with the reply before it and the user's
message it answers (LoCoMo hybrid recall@10 0.665 alone → 0.769, docs/recall-quality.md).

At save (`TurnMemory.save_turn`) the neighbours come from the turn itself. On a re-index (an
analyzer change: `MemoryStore._start`) they are rebuilt from the points table alone: a
conversation's turn points in id order, grouped into turns (a user point opens a turn; a
reply closes the open turn, or stands alone when its user message was not saved). A
neighbour the save filter dropped (a short "thanks", a near-duplicate) was never a point:
on re-index that point is indexed without it. The daily log still has such messages, but
matching log lines to points is not worth it for the few words they carry (choice written
in docs/recall-quality.md). Document chunks and `/remember` pins keep their own text only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from memory.recall import lexical_text
from memory.secret_masking import MaskedText
from memory.stored_text import stored_text
from store.point_reads import IndexedPoint

TURN_SOURCE = "turn"  # `points.source` of an auto-saved message (the only ones with neighbours)


def neighbour_text(*texts: str) -> MaskedText:
    """Neighbours for the word index, each masked on its own and joined: a text already
    masked (a `MaskedText`: the user's message, a stored point) is not scanned again."""
    masked = (stored_text(text) for text in texts)
    return MaskedText("\n".join(text for text in masked if text))


def user_context(earlier: str, answered: str, reply: str) -> MaskedText:
    """A user message's neighbours: the message before the reply it followed, that reply
    and its own reply."""
    return neighbour_text(earlier, answered, reply)


def reply_context(answered: str, user: str) -> MaskedText:
    """A reply's neighbours: the reply before it and the user's message it answers."""
    return neighbour_text(answered, user)


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """One saved point of a conversation, as the re-index reads it."""

    id: int
    role: str  # user | assistant
    content: str  # as stored: masked and stripped


@dataclass(slots=True)
class _Turn:
    user: StoredMessage | None = None
    reply: StoredMessage | None = None


def _turns(messages: Iterable[StoredMessage]) -> list[_Turn]:
    """The conversation's points (in id order) as turns of (user, reply)."""
    turns: list[_Turn] = []
    for message in messages:
        if message.role == "user":
            turns.append(_Turn(user=message))
        elif turns and turns[-1].reply is None:
            turns[-1].reply = message
        else:  # its user message was not saved
            turns.append(_Turn(reply=message))
    return turns


def _text(message: StoredMessage | None) -> str:
    return "" if message is None else MaskedText(message.content)  # stored masked


def conversation_contexts(messages: Iterable[StoredMessage]) -> dict[int, MaskedText]:
    """Each point's neighbour text, for one conversation's turn points in id order: what
    `save_turn` indexed beside it, as far as the points hold it."""
    contexts: dict[int, MaskedText] = {}
    previous = _Turn()
    for turn in _turns(messages):
        if turn.user is not None:
            contexts[turn.user.id] = user_context(
                _text(previous.user), _text(previous.reply), _text(turn.reply)
            )
        if turn.reply is not None:
            contexts[turn.reply.id] = reply_context(_text(previous.reply), _text(turn.user))
        previous = turn
    return contexts


def reindex_texts(points: Sequence[IndexedPoint]) -> list[tuple[int, str]]:
    """(id, text) of every point for `lexical_index.reindex_all`, as `MemoryStore.save`
    indexed it: its content, its neighbours (conversation messages only) and its date."""
    conversations: dict[str, list[StoredMessage]] = {}
    for point in points:  # in id order
        if point.source == TURN_SOURCE and point.role in ("user", "assistant"):
            message = StoredMessage(point.id, point.role, point.content)
            conversations.setdefault(point.conversation_id, []).append(message)
    contexts: dict[int, MaskedText] = {}
    for messages in conversations.values():
        contexts.update(conversation_contexts(messages))
    return [
        (p.id, lexical_text(p.content, context=contexts.get(p.id, ""), when=p.created_at))
        for p in points
    ]
