"""The chat screen's last exchange: the messages on screen, Up to edit the last message and
resend it (tui/conversation_commands.py does the work; r, which regenerates the last reply,
is `ChatScreen`'s: it starts a turn).
"""

from __future__ import annotations

from tui.screens.chat_models import ChatModels
from tui.widgets.chat_input import ChatInput
from tui.widgets.chat_message import ChatMessage


class ChatEditing(ChatModels):
    """The messages on screen and the edit of the last one."""

    replying: bool  # a reply streams (set by ChatTurn.send_turn and ChatScreen)
    editing_last: bool  # the box holds the last user message, to resend edited

    def chat_messages(self) -> list[ChatMessage]:
        """The messages on screen, oldest first."""
        return list(self.chat_log.query_children(ChatMessage))

    async def remove_last_exchange(self) -> None:
        """Remove the last user message and everything after it from the chat log."""
        children = list(self.chat_log.children)
        users = [
            i for i, w in enumerate(children) if isinstance(w, ChatMessage) and w.role == "user"
        ]
        if users:
            await self.chat_log.remove_children(children[users[-1] :])

    def on_chat_input_edit_last(self, message: ChatInput.EditLast) -> None:
        """Up in an empty box: the last user message goes back in it, to edit and resend."""
        self._edit_last(message.input)

    def on_text_area_changed(self, message: ChatInput.Changed) -> None:
        if isinstance(message.text_area, ChatInput) and not message.text_area.text:
            self.editing_last = False  # emptied: the next message is a new one
        elif isinstance(message.text_area, ChatInput):
            self.straylight.memory_wanted()  # a new data dir's memory opens as typing starts

    def _edit_last(self, box: ChatInput) -> None:
        users = [m for m in self.chat_messages() if m.role == "user"]
        if not users:
            return
        if self.replying:  # (it did nothing, and said nothing)
            self.notify(
                "A reply is still streaming: edit your last message once it has finished "
                "(Esc cancels it).",
                severity="warning",
            )
            return
        box.load_text(users[-1].text)
        box.move_cursor(box.document.end)
        box.focus()
        self.editing_last = True
        self.notify(
            "Editing your last message: Enter resends it (the old exchange is kept, "
            "marked superseded).",
            timeout=4,
        )

    def action_edit_message(self) -> None:
        """e on the selected message: edit and resend it, when it is the last user message."""
        selected = self._selected()
        users = [m for m in self.chat_messages() if m.role == "user"]
        if selected is None or not users or selected is not users[-1]:
            self.notify("Only your last message can be edited.", severity="warning")
            return
        self._edit_last(self.query_one(ChatInput))
