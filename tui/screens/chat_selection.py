"""The chat screen's selected message: Ctrl+Up selects the last message, Up/Down move the
selection, and the selected message is copied, pinned (its memory point, or a new one) or
forgotten (its memory point; the log keeps the message).

`ChatNavigation` (tui/screens/chat_navigation.py), its base, holds the sidebar, the chat
log's notices and the memory screens; `ChatModels` (tui/screens/chat_models.py) builds on
this.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from textual import events

from memory.point_limits import PointTooLarge
from tui.cli_output import one_line
from tui.screens.chat_navigation import ChatNavigation
from tui.widgets.chat_message import ChatMessage

if TYPE_CHECKING:
    from memory.point_writes import Role
    from memory.turn_memory import TurnMemory


class ChatSelection(ChatNavigation):
    """The selected message: move the selection, copy, pin, forget."""

    conversation_id: str  # the conversation the chat shows

    # The last move: (the focused widget it started from, the message it chose). While the
    # focus is still on either, the next move starts from the chosen one.
    _last_move: tuple[object, ChatMessage] | None = None

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        if self._last_move is not None and event.widget is self._last_move[1]:
            self._last_move = (None, self._last_move[1])  # arrived: where it came from is over

    def action_select_message(self, step: int) -> None:
        """Ctrl+Up selects the last message; Up/Down on a message move the selection. A
        move starts from the message the last move chose: Textual gives it the focus a
        moment later, and two presses in one frame (a held arrow key) both started from the
        old one, moving one message instead of two."""
        chat = list(self.query(ChatMessage))
        if not chat:
            return
        current = self.focused
        if self._last_move is not None and self._last_move[1] in chat:
            started_from, chosen = self._last_move
            if current is started_from or current is chosen:  # (a click elsewhere: not)
                current = chosen
        if step == 0 or not isinstance(current, ChatMessage) or current not in chat:
            target = chat[-1]
        else:
            index = chat.index(current) + step
            if index >= len(chat):
                self.action_focus_input()
                return
            target = chat[max(index, 0)]
        self._last_move = (self.focused, target)
        target.focus()
        target.scroll_visible(animate=False)

    def _selected(self) -> ChatMessage | None:
        focused = self.focused
        return focused if isinstance(focused, ChatMessage) and focused.text.strip() else None

    def action_copy_message(self) -> None:
        message = self._selected()
        if message is not None:
            self.app.copy_to_clipboard(message.text)  # OSC 52: works over ssh too
            self.notify("Copied the message.", timeout=3)

    def not_saved_yet(self, message: ChatMessage) -> bool:
        """Whether `message` belongs to a turn whose points are still to be saved (the chat
        screen knows its turns)."""
        return False

    def _wait_for_save(self, message: ChatMessage) -> bool:
        """Say so and True when `message`'s point is still to be saved: a pin then made a
        second point of the same text, a forget found none and the save came after."""
        if not self.not_saved_yet(message):
            return False
        self.notify(
            "Its memory point is saved when the reply has finished: pin or forget it then.",
            severity="warning",
        )
        return True

    async def action_pin_message(self) -> None:
        message = self._selected()
        memory = self.engine.memory
        if message is None or self._wait_for_save(message):
            return
        if memory is None:
            problem = self.straylight.memory_problem
            await self.notice(f"Memory is not available: {problem}", kind="error")
            return
        try:
            point_id, created = await _pin(memory, message, self.conversation_id)
        except Exception as error:
            if not _memory_refused(error):
                raise
            await self.notice(f"Not pinned: {one_line(str(error))}", kind="error")
            return
        note = "pinned as a new memory" if created else "pinned"
        await self.notice(f"#{point_id} {note}: {_preview(message.text)}")
        self.refresh_memory_status()

    def action_forget_message(self) -> None:
        message = self._selected()
        if message is None or self._wait_for_save(message):
            return
        memory = self._memory_or_say()
        if memory is None:
            return
        from tui.screens.confirm_screen import ConfirmScreen

        async def answered(yes: bool | None) -> None:
            if not yes:
                return
            try:
                gone = await _forget(memory, message)
            except Exception as error:
                if not _memory_refused(error):
                    raise
                await self.notice(f"Not forgotten: {one_line(str(error))}", kind="error")
                return
            points = "point" if len(gone) == 1 else "points"
            text = f"Forgot {len(gone)} memory {points}." if gone else "No memory point for it."
            await self.notice(text, kind="info" if gone else "warning")
            self.refresh_memory_status()

        self.app.push_screen(
            ConfirmScreen("Forget this message's memory point? The log keeps the message."),
            answered,
        )


async def _point_ids(memory: TurnMemory, message: ChatMessage) -> list[int]:
    """The message's saved point (the engine reported its id), or, for a message whose id is
    unknown (a continued conversation, a save that skipped it), the points holding its text."""
    if message.point_id is not None:
        return [message.point_id]
    return [point.id for point in await memory.saved_points(message.text)]


async def _pin(memory: TurnMemory, message: ChatMessage, conversation_id: str) -> tuple[int, bool]:
    """Pin the saved point of this message; a message that was not saved (the filter skipped
    it) becomes a new pinned point of its role and conversation. (id, created)."""
    for point_id in reversed(await _point_ids(memory, message)):
        if await asyncio.to_thread(memory.store.set_pinned, point_id, True):
            message.point_id = point_id
            return point_id, False
    role: Role = "assistant" if message.role == "assistant" else "user"
    point_id = await memory.remember(message.text, conversation_id=conversation_id, role=role)
    message.point_id = point_id  # the next p finds it pinned, f forgets it (not a new one)
    return point_id, True


async def _forget(memory: TurnMemory, message: ChatMessage) -> list[int]:
    """Forget the point(s) of this message; the ids forgotten."""
    gone = []
    for point_id in await _point_ids(memory, message):
        if await asyncio.to_thread(memory.store.forget, point_id):
            gone.append(point_id)
    message.point_id = None  # gone: a later p or f looks for the points holding its text
    return gone


def _memory_refused(error: Exception) -> bool:
    """A pin or forget the memory refused (a text over a point's limit: nothing stored; a
    full disk; a damaged database), said in the chat rather than stopping it. The database's
    errors are imported only here: duckdb stays out of the first frame."""
    from store.database_errors import DatabaseError

    return isinstance(error, PointTooLarge | OSError | DatabaseError)


def _preview(text: str, limit: int = 60) -> str:
    """A message on one line, cut at `limit` characters with an ellipsis only when cut."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"
