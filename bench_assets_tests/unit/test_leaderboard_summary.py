"""The leaderboard's ten-second read (bench_assets/publish/summary.py): the lead over the next
vendor from the leader's side, whichever way round the pair was recorded; who the paired test
cannot tell apart from the first; nothing invented when no comparison was computed."""

from __future__ import annotations

import pytest

from bench_assets.publish.summary import first_place, gaps_to_next


def entry(vendor: str, rate: float, cost: float) -> dict:
    return {
        "vendor": vendor,
        "status": "scored",
        "metrics": {
            "correct_rate_shared": {"value": rate, "low": rate - 0.1, "high": rate + 0.05, "n": 60},
            # the first screen's cost is the ranking figure's rows' (the overall one counts extract rows too)
            "cost_per_correct_shared_usd": {"value": cost, "low": cost * 0.9, "high": cost * 1.1, "n": 60},
            "cost_per_correct_usd": {"value": cost / 2, "low": cost * 0.45, "high": cost * 0.55, "n": 90},
        },
    }


def pair(a: str, b: str, diff: float, low: float, high: float, better: str | None) -> dict:
    return {
        "vendor_a": a,
        "vendor_b": b,
        "n": 60,
        "difference": {"value": diff, "low": low, "high": high},
        "better": better,
    }


@pytest.fixture
def board() -> dict:
    return {
        "rank_metric": "correct_rate_shared",
        "vendors": [
            entry("exa", 0.9, 0.005),
            entry("tavily", 0.85, 0.010),
            entry("brave", 0.6, 0.007),
            {"vendor": "kagi", "status": "excluded"},
        ],
        "comparisons": {
            "pairs": [
                # recorded from the later vendor's side: the lead is the negation, the interval's ends swapped
                pair("tavily", "exa", -0.05, -0.161, 0.058, None),
                pair("brave", "exa", -0.3, -0.42, -0.17, "exa"),
                pair("brave", "tavily", -0.25, -0.37, -0.12, "tavily"),
            ]
        },
    }


def test_the_lead_over_the_next_vendor_is_from_the_leaders_side(board):
    gaps = gaps_to_next(board)
    assert list(gaps) == ["exa", "tavily", "brave"]  # scored vendors only, in the board's order
    assert gaps["exa"] == {
        "other": "tavily",
        "n": 60,
        "value": 0.05,
        "low": pytest.approx(-0.058),
        "high": pytest.approx(0.161),
        "told_apart": False,
    }
    assert gaps["tavily"]["other"] == "brave" and gaps["tavily"]["value"] == pytest.approx(0.25)
    assert gaps["tavily"]["told_apart"] is True and (gaps["tavily"]["low"], gaps["tavily"]["high"]) == (0.12, 0.37)
    assert gaps["brave"] is None  # last: no one to lead


def test_first_place_names_who_the_paired_test_cannot_tell_apart_from_it(board):
    first = first_place(board)
    assert first["vendor"] == "exa" and first["figure"]["value"] == 0.9 and first["cost"]["value"] == 0.005
    assert first["compared"] and first["tied"] == ["tavily"]
    assert first["gap"]["other"] == "tavily"


def test_without_a_paired_comparison_nothing_is_claimed(board):
    del board["comparisons"]
    first = first_place(board)
    assert first["compared"] is False and first["tied"] == [] and first["gap"] is None
    assert set(gaps_to_next(board).values()) == {None}


def test_no_scored_vendor_no_first_place():
    assert (
        first_place({"rank_metric": "correct_rate_shared", "vendors": [{"vendor": "kagi", "status": "excluded"}]})
        is None
    )
