"""A published figure checked against the published parts it is made of, with the benchmark's own metrics.

A figure of `leaderboard.json` is `{value, n, low, high}`, rounded to 6 decimals (`aggregate.
leaderboard.figure_of`). What a figure can be checked against depends on its kind, read from its
metric's name (`kind_of`), so a new scope or group of figures is checked without code here:

- a proportion (correct rate, coverage, hit@k) is a count over n: its count is `value · n`, and
  `value`, `low`, `high` are `metrics.wilson_interval(count, n)`; over two disjoint parts (public
  and holdout) both the count and n add up;
- a mean of values in [0, 1] (fidelity, the answer score): its sum is `value · n` (within the
  rounding), its interval `metrics.mean_interval(value, n)`; sums and n add up;
- a total (billed spend): exact, `low = high = value`; totals and n add up;
- the cost per correct: `metrics.cost_per_correct_interval(spend, correct, n)` from the same
  rows' spend and correct rate;
- dollars per 1,000 correct: `metrics.usd_per_thousand_correct` of that cost per correct;
- the overfit gap: `metrics.overfit_gap` of the public and holdout correct rates;
- a percentile (latency): only its n adds up; the value is not made of its parts' values.

Every expectation is a range: what the figure can be given the parts' own rounding, so a figure is
a difference only when no value of its parts could give it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from bench_assets.metrics import (
    Interval,
    cost_per_correct_interval,
    mean_interval,
    overfit_gap,
    usd_per_thousand_correct,
    wilson_interval,
)

ROUNDING = 5e-7  # a published figure is rounded to 6 decimals
SLACK = 1e-9  # floating point, beyond the rounding
FIELDS = ("value", "low", "high")

PROPORTION, MEAN, TOTAL, COST, PER_THOUSAND, GAP, PERCENTILE = (
    "proportion",
    "mean",
    "total",
    "cost",
    "per_thousand",
    "gap",
    "percentile",
)
_KINDS = (
    (re.compile(r"^(correct_rate(_shared)?|coverage|hit_at_\d+)$"), PROPORTION),
    (re.compile(r"^[a-z_]+_mean$"), MEAN),
    (re.compile(r"^spend_usd$"), TOTAL),
    (re.compile(r"^cost_per_correct_usd$"), COST),
    (re.compile(r"^usd_per_1000_correct$"), PER_THOUSAND),
    (re.compile(r"^overfit_gap$"), GAP),
    (re.compile(r"^latency_p\d+_ms$"), PERCENTILE),
)
# The figures a cost per correct and an overfit gap are computed from, in the same group of rows.
SPEND, CORRECT = "spend_usd", "correct_rate"


def kind_of(metric: str) -> str | None:
    """The kind of a metric's figure (None: not one these checks know, e.g. time-to-retrievability)."""
    return next((kind for pattern, kind in _KINDS if pattern.match(metric)), None)


@dataclass(frozen=True)
class Expected:
    """What a figure can be, given its parts: its n exactly, each of value/low/high within a range
    (None: undefined)."""

    n: int
    ranges: dict[str, tuple[float, float] | None]

    @classmethod
    def between(cls, n: int, *intervals: Interval) -> Expected:
        """The range of each field over the intervals computed at the ends of the parts' rounding
        (each field is monotonic in the part that varies)."""
        ranges: dict[str, tuple[float, float] | None] = {}
        for name in FIELDS:
            values = [getattr(iv, name) for iv in intervals]
            defined = [v for v in values if v is not None]
            ranges[name] = (min(defined), max(defined)) if len(defined) == len(values) else None
        return cls(n, ranges)

    def shown(self, name: str) -> float | None:
        """The field as the figure would publish it (the middle of its range, rounded)."""
        r = self.ranges[name]
        return None if r is None else round((r[0] + r[1]) / 2, 6)

    def mismatches(self, published: Mapping[str, Any]) -> Iterator[tuple[str, Any, Any]]:
        """Each field of `published` no part could give: (field, published, expected)."""
        if published.get("n") != self.n:
            yield "n", published.get("n"), self.n
        for name in FIELDS:
            got, r = published.get(name), self.ranges[name]
            if r is None or got is None:
                if (r is None) != (got is None):
                    yield name, got, self.shown(name)
            elif not (r[0] - ROUNDING - SLACK <= float(got) <= r[1] + ROUNDING + SLACK):
                yield name, got, self.shown(name)


def count_of(figure: Mapping[str, Any]) -> int | None:
    """A proportion's count of successes (`value · n`), or None when `value` is no count over n."""
    value, n = figure.get("value"), figure.get("n")
    if not isinstance(n, int) or n <= 0 or value is None:
        return None
    count = round(float(value) * n)
    return count if 0 <= count <= n and abs(count / n - float(value)) <= ROUNDING + SLACK else None


def _ends(figure: Mapping[str, Any], scale: int = 1) -> tuple[float, float]:
    """The range a rounded published value stands for (times `scale`: a mean's sum)."""
    v = float(figure["value"])
    return (v - ROUNDING) * scale, (v + ROUNDING) * scale


def _clip(x: float) -> float:
    return min(1.0, max(0.0, x))


def proportion(count: int, n: int) -> Expected:
    return Expected.between(n, wilson_interval(count, n))


def mean(low_sum: float, high_sum: float, n: int) -> Expected:
    if n == 0:
        return Expected(0, dict.fromkeys(FIELDS))
    return Expected.between(n, mean_interval(_clip(low_sum / n), n), mean_interval(_clip(high_sum / n), n))


def total(low: float, high: float, n: int) -> Expected:
    return Expected(n, {name: (max(0.0, low), high) for name in FIELDS})


def cost(spend: tuple[float, float], correct: int, n: int, scale: bool = False) -> Expected:
    """Cost per correct from the spend's range (`scale`: per 1,000 correct, `usd_per_thousand_correct`)."""
    ends = [cost_per_correct_interval(max(0.0, spend[0]), correct, n), cost_per_correct_interval(spend[1], correct, n)]
    return Expected.between(n, *(usd_per_thousand_correct(iv) if scale else iv for iv in ends))


def _defined(figure: Mapping[str, Any] | None) -> bool:
    return bool(figure) and figure.get("value") is not None and isinstance(figure.get("n"), int)  # type: ignore[union-attr]


def _sum_range(figures: Iterable[Mapping[str, Any]]) -> tuple[float, float, int] | None:
    lo = hi = 0.0
    n = 0
    for f in figures:
        if not f or not isinstance(f.get("n"), int):
            return None
        if f["n"]:
            if f.get("value") is None:
                return None
            a, b = _ends(f, f["n"])
            lo, hi = lo + a, hi + b
        n += f["n"]
    return lo, hi, n


def _total_range(figures: Iterable[Mapping[str, Any]]) -> tuple[float, float, int] | None:
    lo = hi = 0.0
    n = 0
    for f in figures:
        if not _defined(f):
            return None
        a, b = _ends(f)
        lo, hi, n = lo + a, hi + b, n + f["n"]
    return lo, hi, n


def sum_of_parts(metric: str, parts: list[Mapping[str, Mapping[str, Any]]]) -> Expected | None:
    """The figure `metric` of the rows of several disjoint parts taken together, from each part's
    figures (metric → figure); None when its kind cannot be made of its parts' figures (a
    percentile, an unknown metric) or a part lacks what it needs."""
    kind = kind_of(metric)
    figures = [p[metric] for p in parts if p.get(metric)]  # a part without the figure has none of its rows
    if kind == PROPORTION:
        counts = [count_of(f) if f.get("n") else 0 for f in figures]
        if any(c is None for c in counts) or not all(isinstance(f.get("n"), int) for f in figures):
            return None
        return proportion(sum(counts), sum(f["n"] for f in figures))  # type: ignore[arg-type]
    if kind == MEAN:
        sums = _sum_range(figures)
        return None if sums is None else mean(*sums)
    if kind == TOTAL:
        spent = _total_range(figures)
        return None if spent is None else total(*spent)
    if kind in (COST, PER_THOUSAND):
        spent = _total_range(p[SPEND] for p in parts if p.get(SPEND))
        correct = sum_of_parts(CORRECT, parts)
        if spent is None or correct is None or correct.ranges["value"] is None:
            return None
        k = round(correct.ranges["value"][0] * correct.n)
        return cost((spent[0], spent[1]), k, correct.n, scale=kind == PER_THOUSAND)
    return None


def n_of_parts(metric: str, parts: list[Mapping[str, Mapping[str, Any]]]) -> int | None:
    """The n of the rows of disjoint parts taken together (any kind whose n counts rows)."""
    ns = [(p.get(metric) or {}).get("n", 0) for p in parts]  # a part without the figure has none of its rows
    return sum(ns) if all(isinstance(n, int) for n in ns) else None


def gap_of(public: Mapping[str, Any], holdout: Mapping[str, Any]) -> Expected | None:
    """The overfit gap from the public and holdout correct rates (`metrics.overfit_gap`)."""
    kp, kh = count_of(public), count_of(holdout)
    if kp is None or kh is None:
        return None
    return Expected.between(public["n"] + holdout["n"], overfit_gap(kp, public["n"], kh, holdout["n"]))


def own_consistency(metric: str, figure: Mapping[str, Any], group: Mapping[str, Mapping[str, Any]]) -> Expected | None:
    """What a published figure must be by itself and its group's other figures, whatever rows it
    counts: a proportion has the Wilson interval of its count over n, a mean its interval, a total
    is exact, a cost per correct is the group's spend over its correct rows. None: nothing to check
    (a percentile, an unknown metric, a proportion whose value is no count over n: `count_of`)."""
    kind = kind_of(metric)
    n = figure.get("n")
    if not isinstance(n, int):
        return None
    if kind == PROPORTION:
        count = count_of(figure)
        if count is None:
            return proportion(0, 0) if figure.get("value") is None and n == 0 else None
        return proportion(count, n)
    if kind == MEAN and figure.get("value") is not None:
        return mean(*_ends(figure, n), n)
    if kind == TOTAL and figure.get("value") is not None:
        return total(*_ends(figure), n)
    if kind in (COST, PER_THOUSAND):
        return sum_of_parts(metric, [group])
    return None
