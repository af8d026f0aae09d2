"""What a logged conversation looks like on the conversations screens: its day and
conversation lines in the tree, the header over it, its messages read-only, and the result
the chat continues it from (`ContinueConversation`, turned back into chat widgets by
`chat_widgets`). Pure functions and the read-only message widget; no I/O."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING

from rich.text import Text
from textual.widget import Widget
from textual.widgets import Static

from store.daily_log import LogMessage
from tui.conversation_index import (
    PROBLEM_STATUSES,
    ConversationSummary,
    DaySummary,
    propose_title,
)
from tui.display_text import counted, printable
from tui.widgets.chat_message import STATUS_LABELS, ChatMessage

if TYPE_CHECKING:
    from store.conversation_store import ConversationRecord


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
        widget.reason = message.reason  # "⚠ failed: Ollama is not reachable at …" (issue 16)
        widget.set_class(message.status in PROBLEM_STATUSES, "-problem")
        widgets.append(widget)
    return widgets


def day_label(summary: DaySummary) -> Text:
    """`2026-11-29 · 3 conversations`: an ISO date (short enough for the tree at 80 columns)
    and the count. The separator ends the bold run rather than starting the dim one: SVG
    renderers drop a styled run's leading spaces (the snapshots read "20263 conversations")."""
    count = len(summary.conversations)
    label = Text(f"{summary.day:%Y-%m-%d} · ", style="bold")
    label.append(counted(count, "conversation"), style="dim")
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
    first = next((m.content for m in messages if m.role == "user" and m.content.strip()), "")
    title = record.title if record is not None and record.title else propose_title(first)
    if title:  # the one it was given, else the one proposed from its first message
        text = Text(printable(title) + "\n", style="bold") + text
    if current:
        text.append(" · current", style="bold")
    facts = [counted(len(messages), "message")]
    if days:
        facts.append(_days_text(days))
    if models:  # the day file's metadata: a hand edit can put anything there, a line break too
        facts.append(printable(", ".join(models)).replace("\n", "\u240a"))
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
        note = f"… {counted(hidden, 'more message')}: Enter opens all of it"
        widgets.append(Static(note, classes="conversation-more"))
    return widgets
