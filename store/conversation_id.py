"""The conversation id, made and read here only: `20261129-210438-3fa9c1`.

The UTC start time first (sortable), then 6 random hex digits (unique enough for one user).
The daily log and the conversation index read the start date back to skip the day files
before it; an id of another shape (`ask --conversation NAME`) has no start date.
`check_conversation_id` is the format a user-given id must have (`ask --conversation`).
"""

from __future__ import annotations

import re
import secrets
from datetime import UTC, date, datetime

from store.clock import EARLIEST, LATEST, Clock

_ID_RE = re.compile(r"^(\d{4})(\d{2})(\d{2})-\d{6}-[0-9a-f]+$")
_MADE_RE = re.compile(r"^(\d{8}-\d{6})-[0-9a-f]{6}$")
_LOOKS_MADE_RE = re.compile(r"^\d{8}-")
_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,31}$")
ID_FORMAT = (
    "an id like 20261129-210438-3fa9c1 (`straylight history --json` shows them) or a name "
    "of up to 32 lowercase letters, digits and dashes"
)


def new_conversation_id(clock: Clock) -> str:
    """`20261129-210438-3fa9c1`: sortable by start time, unique enough for one user."""
    return f"{clock.now():%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


def check_conversation_id(text: str) -> str:
    """`text` if it is a conversation id a user may give, else a ValueError (one line that
    never repeats `text`: a mistyped paste may be a token). Either the made shape, with a
    real start time within the clock's range (`00010101-000000-abcdef` is refused: the
    history walk starts a day before it), or a short plain name (`project-x`)."""
    made = _MADE_RE.match(text)
    if made is not None:
        try:
            started = datetime.strptime(made[1], "%Y%m%d-%H%M%S").replace(tzinfo=UTC)
        except ValueError:
            started = None
        if started is not None and EARLIEST <= started <= LATEST:
            return text
    elif _NAME_RE.match(text) and not _LOOKS_MADE_RE.match(text):
        return text
    raise ValueError(f"--conversation wants {ID_FORMAT} (the value is not repeated here)")


def start_date(conversation_id: str) -> date | None:
    """The UTC date a conversation id made by `new_conversation_id` starts on, else None."""
    match = _ID_RE.match(conversation_id)
    if match is None:
        return None
    try:
        return date(int(match[1]), int(match[2]), int(match[3]))
    except ValueError:
        return None
