"""The conversation id, made and read here only: `20261129-210438-3fa9c1`.

The UTC start time first (sortable), then 6 random hex digits (unique enough for one user).
The daily log and the conversation index read the start date back to skip the day files
before it; an id of another shape (`ask --conversation NAME`) has no start date.
"""

from __future__ import annotations

import re
import secrets
from datetime import date

from store.clock import Clock

_ID_RE = re.compile(r"^(\d{4})(\d{2})(\d{2})-\d{6}-[0-9a-f]+$")


def new_conversation_id(clock: Clock) -> str:
    """`20261129-210438-3fa9c1`: sortable by start time, unique enough for one user."""
    return f"{clock.now():%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


def start_date(conversation_id: str) -> date | None:
    """The UTC date a conversation id made by `new_conversation_id` starts on, else None."""
    match = _ID_RE.match(conversation_id)
    if match is None:
        return None
    try:
        return date(int(match[1]), int(match[2]), int(match[3]))
    except ValueError:
        return None
