"""What the Conversations screen's workers report back: days of the index, a conversation
read, a read that failed (tui/screens/conversations_screen.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from textual.message import Message

from store.daily_log import LogMessage
from tui.conversation_index import DaySummary

if TYPE_CHECKING:
    from store.conversation_store import ConversationRecord

Purpose = Literal["preview", "open", "continue"]


@dataclass
class DaysLoaded(Message):
    """The index worker read some more days (newest first); `done` after the last one."""

    days: list[DaySummary]
    done: bool
    problem: str | None = None  # why reading stopped early (an unreadable file)


@dataclass
class ReadFailed(Message):
    """A conversation could not be read."""

    problem: str


@dataclass
class ConversationLoaded(Message):
    """A conversation's messages, read for the preview, the reader or continuing."""

    conversation_id: str
    messages: list[LogMessage]
    purpose: Purpose
    record: ConversationRecord | None = None  # its title and system prompt, when set
