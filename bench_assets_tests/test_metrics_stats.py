"""Intervals and summary statistics, checked against statsmodels and numpy."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.proportion import confint_proportions_2indep, proportion_confint

from bench_assets.metrics import (
    Interval,
    cost_per_correct,
    cost_per_correct_interval,
    intervals_overlap,
    newcombe_interval,
    overfit_gap,
    percentile,
    percentile_interval,
    rank_ranges,
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


def test_intervals_overlap() -> None:
    assert intervals_overlap((0.1, 0.5), (0.4, 0.9))
    assert intervals_overlap((0.1, 0.5), (0.5, 0.9))  # touching counts
    assert not intervals_overlap((0.1, 0.5), (0.51, 0.9))
    assert intervals_overlap(Interval(0.3, 0.1, 0.5), (0.2, 0.3, 0.6))
    assert not intervals_overlap(Interval(None, None, None), (0.0, 1.0))


def test_tie_groups_are_connected_components_of_overlap() -> None:
    entries = [
        ("a", 0.90, 0.85, 0.95),
        ("b", 0.86, 0.80, 0.91),  # overlaps a
        ("c", 0.80, 0.74, 0.84),  # overlaps b (not a): linked to a through b → same group
        ("d", 0.78, 0.70, 0.85),  # overlaps a, b and c
        ("e", 0.50, 0.40, 0.60),  # overlaps nothing above → group 2
        ("f", 0.10, None, None),  # undefined interval → own group
    ]
    assert tie_groups(entries) == [1, 1, 1, 1, 2, 3]
    # the documented consequence: a and c share a group although their own intervals do not overlap
    assert not intervals_overlap(entries[0][2:], entries[2][2:])
    assert tie_groups([]) == []
    assert tie_groups([("only", 0.5, 0.4, 0.6)]) == [1]
    # touching intervals overlap; a gap separates
    assert tie_groups([("a", 0.7, 0.6, 0.8), ("b", 0.5, 0.4, 0.6), ("c", 0.3, 0.2, 0.39)]) == [1, 1, 2]


def test_tie_groups_link_through_a_lower_ranked_wide_interval() -> None:
    """A vendor below b can overlap both a and b while b does not overlap a: all three are one
    group. Comparing each vendor only with the one above it, or with a group leader, would put a
    and b in different groups although c overlaps both."""
    entries = [("a", 0.90, 0.85, 0.95), ("b", 0.80, 0.78, 0.82), ("c", 0.70, 0.50, 0.90)]
    assert not intervals_overlap(entries[0][2:], entries[1][2:])
    assert tie_groups(entries) == [1, 1, 1]


def _components(entries) -> list[set[int]]:
    """Brute force: connected components of the pairwise overlap relation."""
    parent = list(range(len(entries)))

    def find(i):
        while parent[i] != i:
            i = parent[i]
        return i

    for i, j in itertools.combinations(range(len(entries)), 2):
        if intervals_overlap(entries[i][2:], entries[j][2:]):
            parent[find(i)] = find(j)
    groups: dict[int, set[int]] = {}
    for i in range(len(entries)):
        groups.setdefault(find(i), set()).add(i)
    return list(groups.values())


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 100), st.integers(0, 30), st.integers(0, 30), st.booleans()), max_size=12))
def test_tie_groups_match_brute_force_components(raw) -> None:
    entries = []
    for i, (value, below, above, undefined) in enumerate(raw):
        v = value / 100
        entries.append((f"v{i}", v, None, None) if undefined else (f"v{i}", v, v - below / 100, v + above / 100))
    entries.sort(key=lambda e: -e[1])
    groups = tie_groups(entries)
    # the same partition as the brute-force components, numbered densely in list order
    by_group: dict[int, set[int]] = {}
    for i, g in enumerate(groups):
        by_group.setdefault(g, set()).add(i)
    assert sorted(map(sorted, by_group.values())) == sorted(map(sorted, _components(entries)))
    assert [g for i, g in enumerate(groups) if g not in groups[:i]] == list(range(1, len(by_group) + 1))
    # every pair of overlapping intervals shares a group
    for i, j in itertools.combinations(range(len(entries)), 2):
        if intervals_overlap(entries[i][2:], entries[j][2:]):
            assert groups[i] == groups[j]
    # with every interval defined, a group's members are consecutive in the list
    defined = [g for e, g in zip(entries, groups) if e[2] is not None]
    if all(e[2] is not None for e in entries):
        assert defined == sorted(defined)


def test_tie_groups_reject_a_value_outside_its_interval() -> None:
    with pytest.raises(ValueError, match="outside its interval"):
        tie_groups([("a", 0.9, 0.5, 0.8)])


def test_tie_groups_requires_descending_order() -> None:
    with pytest.raises(ValueError):
        tie_groups([("a", 0.5, 0.4, 0.6), ("b", 0.7, 0.6, 0.8)])


# ##### RANK RANGES


def test_rank_ranges_count_the_intervals_entirely_above_and_below() -> None:
    entries = [
        ("a", 0.90, 0.85, 0.95),  # c and e lie entirely below: at worst 3rd
        ("b", 0.86, 0.80, 0.91),  # overlaps a, c and d: only e lies entirely below
        ("c", 0.80, 0.74, 0.84),  # a lies entirely above (0.85 > 0.84): at best 2nd
        ("d", 0.78, 0.70, 0.85),  # touches a at 0.85 (not apart), overlaps b and c
        ("e", 0.50, 0.40, 0.60),  # every other interval lies entirely above
    ]
    assert rank_ranges(entries) == [(1, 3), (1, 4), (2, 4), (1, 4), (5, 5)]
    # the tie groups put a–d together; the ranges still say a is not below 4th and c not above 2nd
    assert tie_groups(entries) == [1, 1, 1, 1, 2]


def test_rank_ranges_touching_intervals_are_not_apart() -> None:
    assert rank_ranges([("a", 0.7, 0.6, 0.8), ("b", 0.5, 0.4, 0.6)]) == [(1, 2), (1, 2)]
    assert rank_ranges([("a", 0.7, 0.61, 0.8), ("b", 0.5, 0.4, 0.6)]) == [(1, 1), (2, 2)]


def test_rank_ranges_of_ties_and_identical_intervals() -> None:
    same = [("a", 0.5, 0.4, 0.6), ("b", 0.5, 0.4, 0.6), ("c", 0.5, 0.4, 0.6)]
    assert rank_ranges(same) == [(1, 3)] * 3
    # a zero-width interval (an exact figure) equal to another: touching, so not apart
    assert rank_ranges([("a", 0.5, 0.5, 0.5), ("b", 0.5, 0.5, 0.5)]) == [(1, 2), (1, 2)]


def test_rank_ranges_of_undefined_intervals_and_edge_cases() -> None:
    entries = [("a", 0.9, 0.8, 0.95), ("none", None, None, None), ("half", 0.3, 0.2, None), ("b", 0.1, 0.05, 0.2)]
    # undefined entries have no range and are counted in nobody else's: a and b are 1st and 2nd of 2
    assert rank_ranges(entries) == [(1, 1), None, None, (2, 2)]
    assert rank_ranges([]) == []
    assert rank_ranges([("only", 0.5, 0.4, 0.6)]) == [(1, 1)]
    assert rank_ranges([("u", None, None, None)]) == [None]
    with pytest.raises(ValueError, match="outside its interval"):
        rank_ranges([("a", 0.9, 0.5, 0.8)])
    # any order: the range belongs to the entry, not to its place in the list
    assert rank_ranges([("b", 0.1, 0.05, 0.2), ("a", 0.9, 0.8, 0.95)]) == [(2, 2), (1, 1)]


def test_rank_ranges_tell_apart_vendors_one_long_chain_puts_in_one_group() -> None:
    """Twelve vendors like the demo's, from 0.988 to 0.738 on ~170 rows: their Wilson intervals
    form one chain, so `tie_groups` gives everybody group 1, while the rank ranges separate the
    top from the bottom."""
    rates = [0.988, 0.965, 0.941, 0.918, 0.894, 0.871, 0.847, 0.824, 0.806, 0.788, 0.765, 0.738]
    n = 170
    entries = []
    for i, rate in enumerate(rates):
        iv = wilson_interval(round(rate * n), n)
        entries.append((f"v{i}", iv.value, iv.low, iv.high))
    assert tie_groups(entries) == [1] * 12
    ranges = rank_ranges(entries)
    best, worst = ranges[0], ranges[-1]
    assert best[0] == 1 and worst[1] == 12
    assert best[1] < worst[0], (best, worst)  # the top vendor is significantly ahead of the bottom one
    assert len(set(ranges)) >= 6, ranges  # the ranges say much more than one shared group
    for position, (lo, hi) in enumerate(ranges, start=1):
        assert lo <= position <= hi


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 100), st.integers(0, 30), st.integers(0, 30), st.booleans()), max_size=12))
def test_rank_ranges_match_brute_force_and_contain_the_position(raw) -> None:
    entries = []
    for i, (value, below, above, undefined) in enumerate(raw):
        v = value / 100
        entries.append((f"v{i}", v, None, None) if undefined else (f"v{i}", v, v - below / 100, v + above / 100))
    entries.sort(key=lambda e: -e[1])
    ranges = rank_ranges(entries)
    defined = [e for e in entries if e[2] is not None]
    position = 0
    for e, r in zip(entries, ranges):
        if e[2] is None:
            assert r is None
            continue
        position += 1
        above = sum(1 for o in defined if o[2] > e[3])
        below = sum(1 for o in defined if o[3] < e[2])
        assert r == (1 + above, len(defined) - below)
        assert r[0] <= position <= r[1]  # the defined entries sorted by value sit inside their ranges
    # two entries whose ranges do not overlap have intervals that do not overlap either
    for (e, r), (f, q) in itertools.combinations([(e, r) for e, r in zip(entries, ranges) if r], 2):
        if r[1] < q[0]:
            assert not intervals_overlap(e[2:], f[2:])


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
