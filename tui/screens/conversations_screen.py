"""The Conversations screen: the daily logs by day and conversation; read one, continue it.

Left, a tree of days (newest first) and their conversations (time range, message count,
first line; the app's current conversation marked). Right, the highlighted conversation,
read-only. Enter opens it full-width in a `ConversationReader` (Esc back to the list);
`c`, here or in the reader, dismisses the screen with a `ContinueConversation` that the app
turns back into its chat log (`chat_widgets`) and whose id (and system prompt) it adopts.
`r` renames the highlighted conversation, `d` deletes it after a y/n, `e` exports it as
Markdown (tui/screens/conversation_editing.py, the screen's base); a title set shows instead
of the first line, the system prompt in the preview's header. The lines and the read-only
view are tui/screens/conversation_views.py; the reader tui/screens/conversation_reader.py.

Every file is read in a worker thread; the workers report back with messages. The index
arrives a day at a time, newest first, so the newest days show before a year of logs is read.
"""

from __future__ import annotations

import logging
import threading
from datetime import date
from typing import TYPE_CHECKING, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.widget import Widget
from textual.widgets import Static, Tree
from textual.widgets.tree import TreeNode
from textual.worker import get_current_worker

from store.daily_log import DailyLog
from tui.conversation_index import (
    ConversationSummary,
    DaySummary,
    iter_day_summaries,
    load_conversation,
    propose_title,
)
from tui.display_text import counted
from tui.screens.conversation_editing import ConversationEditing
from tui.screens.conversation_messages import (
    ConversationLoaded,
    DaysLoaded,
    Purpose,
    ReadFailed,
)
from tui.screens.conversation_reader import ConversationReader
from tui.screens.conversation_views import (
    ContinueConversation,
    conversation_label,
    conversation_view,
    day_label,
)
from tui.widgets.ellipsis_tree import EllipsisTree

if TYPE_CHECKING:
    from memory.conversation_notes import ConversationNotes
    from memory.memory_store import MemoryStore

EXPANDED_DAYS = 7  # the newest days start expanded; older ones open with Enter or Space
PREVIEW_LIMIT = 30  # messages in the preview; Enter opens the whole conversation
BATCH_DAYS = 30  # days per message from the index worker after the first one
FIRST_PREVIEW_WAIT = 1.0  # seconds the index worker pauses after the newest day for its preview
log = logging.getLogger("straylight.tui")


class ConversationsScreen(ConversationEditing):
    """Days and their conversations on the left, the highlighted one read-only on the right."""

    TITLE_TEXT = "Conversations"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open", "Open", id="conversation_open", priority=True),
        Binding("c", "continue", "Continue", id="conversation_continue"),
        Binding("r", "rename", "Rename", id="conversation_rename"),
        Binding("d", "delete", "Delete", id="conversation_delete"),
        Binding("e", "export", "Export", id="conversation_export"),
    ]
    DEFAULT_CSS = """
    ConversationsScreen #conversations-body {
        height: 1fr;
    }
    ConversationsScreen #conversation-tree {
        overflow-x: hidden;
        width: 45%;
        min-width: 30;
        max-width: 64;
        border-right: vkey $panel-lighten-2;
        padding: 0 1 0 0;
    }
    ConversationsScreen #conversation-preview {
        width: 1fr;
        padding: 0 1;
    }
    ConversationsScreen .conversation-head {
        padding: 0 0 0 0;
        color: $text-muted;
    }
    ConversationsScreen .conversation-day-rule,
    ConversationsScreen .conversation-more {
        margin: 1 0 0 0;
        color: $text-muted;
    }
    """

    def __init__(
        self,
        daily_log: DailyLog,
        current_conversation_id: str = "",
        store: MemoryStore | None = None,
    ) -> None:
        super().__init__()
        self.daily_log = daily_log
        self.current_conversation_id = current_conversation_id
        self.notes: ConversationNotes | None = None
        if store is not None:
            from memory.conversation_notes import ConversationNotes

            self.notes = ConversationNotes(store)
        self.titles: dict[str, str] = {}  # the titles users set, read with the index
        self._said_after_reload = ""
        self.index_complete = False
        self.day_count = 0
        self._days_of: dict[str, list[date]] = {}
        self._leaves_of: dict[str, list[TreeNode[ConversationSummary | DaySummary]]] = {}
        self._previewed: str | None = None
        self._first_preview_shown = threading.Event()
        # Where the cursor goes once the index has the line: the first conversation on the
        # first load, the one it was on after a reload (a rename keeps the cursor there).
        self._cursor_pending = True
        self._cursor_target: str | None = None

    def compose_body(self) -> ComposeResult:
        tree: Tree[ConversationSummary | DaySummary] = EllipsisTree("days", id="conversation-tree")
        tree.show_root = False
        tree.auto_expand = False  # Enter is ours: it opens a conversation or toggles a day
        with Horizontal(id="conversations-body"):
            yield tree
            yield VerticalScroll(id="conversation-preview", can_focus=False)

    def on_mount(self) -> None:
        self.say("Reading the daily logs…")
        self.conversation_tree.focus()
        self.read_index()

    @property
    def conversation_tree(self) -> Tree[ConversationSummary | DaySummary]:
        return self.query_one("#conversation-tree", Tree)

    # ---- the index, a day at a time --------------------------------------------------
    @work(thread=True, exclusive=True, group="conversation-index", exit_on_error=False)
    def read_index(self) -> None:
        """Post the newest day at once, then the older ones in batches."""
        worker = get_current_worker()
        batch: list[DaySummary] = []
        first = True
        try:
            if self.notes is not None:
                records = self.notes.all()
                self.titles = {cid: r.title for cid, r in records.items() if r.title}
            for summary in iter_day_summaries(self.daily_log):
                if worker.is_cancelled:
                    return
                batch.append(summary)
                if first or len(batch) >= BATCH_DAYS:
                    self.post_message(DaysLoaded(batch, done=False))
                    if first:  # let the first preview have the interpreter
                        self._first_preview_shown.wait(FIRST_PREVIEW_WAIT)
                    batch, first = [], False
        except OSError as error:
            self.post_message(DaysLoaded(batch, done=True, problem=str(error)))
            return
        self.post_message(DaysLoaded(batch, done=True))

    @on(DaysLoaded)
    def add_days(self, message: DaysLoaded) -> None:
        """Append the days (older than those shown) with their conversations to the tree."""
        tree = self.conversation_tree
        for summary in message.days:
            expand = self.day_count < EXPANDED_DAYS
            node = tree.root.add(day_label(summary), summary, expand=expand)
            for conversation in summary.conversations:
                self._add_leaf(node, conversation)
            self.day_count += 1
        if self._cursor_pending and tree.root.children:
            self.call_after_refresh(self._place_cursor, message.done)
        if message.done:
            self.index_complete = True
            if not tree.root.children:  # the last one deleted: no preview of it stays
                self._previewed = None
                self.call_later(self._show_preview, [])
            self._say_index_size()
            if self._said_after_reload:  # what the change did outlives the index's line
                self.say(self._said_after_reload)
                self._said_after_reload = ""
        if message.problem is not None:
            self.say(f"Could not read every daily log: {message.problem}", error=True)

    def _add_leaf(
        self, day: TreeNode[ConversationSummary | DaySummary], conversation: ConversationSummary
    ) -> None:
        """One conversation line; its parts on later days (added before) get their `↳`."""
        cid = conversation.conversation_id
        current = cid == self.current_conversation_id
        # the title it was given, else the one proposed from its first user message (as
        # `straylight conversations` shows it); its parts on later days take it too
        proposed = propose_title(conversation.first_line) if conversation.first_line else ""
        title = self.titles.get(cid, "") or proposed
        for later in self._leaves_of.get(cid, []):
            if isinstance(later.data, ConversationSummary):
                later.set_label(
                    conversation_label(later.data, current=current, continued=True, title=title)
                )
        label = conversation_label(conversation, current=current, title=title)
        leaf = day.add_leaf(label, conversation)
        self._leaves_of.setdefault(cid, []).append(leaf)
        self._days_of.setdefault(cid, []).insert(0, conversation.day)

    def _place_cursor(self, index_done: bool) -> None:
        """Put the cursor on the conversation it should be on, once that line exists.

        The tree's own cursor is not to be trusted here (it may sit on a day line, or on a node
        of the tree before a reload), so this does not ask where it is: it places it, once; the
        highlight that follows loads the preview."""
        tree = self.conversation_tree
        if not self._cursor_pending or not tree.root.children:
            return
        leaves = self._leaves_of.get(self._cursor_target or "", [])
        if leaves:
            node = leaves[0]
        elif self._cursor_target is not None and not index_done:
            return  # its day may come in a later batch
        else:
            day = tree.root.children[0]
            node = day.children[0] if day.children else day
        self._cursor_pending = False
        if node.parent is not None and not node.parent.is_expanded:
            node.parent.expand()  # an older day, folded again by the reload
        # Off and on again, on freshly built lines: after `clear()` the tree keeps its old line
        # number and node, and a new node's line is known only once the lines are built
        # (`last_line` builds them), so this is what makes the highlight, and the preview, come.
        tree.move_cursor(None)
        if tree.last_line >= 0:
            tree.move_cursor(node)

    def _say_index_size(self) -> None:
        if not self.day_count:
            self.say("No conversations yet: the daily logs are empty.")
            return
        total = len(self._days_of)
        self.say(
            f"{counted(total, 'conversation')} on {counted(self.day_count, 'day')} · "
            "Enter opens · c continues · r renames · d deletes · e exports"
        )

    def days_for(self, conversation_id: str) -> list[date] | None:
        return self._days_of.get(conversation_id) if self.index_complete else None

    # ---- preview -----------------------------------------------------------------------
    @property
    def highlighted(self) -> ConversationSummary | None:
        """The conversation under the tree's cursor (None on a day line)."""
        node = self.conversation_tree.cursor_node
        data = node.data if node is not None else None
        return data if isinstance(data, ConversationSummary) else None

    @on(Tree.NodeHighlighted, "#conversation-tree")
    def preview_highlighted(self, event: Tree.NodeHighlighted[object]) -> None:
        data = event.node.data
        if isinstance(data, ConversationSummary):
            if data.conversation_id != self._previewed:
                self.preview_loader(data.conversation_id)
        elif isinstance(data, DaySummary):
            self._previewed = None
            self.call_later(self._show_preview, [Static(day_label(data))])

    def preview_loader(self, conversation_id: str) -> None:
        """Read the highlighted conversation for the preview (a newer one cancels it)."""
        self.load(conversation_id, "preview", group="conversation-preview")

    def load(
        self, conversation_id: str, purpose: Purpose, group: str = "conversation-load"
    ) -> None:
        """Read a conversation in a worker thread; a `ConversationLoaded` brings it back."""
        days = self.days_for(conversation_id)

        def read() -> None:
            try:
                messages = load_conversation(self.daily_log, conversation_id, days)
                record = self.notes.get(conversation_id) if self.notes is not None else None
            except Exception as error:  # a file or the database: named, detailed in the log
                log.exception("reading %s failed", conversation_id)
                self.post_message(ReadFailed(f"Could not read {conversation_id}: {error}"))
                return
            if not get_current_worker().is_cancelled:
                loaded = ConversationLoaded(conversation_id, messages, purpose, record)
                self.post_message(loaded)

        self.run_worker(read, thread=True, exclusive=True, group=group, exit_on_error=False)

    @on(ConversationLoaded)
    async def conversation_loaded(self, message: ConversationLoaded) -> None:
        """Show it in the preview, open it in the reader, or leave with it."""
        if not self.is_active:
            return  # the reader is open, or the screen is on its way out
        if message.purpose == "preview":
            chosen = self.highlighted
            if chosen is None or chosen.conversation_id != message.conversation_id:
                return  # the cursor moved on meanwhile
            self._previewed = message.conversation_id
            self._first_preview_shown.set()
            current = message.conversation_id == self.current_conversation_id
            await self._show_preview(
                conversation_view(
                    message.conversation_id,
                    message.messages,
                    current=current,
                    limit=PREVIEW_LIMIT,
                    record=message.record,
                )
            )
        elif message.purpose == "open":
            reader = ConversationReader(
                message.conversation_id,
                message.messages,
                current=message.conversation_id == self.current_conversation_id,
                record=message.record,
            )
            self.app.push_screen(reader, self._reader_closed)
        else:
            system = message.record.system_prompt if message.record else None
            result = ContinueConversation(message.conversation_id, tuple(message.messages), system)
            self.dismiss(result)

    @on(ReadFailed)
    def read_failed(self, message: ReadFailed) -> None:
        self.say(message.problem, error=True)

    async def _show_preview(self, widgets: list[Widget]) -> None:
        preview = self.query_one("#conversation-preview", VerticalScroll)
        async with preview.batch():
            await preview.remove_children()
            await preview.mount_all(widgets)
        preview.scroll_home(animate=False)

    # ---- actions -----------------------------------------------------------------------
    def action_open(self) -> None:
        """Enter: open the highlighted conversation read-only; on a day, fold or unfold it."""
        node = self.conversation_tree.cursor_node
        if node is None:
            return
        if isinstance(node.data, DaySummary):
            node.toggle()
            return
        chosen = self.highlighted
        if chosen is not None:
            self.load(chosen.conversation_id, "open")

    def action_continue(self) -> None:
        """c: leave with the highlighted conversation, for the chat to continue it."""
        chosen = self.highlighted
        if chosen is None:
            self.say("Highlight a conversation first (a line under a day).", error=True)
        elif not chosen.conversation_id:
            self.say("This conversation has no id in the log, so it cannot go on.", error=True)
        else:
            self.load(chosen.conversation_id, "continue")

    def _reader_closed(self, result: ContinueConversation | None) -> None:
        if result is not None:
            self.dismiss(result)

    def _reload(self) -> None:
        """Read the index again (after a rename or a delete); the cursor stays on its
        conversation (the first one if that was deleted)."""
        chosen = self.highlighted
        self._cursor_target = chosen.conversation_id if chosen is not None else None
        self._cursor_pending = True
        self.conversation_tree.clear()
        self.day_count = 0
        self.index_complete = False
        self._days_of.clear()
        self._leaves_of.clear()
        self._previewed = None
        self._first_preview_shown.set()
        self.read_index()
