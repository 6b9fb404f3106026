"""Kaplan–Meier time-to-retrievability against R's survival::survfit (the reference)."""

from __future__ import annotations

import json
import shutil
import subprocess
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench_assets.metrics import km_estimate, km_median, km_median_interval

FIXTURES = Path(__file__).parent.parent / "fixtures"
R_SCRIPT = FIXTURES / "r_survfit_cases.R"
R_CASES = json.loads((FIXTURES / "r_survfit_cases.json").read_text())["cases"]
CASE_IDS = [case["name"] for case in R_CASES]


def assert_close(ours: float | None, reference: float | None, what: str) -> None:
    if reference is None:
        assert ours is None, f"{what}: R says not reached (NA), we say {ours}"
    else:
        assert ours is not None, f"{what}: R says {reference}, we say not reached"
        assert abs(ours - reference) <= 1e-6, f"{what}: R {reference}, ours {ours}"


def assert_matches_r(case: dict) -> None:
    interval = km_median_interval(case["time"], case["status"], censor_at_hours=720.0)
    assert_close(interval.value, case["median"], f"{case['name']} median")
    assert_close(interval.low, case["lcl"], f"{case['name']} 0.95LCL")
    assert_close(interval.high, case["ucl"], f"{case['name']} 0.95UCL")
    assert km_median(case["time"], case["status"]) == interval.value


@pytest.mark.parametrize("case", R_CASES, ids=CASE_IDS)
def test_median_and_interval_match_r_fixture(case: dict) -> None:
    assert_matches_r(case)


@pytest.mark.parametrize("case", R_CASES, ids=CASE_IDS)
def test_curve_matches_r_fixture(case: dict) -> None:
    curve = km_estimate(case["time"], case["status"])
    reference = case["curve"]
    assert list(curve.times) == reference["time"]
    assert list(curve.n_at_risk) == reference["n_risk"]
    assert list(curve.n_events) == reference["n_event"]
    np.testing.assert_allclose(curve.survival, reference["surv"], rtol=0, atol=1e-12)
    for name, ours in (("std_err", curve.std_err), ("lower", curve.lower), ("upper", curve.upper)):
        for mine, theirs in zip(ours, reference[name], strict=True):
            assert_close(mine, theirs, f"{case['name']} {name}")


def test_r_live_agrees_with_fixture_and_us(tmp_path: Path) -> None:
    if shutil.which("Rscript") is None:
        pytest.skip("Rscript not on PATH: compared with the recorded R fixture only")
    output = tmp_path / "live.json"
    run = subprocess.run(["Rscript", str(R_SCRIPT), str(output)], capture_output=True, text=True, timeout=120)
    if run.returncode != 0 and "no package called" in run.stderr:
        pytest.skip("R is installed but its 'survival' package is not (r-cran-survival)")
    assert run.returncode == 0, run.stderr
    live = json.loads(output.read_text())["cases"]
    assert [case["name"] for case in live] == CASE_IDS
    for live_case, recorded in zip(live, R_CASES):
        for key in ("median", "lcl", "ucl"):
            assert_close(live_case[key], recorded[key], f"{recorded['name']} {key} (live R vs fixture)")
        assert_matches_r(live_case)


# --- the median rule -----------------------------------------------------------------------


def test_first_event_time_below_half() -> None:
    # S: 0.8, 0.6, 0.4 → the median is the first time S < 0.5
    assert km_median([1, 2, 3, 4, 5], [1, 1, 1, 0, 0]) == 3.0


def test_exactly_half_takes_midpoint_to_next_event() -> None:
    assert km_median([1, 2, 3, 4], [1, 1, 1, 1]) == 2.5


def test_exactly_half_ignores_censorings_on_the_plateau() -> None:
    # S(2) = 1/2; the censoring at 3 does not end the plateau, the event at 5 does.
    assert km_median([1, 2, 3, 5], [1, 1, 0, 1]) == 3.5


def test_exactly_half_with_no_later_event_is_the_plateau_start() -> None:
    assert km_median([1, 2, 3, 4], [1, 1, 0, 0]) == 2.0


def test_exactly_half_is_exact_not_floating_point() -> None:
    # (11/12)(10/11)…(6/7) = 1/2 exactly, but the float product is 0.4999999999999999,
    # so a float comparison would answer 6 instead of 6.5.
    factors = [(n - 1) / n for n in range(12, 6, -1)]
    assert float(np.prod(factors)) < 0.5
    assert km_median(list(range(1, 13)), [1] * 12) == 6.5
    curve = km_estimate(list(range(1, 13)), [1] * 12)
    assert curve.survival_exact[5] == Fraction(1, 2)


def reference_median(durations: list[int], observed: list[bool]) -> float | None:
    """The DESIGN.md rule, written out naively with Fractions."""
    event_times = sorted({t for t, e in zip(durations, observed) if e})
    survival = Fraction(1)
    for index, t in enumerate(event_times):
        at_risk = sum(1 for d in durations if d >= t)
        events = sum(1 for d, e in zip(durations, observed) if e and d == t)
        survival *= Fraction(at_risk - events, at_risk)
        if survival < Fraction(1, 2):
            return float(t)
        if survival == Fraction(1, 2):
            if index + 1 < len(event_times):
                return (t + event_times[index + 1]) / 2
            return float(t)
    return None


@settings(deadline=None, max_examples=150)
@given(st.lists(st.tuples(st.integers(0, 30), st.booleans()), max_size=25))
def test_median_follows_the_rule_on_random_data(subjects: list[tuple[int, bool]]) -> None:
    durations = [d for d, _ in subjects]
    observed = [e for _, e in subjects]
    assert km_median(durations, observed, censor_at_hours=None) == reference_median(durations, observed)


def test_never_falls_to_half_is_none() -> None:
    assert km_median([1, 2, 3, 4], [1, 0, 0, 0]) is None
    assert km_median([5, 10, 15], [0, 0, 0]) is None  # all censored
    assert km_median([], []) is None  # no subjects
    result = km_median_interval([5, 10, 15], [False, False, False])
    assert (result.value, result.low, result.high) == (None, None, None)


def test_censoring_at_720_hours() -> None:
    # Found at 800 h counts as not found within 30 days.
    assert km_median([800, 900, 1000], [1, 1, 1]) is None
    assert km_median([800, 900, 1000], [1, 1, 1], censor_at_hours=None) == 900.0
    # Found at exactly 720 h still counts; 800 h is censored at 720 and so still at risk there.
    assert km_median([100, 720, 720, 800], [1, 1, 1, 1]) == 720.0
    # Never found (infinite duration) is a censoring.
    assert km_median([10, 20, float("inf")], [1, 1, 0]) == 20.0


def test_event_at_time_zero_and_ties() -> None:
    assert km_median([0, 0, 0, 5, 10], [1, 1, 1, 0, 1]) == 0.0
    assert km_median([12] * 5, [1] * 5) == 12.0


def test_km_estimate_exact_fractions_and_greenwood() -> None:
    curve = km_estimate([6, 6, 12, 18, 18, 24], [1, 0, 1, 1, 0, 1])
    assert curve.times == (6.0, 12.0, 18.0, 24.0)
    assert curve.n_at_risk == (6, 4, 3, 1)
    assert curve.n_events == (1, 1, 1, 1)
    assert curve.survival_exact == (Fraction(5, 6), Fraction(5, 8), Fraction(5, 12), Fraction(0))
    assert curve.survival == pytest.approx([5 / 6, 5 / 8, 5 / 12, 0.0])
    # Greenwood on the log scale: Σ d / (n (n − d))
    expected_log_se = np.sqrt(np.cumsum([1 / 30, 1 / 12, 1 / 6]))
    np.testing.assert_allclose(curve.std_err_log[:3], expected_log_se, rtol=1e-15)
    assert curve.std_err_log[3] == float("inf")
    assert curve.std_err[3] is None and curve.lower[3] is None and curve.upper[3] is None
    assert curve.n_subjects == 6


def test_invalid_input_raises() -> None:
    with pytest.raises(ValueError):
        km_median([1, 2], [1])
    with pytest.raises(ValueError):
        km_median([-1, 2], [1, 1])
    with pytest.raises(ValueError):
        km_median([float("nan")], [1])
    with pytest.raises(ValueError):
        km_median([1, 2], [1, 2])
    with pytest.raises(ValueError):
        km_median([1], [1], censor_at_hours=0)


def test_one_hundred_thousand_probes() -> None:
    # Speed is measured in benchmarks/ (KM at 100,000 probes against lifelines), not asserted here.
    rng = np.random.default_rng(11)
    durations = rng.exponential(200.0, 100_000)  # continuous: ~100k distinct times
    observed = rng.random(100_000) < 0.7
    on_probe_grid = np.ceil(durations / 6.0) * 6.0  # what 6-hourly probes record
    median = km_median(durations, observed)
    interval = km_median_interval(on_probe_grid, observed)
    assert median is not None and 100 < median < 400
    assert interval.low <= interval.value <= interval.high


def test_exact_half_is_found_among_many_distinct_times() -> None:
    # 100,000 probes found at distinct times: S(t_k) = (n − k)/n, exactly 1/2 at k = n/2,
    # where the float product has drifted; the exact check must still see the plateau.
    n = 100_000
    durations = np.arange(1, n + 1, dtype=float)
    assert km_median(durations, np.ones(n, dtype=bool), censor_at_hours=None) == (n / 2 + n / 2 + 1) / 2


def test_lifelines_disagrees_with_r_on_exactly_half() -> None:
    """lifelines (0.30) takes the first time with S(t) ≤ 0.5 and never the midpoint, and
    reports "not reached" as inf. Finding: on an exact 0.5 plateau it differs from R's
    survfit (which this bench follows): 2.0 vs 2.5 below, and 6.0 vs 6.5 for the
    float-trap case. Elsewhere the two agree."""
    lifelines = pytest.importorskip("lifelines")
    by_name = {case["name"]: case for case in R_CASES}
    for name, lifelines_median in (("exact_half_then_event", 2.0), ("exact_half_float_trap", 6.0)):
        case = by_name[name]
        fitter = lifelines.KaplanMeierFitter().fit(case["time"], case["status"])
        assert fitter.median_survival_time_ == lifelines_median
        assert case["median"] == lifelines_median + 0.5
        assert km_median(case["time"], case["status"]) == case["median"]
    # No disagreement away from the exact-0.5 case:
    case = by_name["probe_grid_40"]
    fitter = lifelines.KaplanMeierFitter().fit(case["time"], case["status"])
    assert fitter.median_survival_time_ == case["median"] == km_median(case["time"], case["status"])
