"""The memory browser's filters: role, pinned only and a range of local days, as the user
sets them and as the point store reads them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from store.point_records import PointFilter, PointRow

ROLE_CYCLE: tuple[str | None, ...] = (None, "user", "assistant", "doc")


def parse_day(text: str) -> date | None:
    """A YYYY-MM-DD day; None for an empty box. Raises ValueError for anything else."""
    text = text.strip()
    if not text:
        return None
    try:
        return date.fromisoformat(text) if len(text) == 10 else _bad_day(text)
    except ValueError:
        return _bad_day(text)


def _bad_day(text: str) -> date:
    raise ValueError(f"“{text}” is not a date: use YYYY-MM-DD")


def day_start(day: date) -> datetime:
    """Local midnight at the start of `day`, as an aware datetime."""
    return datetime.combine(day, time.min).astimezone()


def _bound(day: date, *, after: bool = False) -> datetime | None:
    """Local midnight at the start of `day` (of the day after it, `after`); None, an open
    end, where that is past what a datetime holds: "to 9999-12-31" means no end (it failed
    the list with "date value out of range"), "from 0001-01-01" east of UTC no start."""
    try:
        return day_start(day + timedelta(days=1) if after else day)
    except (OverflowError, ValueError):
        return None


@dataclass(frozen=True, slots=True)
class BrowserFilter:
    """The filters as the user set them: role (None: all), pinned only, and a day range
    (both ends included, local days)."""

    role: str | None = None
    pinned_only: bool = False
    since: date | None = None
    until: date | None = None

    def for_store(self) -> PointFilter:
        """The same filter as the point store reads it (a half-open range of instants)."""
        from store.point_records import PointFilter

        return PointFilter(
            role=self.role,
            pinned_only=self.pinned_only,
            since=_bound(self.since) if self.since else None,
            until=_bound(self.until, after=True) if self.until else None,
        )

    def describe(self) -> str:
        """A short summary for the title line, "" when nothing is filtered."""
        parts = []
        if self.role:
            parts.append(self.role)
        if self.pinned_only:
            parts.append("pinned")
        if self.since or self.until:
            parts.append(f"{self.since or '…'} – {self.until or '…'}")
        return ", ".join(parts)


def passes(row: PointRow, where: PointFilter) -> bool:
    """Whether a row passes a filter (the same test `PointStore` runs in SQL)."""
    return (
        (where.role is None or row.role == where.role)
        and (not where.pinned_only or row.pinned)
        and (where.since is None or row.created_at >= where.since)
        and (where.until is None or row.created_at < where.until)
    )
