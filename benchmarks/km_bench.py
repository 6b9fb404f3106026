"""Kaplan–Meier at 100,000 probes: `bench_assets.metrics.survival` against lifelines.

Subjects are (vendor, sentinel page) pairs probed every 6 hours: a duration is the first probe
that found the page (observed) or the last probe so far (censored), so durations fall on a
6-hour grid with many ties, as real probe data do; a tail beyond 30 days is censored there.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from benchmarks.common import best_of


def probes(n: int, seed: int = 11) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    found_after = rng.gamma(shape=1.6, scale=70.0, size=n)  # hours until a vendor indexes the page
    watched_for = rng.uniform(24.0, 900.0, size=n)  # hours the page has been probed so far
    observed = found_after <= watched_for
    durations = np.ceil(np.where(observed, found_after, watched_for) / 6.0) * 6.0
    return durations, observed


def kaplan_meier(n: int = 100_000, repeats: int = 5) -> dict[str, Any]:
    from lifelines import KaplanMeierFitter

    from bench_assets.metrics.survival import DEFAULT_CENSOR_AT_HOURS, km_estimate, km_median

    durations, observed = probes(n)
    censored_at = np.minimum(durations, DEFAULT_CENSOR_AT_HOURS)
    events = observed & (durations <= DEFAULT_CENSOR_AT_HOURS)
    ours_median_s, median = best_of(lambda: km_median(durations, observed), repeats)
    ours_curve_s, curve = best_of(lambda: km_estimate(durations, observed), repeats)

    def lifelines_fit():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fitter = KaplanMeierFitter().fit(censored_at, events)
            return fitter, fitter.median_survival_time_

    km_ll_s, (fitter, ll_median) = best_of(lifelines_fit, repeats)
    ll_at = fitter.survival_function_at_times(np.array(curve.times)).to_numpy()
    max_diff = float(np.max(np.abs(ll_at - np.array(curve.survival))))
    return {
        "parameters": {
            "probes": n,
            "probe_interval_hours": 6,
            "censor_at_hours": DEFAULT_CENSOR_AT_HOURS,
            "observed_share": round(float(events.mean()), 3),
            "distinct_event_times": len(curve.times),
            "repeats": repeats,
            "figure": "best of the repeats",
        },
        "figures": {
            "ours_km_median_seconds": round(ours_median_s, 4),
            "ours_km_estimate_seconds": round(ours_curve_s, 4),
            "lifelines_fit_and_median_seconds": round(km_ll_s, 4),
            "speedup_median_vs_lifelines": round(km_ll_s / ours_median_s, 2),
            "speedup_curve_vs_lifelines": round(km_ll_s / ours_curve_s, 2),
            "median_hours": median,
            "lifelines_median_hours": float(ll_median),
            "max_abs_survival_difference": max_diff,
        },
        "target": {"agrees_with_lifelines": True},
        "passed": max_diff < 1e-9 and median == float(ll_median),
    }
