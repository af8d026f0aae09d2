"""The Conversations screen: the daily logs by day and conversation; read one, continue it.

Left, a tree of days (newest first) and their conversations (time range, message count,
first line; the app's current conversation marked). Right, the highlighted conversation,
read-only. Enter opens it full-width in a `ConversationReader` (Esc back to the list);
`c`, here or in the reader, dismisses the screen with a `ContinueConversation` that the app
turns back into its chat log (`chat_widgets`) and whose id (and system prompt) it adopts.
`r` renames the highlighted conversation, `d` deletes it after a y/n, `e` exports it as
Markdown (tui/screens/conversation_actions.py); a title set shows instead of the first line,
the system prompt in the preview's header.

Every file is read in a worker thread; the workers report back with messages. The index
arrives a day at a time, newest first, so the newest days show before a year of logs is read.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING, ClassVar, Literal

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Static, Tree
from textual.widgets.tree import TreeNode
from textual.worker import get_current_worker

from store.daily_log import DailyLog, LogMessage
from tui.conversation_index import (
    PROBLEM_STATUSES,
    ConversationSummary,
    DaySummary,
    iter_day_summaries,
    load_conversation,
)
from tui.display_text import printable
from tui.screens.confirm_screen import ConfirmScreen
from tui.screens.conversation_actions import (
    TitlePrompt,
    delete_conversation,
    export_conversation,
)
from tui.screens.memory_screen import MemoryScreen
from tui.widgets.chat_message import STATUS_LABELS, ChatMessage

if TYPE_CHECKING:
    from memory.conversation_notes import ConversationNotes
    from memory.memory_store import MemoryStore
    from store.conversation_store import ConversationRecord

EXPANDED_DAYS = 7  # the newest days start expanded; older ones open with Enter or Space
PREVIEW_LIMIT = 30  # messages in the preview; Enter opens the whole conversation
BATCH_DAYS = 30  # days per message from the index worker after the first one
FIRST_PREVIEW_WAIT = 1.0  # seconds the index worker pauses after the newest day for its preview
Purpose = Literal["preview", "open", "continue"]
log = logging.getLogger("straylight.tui")


@dataclass(frozen=True, slots=True)
class ContinueConversation:
    """The screen's result when the user continues a conversation: adopt its id, show these."""

    conversation_id: str
    messages: tuple[LogMessage, ...]
    system_prompt: str | None = None  # the conversation's own (`/system`), carried on

    @property
    def started(self) -> datetime | None:
        """When its first timed message was written."""
        return next((m.time for m in self.messages if m.time is not None), None)


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


@dataclass
class ConversationChanged(Message):
    """A rename, delete or export finished (`problem`: why it failed)."""

    text: str
    reload: bool
    problem: bool = False


class ReadOnlyMessage(ChatMessage, can_focus=False):
    """A logged message shown read-only: not focusable, so no pin/forget/copy keys."""


def chat_status(status: str) -> str:
    """The `ChatMessage` status for a logged status (one it has no label for reads cut off)."""
    return status if status in STATUS_LABELS else "cut_off"


def chat_widgets(messages: Iterable[LogMessage], *, read_only: bool = False) -> list[ChatMessage]:
    """The `ChatMessage` widgets the chat log would have shown for these logged messages."""
    kind = ReadOnlyMessage if read_only else ChatMessage
    widgets: list[ChatMessage] = []
    for message in messages:
        widget = kind(
            message.role,
            message.content,
            time=message.time,
            model=message.model,
            status=chat_status(message.status),
        )
        widget.set_class(message.status in PROBLEM_STATUSES, "-problem")
        widgets.append(widget)
    return widgets


def day_label(summary: DaySummary) -> Text:
    """`Sun 29 Nov 2026  3 conversations`."""
    count = len(summary.conversations)
    label = Text(f"{summary.day:%a %d %b %Y}", style="bold")
    label.append(f"  {count} conversation{'' if count == 1 else 's'}", style="dim")
    return label


def time_range(started: datetime | None, ended: datetime | None) -> str:
    """`21:04–21:30` in local time, `21:04` for one instant, `--:--` without times."""
    if started is None or ended is None:
        return "--:--"
    first, last = f"{started.astimezone():%H:%M}", f"{ended.astimezone():%H:%M}"
    return first if first == last else f"{first}–{last}"


def conversation_label(
    summary: ConversationSummary, *, current: bool, continued: bool = False, title: str = ""
) -> Text:
    """`21:04–21:30 (6) ⚠ the first user line`; the current conversation marked, and `↳` on
    the part of a conversation that began on an earlier day."""
    label = Text(time_range(summary.started, summary.ended))
    label.append(f" ({summary.message_count})", style="dim")
    if summary.has_problem:
        label.append(" ⚠", style="bold yellow")
    if current:
        label.append(" current", style="bold reverse")
    label.append(" ↳" if continued else "", style="dim")
    label.append(" ")
    if title:
        label.append(printable(title), style="bold")
        return label
    first_line = printable(summary.first_line) or "(no user message)"
    label.append(first_line, style="" if summary.first_line else "dim")
    return label


def describe(
    conversation_id: str,
    messages: Sequence[LogMessage],
    *,
    current: bool,
    record: ConversationRecord | None = None,
) -> Text:
    """The header over a read-only conversation: title, id; size, days, models; its system
    prompt; problems."""
    days = sorted({m.time.astimezone().date() for m in messages if m.time is not None})
    models = list(dict.fromkeys(m.model for m in messages if m.model))
    problems = [m.status for m in messages if m.status in PROBLEM_STATUSES]
    text = Text(printable(conversation_id) or "(no conversation id)", style="bold")
    if record is not None and record.title:
        text = Text(printable(record.title) + "\n", style="bold") + text
    if current:
        text.append(" · current", style="bold")
    facts = [f"{len(messages)} message{'' if len(messages) == 1 else 's'}"]
    if days:
        facts.append(_days_text(days))
    if models:
        facts.append(", ".join(models))
    text.append("\n" + " · ".join(facts))
    if record is not None and record.system_prompt:
        prompt = " ".join(record.system_prompt.split())
        text.append(f"\nsystem prompt: {printable(prompt)}", style="italic")
    if problems:
        counts = {status: problems.count(status) for status in dict.fromkeys(problems)}
        marks = ", ".join(f"{n} {status.replace('_', ' ')}" for status, n in counts.items())
        text.append(f"\n⚠ {marks}", style="bold yellow")
    return text


def _days_text(days: list[date]) -> str:
    if len(days) == 1:
        return f"{days[0]:%a %d %b %Y}"
    return f"{days[0]:%d %b} – {days[-1]:%d %b %Y} ({len(days)} days)"


def conversation_view(
    conversation_id: str,
    messages: Sequence[LogMessage],
    *,
    current: bool,
    limit: int | None = None,
    record: ConversationRecord | None = None,
) -> list[Widget]:
    """Header, the messages read-only (a day rule where the day changes), a 'more' note."""
    shown = list(messages if limit is None else messages[:limit])
    head = describe(conversation_id, messages, current=current, record=record)
    widgets: list[Widget] = [Static(head, classes="conversation-head")]
    last_day: date | None = None
    for message, widget in zip(shown, chat_widgets(shown, read_only=True), strict=True):
        day = message.time.astimezone().date() if message.time is not None else None
        if day is not None and last_day is not None and day != last_day:
            widgets.append(Static(f"── {day:%a %d %b %Y} ──", classes="conversation-day-rule"))
        last_day = day or last_day
        widgets.append(widget)
    hidden = len(messages) - len(shown)
    if hidden > 0:
        note = f"… {hidden} more message{'' if hidden == 1 else 's'}: Enter opens all of it"
        widgets.append(Static(note, classes="conversation-more"))
    return widgets


class ConversationsScreen(MemoryScreen[ContinueConversation | None]):
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

    def compose_body(self) -> ComposeResult:
        tree: Tree[ConversationSummary | DaySummary] = Tree("days", id="conversation-tree")
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
        if tree.cursor_node is None and tree.root.children:
            self.call_after_refresh(self._put_cursor_on_first)
        if message.done:
            self.index_complete = True
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
        title = self.titles.get(cid, "")
        for later in self._leaves_of.get(cid, []):
            if isinstance(later.data, ConversationSummary):
                later.set_label(
                    conversation_label(later.data, current=current, continued=True, title=title)
                )
        label = conversation_label(conversation, current=current, title=title)
        leaf = day.add_leaf(label, conversation)
        self._leaves_of.setdefault(cid, []).append(leaf)
        self._days_of.setdefault(cid, []).insert(0, conversation.day)

    def _put_cursor_on_first(self) -> None:
        tree = self.conversation_tree
        if tree.cursor_node is None and tree.root.children:
            day = tree.root.children[0]
            tree.move_cursor(day.children[0] if day.children else day)

    def _say_index_size(self) -> None:
        if not self.day_count:
            self.say("No conversations yet: the daily logs are empty.")
            return
        total = len(self._days_of)
        self.say(
            f"{total} conversation{'' if total == 1 else 's'} on {self.day_count} "
            f"day{'' if self.day_count == 1 else 's'} · Enter opens · c continues · "
            "r renames · d deletes · e exports"
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

    # ---- rename, delete, export (tui/screens/conversation_actions.py) -----------------------
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
        text = (
            f"Deleted {conversation_id}: {done.messages} messages, "
            f"{done.points} memory points forgotten."
        )
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

    def _reload(self) -> None:
        """Read the index again (after a rename or a delete)."""
        self.conversation_tree.clear()
        self.day_count = 0
        self.index_complete = False
        self._days_of.clear()
        self._leaves_of.clear()
        self._previewed = None
        self._first_preview_shown.set()
        self.read_index()


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
