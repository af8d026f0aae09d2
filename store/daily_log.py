"""Layer 1: one Markdown file a day, `conversation/YYYY-MM-DD.md`, one block a message.

The format is the interface — the agent reads its short-term history back through
`parse_messages`, so it must survive whatever a message or a human puts in it::

    ### user
    <!-- straylight {"time": "2026-11-29T21:04:38Z", "conversation": "…", "model": "llama3.2"} -->
    the message body, any Markdown

    ### assistant
    <!-- straylight {"time": "…", "conversation": "…", "model": "llama3.2", "status": "cut_off"} -->
    …

A message starts at a line that is exactly `### user` or `### assistant` (trailing blanks
allowed) and nowhere else (the seed's LESSONS §29). A body line that would read as a header
or as our metadata comment gets one extra leading backslash on write and loses one on read,
so any text round-trips. Each message is appended with one `write` and fsynced: a crash can
cut short only the message being written.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Literal

from store.clock import format_instant, parse_instant
from store.conversation_id import start_date
from store.private_files import (
    append_private_bytes,
    ensure_private_dir,
    open_private,
    read_private_bytes,
)

Role = Literal["user", "assistant"]
ROLES: tuple[Role, ...] = ("user", "assistant")

# A message boundary: a whole line that is a known role header, nothing else.
# A file saved with CRLF line ends by an editor still parses (the `\r?`).
HEADER_RE = re.compile(r"^### (user|assistant)[ \t]*(\r?)$", re.MULTILINE)
META_PREFIX = "<!-- straylight "
META_RE = re.compile(r"^<!-- straylight (.*) -->[ \t]*\r?$")
# Body lines that must not be read as structure: headers and our metadata comment,
# with any number of leading backslashes (so escaping stays reversible).
_GUARDED = r"(?:### (?:user|assistant)[ \t]*\r?|<!-- straylight .*)"
_ESCAPE_RE = re.compile(rf"^(\\*{_GUARDED})$", re.MULTILINE)
_UNESCAPE_RE = re.compile(rf"^\\(\\*{_GUARDED})$", re.MULTILINE)
DAY_FILE_RE = re.compile(r"^(\d{4}-\d{2}-\d{2})\.md$")
"""A day file's name in `conversation/` (`2026-11-29.md`); the group is its date."""

MessageStatus = Literal["complete", "cut_off", "cancelled", "failed", "truncated", "superseded"]
# A message `/retry` or an edit replaced: kept in the file, skipped by history, `ask` and
# continuing (store/daily_log_rewrite.py marks it).
SUPERSEDED: MessageStatus = "superseded"
# Metadata key on a message appended right after one that a crash cut short.
PREVIOUS_CUT_SHORT = "previous_cut_short"


@dataclass(frozen=True, slots=True)
class LogMessage:
    """One message as stored in (and read back from) a daily log."""

    role: Role
    content: str
    conversation_id: str = ""
    time: datetime | None = None
    model: str | None = None
    status: MessageStatus = "complete"
    reason: str | None = None
    extra: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        """The stable JSON shape of `straylight history --json`."""
        return {
            "role": self.role,
            "content": self.content,
            "conversation_id": self.conversation_id,
            "time": format_instant(self.time) if self.time else None,
            "model": self.model,
            "status": self.status,
            "reason": self.reason,
        }


def escape_body(text: str) -> str:
    """Give every header-like or metadata-like body line one more leading backslash."""
    return _ESCAPE_RE.sub(r"\\\1", text)


def unescape_body(text: str) -> str:
    """Inverse of `escape_body`."""
    return _UNESCAPE_RE.sub(r"\1", text)


def _meta_line(message: LogMessage) -> str:
    meta: dict[str, object] = {}
    if message.time is not None:
        meta["time"] = format_instant(message.time)
    meta["conversation"] = message.conversation_id
    if message.model:
        meta["model"] = message.model
    if message.status != "complete":
        meta["status"] = message.status
    if message.reason:
        meta["reason"] = message.reason
    meta.update(message.extra)
    # ">" only occurs inside JSON strings; escaping it keeps "-->" out of the comment.
    payload = json.dumps(meta, ensure_ascii=False).replace(">", "\\u003e")
    return f"{META_PREFIX}{payload} -->"


def format_message(message: LogMessage) -> str:
    """The exact text one message adds to a daily log."""
    return f"### {message.role}\n{_meta_line(message)}\n{escape_body(message.content)}\n\n"


def _read_meta(line: str) -> dict[str, object] | None:
    match = META_RE.match(line)
    if match is None:
        return None
    try:
        value = json.loads(match.group(1))
    except (ValueError, RecursionError):  # (nested ten thousand deep: a hostile edit)
        return {}
    return value if isinstance(value, dict) else {}


READ_BACK_EXTRA = ("image", "image_sha256")
"""The metadata keys besides ours that a read keeps in `LogMessage.extra`: an image's path
and hash (agent/image_attachment.py writes them), so a retry can send the picture again."""


def _message_from(role: Role, body: str, meta: dict[str, object], inherited: str) -> LogMessage:
    time_value: datetime | None = None
    raw_time = meta.get("time")
    if isinstance(raw_time, str):
        try:
            time_value = parse_instant(raw_time)
        except ValueError:
            time_value = None
    status = meta.get("status")
    known: tuple[str, ...] = (
        "complete",
        "cut_off",
        "cancelled",
        "failed",
        "truncated",
        "superseded",
    )
    conversation = meta.get("conversation")
    model = meta.get("model")
    reason = meta.get("reason")
    return LogMessage(
        role=role,
        content=unescape_body(body),
        conversation_id=conversation if isinstance(conversation, str) else inherited,
        time=time_value,
        model=model if isinstance(model, str) else None,
        status=status if isinstance(status, str) and status in known else "complete",  # type: ignore[arg-type]
        reason=reason if isinstance(reason, str) else None,
        extra={k: v for k in READ_BACK_EXTRA if isinstance(v := meta.get(k), str)},
    )


def parse_messages(text: str) -> list[LogMessage]:
    """Split a daily log into messages on anchored header lines only.

    Tolerates hand edits: text before the first header is ignored, a header without a
    metadata line is a message without metadata (it inherits the conversation of the
    message before it), a block saved with CRLF line ends reads as if saved with LF, and
    a message cut short by a crash is returned with status `truncated` (the last one of
    the file, or one followed by a message whose metadata says so, or one whose metadata
    line the crash cut: that fragment is dropped, never read as its text).
    """
    headers = list(HEADER_RE.finditer(text))
    messages: list[LogMessage] = []
    conversation = ""
    fragment_before = ""  # a header fragment that ended the previous message's region
    for index, header in enumerate(headers):
        role: Role = "user" if header.group(1) == "user" else "assistant"
        is_last = index + 1 == len(headers)
        end = len(text) if is_last else headers[index + 1].start()
        start = header.end() + 1  # past the header's newline
        if start > end:  # a header at the very end of the file, without its newline
            start = end
        meta: dict[str, object] = {}
        newline = text.find("\n", start, end)
        first_line = text[start:end] if newline == -1 else text[start:newline]
        read = _read_meta(first_line) if first_line.startswith(META_PREFIX) else None
        damaged = read is None and _damaged_meta(first_line)
        if read is not None or damaged:  # a damaged one is dropped: never message text
            meta = read or {}
            start = end if newline == -1 else newline + 1
        region = text[start:end]
        if header.group(2):  # this block was saved with CRLF line ends
            region = region.replace("\r\n", "\n")
        if is_last and (fragment := _header_fragment(region)):
            region = region[: -len(fragment)]  # the next append died inside its header
        cut_short = is_last and _cut_short(
            region.endswith("\n\n"),
            region.endswith("\n"),
            lambda: len(text.encode("utf-8", errors="surrogatepass")),
        )
        body = region[:-2] if region.endswith("\n\n") else region.rstrip("\n")
        message = _message_from(role, body, meta, conversation)
        if (cut_short or damaged) and message.status == "complete":
            message = replace(message, status="truncated")
        if meta.get(PREVIOUS_CUT_SHORT) and messages:
            if fragment_before:  # what was cut short was that header, not the message
                before = messages[-1]
                content = before.content.removesuffix("\n\n" + fragment_before)
                messages[-1] = replace(before, content=content)
            elif messages[-1].status == "complete":
                messages[-1] = replace(messages[-1], status="truncated")
        fragment_before = _header_fragment(region[:-2]) if region.endswith("\n\n") else ""
        conversation = message.conversation_id
        messages.append(message)
    return messages


_HEADERS = ("### user", "### assistant")

CUT_ALIGNMENT = 512
"""A crash cuts a message's one `write` where a block ends: a kill during `write()` stops at
a page boundary (4096 bytes), a power loss at a file-system block (512 bytes or a multiple).
So a file that ends with a single newline was cut there only if its size is a multiple of
this; any other size is a hand edit that dropped the blank line after the last message (an
editor trimming trailing blank lines, a file written by hand), and the message is whole."""


def _cut_short(blank_line: bool, newline: bool, size: Callable[[], int]) -> bool:
    """Whether a file's last message was cut short by a crash: it does not end with its
    blank line, and either does not end with a newline at all or the file's `size` (asked
    only then) ends at a block boundary (`CUT_ALIGNMENT`). The parser and the next append
    both decide by this."""
    if blank_line:
        return False
    return not newline or size() % CUT_ALIGNMENT == 0


def _damaged_meta(line: str) -> bool:
    """A metadata line a crash cut short (`<!-- straylight {"ti`): it starts like ours but
    does not end like it, or it is the first bytes of one. A body line never reads so: one
    that starts like our metadata is written escaped."""
    line = line.rstrip("\r")
    return line.startswith(META_PREFIX) or (bool(line) and META_PREFIX.startswith(line))


def _header_fragment(region: str) -> str:
    """The start of a header a crash cut short at the end of a message's region
    (`\n\n### us`): the part after the last blank line, when it is a proper prefix of a
    header line. A kill during `write()` can stop at any page boundary, even there. (A body
    cut right after a blank line and the first bytes of a `### …` heading reads the same way;
    that message was the one being written, so only its last few bytes are lost.)"""
    _, blank, tail = region.rpartition("\n\n")
    if not blank or not tail or "\n" in tail:
        return ""
    if any(header.startswith(tail) and header != tail for header in _HEADERS):
        return tail
    return ""


_FOLDER_LOCKS: dict[str, threading.RLock] = {}
_FOLDER_LOCKS_GUARD = threading.Lock()


def folder_lock(root: Path) -> threading.RLock:
    """The one lock of a `conversation/` folder in this process. Appends and rewrites take
    it: a rewrite reads a day file and renames a new one over it, so an append in between
    (the chat's turn while a shell's `conversations delete` runs in the data dir's owner)
    was lost. Only the owner writes the folder, so a lock of the process is enough."""
    key = os.path.realpath(root)
    with _FOLDER_LOCKS_GUARD:
        return _FOLDER_LOCKS.setdefault(key, threading.RLock())


@dataclass(slots=True)
class DailyLog:
    """The `conversation/` folder of a data dir."""

    root: Path

    def path_for(self, day: date) -> Path:
        return self.root / f"{day.isoformat()}.md"

    @property
    def lock(self) -> threading.RLock:
        """Held while a day file is appended to or rewritten (`folder_lock`)."""
        return folder_lock(self.root)

    def append(self, message: LogMessage, day: date) -> Path:
        """Append one message to the file of `day` (one write, fsync, mode 0600)."""
        with self.lock:
            ensure_private_dir(self.root, tighten_existing=True)
            path = self.path_for(day)
            separator, cut_short = _separator_needed(path)
            if cut_short:  # the message before was cut short by a crash: say so, durably
                message = replace(message, extra={**message.extra, PREVIOUS_CUT_SHORT: "yes"})
            data = format_message(message).encode("utf-8")
            append_private_bytes(path, separator + data)
            return path

    def days(self) -> list[date]:
        """Dates that have a log file, oldest first."""
        if not self.root.is_dir():
            return []
        found: list[date] = []
        for entry in self.root.iterdir():
            match = DAY_FILE_RE.match(entry.name)
            if match and entry.is_file():
                try:
                    found.append(date.fromisoformat(match.group(1)))
                except ValueError:
                    continue
        return sorted(found)

    def read_day(self, day: date) -> list[LogMessage]:
        """All messages of one day; a missing file is an empty day."""
        path = self.path_for(day)
        try:
            raw = read_private_bytes(path)  # never through a link
        except FileNotFoundError:
            return []
        return parse_messages(raw.decode("utf-8", errors="replace"))

    def iter_days_newest_first(self) -> Iterator[tuple[date, list[LogMessage]]]:
        for day in reversed(self.days()):
            yield day, self.read_day(day)

    def recent(self, conversation_id: str, limit: int) -> list[LogMessage]:
        """The last `limit` messages of one conversation, oldest first (superseded ones
        left out).

        Walks the day files newest first and stops once it has enough, or once it has
        passed the day the conversation started: the date in an id like
        `20261129-210438-3fa9c1` (UTC, so one day earlier is read too, for local file
        dates). A conversation continued weeks later keeps its history across the days in
        between. An id without a date stops at the first day without its messages.
        """
        if limit <= 0:
            return []
        floor = _start_day(conversation_id)
        collected: list[LogMessage] = []
        for day in reversed(self.days()):
            if floor is not None and day < floor:
                break
            mine = [m for m in self.read_day(day) if m.conversation_id == conversation_id]
            if floor is None and not mine and collected:
                break
            collected = [m for m in mine if m.status != SUPERSEDED] + collected
            if len(collected) >= limit:
                break
        return collected[-limit:]


def _start_day(conversation_id: str) -> date | None:
    """The day before the UTC date a conversation id starts with, or None for other ids."""
    started = start_date(conversation_id)
    if started is None or started == date.min:  # year 1 (a hand-written id): no day before
        return None
    return started - timedelta(days=1)


def _separator_needed(path: Path) -> tuple[bytes, bool]:
    """Newlines that make the file's last message end cleanly, and whether a crash cut it
    short (`_cut_short`'s rule: a single final newline is a hand edit unless the file ends
    at a block boundary)."""
    try:
        with os.fdopen(open_private(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as handle:
            handle.seek(0, 2)
            size = handle.tell()
            if size == 0:
                return b"", False
            handle.seek(max(0, size - 4))
            tail = handle.read()
    except FileNotFoundError:
        return b"", False
    # A file an editor saved with CRLF ends its last message with `\r\n\r\n`.
    blank_line = tail.endswith((b"\n\n", b"\r\n\r\n"))
    newline = tail.endswith(b"\n")
    separator = b"" if blank_line else b"\n" if newline else b"\n\n"
    return separator, _cut_short(blank_line, newline, lambda: size)
