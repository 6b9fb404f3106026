"""`vendor_metrics`: the long table every published figure is read from, computed from row scores.

The row scores are written out by hand (two vendors, one without an extraction endpoint), so
each figure can be checked against a count made by eye and against the interval functions.
"""

from __future__ import annotations

import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

from bench_assets.aggregate.figures import METRIC_COLUMNS, RANKING_SCOPE, shared_task_types, vendor_metrics
from bench_assets.fetch.classify import RESPONSE_CLASSES
from bench_assets.metrics import cost_per_correct_interval, percentile_interval
from bench_assets.score.partition import SCORE_COLUMNS, SCORE_DTYPES

SNAP = "web_search-2026-q3"


def score(
    vendor: str,
    row_id: str,
    task_type: str,
    response_class: str,
    correct: bool | None,
    *,
    stratum: str = "finance",
    split: str = "public",
    billed: float = 0.01,
    latency: float | None = 100.0,
    first_hit: int | None = None,
    fidelity: float | None = None,
) -> dict:
    """One row of `row_scores` as scoring writes it."""
    unsupported = response_class == "unsupported"
    hit = {
        f"hit_at_{k}": (None if task_type != "search" or unsupported else first_hit is not None and first_hit <= k)
        for k in (1, 3, 5, 10)
    }
    return {
        "snapshot_id": SNAP,
        "vendor": vendor,
        "row_id": row_id,
        "split": split,
        "stratum": stratum,
        "cohort": "head",
        "task_type": task_type,
        "response_class": response_class,
        "n_results": 0 if response_class != "ok" else 5,
        "first_hit_rank": first_hit,
        **hit,
        "fidelity": fidelity,
        "fidelity_label": None,
        "correct": None if unsupported else correct,
        "billed_usd": 0.0 if unsupported else billed,
        "latency_ms": None if unsupported else latency,
        "attempts": 0 if unsupported else 1,
        "request_id": None,
        "error_detail": None,
    }


def frame(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=SCORE_COLUMNS).astype(SCORE_DTYPES)


# vendor "full": every task type; 8 rows, 4 correct, failures of several classes
FULL = [
    score("full", "s1", "search", "ok", True, first_hit=1, latency=80.0),
    score("full", "s2", "search", "ok", False, first_hit=None, latency=120.0, split="holdout"),
    score("full", "s3", "search", "timeout", False, latency=None, billed=0.0),  # no answer in time
    score("full", "a1", "answer", "ok", True, latency=90.0, stratum="news"),
    score("full", "a2", "answer", "blocked", False, latency=60.0, billed=0.0, stratum="news", split="holdout"),
    score("full", "e1", "extract", "ok", True, fidelity=0.95, latency=200.0),
    score("full", "e2", "extract", "empty", False, fidelity=0.0, latency=150.0, split="holdout"),
    score("full", "e3", "extract", "ok", True, fidelity=0.92, latency=210.0, stratum="news"),
]
# vendor "noext": no extraction endpoint; every supported row fails, so nothing is correct
NOEXT = [
    score("noext", "s1", "search", "ok", False, first_hit=12, latency=40.0),
    score("noext", "s2", "search", "quota", False, latency=10.0, billed=0.0, split="holdout"),
    score("noext", "s3", "search", "malformed", False, latency=30.0),
    score("noext", "a1", "answer", "empty", False, latency=35.0, stratum="news"),
    score("noext", "a2", "answer", "server", False, latency=50.0, stratum="news", split="holdout"),
    score("noext", "e1", "extract", "unsupported", None),
    score("noext", "e2", "extract", "unsupported", None, split="holdout"),
    score("noext", "e3", "extract", "unsupported", None, stratum="news"),
]


@pytest.fixture(scope="module")
def metrics() -> pd.DataFrame:
    return vendor_metrics(SNAP, frame(FULL + NOEXT))


def figure(metrics: pd.DataFrame, vendor: str, metric: str, scope: str = "overall", value: str = "all") -> dict:
    m = metrics[
        (metrics["vendor"] == vendor)
        & (metrics["scope"] == scope)
        & (metrics["scope_value"] == value)
        & (metrics["metric"] == metric)
    ]
    assert len(m) == 1, (vendor, metric, scope, value, len(m))
    r = m.iloc[0]
    clean = lambda x: None if pd.isna(x) else float(x)  # noqa: E731
    return {"value": clean(r["value"]), "n": int(r["n"]), "low": clean(r["low"]), "high": clean(r["high"])}


def wilson(successes: int, n: int) -> tuple[float, float]:
    return proportion_confint(successes, n, method="wilson")


def test_the_table_has_the_published_columns(metrics):
    assert list(metrics.columns) == METRIC_COLUMNS
    assert set(metrics["snapshot_id"]) == {SNAP}


def test_failures_count_in_every_denominator_as_not_correct(metrics):
    cr = figure(metrics, "full", "correct_rate")
    assert (cr["value"], cr["n"]) == (4 / 8, 8)  # timeout, blocked and empty rows stay in n
    assert (cr["low"], cr["high"]) == pytest.approx(wilson(4, 8), abs=1e-12)
    hit1 = figure(metrics, "full", "hit_at_1")
    assert (hit1["value"], hit1["n"]) == (1 / 3, 3)  # the timed-out search row counts as a miss
    fid = figure(metrics, "full", "fidelity_mean")
    assert fid["n"] == 3 and fid["value"] == pytest.approx((0.95 + 0.0 + 0.92) / 3)


def test_unsupported_rows_leave_the_denominator(metrics):
    cr = figure(metrics, "noext", "correct_rate")
    assert (cr["value"], cr["n"]) == (0.0, 5)  # 3 extract rows unsupported: out of n, not failures
    assert cr["low"] == 0.0 and cr["high"] == pytest.approx(wilson(0, 5)[1], abs=1e-12)
    assert metrics[(metrics["vendor"] == "noext") & (metrics["metric"] == "fidelity_mean")].empty
    assert "extract" not in set(
        metrics[(metrics["vendor"] == "noext") & (metrics["scope"] == "task_type")]["scope_value"]
    )


def test_coverage_is_the_share_of_ok_responses(metrics):
    cov = figure(metrics, "full", "coverage")
    assert (cov["value"], cov["n"]) == (5 / 8, 8)
    assert (cov["low"], cov["high"]) == pytest.approx(wilson(5, 8), abs=1e-12)
    assert figure(metrics, "noext", "coverage")["value"] == 1 / 5


def test_response_class_counts(metrics):
    counts = metrics[(metrics["scope"] == "response_class")]
    assert set(counts["scope_value"]) == set(RESPONSE_CLASSES)  # every class, zeros included
    full = {r.scope_value: int(r.value) for r in counts[counts["vendor"] == "full"].itertuples()}
    assert full == {**dict.fromkeys(RESPONSE_CLASSES, 0), "ok": 5, "timeout": 1, "blocked": 1, "empty": 1}
    noext = {r.scope_value: int(r.value) for r in counts[counts["vendor"] == "noext"].itertuples()}
    assert noext == {
        **dict.fromkeys(RESPONSE_CLASSES, 0),
        "ok": 1,
        "quota": 1,
        "malformed": 1,
        "empty": 1,
        "server": 1,
        "unsupported": 3,
    }
    assert set(counts["n"]) == {8}  # out of every row, unsupported included


def test_cost_per_correct_and_spend(metrics):
    spend = figure(metrics, "full", "spend_usd")
    assert spend == {"value": pytest.approx(0.06), "n": 8, "low": pytest.approx(0.06), "high": pytest.approx(0.06)}
    cpc = figure(metrics, "full", "cost_per_correct_usd")
    expected = cost_per_correct_interval(0.06, 4, 8)
    assert cpc["n"] == 8
    assert (cpc["value"], cpc["low"], cpc["high"]) == pytest.approx((expected.value, expected.low, expected.high))
    assert cpc["value"] == pytest.approx(0.015)
    assert cpc["low"] < cpc["value"] < cpc["high"]


def test_zero_correct_leaves_cost_per_correct_undefined_never_zero(metrics):
    cpc = figure(metrics, "noext", "cost_per_correct_usd")
    assert cpc == {"value": None, "n": 5, "low": None, "high": None}
    assert figure(metrics, "noext", "spend_usd")["value"] == pytest.approx(0.04)


def test_latency_percentiles_with_their_interval(metrics):
    latencies = [80.0, 120.0, 90.0, 60.0, 200.0, 150.0, 210.0]  # the timed-out row has no latency
    for q in (50, 95):
        fig = figure(metrics, "full", f"latency_p{q}_ms")
        expected = percentile_interval(latencies, q)
        assert fig == {"value": pytest.approx(expected.value), "n": 7, "low": expected.low, "high": expected.high}
    assert figure(metrics, "full", "latency_p50_ms")["low"] == 60.0  # ranks 1..7 cover the median of 7 values


def test_breakdowns_and_overfit_gap(metrics):
    news = figure(metrics, "full", "correct_rate", "stratum", "news")
    assert (news["value"], news["n"]) == (2 / 3, 3)
    holdout = figure(metrics, "full", "correct_rate", "split", "holdout")
    assert (holdout["value"], holdout["n"]) == (0.0, 3)
    gap = figure(metrics, "full", "overfit_gap")
    assert gap["value"] == pytest.approx(4 / 5 - 0 / 3) and gap["n"] == 8


def test_the_ranking_figure_counts_only_the_task_types_every_vendor_supports(metrics):
    assert shared_task_types(frame(FULL + NOEXT)) == ["answer", "search"]
    full = figure(metrics, "full", "correct_rate", RANKING_SCOPE, "answer,search")
    assert (full["value"], full["n"]) == (2 / 5, 5)  # the extract rows, which noext cannot serve, are left out
    assert (full["low"], full["high"]) == pytest.approx(wilson(2, 5), abs=1e-12)
    noext = figure(metrics, "noext", "correct_rate", RANKING_SCOPE, "answer,search")
    assert (noext["value"], noext["n"]) == (0.0, 5)


def test_the_frontiers_cost_is_counted_on_the_ranking_figures_rows_alone(metrics):
    # full's search and answer rows: 5 rows, billed 0.01 + 0.01 + 0 + 0.01 + 0 = 0.03, 2 correct;
    # its extract rows (3 billed, 2 correct) are left out, as they are of noext's ranking figure
    shared = figure(metrics, "full", "cost_per_correct_shared_usd")
    expected = cost_per_correct_interval(0.03, 2, 5)
    assert shared["n"] == 5
    assert (shared["value"], shared["low"], shared["high"]) == pytest.approx(
        (expected.value, expected.low, expected.high)
    )
    assert shared["value"] == pytest.approx(0.015)
    per_k = figure(metrics, "full", "usd_per_1000_correct_shared")
    assert (per_k["value"], per_k["low"], per_k["high"]) == pytest.approx(
        (1000 * expected.value, 1000 * expected.low, 1000 * expected.high)
    )
    # cheap, correct extract rows make the overall cost look lower than the shared rows' cost
    assert figure(metrics, "full", "cost_per_correct_usd")["high"] < shared["high"]
    assert figure(metrics, "noext", "usd_per_1000_correct_shared") == {"value": None, "n": 5, "low": None, "high": None}


def test_with_every_task_type_shared_the_ranking_figure_is_the_overall_rate():
    alone = vendor_metrics(SNAP, frame(FULL))
    assert shared_task_types(frame(FULL)) == ["answer", "extract", "search"]
    assert figure(alone, "full", "correct_rate", RANKING_SCOPE, "answer,extract,search") == figure(
        alone, "full", "correct_rate"
    )


def test_no_shared_task_type_gives_no_ranking_figure():
    only_extract = [
        score("x", "e1", "extract", "ok", True, fidelity=0.95),
        score("x", "s1", "search", "unsupported", None),
    ]
    only_search = [
        score("y", "s1", "search", "ok", True, first_hit=1),
        score("y", "e1", "extract", "unsupported", None),
    ]
    scores = frame(only_extract + only_search)
    assert shared_task_types(scores) == []
    assert vendor_metrics(SNAP, scores).query("scope == @RANKING_SCOPE").empty


def test_freshness_is_hit_at_5_on_the_search_rows_whose_page_was_under_30_days_old_at_the_fetch():
    from datetime import date

    from bench_assets.aggregate.figures import FRESH_SCOPE, fresh_row_ids
    from bench_assets.aggregate.leaderboard import build_leaderboard
    from bench_assets.manifest import load_manifest
    from bench_assets_tests.helpers import DEMO_MANIFEST

    fetched = date(2026, 11, 28)
    published = {
        "s1": date(2026, 11, 28),  # the fetch day: 0 days old
        "s2": date(2026, 10, 30),  # 29 days: fresh
        "s3": date(2026, 10, 29),  # 30 days: not under 30
        "a1": date(2026, 11, 20),  # fresh, but an answer row: hit@5 counts search rows
        "e1": date(2026, 12, 1),  # after the fetch: not fresh
        "e2": None,
    }
    fresh = fresh_row_ids(published, fetched)
    assert fresh == {"s1", "s2", "a1"}
    assert fresh_row_ids(published, None) == set()
    metrics = vendor_metrics(SNAP, frame(FULL + NOEXT), fresh)
    # full: s1 hit at rank 1, s2 no hit -> 1 of 2, with the Wilson interval
    lo, hi = wilson(1, 2)
    assert figure(metrics, "full", "hit_at_5", FRESH_SCOPE, "search") == pytest.approx(
        {"value": 0.5, "n": 2, "low": lo, "high": hi}
    )
    # noext: s1 first hit at 12 -> not within 5; s2 failed (quota) -> 0 of 2
    assert figure(metrics, "noext", "hit_at_5", FRESH_SCOPE, "search")["value"] == 0.0
    # no fresh row: no figure at all (the page shows a dash), and none without dates
    none = vendor_metrics(SNAP, frame(FULL + NOEXT), {"a1"})
    assert none[none["scope"] == FRESH_SCOPE].empty
    assert vendor_metrics(SNAP, frame(FULL + NOEXT)).query("scope == @FRESH_SCOPE").empty
    # leaderboard.json: per vendor under breakdown.fresh_lt_30d.search, with its eligibility by its own n
    manifest = load_manifest(DEMO_MANIFEST)
    renamed = metrics.replace({"vendor": {"full": "exa", "noext": "brave"}})
    board = build_leaderboard(manifest, renamed, set())
    exa = next(e for e in board["vendors"] if e["vendor"] == "exa")
    assert exa["breakdown"][FRESH_SCOPE]["search"]["hit_at_5"]["n"] == 2
    assert exa["breakdown_eligibility"][FRESH_SCOPE]["search"]["metrics"]["hit_at_5"]["headline_eligible"] is False
    assert board["freshness"]["scope"] == FRESH_SCOPE and board["freshness"]["days"] == 30
    others = [e for e in board["vendors"] if e["status"] == "scored" and e["vendor"] not in ("exa", "brave")]
    assert all(e["breakdown"][FRESH_SCOPE] == {} for e in others)
