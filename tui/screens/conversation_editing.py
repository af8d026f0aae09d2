"""Rename, delete and export on the conversations screen: the keys, the y/n and the title
prompt, and the workers that do the change (the pieces: tui/screens/conversation_actions.py).

`ConversationEditing` is the conversations screen's base: it acts on the conversation under
the tree's cursor (`highlighted`) and, after a rename or a delete, has the screen read its
index again (`_reload`), both the screen's own.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual import on, work
from textual.message import Message

from store.daily_log import DailyLog
from tui.conversation_index import ConversationSummary
from tui.display_text import counted
from tui.screens.confirm_screen import ConfirmScreen
from tui.screens.conversation_actions import (
    TitlePrompt,
    delete_conversation,
    export_conversation,
)
from tui.screens.conversation_views import ContinueConversation
from tui.screens.memory_screen import MemoryScreen

if TYPE_CHECKING:
    from memory.conversation_notes import ConversationNotes

log = logging.getLogger("straylight.tui")


@dataclass
class ConversationChanged(Message):
    """A rename, delete or export finished (`problem`: why it failed)."""

    text: str
    reload: bool
    problem: bool = False


class ConversationEditing(MemoryScreen[ContinueConversation | None]):
    """The conversations screen's r, d and e (see the module's docstring)."""

    daily_log: DailyLog
    notes: ConversationNotes | None
    current_conversation_id: str
    titles: dict[str, str]  # the titles users set, read with the index
    _said_after_reload: str

    @property
    def highlighted(self) -> ConversationSummary | None:
        """The conversation under the cursor (the screen's tree)."""
        raise NotImplementedError

    def _reload(self) -> None:
        """Read the index again (the screen's)."""
        raise NotImplementedError

    def _chosen_for(self, verb: str) -> ConversationSummary | None:
        chosen = self.highlighted
        if chosen is None:
            self.say(f"Highlight a conversation to {verb} (a line under a day).", error=True)
        elif self.notes is None and verb != "export":
            self.say("Memory is not available, so titles and deletes cannot be kept.", error=True)
            return None
        return chosen

    def action_rename(self) -> None:
        """r: a new title for the highlighted conversation."""
        chosen = self._chosen_for("rename")
        if chosen is None:
            return
        cid = chosen.conversation_id
        current = self.titles.get(cid, chosen.first_line)

        def renamed(title: str | None) -> None:
            if title:
                self._change(lambda notes: notes.set_title(cid, title), f"Renamed: {title}")

        self.app.push_screen(TitlePrompt(current), renamed)

    def action_delete(self) -> None:
        """d: delete the highlighted conversation after a y/n (not the one in the chat)."""
        chosen = self._chosen_for("delete")
        if chosen is None:
            return
        cid = chosen.conversation_id
        if cid == self.current_conversation_id:
            self.say("That is the conversation you are in: Ctrl+N starts a new one.", error=True)
            return
        title = self.titles.get(cid, chosen.first_line)
        question = (
            f"Delete conversation {cid} ({title})? Its messages leave the daily logs and its "
            "unpinned memory points are forgotten. This cannot be undone."
        )

        def answered(yes: bool | None) -> None:
            if yes:
                self._delete(cid)

        self.app.push_screen(ConfirmScreen(question), answered)

    @work(thread=True, group="conversation-change", exit_on_error=False)
    def _delete(self, conversation_id: str) -> None:
        try:
            done = delete_conversation(self.daily_log, self.notes, conversation_id)
        except Exception as error:
            log.exception("deleting %s failed", conversation_id)
            self.post_message(ConversationChanged(f"Delete failed: {error}", False, True))
            return
        messages = counted(done.messages, "message")
        points = counted(done.points, "memory point")
        text = f"Deleted {conversation_id}: {messages}, {points} forgotten."
        self.post_message(ConversationChanged(text, reload=True))

    @work(thread=True, group="conversation-change", exit_on_error=False)
    def _change(self, change: Callable[[ConversationNotes], None], text: str) -> None:
        try:
            assert self.notes is not None
            change(self.notes)
        except Exception as error:
            log.exception("changing a conversation failed")
            self.post_message(ConversationChanged(f"Failed: {error}", False, True))
            return
        self.post_message(ConversationChanged(text, reload=True))

    def action_export(self) -> None:
        """e: the highlighted conversation as Markdown in the data dir's exports/ folder."""
        chosen = self._chosen_for("export")
        if chosen is not None:
            self._export(chosen.conversation_id)

    @work(thread=True, group="conversation-change", exit_on_error=False)
    def _export(self, conversation_id: str) -> None:
        try:
            path = export_conversation(self.daily_log, self.notes, conversation_id)
        except Exception as error:
            log.exception("exporting %s failed", conversation_id)
            self.post_message(ConversationChanged(f"Export failed: {error}", False, True))
            return
        self.post_message(ConversationChanged(f"Exported to {path}", reload=False))

    @on(ConversationChanged)
    def conversation_changed(self, message: ConversationChanged) -> None:
        if message.reload:
            self._said_after_reload = message.text
            self._reload()
        self.say(message.text, error=message.problem)
