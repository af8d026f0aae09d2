"""Times named in a message ("in May 2023", "on October 13, 2023", "last week"), resolved
to spans of dates that recall can compare with the points' dates.

English only, and only what can be resolved without a model: a day ("13 October 2023",
"October 13, 2023"), a month with or without its year ("in May", "May 2023"), a year
("in 2023"), and a few relative spans counted back from `now` ("yesterday", "last week",
"last month", "last year", "N days/weeks/months ago"). Anything vaguer ("before the trip")
is left to the words and the vectors.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final

_MONTHS: Final = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH: Final = r"(?P<{}>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_YEAR: Final = r"(?P<{}>(?:19|20)\d\d)"
_DAY_FIRST: Final = re.compile(
    r"\b(?P<d>[0-3]?\d)(?:st|nd|rd|th)?\s+" + _MONTH.format("m") + r",?\s+" + _YEAR.format("y"),
    re.IGNORECASE,
)
_MONTH_FIRST: Final = re.compile(
    r"\b" + _MONTH.format("m") + r"\s+(?P<d>[0-3]?\d)(?:st|nd|rd|th)?,?\s+" + _YEAR.format("y"),
    re.IGNORECASE,
)
_MONTH_YEAR: Final = re.compile(
    r"\b" + _MONTH.format("m") + r",?\s+(?:of\s+)?" + _YEAR.format("y"), re.IGNORECASE
)
# A month alone only after "in"/"during"/"since"/"last"...: "may" is also a verb.
_MONTH_ALONE: Final = re.compile(
    r"\b(?:in|during|since|early|late|mid|last|this|of)\s+" + _MONTH.format("m") + r"\b",
    re.IGNORECASE,
)
_YEAR_ALONE: Final = re.compile(r"\b(?:in|during|since|of)\s+" + _YEAR.format("y") + r"\b")
_AGO: Final = re.compile(
    r"\b(?P<n>\d+|a|an|one|two|three|four|five|six)\s+(?P<unit>day|week|month|year)s?\s+ago\b",
    re.IGNORECASE,
)
_LAST: Final = re.compile(r"\b(?P<which>yesterday|last\s+(?:week|weekend|month|year))\b", re.I)
_NUMBERS: Final = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_UNIT_DAYS: Final = {"day": 1, "week": 7, "month": 30, "year": 365}


@dataclass(frozen=True, slots=True)
class DateSpan:
    """A span of time a message names: [start, end) in UTC, or a month of any year
    (`month` set, `start`/`end` None) for "in May" without a year."""

    start: datetime | None = None
    end: datetime | None = None
    month: int | None = None

    def contains(self, when: datetime) -> bool:
        if self.month is not None:
            return when.month == self.month
        assert self.start is not None and self.end is not None
        return self.start <= when.astimezone(UTC) < self.end


def _day(year: int, month: int, day: int) -> DateSpan | None:
    try:
        start = datetime(year, month, day, tzinfo=UTC)
    except ValueError:
        return None
    return DateSpan(start, start + timedelta(days=1))


def _month(year: int, month: int) -> DateSpan:
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
    return DateSpan(start, end)


def date_spans(text: str, now: datetime) -> list[DateSpan]:
    """The spans of time `text` names, in the order found; [] when it names none."""
    spans: list[DateSpan] = []
    taken: list[tuple[int, int]] = []

    def free(match: re.Match[str]) -> bool:
        return all(match.end() <= a or match.start() >= b for a, b in taken)

    for pattern in (_DAY_FIRST, _MONTH_FIRST):
        for match in pattern.finditer(text):
            span = _day(int(match["y"]), _MONTHS[match["m"].lower()], int(match["d"]))
            if span is not None and free(match):
                spans.append(span)
                taken.append(match.span())
    for match in _MONTH_YEAR.finditer(text):
        if free(match):
            spans.append(_month(int(match["y"]), _MONTHS[match["m"].lower()]))
            taken.append(match.span())
    for match in _MONTH_ALONE.finditer(text):
        if free(match):
            spans.append(DateSpan(month=_MONTHS[match["m"].lower()]))
            taken.append(match.span())
    for match in _YEAR_ALONE.finditer(text):
        if free(match):
            year = int(match["y"])
            start = datetime(year, 1, 1, tzinfo=UTC)
            spans.append(DateSpan(start, datetime(year + 1, 1, 1, tzinfo=UTC)))
    today = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    for match in _AGO.finditer(text):
        raw = match["n"].lower()
        days = (int(raw) if raw.isdigit() else _NUMBERS[raw]) * _UNIT_DAYS[match["unit"].lower()]
        slack = timedelta(days=max(1, days // 4))  # "three weeks ago" is not to the day
        centre = today - timedelta(days=days)
        spans.append(DateSpan(centre - slack, centre + slack + timedelta(days=1)))
    for match in _LAST.finditer(text):
        which = " ".join(match["which"].lower().split())
        back = {"yesterday": 1, "last weekend": 7, "last week": 7, "last month": 31}.get(which, 366)
        spans.append(DateSpan(today - timedelta(days=back), today + timedelta(days=1)))
    return spans
