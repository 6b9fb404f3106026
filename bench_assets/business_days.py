"""Business days for the vendor-review gate: weekends and US federal holidays are skipped.

Holidays come from the `holidays` package (US federal calendar, with the observed day when a
holiday falls on a weekend, e.g. Friday 3 July 2026 for Independence Day); the arithmetic is
numpy's business-day calendar. The clock is `today()`: `$BENCH_TODAY` (YYYY-MM-DD) when set, so
an operator or a test can ask "could this snapshot be published on that day?", else the UTC date.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import date, datetime, timezone
from functools import lru_cache

import holidays
import numpy as np

from bench_assets.errors import BenchInputError

REVIEW_BUSINESS_DAYS = 10
TODAY_ENV = "BENCH_TODAY"


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
    return int(np.busday_count(np.datetime64(start) + np.timedelta64(1, "D"), np.datetime64(end) + np.timedelta64(1, "D"),
                               busdaycal=calendar))


def today() -> date:
    """The bench clock: `$BENCH_TODAY` (YYYY-MM-DD) if set, else today's UTC date."""
    value = os.environ.get(TODAY_ENV, "").strip()
    if not value:
        return datetime.now(timezone.utc).date()
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise BenchInputError(f"${TODAY_ENV}", [(None, TODAY_ENV, f"{value!r} is not a date (YYYY-MM-DD)")]) from None


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
    return ReviewClock(sent_on=sent_on, opens_on=add_business_days(sent_on, required),
                       elapsed=business_days_between(sent_on, on), required=required)
