"""Kaplan–Meier estimate of time-to-retrievability, following R's ``survival::survfit``.

A sentinel page is published at a known time; probes every few hours record when each vendor
first returns it. Each (vendor, page) is one subject: ``duration`` is the hours from publish
time to the first probe that found it (``observed=True``), or to the last probe so far
(``observed=False``, right-censored). Durations beyond ``censor_at_hours`` (30 days) are
censored there.

How exactness and speed are reconciled: durations are grouped by distinct value with numpy
(``np.unique`` and ``np.bincount``), so the work is over distinct event times, not probes.
The curve is computed in floating point, and the one comparison that decides the median,
``S(t) ≤ 1/2``, is made exact: wherever the float estimate is within a rounding margin of
1/2, the sign of ``2·Π(n−d) − Π n`` is evaluated with Python integers (products by binary
splitting). ``KMCurve.survival_exact`` gives the whole curve as ``fractions.Fraction``
values on request.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property

import numpy as np

from .stats import Interval, _normal_quantile

__all__ = [
    "DEFAULT_CENSOR_AT_HOURS",
    "KMCurve",
    "km_estimate",
    "km_median",
    "km_median_interval",
]

DEFAULT_CENSOR_AT_HOURS = 720.0
# survfit's own tolerance for "the band equals 0.5" (sqrt(.Machine$double.eps)); used only
# for the confidence bands, which are irrational and cannot be compared exactly.
_R_TOLERANCE = math.sqrt(np.finfo(float).eps)


@dataclass(frozen=True)
class _Grouped:
    times: np.ndarray  # distinct event times (at least one event), ascending
    at_risk: np.ndarray  # int64: subjects with duration >= time
    events: np.ndarray  # int64: events at time
    n_subjects: int


@dataclass(frozen=True)
class KMCurve:
    """Kaplan–Meier curve at its distinct event times (as ``summary(survfit(...))`` lists).

    ``times`` ascending; ``n_at_risk`` (subjects whose duration ≥ t); ``n_events``;
    ``survival`` S(t) = Π_{tᵢ ≤ t} (nᵢ − dᵢ)/nᵢ as floats (``survival_exact`` as
    ``Fraction``); ``std_err_log`` = √Σ_{tᵢ ≤ t} dᵢ/(nᵢ(nᵢ − dᵢ)), the Greenwood standard
    error of log S (R's ``fit$std.err``; infinite once S reaches 0); ``std_err`` =
    S·``std_err_log``, the Greenwood standard error of S (``summary(fit)$std.err``; ``None``
    where S = 0); ``lower``/``upper`` the pointwise ``confidence`` band on the log scale,
    ``exp(log S ∓ z·std_err_log)`` with the upper bound capped at 1 (``None`` where S = 0),
    as survfit's default ``conf.type="log"``. ``n_subjects`` counts all subjects.
    """

    times: tuple[float, ...]
    n_at_risk: tuple[int, ...]
    n_events: tuple[int, ...]
    survival: tuple[float, ...]
    std_err: tuple[float | None, ...]
    std_err_log: tuple[float, ...]
    lower: tuple[float | None, ...]
    upper: tuple[float | None, ...]
    n_subjects: int
    confidence: float

    @cached_property
    def survival_exact(self) -> tuple[Fraction, ...]:
        """S(t) at each event time as an exact fraction."""
        values: list[Fraction] = []
        current = Fraction(1)
        for at_risk, events in zip(self.n_at_risk, self.n_events):
            current *= Fraction(at_risk - events, at_risk)
            values.append(current)
        return tuple(values)


def _group(
    durations: Sequence[float] | np.ndarray,
    observed: Sequence[bool] | np.ndarray,
    censor_at_hours: float | None,
) -> _Grouped:
    times = np.asarray(durations, dtype=float)
    raw_observed = np.asarray(observed)
    if times.ndim != 1 or raw_observed.ndim != 1 or times.shape != raw_observed.shape:
        raise ValueError("durations and observed must be 1-D sequences of the same length")
    if raw_observed.dtype != bool:
        if raw_observed.size and not np.isin(raw_observed, (0, 1)).all():
            raise ValueError("observed must hold booleans or 0/1")
    events = raw_observed.astype(bool)
    if np.isnan(times).any():
        raise ValueError("durations must not be NaN")
    if (times < 0).any():
        raise ValueError("durations must be >= 0")
    if censor_at_hours is not None:
        if not censor_at_hours > 0:
            raise ValueError(f"censor_at_hours must be > 0, got {censor_at_hours!r}")
        beyond = times > censor_at_hours
        times = np.where(beyond, censor_at_hours, times)
        events = events & ~beyond
    if np.isinf(times[events]).any():
        raise ValueError("an observed event cannot have an infinite duration")

    distinct, inverse = np.unique(times, return_inverse=True)
    counts = np.bincount(inverse, minlength=distinct.size)
    event_counts = np.bincount(inverse[events], minlength=distinct.size)
    at_risk = np.cumsum(counts[::-1])[::-1]
    has_event = event_counts > 0
    return _Grouped(
        times=distinct[has_event],
        at_risk=at_risk[has_event].astype(np.int64),
        events=event_counts[has_event].astype(np.int64),
        n_subjects=int(times.size),
    )


def _float_survival(grouped: _Grouped) -> np.ndarray:
    return np.cumprod((grouped.at_risk - grouped.events) / grouped.at_risk)


def _product(values: list[int]) -> int:
    """Product by binary splitting: fast for many factors, unlike a left fold."""
    if not values:
        return 1
    while len(values) > 1:
        paired = [values[i] * values[i + 1] for i in range(0, len(values) - 1, 2)]
        if len(values) % 2:
            paired.append(values[-1])
        values = paired
    return values[0]


def _compare_with_half(grouped: _Grouped, index: int) -> int:
    """Sign of S(t_index) − 1/2, computed exactly: −1, 0 or +1."""
    at_risk = grouped.at_risk[: index + 1].tolist()
    survivors = (grouped.at_risk[: index + 1] - grouped.events[: index + 1]).tolist()
    difference = 2 * _product(survivors) - _product(at_risk)
    return (difference > 0) - (difference < 0)


def _median_from_grouped(grouped: _Grouped, survival: np.ndarray) -> float | None:
    count = survival.size
    if count == 0:
        return None
    # The float S(t) is a product of `count` correctly rounded factors, so its relative
    # error is below count·eps; outside this margin the float decides S ≤ 1/2 correctly.
    margin = max(1e-9, 4.0 * count * np.finfo(float).eps)
    candidates = np.flatnonzero(survival <= 0.5 + margin)
    if candidates.size == 0:
        return None
    index = int(candidates[0])
    while index < count:
        if survival[index] < 0.5 - margin:
            return float(grouped.times[index])
        sign = _compare_with_half(grouped, index)
        if sign < 0:
            return float(grouped.times[index])
        if sign == 0:  # S = 1/2 exactly: midpoint of the plateau, or its start if it is last
            if index + 1 < count:
                return float((grouped.times[index] + grouped.times[index + 1]) / 2)
            return float(grouped.times[index])
        index += 1  # exactly above 1/2 although the float said otherwise; S falls next time
    return None


def _log_std_err(grouped: _Grouped) -> np.ndarray:
    n = grouped.at_risk.astype(float)
    d = grouped.events.astype(float)
    with np.errstate(divide="ignore"):
        terms = np.where(n > d, d / (n * (n - d)), np.inf)
    std_err: np.ndarray = np.sqrt(np.cumsum(terms))
    return std_err


def _bands(survival: np.ndarray, std_err_log: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    z = _normal_quantile(confidence)
    positive = survival > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        log_s = np.where(positive, np.log(np.where(positive, survival, 1.0)), np.nan)
        lower = np.exp(log_s - z * std_err_log)
        upper = np.minimum(np.exp(log_s + z * std_err_log), 1.0)
    return lower, upper


def _r_band_median(times: np.ndarray, band: np.ndarray) -> float | None:
    """R's ``minmin`` (inside ``survival:::survmean``) applied to one confidence band."""
    keep = ~np.isnan(band) & (band < 0.5 + _R_TOLERANCE)
    if not keep.any():
        return None
    kept_times, kept_band = times[keep], band[keep]
    first = kept_band[0]
    if abs(first - 0.5) < _R_TOLERANCE:
        later = np.flatnonzero(kept_band < first)
        if later.size:
            return float((kept_times[0] + kept_times[later[0]]) / 2)
    return float(kept_times[0])


def _optional(values: np.ndarray) -> tuple[float | None, ...]:
    return tuple(None if math.isnan(value) else value for value in values.tolist())


def km_estimate(
    durations: Sequence[float] | np.ndarray,
    observed: Sequence[bool] | np.ndarray,
    censor_at_hours: float | None = DEFAULT_CENSOR_AT_HOURS,
    confidence: float = 0.95,
) -> KMCurve:
    """Kaplan–Meier curve of time-to-retrievability (see :class:`KMCurve` for its fields).

    Definition: subjects with ``durations[i]`` (hours ≥ 0) and ``observed[i]`` (True when the
    page was found at that time, False when still not found: right-censored). A duration
    above ``censor_at_hours`` (default 720 h = 30 days; ``None`` disables) is censored at
    ``censor_at_hours``; an infinite duration is allowed for a censored subject. At each
    distinct event time tᵢ, nᵢ subjects have duration ≥ tᵢ and dᵢ events occur there
    (subjects censored at tᵢ are still at risk at tᵢ, as in survfit);
    S(t) = Π_{tᵢ ≤ t} (1 − dᵢ/nᵢ). Greenwood standard errors and the log-scale band are as
    ``survfit(Surv(t, e) ~ 1)`` (``conf.type="log"``).
    """
    grouped = _group(durations, observed, censor_at_hours)
    survival = _float_survival(grouped)
    std_err_log = _log_std_err(grouped)
    lower, upper = _bands(survival, std_err_log, confidence)
    with np.errstate(invalid="ignore"):
        std_err = np.where(survival > 0, survival * std_err_log, np.nan)
    return KMCurve(
        times=tuple(grouped.times.tolist()),
        n_at_risk=tuple(grouped.at_risk.tolist()),
        n_events=tuple(grouped.events.tolist()),
        survival=tuple(survival.tolist()),
        std_err=_optional(std_err),
        std_err_log=tuple(std_err_log.tolist()),
        lower=_optional(lower),
        upper=_optional(upper),
        n_subjects=grouped.n_subjects,
        confidence=confidence,
    )


def km_median(
    durations_hours: Sequence[float] | np.ndarray,
    observed: Sequence[bool] | np.ndarray,
    censor_at_hours: float | None = DEFAULT_CENSOR_AT_HOURS,
) -> float | None:
    """Kaplan–Meier median time-to-retrievability in hours, as R's ``survfit`` reports it.

    Definition: with S(t) the Kaplan–Meier estimate (:func:`km_estimate`; durations above
    ``censor_at_hours``, default 720 h, are censored there), the median is the first event
    time t at which S(t) < 1/2; if S(t) = 1/2 exactly at that first event time t at or below
    1/2, the median is the midpoint between t and the next event time (S is flat on that
    plateau), or t itself if no event follows. ``None`` ("not reached", never infinity or
    NaN) when S never falls to 1/2, including when every subject is censored or there are
    none. The comparison with 1/2 is exact (rational arithmetic), so 12 pages found at
    hours 1…12 give 6.5, although the float product (11/12)·…·(6/7) rounds to
    0.4999999999999999. R's survfit compares with a tolerance of 1.5e-8 instead; the two
    agree unless S lies within 1.5e-8 of 1/2 without equalling it.
    """
    grouped = _group(durations_hours, observed, censor_at_hours)
    return _median_from_grouped(grouped, _float_survival(grouped))


def km_median_interval(
    durations_hours: Sequence[float] | np.ndarray,
    observed: Sequence[bool] | np.ndarray,
    censor_at_hours: float | None = DEFAULT_CENSOR_AT_HOURS,
    confidence: float = 0.95,
) -> Interval:
    """Kaplan–Meier median with its confidence interval, as ``summary(survfit(...))$table``.

    Definition: ``value`` is :func:`km_median`. The bounds apply the same median rule to
    the pointwise confidence band of S(t) that survfit computes by default
    (``conf.type="log"``): ``lower(t) = exp(log S(t) − z·se)``,
    ``upper(t) = min(1, exp(log S(t) + z·se))`` with ``se = √Σ_{tᵢ ≤ t} dᵢ/(nᵢ(nᵢ − dᵢ))``
    (Greenwood, log scale) and ``z = Φ⁻¹(1 − (1 − confidence)/2)``; the band is undefined
    where S = 0. The interval's ``low`` is the first event time at which the lower band is
    below 1/2 and its ``high`` the first at which the upper band is; a band equal to 1/2
    (within R's tolerance 1.5e-8, as the band is irrational) takes the midpoint to the next
    time it drops, exactly as survfit's ``minmin``. A bound is ``None`` when its band never
    falls to 1/2 ("not reached").
    """
    grouped = _group(durations_hours, observed, censor_at_hours)
    survival = _float_survival(grouped)
    median = _median_from_grouped(grouped, survival)
    lower_band, upper_band = _bands(survival, _log_std_err(grouped), confidence)
    return Interval(
        value=median,
        low=_r_band_median(grouped.times, lower_band),
        high=_r_band_median(grouped.times, upper_band),
    )
