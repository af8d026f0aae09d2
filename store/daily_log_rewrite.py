"""Rewriting a daily log file: dropping messages (`conversations delete`) or marking them
superseded (`/retry`, an edited resend).

The logs are append-only everywhere else; these are the two edits a user asks for. Each works
on the file's bytes, message block by message block (a block runs from its `### role` header
to the next one, the same anchors `parse_messages` splits on, so block *i* is message *i*).
A block that stays is kept byte for byte; a superseded block gets `"status": "superseded"` in
its metadata line (its other keys kept). The new text is written to a temp file in the same
folder, fsynced, renamed over the old one and the folder fsynced: a crash leaves the old file
or the new one, never a mix. A file left without any message is removed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from datetime import date
from pathlib import Path
from typing import Literal

from store.daily_log import (
    HEADER_RE,
    META_PREFIX,
    META_RE,
    SUPERSEDED,
    DailyLog,
    LogMessage,
    parse_messages,
)
from store.daily_log_index import DailyLogIndex
from store.private_files import fsync_dir, read_private_bytes, write_private_bytes

Edit = Literal["keep", "drop", "supersede"]
Decide = Callable[[int, LogMessage], Edit]


def rewrite_text(text: str, decide: Decide) -> tuple[str, int]:
    """`text` with each message dropped, superseded or kept as `decide(index, message)`
    says; the new text and how many messages changed."""
    messages = parse_messages(text)
    headers = list(HEADER_RE.finditer(text))
    if len(headers) != len(messages):  # cannot happen: one message per header
        raise ValueError("daily log blocks and messages disagree")
    parts = [text[: headers[0].start()] if headers else text]
    changed = 0
    for index, (header, message) in enumerate(zip(headers, messages, strict=True)):
        end = headers[index + 1].start() if index + 1 < len(headers) else len(text)
        block = text[header.start() : end]
        edit = decide(index, message)
        if edit == "drop":
            changed += 1
            continue
        if edit == "supersede" and message.status != SUPERSEDED:
            block = _superseded_block(block)
            changed += 1
        parts.append(block)
    return "".join(parts), changed


def _superseded_block(block: str) -> str:
    """The block with `"status": "superseded"` in its metadata line (one is added after the
    header when it has none)."""
    header_end = block.find("\n")
    if header_end == -1:  # a header at the very end of the file
        return block + "\n" + _meta_line({"status": SUPERSEDED}) + "\n"
    line_end = block.find("\n", header_end + 1)
    line_end = len(block) if line_end == -1 else line_end
    line = block[header_end + 1 : line_end]
    match = META_RE.match(line) if line.startswith(META_PREFIX) else None
    meta: dict[str, object] = {}
    if match is not None:
        try:
            value = json.loads(match.group(1))
        except (ValueError, RecursionError):
            value = {}
        meta = value if isinstance(value, dict) else {}
        meta["status"] = SUPERSEDED
        ending = "\r" if line.endswith("\r") else ""
        return block[: header_end + 1] + _meta_line(meta) + ending + block[line_end:]
    return (
        block[: header_end + 1]
        + _meta_line({"status": SUPERSEDED})
        + "\n"
        + block[header_end + 1 :]
    )


def _meta_line(meta: dict[str, object]) -> str:
    payload = json.dumps(meta, ensure_ascii=False).replace(">", "\\u003e")
    return f"{META_PREFIX}{payload} -->"


def rewrite_day(daily_log: DailyLog, day: date, decide: Decide) -> int:
    """Rewrite the file of `day` atomically as `decide` says; how many messages changed
    (0: the file is left untouched)."""
    path = daily_log.path_for(day)
    with daily_log.lock:  # no append between the read and the rename (`folder_lock`)
        try:
            raw = read_private_bytes(path)  # never through a link
        except FileNotFoundError:
            return 0
        text = raw.decode("utf-8", errors="surrogateescape")
        new_text, changed = rewrite_text(text, decide)
        if not changed:
            return 0
        if not HEADER_RE.search(new_text) and not new_text.strip():
            path.unlink()
            fsync_dir(path.parent)
        else:
            replace_file(path, new_text.encode("utf-8", errors="surrogateescape"))
        return changed


def replace_file(path: Path, data: bytes) -> None:
    """Write `data` to a temp file of a unique name beside `path` (0600, `mkstemp`: a link,
    FIFO or folder planted at a fixed temp name hung or broke a rewrite half done), fsync
    it, rename it over `path`, fsync the folder."""
    write_private_bytes(path, data)
    fsync_dir(path.parent)


def drop_conversation(
    daily_log: DailyLog, conversation_id: str, days: Iterable[date] | None = None
) -> tuple[int, list[date]]:
    """Remove every message of a conversation from the day files `days` (default: all of
    them): (messages, days changed). The list's summary file (`conversation-index.json`),
    when there is one, is brought up to date too: it held the conversation's first line."""
    with daily_log.lock:  # two deletes of one conversation: the second finds nothing
        return _drop_conversation(daily_log, conversation_id, days)


def _drop_conversation(
    daily_log: DailyLog, conversation_id: str, days: Iterable[date] | None
) -> tuple[int, list[date]]:
    removed = 0
    changed: list[date] = []
    for day in daily_log.days() if days is None else sorted(set(days)):
        count = rewrite_day(
            daily_log,
            day,
            lambda _i, m: "drop" if m.conversation_id == conversation_id else "keep",
        )
        if count:
            removed += count
            changed.append(day)
    index = DailyLogIndex(daily_log)
    if changed and os.path.lexists(index.path):  # it holds the conversation's first line
        index.refresh()  # reads the changed days again, rewrites the file
    return removed, changed


def supersede_last_exchange(daily_log: DailyLog, conversation_id: str) -> list[LogMessage]:
    """Mark the conversation's last user message and everything after it in that
    conversation (its reply, a failed one too) superseded; those messages, the user's
    first ([] when the conversation has no live user message). An exchange that went on
    past midnight (the question in one day file, its reply in the next) is found across the
    day files, and each file that holds a part of it is rewritten."""
    with daily_log.lock:  # the indexes chosen here are the ones rewritten
        return _supersede_last_exchange(daily_log, conversation_id)


def _supersede_last_exchange(daily_log: DailyLog, conversation_id: str) -> list[LogMessage]:
    later: list[tuple[date, list[int], list[LogMessage]]] = []  # newest first
    for day in reversed(daily_log.days()):
        messages = daily_log.read_day(day)
        live = [
            i
            for i, m in enumerate(messages)
            if m.conversation_id == conversation_id and m.status != SUPERSEDED
        ]
        if not live:
            continue
        users = [i for i in live if messages[i].role == "user"]
        if not users:  # replies only: the question is on an earlier day
            later.append((day, live, messages))
            continue
        chosen = [i for i in live if i >= users[-1]]
        rewrite_day(daily_log, day, _superseding(set(chosen)))
        for later_day, indexes, _ in later:
            rewrite_day(daily_log, later_day, _superseding(set(indexes)))
        taken = [messages[i] for i in chosen]
        for _, indexes, later_messages in reversed(later):  # oldest first after the question
            taken += [later_messages[i] for i in indexes]
        return taken
    return []


def _superseding(indexes: set[int]) -> Decide:
    """A `Decide` that supersedes the messages at these indexes and keeps the rest."""

    def decide(index: int, _message: LogMessage) -> Edit:
        return "supersede" if index in indexes else "keep"

    return decide
