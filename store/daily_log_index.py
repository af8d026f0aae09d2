"""A summary of every daily log, kept in `conversation-index.json` beside `conversation/`, so
listing conversations costs one small read per day file that changed, not a parse of a year.

Per day file: its signature (size, mtime in ns, inode) when it was read, and one row per
conversation with live (not superseded) messages in it, in the order they first appear:
the first and last message time, the message count, the first line of its first user
message, the models and the statuses other than `complete`. The daily logs stay the
messages' only source of truth: before each use every day file is `lstat`ed and a file whose
signature differs (appended to, rewritten by `/retry` or `conversations delete` — a rename,
so a new inode —, edited by hand) is read again; a row of a file that is gone is dropped; a
missing or damaged summary file is rebuilt. Writing it is best effort (a read-only data
dir still lists, reading every file).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import threading
from collections.abc import Generator, Iterable
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path

from store.daily_log import SUPERSEDED, DailyLog, LogMessage, parse_messages
from store.private_files import (
    NotRegularFile,
    SymlinkRefused,
    lstat_unlinked,
    open_private,
    write_all,
)

INDEX_FILENAME = "conversation-index.json"
INDEX_VERSION = 1
FIRST_LINE_CHARS = 1000  # of a first user line kept (titles and list lines use far fewer)

Signature = tuple[int, int, int]  # size, mtime_ns, inode


@dataclass(frozen=True, slots=True)
class DayConversation:
    """One conversation's live messages within one day file."""

    conversation_id: str
    started: datetime | None
    ended: datetime | None
    messages: int
    first_user_line: str  # of its first user message with text; blanks collapsed
    models: tuple[str, ...]  # distinct, first seen first
    last_model: str | None  # the model of its last message that names one
    statuses: tuple[str, ...]  # the statuses other than `complete`, first seen first


@dataclass(frozen=True, slots=True)
class DayEntry:
    """One day file's conversations, in the order they first appear in it."""

    day: date
    conversations: tuple[DayConversation, ...]


def summarize(messages: Iterable[LogMessage]) -> tuple[DayConversation, ...]:
    """The rows of one day's messages (superseded ones left out), first appearance first."""
    groups: dict[str, list[LogMessage]] = {}
    for message in messages:
        if message.status != SUPERSEDED:
            groups.setdefault(message.conversation_id, []).append(message)
    return tuple(_row(cid, group) for cid, group in groups.items())


def _row(conversation_id: str, messages: list[LogMessage]) -> DayConversation:
    times = [m.time for m in messages if m.time is not None]
    first_user = next((m.content for m in messages if m.role == "user" and m.content.strip()), "")
    models = [m.model for m in messages if m.model]
    return DayConversation(
        conversation_id=conversation_id,
        started=min(times) if times else None,
        ended=max(times) if times else None,
        messages=len(messages),
        first_user_line=_first_line(first_user)[:FIRST_LINE_CHARS],
        models=tuple(dict.fromkeys(models)),
        last_model=models[-1] if models else None,
        statuses=tuple(dict.fromkeys(m.status for m in messages if m.status != "complete")),
    )


def _first_line(text: str) -> str:
    """The first non-blank line, its runs of blanks collapsed to one space."""
    for line in text.splitlines():
        if line.strip():
            return " ".join(line.split())
    return ""


@dataclass(slots=True)
class Refresh:
    """What the last `DailyLogIndex.entries` did: files read again, rows reused."""

    read: int = 0
    reused: int = 0
    saved: bool = False


class DailyLogIndex:
    """The summary of one data dir's daily logs (`home/conversation-index.json`)."""

    _write_lock = threading.Lock()  # one writer per process; others: atomic rename

    def __init__(self, daily_log: DailyLog, path: Path | None = None) -> None:
        self.daily_log = daily_log
        self.path = path or daily_log.root.parent / INDEX_FILENAME
        self.last = Refresh()

    def entries(self, *, newest_first: bool = False) -> Generator[DayEntry, None, None]:
        """Every day file's entry (days without a live message too), oldest first or newest
        first; changed files are read as the iteration reaches them. The summary file is
        written once the iteration ends (or is closed early: what was read is kept)."""
        known = self._load()
        fresh: dict[str, dict[str, object]] = {}
        self.last = refresh = Refresh()
        days = self.daily_log.days()
        try:
            for day in reversed(days) if newest_first else days:
                name = day.isoformat()
                signature = self._signature(day)
                cached = known.get(name)
                rows = _rows_from(cached, signature) if cached is not None else None
                if rows is None:
                    signature, rows = self._read(day)
                    refresh.read += 1
                    fresh[name] = _entry_json(signature, rows)
                else:
                    refresh.reused += 1
                    fresh[name] = cached  # type: ignore[assignment]
                yield DayEntry(day, rows)
        finally:
            wanted = {day.isoformat() for day in days}
            if refresh.read or set(known) != wanted:
                merged = {k: v for k, v in known.items() if k in wanted} | fresh
                refresh.saved = self._save(merged)

    def refresh(self) -> None:
        """Bring the summary file up to date with the day files (`entries`, read through)."""
        for _entry in self.entries():
            pass

    def _signature(self, day: date) -> Signature | None:
        try:
            info = lstat_unlinked(self.daily_log.path_for(day))
        except (OSError, SymlinkRefused):
            return None
        return None if info is None else (info.st_size, info.st_mtime_ns, info.st_ino)

    def _read(self, day: date) -> tuple[Signature | None, tuple[DayConversation, ...]]:
        """Parse one day file; its signature taken from the open file before reading (an
        append racing the read makes the next check read it again)."""
        path = self.daily_log.path_for(day)
        try:  # like `DailyLog.read_day`: a link or a FIFO in its place is refused
            fd = open_private(path, os.O_RDONLY | os.O_NONBLOCK)
        except FileNotFoundError:
            return None, ()
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise NotRegularFile(path)
            chunks: list[bytes] = []
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
        finally:
            os.close(fd)
        text = b"".join(chunks).decode("utf-8", errors="replace")
        return (info.st_size, info.st_mtime_ns, info.st_ino), summarize(parse_messages(text))

    def _load(self) -> dict[str, dict[str, object]]:
        try:
            fd = open_private(self.path, os.O_RDONLY | os.O_NONBLOCK)
        except (OSError, SymlinkRefused):
            return {}
        try:
            with os.fdopen(fd, "rb") as handle:
                data = json.loads(handle.read())
        except (OSError, ValueError, RecursionError):  # derived: made again from the logs
            return {}
        if not isinstance(data, dict) or data.get("version") != INDEX_VERSION:
            return {}
        days = data.get("days")
        return days if isinstance(days, dict) else {}

    def _save(self, days: dict[str, dict[str, object]]) -> bool:
        """Write the summary file atomically (a private temp file renamed over it); False
        when it cannot be written (a read-only data dir): the next list reads again."""
        if not self.daily_log.root.is_dir():
            return False
        data = json.dumps(
            {"version": INDEX_VERSION, "days": days}, ensure_ascii=False, separators=(",", ":")
        ).encode("utf-8")
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        with self._write_lock:
            try:
                fd = open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
                try:
                    write_all(fd, data)
                finally:
                    os.close(fd)
                os.replace(tmp, self.path)
            except (OSError, SymlinkRefused):
                with contextlib.suppress(OSError):
                    tmp.unlink()
                return False
        return True


def _entry_json(
    signature: Signature | None, rows: tuple[DayConversation, ...]
) -> dict[str, object]:
    return {"sig": list(signature) if signature else None, "rows": [_row_json(r) for r in rows]}


def _row_json(row: DayConversation) -> list[object]:
    return [
        row.conversation_id,
        row.started.isoformat() if row.started else None,
        row.ended.isoformat() if row.ended else None,
        row.messages,
        row.first_user_line,
        list(row.models),
        row.last_model,
        list(row.statuses),
    ]


def _rows_from(
    entry: dict[str, object], signature: Signature | None
) -> tuple[DayConversation, ...] | None:
    """The cached rows when the entry is for this very file, else None (read it again)."""
    if signature is None or not isinstance(entry, dict) or entry.get("sig") != list(signature):
        return None
    try:
        return tuple(_row_from(row) for row in entry["rows"])  # type: ignore[attr-defined]
    except (TypeError, ValueError, IndexError, KeyError):
        return None


def _row_from(row: list[object]) -> DayConversation:
    cid, started, ended, count, first, models, last_model, statuses = row
    if not (isinstance(cid, str) and isinstance(count, int) and isinstance(first, str)):
        raise ValueError("a damaged row")
    return DayConversation(
        conversation_id=cid,
        started=_instant(started),
        ended=_instant(ended),
        messages=count,
        first_user_line=first,
        models=tuple(str(m) for m in models),  # type: ignore[attr-defined]
        last_model=last_model if isinstance(last_model, str) else None,
        statuses=tuple(str(s) for s in statuses),  # type: ignore[attr-defined]
    )


def _instant(value: object) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError("a damaged time")
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:
        raise ValueError("a damaged time")
    return moment
