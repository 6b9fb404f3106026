"""Business days for the vendor-review gate: weekends and US federal holidays (observed) skipped."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from bench_assets.review.business_days import (
    add_business_days,
    business_days_between,
    clock_is_fixed,
    fixed_today,
    review_clock,
    today,
    us_federal_holidays,
)
from bench_assets.review.gate import review_gate


def test_ten_business_days_skip_the_observed_independence_day():
    # Friday 26 June 2026 + 10 business days: 3 July (Independence Day observed, a Friday) is skipped
    assert date(2026, 7, 3) in us_federal_holidays(2026, 2026)
    assert add_business_days(date(2026, 6, 26), 10) == date(2026, 7, 13)
    assert business_days_between(date(2026, 6, 26), date(2026, 7, 10)) == 9
    assert business_days_between(date(2026, 6, 26), date(2026, 7, 13)) == 10
    # Juneteenth (Friday 19 June 2026) is skipped too
    assert add_business_days(date(2026, 6, 5), 10) == date(2026, 6, 22)
    assert add_business_days(date(2026, 9, 11), 10) == date(2026, 9, 25)  # no holiday in between


def test_thanksgiving_and_christmas_weeks():
    assert add_business_days(date(2026, 11, 20), 10) == date(2026, 12, 7)  # Thanksgiving 26 Nov skipped
    assert add_business_days(date(2026, 12, 18), 10) == date(2027, 1, 5)  # 25 Dec and 1 Jan skipped


def test_a_packet_sent_on_a_weekend_counts_from_monday():
    assert add_business_days(date(2026, 6, 27), 10) == add_business_days(date(2026, 6, 26), 10)


@settings(max_examples=200, deadline=None)
@given(st.dates(min_value=date(2025, 1, 1), max_value=date(2030, 12, 31)), st.integers(min_value=1, max_value=30))
def test_add_and_count_agree_with_a_day_by_day_walk(start, days):
    holidays = set(us_federal_holidays(2024, 2032))
    day, left = start, days
    while left:
        day += timedelta(days=1)
        if day.weekday() < 5 and day not in holidays:
            left -= 1
    assert add_business_days(start, days) == day
    assert business_days_between(start, day) == days
    assert business_days_between(start, day - timedelta(days=1)) == days - 1


def test_a_holiday_on_a_weekend_is_skipped_on_its_observed_weekday():
    # Juneteenth 2027 is a Saturday, observed Friday 18 June; Independence Day 2027 is a Sunday,
    # observed Monday 5 July. Neither weekend day is a business day anyway; the observed days are skipped.
    assert date(2027, 6, 18) in us_federal_holidays(2027, 2027) and date(2027, 6, 18).weekday() == 4
    assert date(2027, 7, 5) in us_federal_holidays(2027, 2027) and date(2027, 7, 5).weekday() == 0
    # sent Friday 11 June 2027: 14–17 June are days 1–4, Friday 18 June is skipped, 21–25 June are 5–9
    assert business_days_between(date(2027, 6, 11), date(2027, 6, 18)) == 4
    assert add_business_days(date(2027, 6, 11), 10) == date(2027, 6, 28)
    # sent Friday 25 June 2027: Monday 5 July is skipped, so ten business days end on Monday 12 July
    assert add_business_days(date(2027, 6, 25), 10) == date(2027, 7, 12)
    assert not review_clock(date(2027, 6, 25), date(2027, 7, 9)).passed
    assert review_clock(date(2027, 6, 25), date(2027, 7, 12)).passed


def test_the_bench_clock_is_the_real_date_and_only_a_test_can_fix_it(monkeypatch):
    # the old escape hatch is gone: no environment variable moves the clock
    monkeypatch.setenv("BENCH_TODAY", "2001-01-01")
    assert today() == datetime.now(UTC).date() and not clock_is_fixed()
    with fixed_today("2026-07-13") as day:
        assert today() == day == date(2026, 7, 13) and clock_is_fixed()
        assert review_clock(date(2026, 6, 26), today()).passed
        with fixed_today(date(2026, 7, 1)):
            assert today() == date(2026, 7, 1)
        assert today() == date(2026, 7, 13)
    assert today() == datetime.now(UTC).date() and not clock_is_fixed()


def test_the_gate_needs_every_vendor_on_time_and_unchanged():
    sent = pd.DataFrame(
        [
            {"vendor": "exa", "sent_on": date(2026, 6, 26), "packet_sha256": "a"},
            {"vendor": "brave", "sent_on": date(2026, 6, 29), "packet_sha256": "b"},
        ]
    )
    current = {"exa": "a", "brave": "b"}
    assert not review_gate(["exa", "brave"], sent, current, date(2026, 7, 13), 10).passed  # brave: 9 days
    assert review_gate(["exa", "brave"], sent, current, date(2026, 7, 14), 10).passed
    changed = review_gate(["exa", "brave"], sent, {**current, "exa": "c"}, date(2026, 8, 1), 10)
    assert not changed.passed and "exa: figures changed" in changed.summary()
    missing = review_gate(["exa", "brave", "tavily"], sent, current, date(2026, 8, 1), 10)
    assert "tavily: no review packet sent" in missing.summary()
