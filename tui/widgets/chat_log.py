"""The chat log: the scrolling column of messages, notices and approval prompts.

It owns mounting them (and keeping the newest in view); what they say is decided elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from textual.containers import VerticalScroll
from textual.widget import Widget

from tui.widgets.chat_message import ChatMessage, ChatNotice, EmptyChatHint


class ChatLog(VerticalScroll):
    """The messages of the conversation on screen, newest at the bottom."""

    async def add(self, widget: Widget) -> None:
        """Mount a widget at the bottom and scroll to it."""
        await self.mount(widget)
        self.scroll_end(animate=False)

    async def notice(self, text: str, *, kind: str = "info") -> None:
        """A notice (a command's answer, a warning, an error) at the bottom."""
        await self.add(ChatNotice(text, kind=kind))

    async def start_turn(
        self, text: str, *, time: datetime, model: str
    ) -> tuple[ChatMessage, ChatMessage]:
        """The user's message and an empty reply waiting for the model."""
        await self.query(EmptyChatHint).remove()
        user = ChatMessage("user", text, time=time)
        await self.mount(user)
        reply = ChatMessage("assistant", time=time, model=model, status="waiting")
        await self.mount(reply)
        self.scroll_end(animate=False)
        return user, reply

    async def clear(self) -> None:
        """An empty conversation: only the hint."""
        await self.remove_children()
        await self.mount(EmptyChatHint())

    async def show(self, widgets: Iterable[Widget]) -> None:
        """Replace everything with these (a conversation read back from the log)."""
        await self.remove_children()
        await self.mount_all(widgets)
        self.scroll_end(animate=False)
