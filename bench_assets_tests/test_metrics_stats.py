"""Intervals and summary statistics, checked against statsmodels and numpy."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from statsmodels.stats.proportion import confint_proportions_2indep, proportion_confint

from bench_assets.metrics import (
    Interval,
    cost_per_correct,
    intervals_overlap,
    newcombe_interval,
    overfit_gap,
    percentile,
    tie_groups,
    wilson_interval,
)

SIZES = [1, 2, 3, 5, 7, 10, 17, 30, 50, 100, 333, 1000]


def grid(sizes):
    """(successes, n) pairs over the sizes, always including 0 and n."""
    for n in sizes:
        counts = sorted({0, 1, n // 3, n // 2, n - 1, n} & set(range(n + 1)))
        for successes in counts:
            yield successes, n


@pytest.mark.parametrize("confidence", [0.95, 0.90, 0.99])
def test_wilson_matches_statsmodels(confidence: float) -> None:
    for successes, n in grid(SIZES):
        ours = wilson_interval(successes, n, confidence)
        low, high = proportion_confint(successes, n, alpha=1 - confidence, method="wilson")
        assert ours.value == successes / n
        assert ours.low == pytest.approx(low, abs=1e-9), (successes, n)
        assert ours.high == pytest.approx(high, abs=1e-9), (successes, n)
        assert 0.0 <= ours.low <= ours.value <= ours.high <= 1.0


def test_wilson_edges_are_exact() -> None:
    assert wilson_interval(0, 20).low == 0.0
    assert wilson_interval(20, 20).high == 1.0


def test_wilson_with_no_observations_is_undefined_not_nan() -> None:
    assert wilson_interval(0, 0) == Interval(None, None, None)


@pytest.mark.parametrize(("confidence", "sizes"), [(0.95, [1, 3, 10, 30, 100, 400]), (0.90, [2, 25, 1000])])
def test_newcombe_matches_statsmodels(confidence: float, sizes: list[int]) -> None:
    pairs = list(grid(sizes))
    for (x1, n1), (x2, n2) in itertools.product(pairs, repeat=2):
        ours = newcombe_interval(x1, n1, x2, n2, confidence)
        low, high = confint_proportions_2indep(
            x1, n1, x2, n2, method="newcomb", compare="diff", alpha=1 - confidence
        )
        assert ours.value == pytest.approx(x1 / n1 - x2 / n2, abs=1e-15)
        assert ours.low == pytest.approx(low, abs=1e-9), (x1, n1, x2, n2)
        assert ours.high == pytest.approx(high, abs=1e-9), (x1, n1, x2, n2)
        assert ours.low <= ours.value <= ours.high


def test_overfit_gap_is_public_minus_holdout_with_newcombe_interval() -> None:
    gap = overfit_gap(public_correct=140, public_n=200, holdout_correct=50, holdout_n=90)
    low, high = confint_proportions_2indep(140, 200, 50, 90, method="newcomb", compare="diff")
    assert gap.value == pytest.approx(0.7 - 50 / 90)
    assert (gap.low, gap.high) == (pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12))
    assert gap.low > 0  # a real gap: the interval excludes 0
    assert overfit_gap(5, 10, 0, 0) == Interval(None, None, None)
    assert overfit_gap(0, 0, 5, 10) == Interval(None, None, None)


def test_counts_are_validated() -> None:
    with pytest.raises(ValueError):
        wilson_interval(11, 10)
    with pytest.raises(ValueError):
        wilson_interval(-1, 10)
    with pytest.raises(ValueError):
        wilson_interval(1.5, 10)
    with pytest.raises(ValueError):
        wilson_interval(1, 10, confidence=1.0)
    assert wilson_interval(np.int64(3), 10.0).value == 0.3


def test_cost_per_correct() -> None:
    assert cost_per_correct(12.5, 50) == 0.25
    assert cost_per_correct(0, 10) == 0.0  # free plan, some correct
    assert cost_per_correct(12.5, 0) is None  # undefined, never 0 or inf
    assert cost_per_correct(0.0, 0) is None
    with pytest.raises(ValueError):
        cost_per_correct(-1.0, 3)
    with pytest.raises(ValueError):
        cost_per_correct(float("nan"), 3)
    with pytest.raises(ValueError):
        cost_per_correct(1.0, -3)


def test_intervals_overlap() -> None:
    assert intervals_overlap((0.1, 0.5), (0.4, 0.9))
    assert intervals_overlap((0.1, 0.5), (0.5, 0.9))  # touching counts
    assert not intervals_overlap((0.1, 0.5), (0.51, 0.9))
    assert intervals_overlap(Interval(0.3, 0.1, 0.5), (0.2, 0.3, 0.6))
    assert not intervals_overlap(Interval(None, None, None), (0.0, 1.0))


def test_tie_groups_compare_with_the_group_leader() -> None:
    entries = [
        ("a", 0.90, 0.85, 0.95),
        ("b", 0.86, 0.80, 0.91),  # overlaps a → group 1
        ("c", 0.80, 0.74, 0.84),  # overlaps b but not the leader a → group 2
        ("d", 0.78, 0.70, 0.85),  # overlaps c (leader of group 2) → group 2
        ("e", 0.50, 0.40, 0.60),  # group 3
        ("f", 0.10, None, None),  # undefined interval → own group
    ]
    assert tie_groups(entries) == [1, 1, 2, 2, 3, 4]
    assert tie_groups([]) == []
    assert tie_groups([("only", 0.5, 0.4, 0.6)]) == [1]


def test_tie_groups_requires_descending_order() -> None:
    with pytest.raises(ValueError):
        tie_groups([("a", 0.5, 0.4, 0.6), ("b", 0.7, 0.6, 0.8)])


@pytest.mark.parametrize("q", [0, 5, 25, 50, 95, 99, 100])
def test_percentile_matches_numpy_linear(q: float) -> None:
    rng = np.random.default_rng(7)
    values = rng.lognormal(5, 1, size=101).tolist()
    assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)), rel=1e-15)


def test_percentile_small_cases() -> None:
    assert percentile([], 50) is None
    assert percentile([3.0], 95) == 3.0
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([10, 20], 95) == pytest.approx(19.5)
    with pytest.raises(ValueError):
        percentile([1.0, math.nan], 50)
    with pytest.raises(ValueError):
        percentile([1.0], 101)
