"""Interval estimates and summary statistics for the leaderboard.

Every proportion is published with a 95 % Wilson score interval; a difference of two
proportions (the overfit gap) with Newcombe's hybrid score interval. Both reproduce
statsmodels (``proportion_confint(method="wilson")`` and
``confint_proportions_2indep(method="newcomb", compare="diff")``). Cost per correct carries
the Wilson bounds of the correct rate; a percentile (latency p50/p95) gets the
distribution-free order-statistic interval, as ``scipy.stats.quantile_test``; a mean of values
bounded in [0, 1] (fidelity, the answer rubric) the Wilson score interval with the Bernoulli
variance bound. Which vendors differ is decided by paired tests (``metrics.paired``), not by these
intervals. Undefined quantities are ``None``, never NaN, 0 or infinity.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from scipy.special import bdtr, bdtrc, ndtri

__all__ = [
    "Interval",
    "bounded_mean_interval",
    "cost_per_correct",
    "cost_per_correct_interval",
    "newcombe_interval",
    "overfit_gap",
    "percentile",
    "percentile_interval",
    "usd_per_thousand_correct",
    "wilson_interval",
]


@dataclass(frozen=True)
class Interval:
    """A point estimate with its confidence interval; all three are ``None`` when the
    estimate is undefined (no observations)."""

    value: float | None
    low: float | None
    high: float | None


_UNDEFINED = Interval(None, None, None)


def _count(name: str, value: int) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{name} must be an integer count, got {value!r}")
    try:
        count = operator.index(value)
    except TypeError:
        # A whole float from a caller that ignored the annotation; `float.is_integer` because
        # the declared `int` has no `is_integer` before Python 3.12.
        if isinstance(value, float) and float.is_integer(value):
            count = int(value)
        else:
            raise ValueError(f"{name} must be an integer count, got {value!r}") from None
    if count < 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return count


def _normal_quantile(confidence: float) -> float:
    """z with P(|Z| ≤ z) = confidence for a standard normal Z. Computed as
    ``−ndtri((1 − confidence)/2)``, bit-for-bit what ``scipy.stats.norm.isf`` (used by
    statsmodels) returns, without importing all of scipy.stats."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    return float(-ndtri((1 - confidence) / 2))


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> Interval:
    """Wilson score interval for a binomial proportion.

    Definition: with ``p = successes / n`` and ``z`` the standard normal quantile
    ``Φ⁻¹(1 − (1 − confidence)/2)`` (1.959964 for 95 %),
    ``centre = (p + z²/(2n)) / (1 + z²/n)``,
    ``half = z / (1 + z²/n) · √(p(1 − p)/n + z²/(4n²))``; the interval is
    ``[centre − half, centre + half]`` clipped to [0, 1] (exactly 0 when ``successes = 0``
    and exactly 1 when ``successes = n``). ``value`` is ``p``. With ``n = 0`` all three are
    ``None``. Matches statsmodels ``proportion_confint(successes, n, alpha=1 − confidence,
    method="wilson")``.
    """
    successes = _count("successes", successes)
    n = _count("n", n)
    if successes > n:
        raise ValueError(f"successes ({successes}) cannot exceed n ({n})")
    z = _normal_quantile(confidence)
    if n == 0:
        return _UNDEFINED
    p = successes / n
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    low = 0.0 if successes == 0 else min(1.0, max(0.0, centre - half))
    high = 1.0 if successes == n else min(1.0, max(0.0, centre + half))
    return Interval(p, low, high)


def newcombe_interval(successes1: int, n1: int, successes2: int, n2: int, confidence: float = 0.95) -> Interval:
    """Newcombe's hybrid score interval for the difference of two proportions ``p1 − p2``.

    Definition (Newcombe 1998, method 10): with ``[l1, u1]`` and ``[l2, u2]`` the Wilson
    intervals (:func:`wilson_interval`) of ``p1 = successes1/n1`` and ``p2 = successes2/n2``
    at the same confidence, ``d = p1 − p2``,
    ``low = d − √((p1 − l1)² + (u2 − p2)²)`` and ``high = d + √((u1 − p1)² + (p2 − l2)²)``.
    ``value`` is ``d``. If either sample is empty all three are ``None``. Matches
    statsmodels ``confint_proportions_2indep(successes1, n1, successes2, n2,
    method="newcomb", compare="diff", alpha=1 − confidence)``.
    """
    first = wilson_interval(successes1, n1, confidence)
    second = wilson_interval(successes2, n2, confidence)
    if first.value is None or second.value is None:
        return _UNDEFINED
    assert first.low is not None and first.high is not None
    assert second.low is not None and second.high is not None
    p1, p2 = first.value, second.value
    difference = p1 - p2
    low = difference - math.sqrt((p1 - first.low) ** 2 + (second.high - p2) ** 2)
    high = difference + math.sqrt((first.high - p1) ** 2 + (p2 - second.low) ** 2)
    return Interval(difference, low, high)


def overfit_gap(
    public_correct: int,
    public_n: int,
    holdout_correct: int,
    holdout_n: int,
    confidence: float = 0.95,
) -> Interval:
    """Overfit gap: public-split accuracy minus holdout accuracy, with a 95 % interval.

    Definition: ``value = public_correct/public_n − holdout_correct/holdout_n``; ``low`` and
    ``high`` are Newcombe's hybrid score interval for that difference
    (:func:`newcombe_interval`, as statsmodels
    ``confint_proportions_2indep(method="newcomb", compare="diff")``). A query the vendor
    answered with nothing or with an error counts in ``n`` as not correct. A positive gap
    whose interval excludes 0 indicates tuning to the published set. If either split has no
    queries, all three are ``None``.
    """
    return newcombe_interval(public_correct, public_n, holdout_correct, holdout_n, confidence)


def bounded_mean_interval(values: Iterable[float], confidence: float = 0.95) -> Interval:
    """Mean of values bounded in [0, 1] (extraction fidelity, the answer rubric's 0 / 0.5 / 1) with
    a 95 % interval: the Wilson score interval with the Bernoulli variance bound.

    Definition: with ``m`` the mean of the ``n`` values (each in [0, 1]) and
    ``z = Φ⁻¹(1 − (1 − confidence)/2)``, the interval is Wilson's,
    ``centre = (m + z²/(2n)) / (1 + z²/n)``, ``half = z / (1 + z²/n) · √(m(1 − m)/n + z²/(4n²))``,
    clipped to [0, 1] (exactly 0 when every value is 0, exactly 1 when every value is 1).
    ``value`` is ``m``; with ``n = 0`` all three are ``None``. Values outside [0, 1] or not finite
    raise ``ValueError``.

    Why this interval: a mean of values in [0, 1] is not a proportion, but any such value with
    mean μ has variance at most μ(1 − μ), the variance of a 0/1 value with the same mean. The
    Wilson interval inverts the score test with that variance, so it is the Wilson interval of a
    proportion when every value is 0 or 1 (the same interval as the correct rate's) and
    conservative (wider, never narrower asymptotically) otherwise. It keeps a positive width at
    the boundary: a vendor with every page at fidelity 1.0 on 84 rows gets [0.956, 1], where a
    normal approximation (the sample's standard deviation is 0) would give the point [1, 1].
    Unlike a bootstrap it is deterministic without a seed.
    """
    data = [float(v) for v in values]
    for value in data:
        if not (math.isfinite(value) and 0.0 <= value <= 1.0):
            raise ValueError(f"values must lie in [0, 1], got {value!r}")
    return mean_interval(math.fsum(data) / len(data) if data else 0.0, len(data), confidence)


def mean_interval(mean: float, n: int, confidence: float = 0.95) -> Interval:
    """:func:`bounded_mean_interval` of ``n`` values in [0, 1] whose mean is ``mean``: the interval
    depends on the values through these two alone, so a published mean and its n give it back."""
    n = _count("n", n)
    if not (math.isfinite(mean) and 0.0 <= mean <= 1.0):
        raise ValueError(f"mean must lie in [0, 1], got {mean!r}")
    z = _normal_quantile(confidence)
    if n == 0:
        return _UNDEFINED
    z2 = z * z
    centre = (mean + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(max(0.0, mean * (1 - mean)) / n + z2 / (4 * n * n))
    low = 0.0 if mean == 0 else max(0.0, centre - half)
    high = 1.0 if mean == 1 else min(1.0, centre + half)
    return Interval(mean, low, high)


def cost_per_correct(spend: float, correct: int) -> float | None:
    """Cost per correct answer: billed spend on the pinned plan ÷ verified-correct answers.

    Definition: ``spend / correct``; undefined (``None``, shown as ``—``) when ``correct``
    is 0 — never 0 or infinity. ``spend`` must be a finite amount ≥ 0 (in the plan's
    currency) and ``correct`` a count ≥ 0.
    """
    correct = _count("correct", correct)
    amount = float(spend)
    if not math.isfinite(amount) or amount < 0:
        raise ValueError(f"spend must be a finite amount >= 0, got {spend!r}")
    if correct == 0:
        return None
    return amount / correct


def cost_per_correct_interval(spend: float, correct: int, n: int, confidence: float = 0.95) -> Interval:
    """Cost per correct answer with a 95 % interval from the Wilson interval of the correct rate.

    Definition: ``value = spend / correct`` (:func:`cost_per_correct`). The spend is billed,
    so it is known exactly; the uncertainty is in how often the vendor answers correctly. With
    ``[l, u]`` the Wilson interval (:func:`wilson_interval`) of the correct rate
    ``correct / n`` over the ``n`` rows the spend was billed on, and ``cost = spend / (n · p)``
    decreasing in the rate ``p``, the interval is ``low = spend / (n · u)`` and
    ``high = spend / (n · l)``: the cost per correct at the best and the worst plausible rate,
    the spend per row held at its billed value. Undefined (all three ``None``) when ``correct``
    is 0 (``l`` is then 0); with ``spend = 0`` all three are 0 (a free plan is exactly free).
    ``correct ≤ n`` is checked.
    """
    value = cost_per_correct(spend, correct)
    rate = wilson_interval(correct, n, confidence)
    if value is None or rate.low is None or rate.high is None or rate.low <= 0:
        return _UNDEFINED
    amount = float(spend)
    n = _count("n", n)
    return Interval(value, amount / (n * rate.high), amount / (n * rate.low))


CORRECT_PER_BLOCK = 1000


def usd_per_thousand_correct(cost_per_correct: Interval) -> Interval:
    """Dollars per 1,000 correct answers: the cost per correct interval
    (:func:`cost_per_correct_interval`) scaled by 1,000, the unit buyers compare plans in.

    Definition: ``value = 1000 · spend / correct``, ``low = 1000 · cpc.low``,
    ``high = 1000 · cpc.high``: scaling by a positive constant keeps the interval's coverage, so
    the interval is still the correct rate's Wilson interval carried through with the spend held
    exact. Undefined (all three ``None``) exactly when the cost per correct is (zero correct); a
    bound that is ``None`` stays ``None``. A negative or non-finite figure raises.
    """
    scaled = []
    for name in ("value", "low", "high"):
        x = getattr(cost_per_correct, name)
        if x is not None and not (math.isfinite(x) and x >= 0):
            raise ValueError(f"cost per correct {name} must be a finite amount >= 0, got {x!r}")
        scaled.append(None if x is None else x * CORRECT_PER_BLOCK)
    if scaled[0] is None:
        return _UNDEFINED
    return Interval(*scaled)


def percentile(values: Iterable[float], q: float) -> float | None:
    """The ``q``-th percentile (0 ≤ q ≤ 100) with linear interpolation, e.g. latency p50/p95.

    Definition (numpy's default, Hyndman & Fan type 7): sort the ``n`` values
    ``x₀ ≤ … ≤ x_{n−1}``; with ``h = (n − 1)·q/100``, the result is
    ``x_⌊h⌋ + (h − ⌊h⌋)(x_⌊h⌋+1 − x_⌊h⌋)``. ``None`` for no values; NaN values raise.
    """
    if not 0 <= q <= 100:
        raise ValueError(f"q must be within [0, 100], got {q!r}")
    data = np.asarray(list(values), dtype=float)
    if data.size == 0:
        return None
    if np.isnan(data).any():
        raise ValueError("percentile of values containing NaN")
    return float(np.percentile(data, q))


def percentile_interval(values: Iterable[float], q: float, confidence: float = 0.95) -> Interval:
    """The ``q``-th percentile (e.g. latency p50/p95) with a distribution-free 95 % interval.

    ``value`` is :func:`percentile` (type 7, linear interpolation). The interval is the
    order-statistic (binomial) confidence interval for a quantile (Conover, *Practical
    Nonparametric Statistics*, 3rd ed., §3.2), which assumes nothing about the distribution
    beyond independent draws: with the ``n`` values sorted ``x₍₁₎ ≤ … ≤ x₍ₙ₎``, ``p = q/100``,
    ``α = 1 − confidence`` and ``B ~ Binomial(n, p)`` (the number of draws at or below the true
    quantile), ``low = x₍ₗ₎`` with ``l`` the smallest ``k`` such that ``P(B ≤ k) ≥ α/2``, and
    ``high = x₍ᵤ₎`` with ``u − 1`` the smallest ``k`` such that ``P(B > k) ≤ α/2``. Then
    ``P(x₍ₗ₎ ≤ quantile ≤ x₍ᵤ₎) = P(l ≤ B ≤ u − 1) ≥ confidence`` (exactly, not asymptotically;
    conservative with ties). A bound whose rank falls outside ``1 … n`` (too few values for
    that tail, e.g. p95 of 20 values has no upper bound) is ``None``. (For an extreme quantile
    of a handful of values the interpolated ``value`` can fall outside the interval, whose
    ends are always observed values.) Reproduces
    ``scipy.stats.quantile_test(values, p=q/100).confidence_interval(confidence)``. All three
    are ``None`` for no values.
    """
    data = np.sort(np.asarray(list(values), dtype=float))
    value = percentile(data, q)
    if value is None:
        return _UNDEFINED
    _normal_quantile(confidence)  # validates confidence
    n = data.size
    p = q / 100
    tail = (1 - confidence) / 2
    k = np.arange(n + 1)
    # P(B ≤ k) and P(B > k) from scipy.special's binomial distribution functions (no scipy.stats import);
    # a relative slack absorbs rounding at an exact tie with the tail probability.
    cdf = bdtr(k, n, p)
    sf = bdtrc(k, n, p)
    slack = 1e-10
    l_rank = int(np.argmax(cdf >= tail * (1 - slack)))  # cdf[n] = 1, so always found
    u_rank = int(np.argmax(sf <= tail * (1 + slack))) + 1  # sf[n] = 0, so always found
    low = float(data[l_rank - 1]) if l_rank >= 1 else None
    high = float(data[u_rank - 1]) if u_rank <= n else None
    return Interval(value, low, high)
