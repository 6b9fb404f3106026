"""Paired comparisons of vendors that answered the same rows: which differences are real.

Every vendor answers the very same golden rows, so two vendors are compared row by row, not by
their two rates alone. For a pair (A, B) on the rows both were scored on, the 2×2 table counts
``both`` (both correct), ``first_only`` (A correct, B not: *b*), ``second_only`` (B correct, A
not: *c*) and ``neither``. Only the discordant rows (*b* and *c*) say anything about which vendor
is better: :func:`mcnemar_exact_p` tests them, :func:`holm_adjust` corrects the p-values for
comparing every pair, :func:`paired_difference_interval` gives the difference of the two rates
with its 95 % interval, and from the pairs found different :func:`paired_rank_ranges` and
:func:`compact_letter_display` say which ranks a vendor can hold and which vendors cannot be told
apart. :func:`minimum_detectable_difference` says how large a difference the snapshot could find.

Everything here is a pure function of ``(vendor, row, correct)`` records (:func:`paired_counts`)
or of the pairs' counts, so the published counts are enough to re-derive every p-value, interval,
rank range and letter. Checked against statsmodels (``mcnemar(exact=True)``,
``multipletests(method="holm")``) and published worked examples.
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import bdtr, bdtrc

from .stats import Interval, wilson_interval

__all__ = [
    "FAMILY_ALPHA",
    "TARGET_POWER",
    "PairedComparison",
    "PairedCounts",
    "PairedRanking",
    "PowerStatement",
    "compact_letter_display",
    "compare_pairs",
    "holm_adjust",
    "mcnemar_exact_p",
    "mcnemar_power",
    "minimum_detectable_difference",
    "paired_counts",
    "paired_difference_interval",
    "paired_rank_ranges",
    "paired_ranking",
    "power_statement",
    "ranking_from_comparisons",
]

FAMILY_ALPHA = 0.05  # family-wise error rate over all pairs (Holm)
TARGET_POWER = 0.80  # the power the minimum detectable difference is stated at


def _count(name: str, value: int) -> int:
    if isinstance(value, bool) or int(value) != value or value < 0:
        raise ValueError(f"{name} must be an integer count >= 0, got {value!r}")
    return int(value)


def _probability(name: str, value: float, *, closed_high: bool = False) -> float:
    ok = (0 < value <= 1) if closed_high else (0 < value < 1)
    if not (math.isfinite(value) and ok):
        raise ValueError(f"{name} must lie in {'(0, 1]' if closed_high else '(0, 1)'}, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class PairedCounts:
    """Two vendors on the rows both were scored on: ``both`` correct, ``first_only`` (the first
    correct, the second not; McNemar's *b*), ``second_only`` (*c*) and ``neither``."""

    first: str
    second: str
    both: int
    first_only: int
    second_only: int
    neither: int

    @property
    def n(self) -> int:
        """Rows compared."""
        return self.both + self.first_only + self.second_only + self.neither

    @property
    def discordant(self) -> int:
        """Rows on which exactly one of the two is correct (b + c)."""
        return self.first_only + self.second_only

    @property
    def first_rate(self) -> float | None:
        return (self.both + self.first_only) / self.n if self.n else None

    @property
    def second_rate(self) -> float | None:
        return (self.both + self.second_only) / self.n if self.n else None


def paired_counts(records: Iterable[tuple[str, str, bool]]) -> list[PairedCounts]:
    """The 2×2 table of every pair of vendors, from ``(vendor, row_id, correct)`` records.

    Definition: for vendors A and B (every pair once, A before B in name order), the rows both have
    a record for are compared: ``both`` = rows both answered correctly, ``first_only`` (*b*) = A
    correct and B not, ``second_only`` (*c*) = B correct and A not, ``neither`` = both wrong. A
    row only one of them was scored on is left out of that pair. A vendor with two records for one
    row is an error (``ValueError``). Returns the pairs in name order.
    """
    by_vendor: dict[str, dict[str, bool]] = {}
    for vendor, row_id, correct in records:
        rows = by_vendor.setdefault(str(vendor), {})
        if row_id in rows:
            raise ValueError(f"vendor {vendor!r} has two records for row {row_id!r}")
        rows[str(row_id)] = bool(correct)
    names = sorted(by_vendor)
    out = []
    for i, first in enumerate(names):
        for second in names[i + 1 :]:
            a, b = by_vendor[first], by_vendor[second]
            shared = a.keys() & b.keys()
            both = sum(1 for r in shared if a[r] and b[r])
            first_only = sum(1 for r in shared if a[r] and not b[r])
            second_only = sum(1 for r in shared if b[r] and not a[r])
            out.append(
                PairedCounts(
                    first, second, both, first_only, second_only, len(shared) - both - first_only - second_only
                )
            )
    return out


def mcnemar_exact_p(first_only: int, second_only: int) -> float:
    """Exact two-sided McNemar test of two vendors on the same rows: the binomial test of the
    discordant rows.

    Definition: with ``b`` rows only the first vendor got right and ``c`` rows only the second got
    right, under the hypothesis that both are equally good each discordant row is equally likely to
    favour either, so ``X ~ Binomial(b + c, ½)`` and ``p = min(1, 2·P(X ≤ min(b, c)))``;
    ``p = 1`` when ``b + c = 0``. The rows both got right or both got wrong carry no information
    about which is better and do not enter. Matches statsmodels
    ``mcnemar([[a, b], [c, d]], exact=True).pvalue``.
    """
    b = _count("first_only", first_only)
    c = _count("second_only", second_only)
    discordant = b + c
    if discordant == 0:
        return 1.0
    return min(1.0, 2.0 * float(bdtr(min(b, c), discordant, 0.5)))


def holm_adjust(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of ``m`` p-values, so that a family of tests keeps its error rate.

    Definition: sort the p-values ``p₍₁₎ ≤ … ≤ p₍ₘ₎``; the adjusted value of the ``i``-th smallest
    is ``max over j ≤ i of min(1, (m − j + 1)·p₍ⱼ₎)`` (a running maximum, so adjusted values keep
    the order of the raw ones). A test is significant at family-wise level α when its adjusted
    p-value is below α: then the chance that *any* of the ``m`` comparisons is declared a difference
    where there is none is at most α, whatever the dependence between the tests (Holm 1979). Ties
    are broken by input order. Matches statsmodels ``multipletests(p, method="holm")[1]``.
    """
    values = [float(p) for p in p_values]
    for p in values:
        if not (math.isfinite(p) and 0.0 <= p <= 1.0):
            raise ValueError(f"p-values must lie in [0, 1], got {p!r}")
    m = len(values)
    adjusted = [0.0] * m
    running = 0.0
    for rank, index in enumerate(sorted(range(m), key=lambda i: (values[i], i))):
        running = max(running, min(1.0, (m - rank) * values[index]))
        adjusted[index] = running
    return adjusted


def paired_difference_interval(
    both: int, first_only: int, second_only: int, neither: int, confidence: float = 0.95
) -> Interval:
    """The difference of two vendors' correct rates on the same rows, with Newcombe's 95 % interval
    for paired proportions (Newcombe 1998, *Statistics in Medicine* 17:2635–2650, method 10).

    Definition: with ``a, b, c, d`` = ``both, first_only, second_only, neither`` and
    ``n = a + b + c + d``, the rates are ``p₁ = (a + b)/n`` and ``p₂ = (a + c)/n`` and the value is
    ``D = p₁ − p₂ = (b − c)/n``. ``[l₁, u₁]`` and ``[l₂, u₂]`` are the Wilson intervals of ``p₁``
    and ``p₂`` (:func:`wilson_interval`). The correlation of the two rates is estimated by
    ``φ = C / √((a + b)(c + d)(a + c)(b + d))`` with ``C = ad − bc − n/2`` when ``ad − bc > n/2``,
    ``C = 0`` when ``0 ≤ ad − bc ≤ n/2``, ``C = ad − bc`` when ``ad − bc < 0`` (``φ = 0`` when a
    margin is empty). Then
    ``low = D − √((p₁ − l₁)² − 2φ(p₁ − l₁)(u₂ − p₂) + (u₂ − p₂)²)`` and
    ``high = D + √((p₂ − l₂)² − 2φ(p₂ − l₂)(u₁ − p₁) + (u₁ − p₁)²)``. Unlike a Wald interval it
    never collapses to a point when ``b = c = 0`` and stays within [−1, 1]. All three are ``None``
    when ``n = 0``. Reproduces Newcombe's own example (a, b, c, d = 20, 12, 2, 16: 0.0562 to
    0.3292) and Fagerland, Lydersen and Laake's (1, 1, 7, 12: −0.507 to −0.026; 59, 6, 16, 80:
    −0.1186 to −0.0046).
    """
    a = _count("both", both)
    b = _count("first_only", first_only)
    c = _count("second_only", second_only)
    d = _count("neither", neither)
    n = a + b + c + d
    if n == 0:
        wilson_interval(0, 0, confidence)  # validates confidence
        return Interval(None, None, None)
    first = wilson_interval(a + b, n, confidence)
    second = wilson_interval(a + c, n, confidence)
    assert first.value is not None and first.low is not None and first.high is not None
    assert second.value is not None and second.low is not None and second.high is not None
    p1, p2 = first.value, second.value
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    cross = a * d - b * c
    if margins == 0 or 0 <= cross <= n / 2:
        phi = 0.0
    else:
        phi = (cross - n / 2 if cross > n / 2 else cross) / math.sqrt(margins)
    down1, up2 = p1 - first.low, second.high - p2
    down2, up1 = p2 - second.low, first.high - p1
    difference = p1 - p2
    low = difference - math.sqrt(max(0.0, down1**2 - 2 * phi * down1 * up2 + up2**2))
    high = difference + math.sqrt(max(0.0, down2**2 - 2 * phi * down2 * up1 + up1**2))
    return Interval(difference, max(-1.0, low), min(1.0, high))


@dataclass(frozen=True)
class PairedComparison:
    """One pair's counts, exact McNemar p-value (raw and Holm-adjusted over every pair), the
    difference of the two rates (first − second) with its interval, and the vendor found better
    (``None``: the two cannot be told apart at the family-wise level)."""

    counts: PairedCounts
    p_value: float
    p_adjusted: float
    difference: Interval
    better: str | None

    @property
    def worse(self) -> str | None:
        if self.better is None:
            return None
        return self.counts.second if self.better == self.counts.first else self.counts.first


def compare_pairs(
    counts: Sequence[PairedCounts], alpha: float = FAMILY_ALPHA, confidence: float = 0.95
) -> list[PairedComparison]:
    """Test every pair and correct for their number.

    Definition: each pair gets :func:`mcnemar_exact_p` on its discordant rows and
    :func:`paired_difference_interval`; the p-values of all pairs are adjusted together with
    :func:`holm_adjust`. A vendor is *better than* the other when its rate on the pair's rows is
    higher (``b > c``) and the adjusted p-value is below ``alpha`` (0.05): the chance of declaring
    any difference among all the pairs where there is none is then at most 5 %.
    """
    _probability("alpha", alpha)
    raw = [mcnemar_exact_p(c.first_only, c.second_only) for c in counts]
    adjusted = holm_adjust(raw)
    out = []
    for pair, p, q in zip(counts, raw, adjusted):
        better = None
        if q < alpha and pair.first_only != pair.second_only:
            better = pair.first if pair.first_only > pair.second_only else pair.second
        interval = paired_difference_interval(pair.both, pair.first_only, pair.second_only, pair.neither, confidence)
        out.append(PairedComparison(pair, p, q, interval, better))
    return out


def paired_rank_ranges(vendors: Sequence[str], comparisons: Iterable[PairedComparison]) -> dict[str, tuple[int, int]]:
    """The ranks each vendor can hold, from the pairs the paired test tells apart.

    Definition: with ``N`` the number of vendors compared, a vendor's **best rank** is 1 + the
    number of vendors found better than it (:func:`compare_pairs`), and its **worst rank** is
    ``N`` − the number of vendors it is found better than. A vendor nobody is found better than can
    be first; one found better than nobody can be last. When every vendor was scored on the same
    rows, a vendor's position by its rate lies within its range. Returns ``vendor → (best, worst)``.
    """
    names = list(dict.fromkeys(vendors))
    above = dict.fromkeys(names, 0)
    below = dict.fromkeys(names, 0)
    for c in comparisons:
        if c.better is not None and c.worse is not None and c.better in above and c.worse in above:
            above[c.worse] += 1
            below[c.better] += 1
    return {v: (1 + above[v], len(names) - below[v]) for v in names}


def compact_letter_display(order: Sequence[str], different: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Letters that group vendors: two vendors share a letter exactly when the test cannot tell
    them apart.

    Definition (Piepho 2004, *J. Comput. Graph. Stat.* 13:456–466, insert-and-absorb): start with
    one group holding every vendor; for each pair found different, every group that holds both is
    split into one without the first and one without the second; a group contained in another is
    dropped. Each remaining group gets a letter, ``a`` for the group holding the best-placed vendor
    in ``order`` (then by its next members), ``b`` for the next, and so on; a vendor's letters are
    those of its groups, in order. So vendors with a letter in common are not significantly
    different, and vendors with no letter in common are. Returns ``vendor → letters``.
    """
    names = list(dict.fromkeys(order))
    position = {v: i for i, v in enumerate(names)}
    groups: list[frozenset[str]] = [frozenset(names)] if names else []
    for x, y in different:
        if x not in position or y not in position or x == y:
            continue
        split: list[frozenset[str]] = []
        for g in groups:
            split += [g - {x}, g - {y}] if x in g and y in g else [g]
        unique = list(dict.fromkeys(split))
        groups = [g for g in unique if g and not any(g < h for h in unique)]
    groups.sort(key=lambda g: sorted(position[v] for v in g))
    letters = _letter_names(len(groups))
    return {v: "".join(letters[i] for i, g in enumerate(groups) if v in g) for v in names}


def _letter_names(count: int) -> list[str]:
    """a … z, then aa, ab, … (enough for any number of groups)."""
    names = []
    for i in range(count):
        name, k = "", i
        while True:
            name = chr(ord("a") + k % 26) + name
            k = k // 26 - 1
            if k < 0:
                break
        names.append(name)
    return names


@functools.lru_cache(maxsize=64)
def _critical_counts(n: int, alpha: float) -> tuple[int, ...]:
    """For each number of discordant rows D = 0…n, the largest k with 2·P(X ≤ k) < alpha,
    X ~ Binomial(D, ½) (−1 when none): the exact test rejects when min(b, c) ≤ k. The critical
    count never falls as D grows and rises by at most one per row, so one pass finds them all."""
    out = []
    k = -1
    for discordant in range(n + 1):
        while k + 1 < discordant and 2.0 * float(bdtr(k + 1, discordant, 0.5)) < alpha:
            k += 1
        out.append(k)
    return tuple(out)


@functools.lru_cache(maxsize=16)
def _discordant_distribution(rows: int, psi: float) -> np.ndarray:
    """P(D = d) for d = 0…rows, D ~ Binomial(rows, ψ): the same for every difference a bisection
    tries (`minimum_detectable_difference`), so it is worked out once (read only)."""
    discordant = np.arange(rows + 1, dtype=float)
    out = np.asarray(bdtr(discordant, rows, psi), dtype=float) - np.concatenate(
        ([0.0], np.asarray(bdtr(discordant[:-1], rows, psi), dtype=float))
    )
    out.flags.writeable = False
    return out


def mcnemar_power(n: int, discordance: float, difference: float, alpha: float = FAMILY_ALPHA) -> float:
    """The chance that the exact McNemar test (:func:`mcnemar_exact_p`, p < ``alpha``) finds the
    better of two vendors better, over ``n`` rows.

    Definition (exact and unconditional, as Duffy 1984): each row is discordant with probability
    ``ψ`` = ``discordance``, and a discordant row favours the better vendor with probability
    ``π = (ψ + δ)/(2ψ)``, where ``δ`` = ``difference`` (0 ≤ δ ≤ ψ) is the difference of the two
    vendors' correct rates. The number of discordant rows is ``D ~ Binomial(n, ψ)``; given ``D``
    the test rejects in the right direction when the better vendor's count ``B ~ Binomial(D, π)``
    is at least ``D − k_D``, with ``k_D`` the largest count whose two-sided p-value is below
    ``alpha``. Power = ``Σ_D P(D)·P(B ≥ D − k_D)``. Reproduces MESS's ``power_mcnemar_test(144,
    paid = 0.25, psi = 1.8, method = "exact")`` at one-sided 0.025 (0.80).
    """
    rows = _count("n", n)
    psi = _probability("discordance", discordance, closed_high=True)
    _probability("alpha", alpha)
    if not (math.isfinite(difference) and 0.0 <= difference <= psi):
        raise ValueError(f"difference must lie in [0, discordance], got {difference!r}")
    if rows == 0:
        return 0.0
    critical = np.asarray(_critical_counts(rows, float(alpha)), dtype=float)
    discordant = np.arange(rows + 1, dtype=float)
    p_discordant = _discordant_distribution(rows, psi)
    favour = min(1.0, (psi + difference) / (2 * psi))
    # P(B ≥ D − k) = P(B > D − k − 1); with k = −1 that is P(B > D) = 0
    reject = np.where(critical >= 0, np.asarray(bdtrc(discordant - critical - 1, discordant, favour), dtype=float), 0.0)
    return float(min(1.0, max(0.0, float(np.sum(p_discordant * reject)))))


def minimum_detectable_difference(
    n: int, discordance: float, alpha: float = FAMILY_ALPHA, power: float = TARGET_POWER
) -> float | None:
    """The smallest difference of two correct rates the exact McNemar test finds with the given
    power, for ``n`` rows and the share ``discordance`` of rows on which exactly one is correct.

    Definition: the smallest ``δ`` in (0, ψ] with :func:`mcnemar_power` ``(n, ψ, δ, alpha) ≥
    power``, found by bisection to 10⁻⁶ (power grows with ``δ``). ``None`` when even ``δ = ψ``
    (every discordant row favouring one vendor) falls short: with so few rows or so little
    disagreement no difference could be shown.
    """
    _probability("power", power)
    psi = _probability("discordance", discordance, closed_high=True)
    if mcnemar_power(n, psi, psi, alpha) < power:
        return None
    low, high = 0.0, psi
    while high - low > 1e-6:
        middle = (low + high) / 2
        if mcnemar_power(n, psi, middle, alpha) >= power:
            high = middle
        else:
            low = middle
    return high


@dataclass(frozen=True)
class PowerStatement:
    """What "cannot be told apart" means in a snapshot: the smallest difference of the ranking
    figure the paired test finds with 80 % power, at the snapshot's typical pair (median rows and
    median discordance over all pairs), at Holm's strictest step (``alpha``/pairs) and, for
    comparison, at ``alpha`` for a single pair."""

    pairs: int
    n: int
    discordance: float
    alpha: float
    alpha_strictest: float
    power: float
    minimum_detectable_difference: float | None
    minimum_detectable_difference_single_pair: float | None


def power_statement(
    counts: Sequence[PairedCounts], alpha: float = FAMILY_ALPHA, power: float = TARGET_POWER
) -> PowerStatement | None:
    """The snapshot's minimum detectable difference (:class:`PowerStatement`).

    Definition: over the ``m`` pairs with rows in common, ``n`` = the median number of rows
    compared (rounded down) and ``ψ`` = the median share of discordant rows. The difference is
    :func:`minimum_detectable_difference` ``(n, ψ)`` at ``alpha/m``, the level of Holm's first and
    strictest step: a pair whose raw p-value is below ``alpha/m`` is declared different whatever
    the other pairs show, so a true difference of that size is found with at least 80 % power
    under any outcome of the other pairs. At ``alpha`` (Holm's last step, reached only when every
    other pair is already declared different) the test could at best find the smaller
    ``…_single_pair`` difference. ``None`` with no pair to compare; a difference is ``None`` when
    none could be found (see :func:`minimum_detectable_difference`).
    """
    compared = [c for c in counts if c.n > 0]
    if not compared:
        return None
    n = int(statistics.median_low([c.n for c in compared]))
    psi = float(statistics.median([c.discordant / c.n for c in compared]))
    strictest = alpha / len(compared)
    # no disagreement on any row of the typical pair: nothing to detect a difference from
    detectable = minimum_detectable_difference(n, psi, strictest, power) if psi > 0 else None
    single = minimum_detectable_difference(n, psi, alpha, power) if psi > 0 else None
    return PowerStatement(len(compared), n, psi, alpha, strictest, power, detectable, single)


@dataclass(frozen=True)
class PairedRanking:
    """The paired comparison of a snapshot: every pair (:class:`PairedComparison`), each vendor's
    rank range and letters, and the power statement."""

    vendors: list[str]
    comparisons: list[PairedComparison]
    rank_ranges: dict[str, tuple[int, int]]
    letters: dict[str, str]
    power: PowerStatement | None


def ranking_from_comparisons(
    order: Sequence[str],
    comparisons: Sequence[PairedComparison],
    alpha: float = FAMILY_ALPHA,
    power: float = TARGET_POWER,
) -> PairedRanking:
    """Rank ranges (:func:`paired_rank_ranges`), letters (:func:`compact_letter_display`, ``a`` for
    the group of the first vendor in ``order``) and the power statement (:func:`power_statement`)
    from the pairs' comparisons; ``order`` lists the vendors compared, best placed first."""
    names = list(dict.fromkeys(order))
    different = [(c.better, c.worse) for c in comparisons if c.better is not None and c.worse is not None]
    return PairedRanking(
        names,
        list(comparisons),
        paired_rank_ranges(names, comparisons),
        compact_letter_display(names, [(x, y) for x, y in different if x is not None and y is not None]),
        power_statement([c.counts for c in comparisons], alpha, power),
    )


def paired_ranking(
    records: Iterable[tuple[str, str, bool]],
    alpha: float = FAMILY_ALPHA,
    confidence: float = 0.95,
    power: float = TARGET_POWER,
    order: Sequence[str] | None = None,
) -> PairedRanking:
    """The whole paired comparison from ``(vendor, row_id, correct)`` records (the rows of the
    ranking figure): :func:`paired_counts`, :func:`compare_pairs`, then
    :func:`ranking_from_comparisons`. ``order`` (best placed first) defaults to each vendor's rate
    over its own records, highest first, ties by name."""
    listed = list(records)
    counts = paired_counts(listed)
    if order is None:
        totals: dict[str, list[int]] = {}
        for vendor, _, correct in listed:
            tally = totals.setdefault(str(vendor), [0, 0])
            tally[0] += int(bool(correct))
            tally[1] += 1
        order = sorted(totals, key=lambda v: (-totals[v][0] / totals[v][1], v))
    return ranking_from_comparisons(order, compare_pairs(counts, alpha, confidence), alpha, power)
