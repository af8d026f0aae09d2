"""One logged conversation full-width and read-only (Enter on the conversations screen);
`c` continues it in the chat, Esc goes back to the list."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll

from store.daily_log import LogMessage
from tui.screens.conversation_views import ContinueConversation, conversation_view
from tui.screens.memory_screen import MemoryScreen

if TYPE_CHECKING:
    from store.conversation_store import ConversationRecord


class ConversationReader(MemoryScreen[ContinueConversation | None]):
    """One conversation, full-width and read-only; c continues it, Esc goes back."""

    TITLE_TEXT = "Conversation"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("c", "continue", "Continue", id="conversation_continue"),
    ]
    DEFAULT_CSS = """
    ConversationReader #conversation-reader {
        height: 1fr;
        padding: 0 1;
    }
    ConversationReader .conversation-head {
        color: $text-muted;
    }
    ConversationReader .conversation-day-rule {
        margin: 1 0 0 0;
        color: $text-muted;
    }
    """

    def __init__(
        self,
        conversation_id: str,
        messages: Sequence[LogMessage],
        *,
        current: bool = False,
        record: ConversationRecord | None = None,
    ) -> None:
        super().__init__()
        self.conversation_id = conversation_id
        self.messages = tuple(messages)
        self.current = current
        self.record = record

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="conversation-reader"):
            yield from conversation_view(
                self.conversation_id, self.messages, current=self.current, record=self.record
            )

    def on_mount(self) -> None:
        self.query_one("#conversation-reader", VerticalScroll).focus()
        self.say("Read-only · c continues this conversation in the chat · Esc back to the list")

    def action_continue(self) -> None:
        """c: leave with this conversation, for the chat to continue it."""
        if not self.conversation_id:
            self.say("This conversation has no id in the log, so it cannot go on.", error=True)
            return
        system = self.record.system_prompt if self.record else None
        self.dismiss(ContinueConversation(self.conversation_id, self.messages, system))
