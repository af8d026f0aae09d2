"""The one clock every component asks for the time.

`STRAYLIGHT_NOW` (ISO 8601) freezes it, so tests, support and a user's bug report can
reproduce decay, due dates, log file names and schedules exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime


def parse_instant(text: str) -> datetime:
    """Parse an ISO 8601 instant; a value without a zone is taken as UTC."""
    value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


@dataclass(frozen=True, slots=True)
class Clock:
    """Aware-UTC time source; `fixed` freezes it at one instant."""

    fixed: datetime | None = None

    def now(self) -> datetime:
        if self.fixed is not None:
            return self.fixed
        return datetime.now(UTC)


def format_instant(value: datetime) -> str:
    """Render an aware datetime as compact UTC ISO 8601 (`2026-11-29T21:04:38Z`)."""
    text = value.astimezone(UTC).isoformat(timespec="seconds")
    return text.replace("+00:00", "Z")
