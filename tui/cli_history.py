"""`straylight history [--date D] [--conversation ID] [--json]`: one day's parsed messages.

Reads only the day files (never the database, never creates the data dir). A
`--conversation` the logs do not hold at all is an unknown id, as `reflect` and `forget`
treat one: one line, exit 1 (`ask --conversation`'s format check decides whether it is a
mistyped value instead: exit 2). One held only on other days is an empty answer for this
day; the plain output names its last day.
"""

from __future__ import annotations

import json
import re
import sys
from datetime import date, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from agent.gateway_errors import EXIT_NOT_FOUND, EXIT_OK, EXIT_USAGE
from agent.settings import Settings
from tui.cli_output import fail, for_terminal

if TYPE_CHECKING:
    from store.daily_log import DailyLog

_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


class HistoryUsageError(ValueError):
    """A `--date` that is not YYYY-MM-DD (the CLI turns it into exit 2)."""


def history(
    settings: Settings, day_text: str | None, conversation: str | None, *, as_json: bool
) -> int:
    """Print one day's messages (superseded ones left out), of one conversation if given."""
    from store.daily_log import SUPERSEDED, DailyLog

    day = _day(settings, day_text)
    daily_log = DailyLog(settings.home / "conversation")
    messages = [m for m in daily_log.read_day(day) if m.status != SUPERSEDED]
    last_day: date | None = None
    if conversation:
        messages = [m for m in messages if m.conversation_id == conversation]
        if not messages:
            last_day = last_day_of(daily_log, conversation)
            if last_day is None:
                return _unknown_conversation(settings.home, conversation)
    if last_day is not None:  # `[]` or nothing on stdout; the note names where it is
        print(
            for_terminal(
                f"no messages of {conversation} on {day.isoformat()} (its last day: "
                f"{last_day.isoformat()}, --date {last_day.isoformat()})"
            ),
            file=sys.stderr,
        )
    if as_json:
        print(json.dumps([m.to_json() for m in messages], ensure_ascii=False, indent=2))
        return EXIT_OK
    if not messages:
        if last_day is None and settings.home.is_dir():  # (none: the CLI's own line says so)
            print(f"no messages on {day.isoformat()}", file=sys.stderr)
        return EXIT_OK
    for message in messages:
        stamp = message.time.astimezone().strftime("%H:%M:%S") if message.time else "--:--:--"
        marker = "" if message.status == "complete" else f" [{message.status.replace('_', ' ')}]"
        if message.reason and message.status != "complete":
            marker += f" {message.reason}"
        print(for_terminal(f"── {stamp} {message.role} · {message.conversation_id}{marker}"))
        print(for_terminal(message.content))
        print()
    return EXIT_OK


def _day(settings: Settings, day_text: str | None) -> date:
    if day_text is None:
        return settings.clock.now().astimezone().date()
    try:
        if not _ISO_DAY.fullmatch(day_text):
            raise ValueError(day_text)
        return date.fromisoformat(day_text)
    except ValueError:
        raise HistoryUsageError(f"--date wants YYYY-MM-DD, got {day_text!r}") from None


def last_day_of(daily_log: DailyLog, conversation: str) -> date | None:
    """The newest day file holding a live message of `conversation`, or None. Walks the days
    newest first; for a made id it stops a day before the id's start date (UTC ids, local
    file dates)."""
    from store.conversation_id import start_date
    from store.daily_log import SUPERSEDED

    started = start_date(conversation)
    floor = started - timedelta(days=1) if started is not None else None
    for day in reversed(daily_log.days()):
        if floor is not None and day < floor:
            break
        if any(
            m.conversation_id == conversation and m.status != SUPERSEDED
            for m in daily_log.read_day(day)
        ):
            return day
    return None


def _unknown_conversation(home: Path, conversation: str) -> int:
    """Exit 2 for a value `ask --conversation` refuses (not repeated: it may be a pasted
    token), else exit 1 naming the id and where to find the real ones."""
    from tui.cli_ask import conversation_option

    try:
        conversation_option(conversation)
    except ValueError as error:
        return fail(str(error), EXIT_USAGE)
    if not home.is_dir():
        return fail(f"no conversation {conversation!r}: no data dir at {home}", EXIT_NOT_FOUND)
    return fail(
        f"no conversation {conversation!r} in the logs (straylight conversations lists them)",
        EXIT_NOT_FOUND,
    )
