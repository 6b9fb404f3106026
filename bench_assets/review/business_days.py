"""Business days for the vendor-review gate: weekends and US federal holidays are skipped.

Holidays come from the `holidays` package (US federal calendar, with the observed day when a
holiday falls on a weekend, e.g. Friday 3 July 2026 for Independence Day); the arithmetic is
numpy's business-day calendar.

The clock is `today()`, the UTC date. Nothing an operator can set (no environment variable, no
manifest field, no CLI option) moves it: it decides when the review gate opens and which date is
written as `published_on`. An operator who wants to know "could this snapshot be published on that
day?" asks `bench review status SNAPSHOT --on YYYY-MM-DD`, which evaluates the gate and writes
nothing. Tests fix the clock in-process with `fixed_today(day)`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime
from functools import lru_cache

import holidays
import numpy as np

REVIEW_BUSINESS_DAYS = 10
_fixed_day: date | None = None  # set only by fixed_today(), i.e. by a test in this process


@lru_cache(maxsize=64)
def us_federal_holidays(first_year: int, last_year: int) -> tuple[date, ...]:
    """Every US federal holiday (observed dates included) from first_year to last_year."""
    calendar = holidays.country_holidays("US", years=range(first_year, last_year + 1))
    return tuple(sorted(calendar))


def _calendar(start: date, end: date) -> np.busdaycalendar:
    return np.busdaycalendar(weekmask="1111100", holidays=list(us_federal_holidays(start.year - 1, end.year + 1)))


def add_business_days(start: date, days: int) -> date:
    """The date `days` business days after `start` (the day itself does not count)."""
    horizon = date(start.year + 1 + days // 200, 12, 31)
    calendar = _calendar(start, horizon)
    # roll forward from the day after `start`: sending on a Saturday counts from Monday
    first = np.busday_offset(np.datetime64(start) + np.timedelta64(1, "D"), 0, roll="forward", busdaycal=calendar)
    return np.busday_offset(first, days - 1, roll="forward", busdaycal=calendar).astype(object) if days > 0 else start


def business_days_between(start: date, end: date) -> int:
    """Business days after `start` up to and including `end` (0 when end <= start)."""
    if end <= start:
        return 0
    calendar = _calendar(start, end)
    return int(
        np.busday_count(
            np.datetime64(start) + np.timedelta64(1, "D"),
            np.datetime64(end) + np.timedelta64(1, "D"),
            busdaycal=calendar,
        )
    )


def today() -> date:
    """The bench clock: today's UTC date (inside `fixed_today(day)`, that day)."""
    return _fixed_day if _fixed_day is not None else datetime.now(UTC).date()


def clock_is_fixed() -> bool:
    """Whether a test fixed the clock (recorded in the lifecycle note of what it publishes)."""
    return _fixed_day is not None


@contextmanager
def fixed_today(day: date | str) -> Iterator[date]:
    """For tests: `today()` is `day` inside the block, in this process only (Dagster's in-process
    execution included). It is a function call, not configuration: no environment variable, file
    or command reaches it, so a deployed bench always runs on the real date."""
    global _fixed_day
    previous, _fixed_day = _fixed_day, date.fromisoformat(day) if isinstance(day, str) else day
    try:
        yield _fixed_day
    finally:
        _fixed_day = previous


@dataclass(frozen=True)
class ReviewClock:
    """Where one review packet stands: sent on `sent_on`, publishable from `opens_on`."""

    sent_on: date
    opens_on: date
    elapsed: int
    required: int

    @property
    def passed(self) -> bool:
        return self.elapsed >= self.required


def review_clock(sent_on: date, on: date, required: int = REVIEW_BUSINESS_DAYS) -> ReviewClock:
    """Business days elapsed since a packet was sent, and the first day publication may happen."""
    return ReviewClock(
        sent_on=sent_on,
        opens_on=add_business_days(sent_on, required),
        elapsed=business_days_between(sent_on, on),
        required=required,
    )
