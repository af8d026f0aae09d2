"""The one clock every component asks for the time.

`STRAYLIGHT_NOW` (ISO 8601) freezes it, so tests, support and a user's bug report can
reproduce decay, due dates, log file names and schedules exactly.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

# Decay, due dates and local days do arithmetic of up to a year on an instant: one closer than
# that to the ends of `datetime` would raise OverflowError deep inside a command.
_MARGIN = timedelta(days=366)
EARLIEST = datetime.min.replace(tzinfo=UTC) + _MARGIN
LATEST = datetime.max.replace(tzinfo=UTC) - _MARGIN


def parse_instant(text: str) -> datetime:
    """Parse an ISO 8601 instant; a value without a zone is taken as UTC.

    A ValueError (one line) for text that is not an instant or lies within a year of the
    ends of `datetime` (`STRAYLIGHT_NOW=9999-12-31T23:59:59-12:00`, year 1)."""
    value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    try:
        in_range = EARLIEST <= value.astimezone(UTC) <= LATEST
    except OverflowError:
        in_range = False
    if not in_range:
        raise ValueError(
            "instant out of range: it needs a year on either side of it "
            f"({EARLIEST.date().isoformat()} to {LATEST.date().isoformat()} UTC)"
        )
    return value.astimezone(UTC)


@dataclass(frozen=True, slots=True)
class Clock:
    """Aware-UTC time source; `fixed` freezes it at one instant. Inside `command_clock`,
    every clock of the process answers with that command's (see there)."""

    fixed: datetime | None = None

    def now(self) -> datetime:
        override = _command_clock.get()
        if override is not None and override is not self:
            return override.now()
        if self.fixed is not None:
            return self.fixed
        return datetime.now(UTC)


_command_clock: ContextVar[Clock | None] = ContextVar("straylight_command_clock", default=None)


@contextlib.contextmanager
def command_clock(clock: Clock) -> Iterator[None]:
    """Run a command another process forwarded with its own clock (its `STRAYLIGHT_NOW`, or
    none): the owner's open database and store keep the clock they opened with, so without
    this a served `remember` or `facts set` was stamped with the owner's time. A context
    variable: the owner's own work, in other contexts, keeps its clock."""
    token = _command_clock.set(clock)
    try:
        yield
    finally:
        _command_clock.reset(token)


def format_instant(value: datetime) -> str:
    """Render an aware datetime as compact UTC ISO 8601 (`2026-11-29T21:04:38Z`)."""
    text = value.astimezone(UTC).isoformat(timespec="seconds")
    return text.replace("+00:00", "Z")
