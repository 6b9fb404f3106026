"""The cost–quality frontier and its budget bands (aggregate.frontier), and $ per 1,000 correct
(metrics.usd_per_thousand_correct): pure functions, as leaderboard.json and the page use them."""

from __future__ import annotations

import pytest

from bench_assets.aggregate.frontier import (
    COST_METRIC,
    BudgetBand,
    FrontierPoint,
    board_bands,
    budget_bands,
    mark_pareto_optimal,
    pareto_optimal,
)
from bench_assets.metrics import Interval, cost_per_correct_interval, usd_per_thousand_correct


def test_dollars_per_thousand_correct_is_the_cost_per_correct_interval_times_1000():
    cpc = cost_per_correct_interval(2.5, 40, 100)
    per_k = usd_per_thousand_correct(cpc)
    assert per_k.value == pytest.approx(1000 * 2.5 / 40)
    assert (per_k.low, per_k.high) == pytest.approx((1000 * cpc.low, 1000 * cpc.high))
    assert per_k.low < per_k.value < per_k.high


def test_dollars_per_thousand_correct_is_undefined_at_zero_correct_and_zero_when_free():
    assert usd_per_thousand_correct(cost_per_correct_interval(3.0, 0, 50)) == Interval(None, None, None)
    assert usd_per_thousand_correct(cost_per_correct_interval(0.0, 5, 50)) == Interval(0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="finite amount"):
        usd_per_thousand_correct(Interval(-1.0, 0.0, 1.0))


def P(name: str, cost: float, quality: float) -> FrontierPoint:
    return FrontierPoint(name, cost, quality)


def test_pareto_optimal_keeps_only_what_nothing_beats_on_both():
    points = [P("cheap", 1.0, 0.5), P("dear_worse", 5.0, 0.4), P("mid", 2.0, 0.7), P("best", 9.0, 0.9)]
    assert [p.name for p in pareto_optimal(points)] == ["cheap", "mid", "best"]


def test_ties_equal_points_are_both_optimal_equal_cost_or_quality_keeps_the_better():
    points = [P("a", 2.0, 0.7), P("b", 2.0, 0.7), P("same_cost_worse", 2.0, 0.6), P("same_rate_dearer", 3.0, 0.7)]
    assert [p.name for p in pareto_optimal(points)] == ["a", "b"]


def test_budget_bands_name_the_best_at_each_budget():
    points = [P("cheap", 1.0, 0.5), P("dear_worse", 5.0, 0.4), P("mid", 2.0, 0.7), P("best", 9.0, 0.9)]
    assert budget_bands(points) == [
        BudgetBand(0.0, 1.0, (), None, None),
        BudgetBand(1.0, 2.0, ("cheap",), 0.5, 1.0),
        BudgetBand(2.0, 9.0, ("mid",), 0.7, 2.0),
        BudgetBand(9.0, None, ("best",), 0.9, 9.0),
    ]
    tied = budget_bands([P("a", 0.0, 0.7), P("b", 0.0, 0.7)])  # free and tied: one band, both named, no empty band
    assert tied == [BudgetBand(0.0, None, ("a", "b"), 0.7, 0.0)]
    assert budget_bands([]) == []


def test_entries_without_a_cost_or_not_scored_are_never_optimal():
    entries = [
        {"vendor": "a", "status": "scored", "metrics": {"r": {"value": 0.6}, COST_METRIC: {"value": 4.0}}},
        # no correct answer: cost undefined, even with the best-looking rate it is no candidate
        {"vendor": "b", "status": "scored", "metrics": {"r": {"value": 0.0}, COST_METRIC: {"value": None}}},
        {"vendor": "c", "status": "excluded", "metrics": {}},
        {"vendor": "d", "status": "scored", "metrics": {"r": {"value": 0.5}, COST_METRIC: {"value": 5.0}}},
    ]
    mark_pareto_optimal(entries, "r")
    assert {e["vendor"]: e["pareto_optimal"] for e in entries} == {"a": True, "b": False, "c": False, "d": False}
    assert board_bands({"rank_metric": "r", "vendors": entries})[-1].best == ("a",)


def test_bad_points_are_refused():
    with pytest.raises(ValueError, match="unique"):
        pareto_optimal([P("a", 1.0, 0.5), P("a", 2.0, 0.6)])
    with pytest.raises(ValueError, match="finite"):
        pareto_optimal([P("a", -1.0, 0.5)])
