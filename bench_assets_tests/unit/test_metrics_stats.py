"""Intervals and summary statistics, checked against statsmodels and numpy."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.proportion import confint_proportions_2indep, proportion_confint

from bench_assets.metrics import (
    Interval,
    cost_per_correct,
    cost_per_correct_interval,
    newcombe_interval,
    overfit_gap,
    percentile,
    percentile_interval,
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
        low, high = confint_proportions_2indep(x1, n1, x2, n2, method="newcomb", compare="diff", alpha=1 - confidence)
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


def test_cost_per_correct_interval_carries_the_wilson_bounds_of_the_rate() -> None:
    # $12.60 billed over 168 rows, 84 correct: $0.15 per correct
    iv = cost_per_correct_interval(12.6, 84, 168)
    low, high = proportion_confint(84, 168, method="wilson")
    assert iv.value == pytest.approx(0.15)
    assert iv.low == pytest.approx(12.6 / (168 * high), rel=1e-12)
    assert iv.high == pytest.approx(12.6 / (168 * low), rel=1e-12)
    assert iv.low < iv.value < iv.high
    # every correct: the best plausible rate is 1, so the low end is the spend per row
    assert cost_per_correct_interval(5.0, 10, 10).low == pytest.approx(0.5)
    # a free plan is exactly free; zero correct is undefined, never 0 or infinity
    assert cost_per_correct_interval(0.0, 3, 10) == Interval(0.0, 0.0, 0.0)
    assert cost_per_correct_interval(4.0, 0, 10) == Interval(None, None, None)
    assert cost_per_correct_interval(0.0, 0, 0) == Interval(None, None, None)
    with pytest.raises(ValueError):
        cost_per_correct_interval(1.0, 11, 10)
    with pytest.raises(ValueError):
        cost_per_correct_interval(-1.0, 1, 10)


# Rank groups from overlapping intervals (`tie_groups`, `rank_ranges`, `intervals_overlap`) are
# gone: which vendors differ is decided by paired tests, tested in unit/test_metrics_paired.py.


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


def test_percentile_interval_textbook_median_of_20() -> None:
    """The classic table value: for n = 20 the distribution-free 95 % interval for the median
    runs from the 6th to the 15th smallest value (coverage 1 − 2·P(B ≤ 5) = 0.9586 for
    B ~ Binomial(20, 1/2))."""
    values = (float(x) for x in range(120, 100, -1))  # any iterable, in any order
    iv = percentile_interval(values, 50)
    assert iv.value == 110.5
    assert (iv.low, iv.high) == (106.0, 115.0)
    coverage = stats.binom.cdf(14, 20, 0.5) - stats.binom.cdf(5, 20, 0.5)
    assert coverage == pytest.approx(0.9586, abs=1e-4)


@pytest.mark.parametrize("confidence", [0.95, 0.90, 0.99])
def test_percentile_interval_matches_scipy_quantile_test(confidence: float) -> None:
    rng = np.random.default_rng(11)
    for n in [*range(1, 41), 57, 100, 168, 252, 1000]:
        values = rng.lognormal(5, 1, size=n)
        for q in (5, 25, 50, 90, 95, 99):
            ours = percentile_interval(values.tolist(), q, confidence)
            ref = stats.quantile_test(values, q=0, p=q / 100).confidence_interval(confidence)
            assert ours.value == pytest.approx(float(np.percentile(values, q)), rel=1e-15)
            assert ours.low == (None if np.isnan(ref.low) else float(ref.low)), (n, q)
            assert ours.high == (None if np.isnan(ref.high) else float(ref.high)), (n, q)


@pytest.mark.parametrize("q", [50, 95])
def test_percentile_interval_has_exact_coverage_at_least_95_percent(q: float) -> None:
    """The ranks chosen cover the true quantile with binomial probability ≥ 0.95 for every n
    where both ends exist, so the interval is valid whatever the latency distribution."""
    p = q / 100
    for n in range(2, 400):
        iv = percentile_interval(list(range(1, n + 1)), q)  # value k is the k-th order statistic
        if iv.low is None or iv.high is None:
            continue
        l_rank, u_rank = int(iv.low), int(iv.high)
        assert stats.binom.cdf(u_rank - 1, n, p) - stats.binom.cdf(l_rank - 1, n, p) >= 0.95 - 1e-12, n


def test_percentile_interval_small_and_undefined_cases() -> None:
    assert percentile_interval([], 50) == Interval(None, None, None)
    one = percentile_interval([42.0], 50)
    assert one == Interval(42.0, None, None)  # one value cannot bound a median at 95 %
    p95 = percentile_interval(list(range(1, 21)), 95)
    assert p95.low is not None and p95.high is None  # 20 values: no upper bound for p95
    ties = percentile_interval([5.0] * 30, 50)
    assert ties == Interval(5.0, 5.0, 5.0)
    with pytest.raises(ValueError):
        percentile_interval([1.0, 2.0], 50, confidence=1.5)
