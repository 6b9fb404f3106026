"""Paired comparisons (`bench_assets.metrics.paired`): checked against statsmodels, against
published worked examples, against a reference power calculation, and by simulation.

References for the paired interval (Newcombe 1998, *Statistics in Medicine* 17:2635–2650, method
10), as reproduced by two independent implementations whose tests hold the published figures:
- petelaud/ratesci, tests/testthat/test3.R (commit 0c942289aa8de0bd707edf6afae13e286a8f6e04):
  Newcombe's own example (20, 12, 2, 16) → 0.0562 to 0.3292 ("against Newcombe's method 10
  result"); Fagerland et al. 2014 (1, 1, 7, 12) → −0.507 to −0.026; Tang et al. 2010 (8, 3, 1, 2)
  → −0.1574 to 0.4136; Chang 2024 (7, 25, 2, 68) → 0.133 to 0.318.
- ocbe-uio/contingencytables, tests/testthat/test-ch8.R (commit 00b5af39b0fcd87f4c0ba8563e6cf6db12494ccf):
  Fagerland, Lydersen and Laake (2017), Cavo et al. 2012 (59, 6, 16, 80) → −0.1186 to −0.0046.
The power reference: MESS (Ekstrøm), tests of `power_mcnemar_test`: n = 144, paid = 0.25,
psi = 1.8, exact, one-sided 0.025 → power 0.80 (Duffy 1984's exact unconditional power).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

from bench_assets.metrics import (
    Interval,
    PairedCounts,
    bounded_mean_interval,
    compact_letter_display,
    compare_pairs,
    holm_adjust,
    mcnemar_exact_p,
    mcnemar_power,
    minimum_detectable_difference,
    paired_counts,
    paired_difference_interval,
    paired_rank_ranges,
    paired_ranking,
    power_statement,
    wilson_interval,
)

FAST = settings(max_examples=200, deadline=None)


# ##### THE EXACT MCNEMAR TEST


@FAST
@given(st.integers(0, 400), st.integers(0, 400), st.integers(0, 50), st.integers(0, 50))
def test_mcnemar_matches_statsmodels_exact(b, c, a, d):
    ours = mcnemar_exact_p(b, c)
    theirs = mcnemar([[a, b], [c, d]], exact=True).pvalue
    assert ours == pytest.approx(theirs, rel=1e-9, abs=1e-300)


def test_mcnemar_edges():
    assert mcnemar_exact_p(0, 0) == 1.0  # no discordant row: nothing to tell them apart
    assert mcnemar_exact_p(5, 5) == 1.0  # capped at 1
    assert mcnemar_exact_p(0, 9) == pytest.approx(2 * 0.5**9)
    assert mcnemar_exact_p(10, 2) == mcnemar_exact_p(2, 10)  # two-sided
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError):
            mcnemar_exact_p(bad, 3)


# ##### HOLM


@settings(max_examples=12, deadline=None)  # each statsmodels call is slow: a few drawn lists, and the edges
@given(st.lists(st.floats(0.0, 1.0, allow_nan=False), max_size=70))
@example([])
@example([0.0, 1.0])
@example([0.04] * 70)  # ties
def test_holm_matches_statsmodels(p_values):
    ours = holm_adjust(p_values)
    if not p_values:
        assert ours == []
        return
    theirs = multipletests(p_values, alpha=0.05, method="holm")[1]
    assert ours == pytest.approx(list(theirs), rel=1e-12, abs=1e-15)
    assert all(q >= p for p, q in zip(p_values, ours))
    # the adjusted values keep the order of the raw ones
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    assert [ours[i] for i in order] == sorted(ours)


def test_holm_rejects_what_statsmodels_rejects():
    # (statsmodels rejects at adjusted p <= alpha; the benchmark's rule is p < alpha, so no value sits on 0.05)
    p = [0.009, 0.04, 0.03, 0.005, 0.5, 0.04, 0.0001]
    reject = multipletests(p, alpha=0.05, method="holm")[0]
    assert [q < 0.05 for q in holm_adjust(p)] == list(reject)
    assert sum(reject) == 3
    with pytest.raises(ValueError):
        holm_adjust([1.2])


# ##### NEWCOMBE'S PAIRED INTERVAL


@pytest.mark.parametrize(
    ("cells", "low", "high", "places"),
    [
        ((20, 12, 2, 16), 0.0562, 0.3292, 4),  # Newcombe 1998, his worked example, method 10
        ((1, 1, 7, 12), -0.507, -0.026, 3),  # Fagerland, Lydersen & Laake 2014 (Bentur et al. 2009)
        ((59, 6, 16, 80), -0.1186, -0.0046, 4),  # Fagerland, Lydersen & Laake 2017 (Cavo et al. 2012)
        ((8, 3, 1, 2), -0.1574, 0.4136, 4),  # Tang et al. 2010
        ((7, 25, 2, 68), 0.133, 0.318, 3),  # Chang 2024
    ],
)
def test_paired_interval_reproduces_published_examples(cells, low, high, places):
    got = paired_difference_interval(*cells)
    a, b, c, d = cells
    assert got.value == pytest.approx((b - c) / (a + b + c + d))
    assert round(got.low, places) == low and round(got.high, places) == high


@FAST
@given(st.integers(0, 60), st.integers(0, 60), st.integers(0, 60), st.integers(0, 60))
def test_paired_interval_properties(a, b, c, d):
    got = paired_difference_interval(a, b, c, d)
    if a + b + c + d == 0:
        assert got == Interval(None, None, None)
        return
    assert -1.0 <= got.low <= got.value <= got.high <= 1.0
    assert got.high > got.low  # never a point, even when b = c = 0
    # swapping the two vendors mirrors the interval
    swapped = paired_difference_interval(a, c, b, d)
    assert swapped.value == pytest.approx(-got.value)
    assert swapped.low == pytest.approx(-got.high) and swapped.high == pytest.approx(-got.low)


def test_paired_interval_covers_at_least_nominally():
    rng = np.random.default_rng(15)
    for probs in ([0.5, 0.15, 0.05, 0.3], [0.3, 0.2, 0.2, 0.3], [0.7, 0.05, 0.0, 0.25]):
        truth = probs[1] - probs[2]
        covered = 0
        trials = 2000
        for cells in rng.multinomial(80, probs, size=trials):
            iv = paired_difference_interval(*cells.tolist())
            covered += iv.low <= truth <= iv.high
        assert covered / trials >= 0.93, (probs, covered / trials)


# ##### FROM RECORDS TO A RANKING


@FAST
@given(st.dictionaries(st.sampled_from("abcde"), st.dictionaries(st.integers(0, 30), st.booleans()), max_size=5))
def test_paired_counts_count_every_shared_row_once(data):
    data = {v: rows for v, rows in data.items() if rows}  # a vendor with no record is not compared
    records = [(v, f"r{r}", ok) for v, rows in data.items() for r, ok in rows.items()]
    counts = paired_counts(records)
    names = sorted(data)
    assert [(c.first, c.second) for c in counts] == list(itertools.combinations(names, 2))
    for c in counts:
        shared = data[c.first].keys() & data[c.second].keys()
        assert c.n == len(shared)
        assert c.first_only == sum(1 for r in shared if data[c.first][r] and not data[c.second][r])
        assert c.second_only == sum(1 for r in shared if data[c.second][r] and not data[c.first][r])
        assert c.both == sum(1 for r in shared if data[c.first][r] and data[c.second][r])


def test_paired_counts_refuse_two_records_for_one_row():
    with pytest.raises(ValueError, match="two records"):
        paired_counts([("a", "r1", True), ("a", "r1", False)])


def different_pairs(names, data):
    """A random 'found different' relation over names."""
    return [pair for pair, on in zip(itertools.combinations(names, 2), data) if on]


@FAST
@given(st.integers(1, 9).flatmap(lambda n: st.tuples(st.just(n), st.lists(st.booleans(), min_size=36, max_size=36))))
def test_letters_are_shared_exactly_when_a_pair_is_not_found_different(case):
    n, flags = case
    names = [f"v{i}" for i in range(n)]
    different = set(different_pairs(names, flags))
    letters = compact_letter_display(names, sorted(different))
    assert set(letters) == set(names) and all(letters[v] for v in names)
    for x, y in itertools.combinations(names, 2):
        share = bool(set(letters[x]) & set(letters[y]))
        assert share == ((x, y) not in different), (x, y, letters)
    assert letters[names[0]].startswith("a")  # the best-placed vendor's group is "a"


def test_letters_of_a_textbook_example():
    # a > c, d, e; b > e: a, b share a; b, c, d share b; c, d, e share c
    letters = compact_letter_display(list("abcde"), [("a", "c"), ("a", "d"), ("a", "e"), ("b", "e")])
    assert letters == {"a": "a", "b": "ab", "c": "bc", "d": "bc", "e": "c"}
    assert compact_letter_display(list("abc"), []) == dict.fromkeys("abc", "a")


def nested(rates: dict[str, int], rows: int) -> list[tuple[str, str, bool]]:
    """Each vendor right on its first `k` rows: the better vendor is right wherever the worse one is."""
    return [(v, f"r{i}", i < k) for v, k in rates.items() for i in range(rows)]


def test_a_paired_ranking_separates_vendors_whose_intervals_overlap():
    # 0.80, 0.72, 0.64 on 150 rows: the Wilson intervals of neighbours overlap, but every row the
    # worse vendor gets right the better one gets right too: 12 discordant rows, all one way.
    records = nested({"x": 120, "y": 108, "z": 96}, 150)
    wx, wy = wilson_interval(120, 150), wilson_interval(108, 150)
    assert wx.low < wy.high  # the unpaired intervals overlap
    ranking = paired_ranking(records)
    assert ranking.vendors == ["x", "y", "z"]
    assert ranking.rank_ranges == {"x": (1, 1), "y": (2, 2), "z": (3, 3)}
    assert ranking.letters == {"x": "a", "y": "b", "z": "c"}
    assert all(c.better == c.counts.first for c in ranking.comparisons)


def test_vendors_whose_rows_disagree_both_ways_cannot_be_told_apart():
    records = [("x", f"r{i}", i < 60) for i in range(100)] + [("y", f"r{i}", 30 <= i < 90) for i in range(100)]
    ranking = paired_ranking(records)
    (pair,) = ranking.comparisons
    assert (pair.counts.first_only, pair.counts.second_only) == (30, 30)
    assert pair.p_value == 1.0 and pair.better is None
    assert ranking.rank_ranges == {"x": (1, 2), "y": (1, 2)} and ranking.letters == {"x": "a", "y": "a"}


@FAST
@given(st.lists(st.lists(st.booleans(), min_size=25, max_size=25), min_size=2, max_size=6))
def test_rank_ranges_contain_the_position_and_follow_the_tests(table):
    records = [(f"v{i}", f"r{j}", ok) for i, row in enumerate(table) for j, ok in enumerate(row)]
    ranking = paired_ranking(records)
    n = len(table)
    better_than = dict.fromkeys(ranking.vendors, 0)
    worse_than = dict.fromkeys(ranking.vendors, 0)
    for c in ranking.comparisons:
        if c.better:
            better_than[c.better] += 1
            worse_than[c.worse] += 1
    for position, v in enumerate(ranking.vendors, start=1):
        best, worst = ranking.rank_ranges[v]
        assert best == 1 + worse_than[v] and worst == n - better_than[v]
        assert best <= position <= worst  # every vendor answered every row: the position fits
    assert ranking.rank_ranges == paired_rank_ranges(ranking.vendors, ranking.comparisons)


def test_compare_pairs_uses_the_family_wise_level():
    counts = [PairedCounts("a", "b", 10, 10, 2, 10), PairedCounts("a", "c", 10, 10, 2, 10)]
    raw = mcnemar_exact_p(10, 2)
    assert 0.025 < raw < 0.05  # significant alone ...
    compared = compare_pairs(counts)
    assert [c.p_adjusted for c in compared] == pytest.approx([2 * raw, 2 * raw])
    assert all(c.better is None for c in compared)  # ... not among two pairs
    assert compare_pairs(counts[:1])[0].better == "a"


# ##### POWER


def test_power_reproduces_the_reference_example():
    # MESS power_mcnemar_test(144, paid = 0.25, psi = 1.8, method = "exact", one-sided 0.025): 0.80
    assert round(mcnemar_power(144, 0.25 * 2.8, 0.25 * 1.8 - 0.25, alpha=0.05), 2) == 0.80


@pytest.mark.parametrize(("n", "psi", "delta", "alpha"), [(60, 0.3, 0.15, 0.05), (168, 0.25, 0.12, 0.05 / 66)])
def test_power_agrees_with_simulation(n, psi, delta, alpha):
    rng = np.random.default_rng(2026)
    trials = 20000
    discordant = rng.binomial(n, psi, size=trials)
    better = rng.binomial(discordant, (psi + delta) / (2 * psi))
    found = [
        b > d - b and mcnemar_exact_p(int(b), int(d - b)) < alpha for b, d in zip(better.tolist(), discordant.tolist())
    ]
    simulated = sum(found) / trials
    exact = mcnemar_power(n, psi, delta, alpha)
    assert abs(simulated - exact) < 4 * math.sqrt(exact * (1 - exact) / trials) + 1e-3, (simulated, exact)


@FAST
@given(st.integers(1, 300), st.floats(0.02, 1.0), st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_power_grows_with_the_difference(n, psi, x, y):
    low, high = sorted((x * psi, y * psi))
    assert mcnemar_power(n, psi, low) <= mcnemar_power(n, psi, high) + 1e-12
    assert mcnemar_power(n, psi, 0.0) <= 0.05 / 2 + 1e-12  # one direction of a level-0.05 test


def test_minimum_detectable_difference_is_where_power_reaches_80_percent():
    delta = minimum_detectable_difference(168, 0.3, alpha=0.05 / 66)
    assert delta is not None and 0 < delta <= 0.3
    assert mcnemar_power(168, 0.3, delta, 0.05 / 66) >= 0.8 > mcnemar_power(168, 0.3, delta - 1e-4, 0.05 / 66)
    # more rows, smaller detectable difference; a stricter level, larger
    assert minimum_detectable_difference(1000, 0.3, alpha=0.05 / 66) < delta
    assert minimum_detectable_difference(168, 0.3, alpha=0.05) < delta
    assert minimum_detectable_difference(5, 0.3) is None  # five rows cannot show anything


def test_power_statement_uses_the_typical_pair_and_holms_strictest_step():
    counts = [PairedCounts(f"v{i}", f"w{i}", 100, 30 + i, 20, 18 - i) for i in range(6)]
    statement = power_statement(counts)
    assert statement.pairs == 6 and statement.n == 168
    assert statement.discordance == pytest.approx(np.median([(50 + i) / 168 for i in range(6)]))
    assert statement.alpha_strictest == pytest.approx(0.05 / 6)
    assert statement.minimum_detectable_difference == minimum_detectable_difference(
        168, statement.discordance, 0.05 / 6
    )
    assert statement.minimum_detectable_difference_single_pair < statement.minimum_detectable_difference
    assert power_statement([]) is None
    silent = power_statement([PairedCounts("a", "b", 50, 0, 0, 50)])
    assert silent.minimum_detectable_difference is None  # no disagreement: nothing to detect it from


# ##### ONE INTERVAL FOR EVERY MEAN BOUNDED IN [0, 1]


def test_a_perfect_fidelity_keeps_a_positive_width():
    # the case the issue names: every page at 1.0 on 84 rows
    iv = bounded_mean_interval([1.0] * 84)
    assert iv.value == 1.0 and iv.high == 1.0
    assert iv.low == pytest.approx(84 / (84 + 1.959963984540054**2))
    assert bounded_mean_interval([0.0] * 10).low == 0.0 < bounded_mean_interval([0.0] * 10).high


def test_bounded_mean_interval_covers_continuous_scores():
    rng = np.random.default_rng(84)
    for a, b in ((8.0, 1.0), (2.0, 2.0), (0.5, 0.5)):
        truth = a / (a + b)
        covered = 0
        trials = 1500
        for sample in rng.beta(a, b, size=(trials, 30)):
            iv = bounded_mean_interval(sample.tolist())
            covered += iv.low <= truth <= iv.high
        assert covered / trials >= 0.94, (a, b, covered / trials)
