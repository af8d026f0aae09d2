"""Layer 1 seen as conversations: the daily logs grouped by day and conversation id.

Pure (no Textual), so the Conversations screen can run it in a worker thread and tests can
call it directly. The list and the screen's day index come from the logs' summary file
(store/daily_log_index.py): a day file is parsed again only when it changed since it was
summarized, one file at a time, newest first for the screen, so the newest days show while
older changed ones are still being read.

A conversation that spans midnight (or that was continued days later) appears under every
day it has messages in; `load_conversation` gathers all of its messages, oldest first.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from contextlib import closing
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from store.clock import format_instant
from store.conversation_id import start_date
from store.daily_log import SUPERSEDED, DailyLog, LogMessage
from store.daily_log_index import DailyLogIndex, DayConversation, DayEntry
from tui.display_text import ellipsize, first_line

# Statuses that mean a message did not arrive whole: shown with a warning mark.
PROBLEM_STATUSES = frozenset({"truncated", "failed", "cut_off"})
FIRST_LINE_WIDTH = 72  # characters of the first user line kept in a summary


@dataclass(frozen=True, slots=True)
class ConversationSummary:
    """One conversation's messages within one day file."""

    day: date
    conversation_id: str
    started: datetime | None
    ended: datetime | None
    message_count: int
    first_line: str
    models: tuple[str, ...]
    statuses: tuple[str, ...]  # the statuses other than "complete", first seen first

    @property
    def has_problem(self) -> bool:
        """Whether any message of it was truncated, failed or cut off."""
        return any(status in PROBLEM_STATUSES for status in self.statuses)


@dataclass(frozen=True, slots=True)
class DaySummary:
    """The conversations of one day file, the one started last first."""

    day: date
    conversations: tuple[ConversationSummary, ...]


def trim_line(text: str, width: int = FIRST_LINE_WIDTH) -> str:
    """The first non-blank line of `text`, blanks collapsed, at most `width` characters."""
    return ellipsize(" ".join(first_line(text).split()), width)


def summarize_conversation(
    day: date, conversation_id: str, messages: list[LogMessage]
) -> ConversationSummary:
    """The summary of one conversation's messages (non-empty, file order) in one day."""
    times = [m.time for m in messages if m.time is not None]
    first_user = next((m.content for m in messages if m.role == "user" and m.content.strip()), "")
    return ConversationSummary(
        day=day,
        conversation_id=conversation_id,
        started=min(times) if times else None,
        ended=max(times) if times else None,
        message_count=len(messages),
        first_line=trim_line(first_user),
        models=_distinct(m.model for m in messages if m.model),
        statuses=_distinct(m.status for m in messages if m.status != "complete"),
    )


def summarize_messages(day: date, messages: list[LogMessage]) -> DaySummary:
    """Group one day's messages by conversation; the latest-started conversation first."""
    groups: dict[str, list[LogMessage]] = {}
    for message in messages:
        if message.status == SUPERSEDED:  # replaced by /retry or an edit: not shown
            continue
        groups.setdefault(message.conversation_id, []).append(message)
    summaries = [summarize_conversation(day, cid, group) for cid, group in groups.items()]
    return DaySummary(day=day, conversations=_latest_started_first(summaries))


def _latest_started_first(
    summaries: list[ConversationSummary],
) -> tuple[ConversationSummary, ...]:
    """Newest first; a conversation without any time sorts after the timed ones, in file
    order."""
    order = sorted(
        range(len(summaries)), key=lambda i: (_start_key(summaries[i]), -i), reverse=True
    )
    return tuple(summaries[i] for i in order)


def summarize_day(daily_log: DailyLog, day: date) -> DaySummary:
    """Read and summarize one day file."""
    return summarize_messages(day, daily_log.read_day(day))


def iter_day_summaries(daily_log: DailyLog) -> Iterator[DaySummary]:
    """Every day that has messages, newest first, from the logs' summary file
    (store/daily_log_index.py): only a day file that changed since it was summarized is
    read again, one file per step."""
    with closing(DailyLogIndex(daily_log).entries(newest_first=True)) as entries:
        for entry in entries:
            summary = _day_summary(entry)
            if summary.conversations:
                yield summary


def _day_summary(entry: DayEntry) -> DaySummary:
    """A day's summary from its index entry: what `summarize_messages` makes of the file."""
    summaries = [
        ConversationSummary(
            day=entry.day,
            conversation_id=row.conversation_id,
            started=row.started,
            ended=row.ended,
            message_count=row.messages,
            first_line=trim_line(row.first_user_line),
            models=row.models,
            statuses=row.statuses,
        )
        for row in entry.conversations
    ]
    return DaySummary(day=entry.day, conversations=_latest_started_first(summaries))


def conversation_index(daily_log: DailyLog) -> list[DaySummary]:
    """All days with their conversations, newest day first."""
    return list(iter_day_summaries(daily_log))


def conversation_days(days: Iterable[DaySummary]) -> dict[str, list[date]]:
    """Each conversation id → the days it has messages in, oldest first."""
    found: dict[str, list[date]] = {}
    for summary in sorted(days, key=lambda s: s.day):
        for conversation in summary.conversations:
            found.setdefault(conversation.conversation_id, []).append(summary.day)
    return found


def load_conversation(
    daily_log: DailyLog, conversation_id: str, days: Iterable[date] | None = None
) -> list[LogMessage]:
    """All messages of one conversation from every day file, oldest day first, file order
    (the superseded ones left out).

    `days` (from an index: `conversation_days`) limits the files read. Without it, the
    days before the start encoded in a `new_conversation_id` id are skipped (one day of
    slack: ids are UTC, file names local dates); any other id reads every file.
    """
    wanted = sorted(set(days)) if days is not None else days_from_start(daily_log, conversation_id)
    collected: list[LogMessage] = []
    for day in wanted:
        collected.extend(
            m
            for m in daily_log.read_day(day)
            if m.conversation_id == conversation_id and m.status != SUPERSEDED
        )
    return collected


def days_from_start(daily_log: DailyLog, conversation_id: str) -> list[date]:
    """The day files that can hold messages of this conversation, oldest first: those from
    the day before its id's date on, and any earlier one the logs' summary finds it in (a
    message written while the clock was behind, a day file copied in from elsewhere)."""
    all_days = daily_log.days()
    started = start_date(conversation_id)
    if started is None:
        return all_days
    earliest = started - timedelta(days=1)
    found_earlier = set(_days_holding(daily_log, conversation_id, before=earliest))
    return [day for day in all_days if day >= earliest or day in found_earlier]


def _days_holding(daily_log: DailyLog, conversation_id: str, *, before: date) -> list[date]:
    """The days before `before` whose files hold a live message of the conversation."""
    with closing(DailyLogIndex(daily_log).entries()) as entries:
        return [
            entry.day
            for entry in entries
            if entry.day < before
            and any(row.conversation_id == conversation_id for row in entry.conversations)
        ]


def _start_key(summary: ConversationSummary) -> float:
    """A sort key for the start time; no time at all sorts as the earliest."""
    return summary.started.timestamp() if summary.started is not None else float("-inf")


def _distinct(values: Iterable[str]) -> tuple[str, ...]:
    """The values without repeats, in first-seen order."""
    return tuple(dict.fromkeys(values))


TITLE_WIDTH = 80  # characters of a title proposed from the first message


# bold and code marks around words; not `__` (`__init__`), not inside a word (`2**10`)
_EMPHASIS_RE = re.compile(r"(?<![\w*`])(\*\*|`)(?=\S)(.+?)(?<=\S)\1(?![\w*`])")


def propose_title(first_message: str) -> str:
    """A title from the first user message, without a model call: its first non-blank line,
    Markdown marks at the start (`#`, `>`, `-`, `*`), the marks of bold and code around
    words (`**bold**`, `` `code` ``) and runs of blanks removed, at most
    `TITLE_WIDTH` characters."""
    line = " ".join(first_line(first_message).split())
    line = _EMPHASIS_RE.sub(r"\2", line).lstrip("#>-* \t")
    return ellipsize(line, TITLE_WIDTH)


def clean_title(text: str) -> str:
    """A title the user typed, as kept: secrets masked (then shown as stored), one line,
    blanks collapsed, at most 200 characters."""
    from memory.secret_masking import mask_secrets

    return ellipsize(" ".join(mask_secrets(text).split()), 200)


@dataclass(frozen=True, slots=True)
class ConversationInfo:
    """One conversation across all its days: `straylight conversations --json`'s row."""

    conversation_id: str
    title: str
    title_set: bool  # False: proposed from the first message
    started: datetime | None
    last: datetime | None
    messages: int
    model: str | None  # the model of its last message that names one
    days: tuple[date, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.conversation_id,
            "title": self.title,
            "started": format_instant(self.started) if self.started else None,
            "last": format_instant(self.last) if self.last else None,
            "messages": self.messages,
            "model": self.model,
        }


def list_conversations(daily_log: DailyLog, titles: dict[str, str]) -> list[ConversationInfo]:
    """Every conversation of the logs (superseded messages left out), the one written to last
    first; `titles` are the ones users set, by id. Built from the logs' summary file: a
    day file is read again only when it changed since (store/daily_log_index.py)."""
    found: dict[str, list[tuple[date, DayConversation]]] = {}
    with closing(DailyLogIndex(daily_log).entries()) as entries:
        for entry in entries:
            for row in entry.conversations:
                found.setdefault(row.conversation_id, []).append((entry.day, row))
    infos = [_info_from_rows(cid, rows, titles.get(cid)) for cid, rows in found.items()]
    return sorted(
        infos, key=lambda i: i.last.timestamp() if i.last else float("-inf"), reverse=True
    )


def _info_from_rows(
    conversation_id: str, rows: list[tuple[date, DayConversation]], title: str | None
) -> ConversationInfo:
    """One conversation's row from its days' summary rows (oldest day first): the times,
    message counts and models of its live messages, the title proposed from its first user
    message unless one was set."""
    starts = [row.started for _day, row in rows if row.started is not None]
    ends = [row.ended for _day, row in rows if row.ended is not None]
    first_user = next((row.first_user_line for _day, row in rows if row.first_user_line), "")
    models = [row.last_model for _day, row in rows if row.last_model]
    return ConversationInfo(
        conversation_id=conversation_id,
        title=title or propose_title(first_user),
        title_set=bool(title),
        started=min(starts) if starts else None,
        last=max(ends) if ends else None,
        messages=sum(row.messages for _day, row in rows),
        model=models[-1] if models else None,
        days=tuple(day for day, _row in rows),
    )


def conversation_info(daily_log: DailyLog, conversation_id: str) -> ConversationInfo | None:
    """One conversation's row (its proposed title) from the logs' summary, over every day
    file, as `conversations` lists it (a message in a file dated before the id's date
    counts: the clock was behind, or the file was copied in); None when no live message of
    it is found."""
    rows: list[tuple[date, DayConversation]] = []
    with closing(DailyLogIndex(daily_log).entries()) as entries:
        for entry in entries:
            rows.extend(
                (entry.day, row)
                for row in entry.conversations
                if row.conversation_id == conversation_id
            )
    return _info_from_rows(conversation_id, rows, None) if rows else None
