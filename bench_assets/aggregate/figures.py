"""Aggregates per vendor and per stratum, task type, cohort and split: every figure with n and a 95 % interval.

Input is the `row_scores` table of a snapshot; output is the long `vendor_metrics` table
(vendor, scope, scope_value, metric, value, n, low, high) from which every published surface is
rendered, so the HTML, the JSON and the CSV cannot disagree.

Every figure's `n` is the rows behind it: the vendor's rows other than `unsupported` (failures
included, counted as not correct), the search rows for hit@k, the extract rows for fidelity,
the rows with a recorded latency for the latency percentiles. Intervals are 95 %: Wilson for
proportions (correct rate, coverage, hit@k), Newcombe for the overfit gap, the Wilson bounds of
the correct rate carried through to cost per correct (`cost_per_correct_interval`) and to dollars
per 1,000 correct (`usd_per_thousand_correct`, the same interval times 1,000), and the
order-statistic interval for latency p50/p95 (`percentile_interval`). Every mean of values
bounded in [0, 1] (mean fidelity over extract rows, the mean answer score over answer rows;
failures score 0 and stay in n) has one interval, the Wilson interval with the Bernoulli
variance bound (`bounded_mean_interval`), which keeps a positive width when every value is 0 or
every value is 1. Billed spend is a total of archived, billed calls, not an estimate: it is
exact, published with `low = high = value`. The ranking figure (`scope = "ranking"`) is the
correct rate over the task types every scored vendor supports (`shared_task_types`); the cost of
those rows alone (`cost_per_correct_shared_usd`, `usd_per_1000_correct_shared`, scope `overall`)
is the frontier's cost axis, so a configuration that also extracts is priced on the rows its
search-only siblings are, not helped by cheap extract rows they never see. Rows are
counted per response class (`scope = "response_class"`, over all the vendor's rows) and, for the
rows not correct, per miss reason (`scope = "miss_reason"`, n the vendor's scored rows).

Freshness (`scope = "fresh_lt_30d"`, value `search`): hit@5 over the vendor's search rows whose
golden page was published less than 30 days before the snapshot's fetch (`fresh_row_ids`: the
row's `published_on`, which the Federal Register's records and dated planted pages give, against
the day of the snapshot's first fetch run), with its Wilson interval; no figure when the vendor
has no such row.

Each side of the split also gets its own spend, cost per correct, latency percentiles and
ranking figure (`correct_rate_shared`): the public side's figures are the ones a reader can
re-derive from the published evidence bundle (`bench reproduce`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import date

import pandas as pd

from bench_assets.fetch.classify import RESPONSE_CLASSES
from bench_assets.metrics import (
    bounded_mean_interval,
    cost_per_correct_interval,
    overfit_gap,
    percentile_interval,
    usd_per_thousand_correct,
    wilson_interval,
)
from bench_assets.score.miss_reasons import count_miss_reasons
from bench_assets.sentinels.ttr import sentinel_tables, snapshot_ttr_metrics
from bench_assets.storage.warehouse import Warehouse

METRIC_COLUMNS = ["snapshot_id", "vendor", "scope", "scope_value", "metric", "value", "n", "low", "high"]
HEADLINE_MIN_N = 10
CHART_MIN_N = 20
RANKING_SCOPE = "ranking"
MISS_REASON_SCOPE = "miss_reason"
# Freshness: rows whose golden page was under FRESH_DAYS days old when the snapshot was fetched.
FRESH_DAYS = 30
FRESH_SCOPE = "fresh_lt_30d"
FRESH_METRIC = "hit_at_5"


def fresh_row_ids(published_on: Mapping[str, date | None], fetched_on: date | None, days: int = FRESH_DAYS) -> set[str]:
    """The rows whose golden page was published less than `days` days before `fetched_on` (the
    day the snapshot's fetch began): 0 <= fetched_on - published_on < days. Rows without a date,
    or dated after the fetch, are not fresh; with no fetch day, no row is."""
    if fetched_on is None:
        return set()
    return {row for row, day in published_on.items() if day is not None and 0 <= (fetched_on - day).days < days}


def snapshot_fresh_rows(warehouse: Warehouse, snapshot_id: str) -> set[str]:
    """`fresh_row_ids` of the snapshot: its golden rows' `published_on` against the day of its
    first fetch run (`fetch_versions.recorded_at`, published in leaderboard.json `versions.fetch`)."""
    runs = warehouse.rows("fetch_versions", snapshot_id, columns=["recorded_at"])
    if runs.empty:
        return set()
    fetched_on = pd.Timestamp(runs["recorded_at"].min()).tz_convert("UTC").date()
    golden = warehouse.rows("golden_rows", snapshot_id, columns=["row_id", "published_on"])
    dated = {
        str(r): date.fromisoformat(str(d)) for r, d in zip(golden["row_id"], golden["published_on"]) if not pd.isna(d)
    }
    return fresh_row_ids(dated, fetched_on)


def _prop(rows: list, snapshot: str, vendor: str, scope: str, value: str, metric: str, successes: int, n: int) -> None:
    iv = wilson_interval(int(successes), int(n))
    rows.append([snapshot, vendor, scope, value, metric, iv.value, int(n), iv.low, iv.high])


def _scope_metrics(rows: list, snapshot: str, vendor: str, scope: str, value: str, df: pd.DataFrame) -> None:
    scored = df[df["response_class"] != "unsupported"]
    if scored.empty:
        return
    _prop(rows, snapshot, vendor, scope, value, "correct_rate", int(scored["correct"].fillna(False).sum()), len(scored))
    _prop(rows, snapshot, vendor, scope, value, "coverage", int((scored["response_class"] == "ok").sum()), len(scored))
    search = scored[scored["task_type"] == "search"]
    for k in (1, 3, 5, 10):
        if len(search):
            _prop(
                rows,
                snapshot,
                vendor,
                scope,
                value,
                f"hit_at_{k}",
                int(search[f"hit_at_{k}"].fillna(False).sum()),
                len(search),
            )
    extract = scored[scored["task_type"] == "extract"]
    if len(extract):
        # Mean extraction fidelity (0–1) of extract rows; a failure scores 0 and stays in n.
        fid = bounded_mean_interval(extract["fidelity"].fillna(0.0).astype(float))
        rows.append([snapshot, vendor, scope, value, "fidelity_mean", fid.value, len(extract), fid.low, fid.high])
    answer = scored[scored["task_type"] == "answer"]
    if len(answer) and "answer_score" in answer:
        # Mean per-cell rubric score (0 / 0.5 / 1) of answer rows; failures score 0 and stay in n.
        iv = bounded_mean_interval(answer["answer_score"].fillna(0.0).astype(float))
        rows.append([snapshot, vendor, scope, value, "answer_score_mean", iv.value, len(answer), iv.low, iv.high])


def _spend_metrics(rows: list, snapshot: str, vendor: str, scope: str, value: str, scored: pd.DataFrame) -> None:
    """Billed spend (exact), cost per correct and $ per 1,000 correct with their intervals, latency
    p50 and p95 of the rows."""
    n = len(scored)
    correct = int(scored["correct"].fillna(False).sum())
    spend = float(scored["billed_usd"].fillna(0.0).sum())
    # Spend is exact (a sum of billed calls): its interval is the value itself.
    rows.append([snapshot, vendor, scope, value, "spend_usd", spend, n, spend, spend])
    _cost_metrics(rows, snapshot, vendor, scope, value, spend, correct, n)
    latencies = scored["latency_ms"].dropna().astype(float).tolist()
    for q in (50, 95):
        lat = percentile_interval(latencies, q)
        rows.append([snapshot, vendor, scope, value, f"latency_p{q}_ms", lat.value, len(latencies), lat.low, lat.high])


def _cost_metrics(
    rows: list, snapshot: str, vendor: str, scope: str, value: str, spend: float, correct: int, n: int, suffix: str = ""
) -> None:
    """Cost per correct and $ per 1,000 correct of `spend` over `correct` of `n` rows, with their
    intervals; `suffix` "_shared" names them as figures of the ranking basis's rows."""
    cpc = cost_per_correct_interval(spend, correct, n)
    rows.append([snapshot, vendor, scope, value, f"cost_per_correct{suffix}_usd", cpc.value, n, cpc.low, cpc.high])
    per_k = usd_per_thousand_correct(cpc)
    rows.append(
        [snapshot, vendor, scope, value, f"usd_per_1000_correct{suffix}", per_k.value, n, per_k.low, per_k.high]
    )


def shared_task_types(scores: pd.DataFrame) -> list[str]:
    """The ranking basis: the task types every scored vendor of the snapshot supports.

    A vendor is scored when it has at least one row other than `unsupported`; it supports a
    task type when it has a row of that type other than `unsupported` (a vendor with no
    extraction endpoint has every extract row `unsupported`). Vendors are ordered by their
    correct rate over the rows of these task types only, and compared pair by pair on those
    rows, so every vendor is compared on the same row set: the overall correct rate of a vendor without an extraction
    endpoint leaves the extract rows out of its denominator, while the others carry them, so
    the overall rates are not comparable. The overall correct rate is still published for
    each vendor. Returns the shared task types sorted by name; empty when no task type is
    supported by every scored vendor (the leaderboard then ranks by the overall correct rate
    and says so).
    """
    scored = scores[scores["response_class"] != "unsupported"]
    if scored.empty:
        return []
    per_vendor = [set(part["task_type"]) for _, part in scored.groupby("vendor", sort=True)]
    return sorted(set.intersection(*per_vendor))


_READ_COLUMNS = frozenset(
    {"vendor", "row_id", "task_type", "stratum", "cohort", "split", "response_class", "correct", "fidelity"}
    | {"answer_score"}
    | {"miss_reason"}
    | {"billed_usd", "latency_ms", "hit_at_1", "hit_at_3", "hit_at_5", "hit_at_10"}
)


def vendor_metrics(snapshot_id: str, scores: pd.DataFrame, fresh_rows: Collection[str] = ()) -> pd.DataFrame:
    """Compute the long metrics table of a snapshot from its row scores; `fresh_rows` are the
    rows the freshness figure counts (`fresh_row_ids`)."""
    rows: list = []
    shared = shared_task_types(scores)
    # only the columns a figure reads: each scope's rows are taken again and again, and taking
    # them from the wide frame copied every column no figure reads
    scores = scores[[c for c in scores.columns if c in _READ_COLUMNS]]
    for vendor, df in scores.groupby("vendor", sort=True):
        _scope_metrics(rows, snapshot_id, vendor, "overall", "all", df)
        for scope in ("task_type", "stratum", "cohort", "split"):
            for value, part in df.groupby(scope, sort=True):
                _scope_metrics(rows, snapshot_id, vendor, scope, str(value), part)
                side = part[part["response_class"] != "unsupported"]
                if scope == "split" and len(side):  # each side's own spend, latency and ranking figure
                    _spend_metrics(rows, snapshot_id, vendor, scope, str(value), side)
                    basis = side[side["task_type"].isin(shared)]
                    if shared and len(basis):
                        _prop(
                            rows,
                            snapshot_id,
                            vendor,
                            scope,
                            str(value),
                            "correct_rate_shared",
                            int(basis["correct"].fillna(False).sum()),
                            len(basis),
                        )
        scored = df[df["response_class"] != "unsupported"]
        _spend_metrics(rows, snapshot_id, vendor, "overall", "all", scored)
        basis = scored[scored["task_type"].isin(shared)]
        if shared and len(basis):
            correct = int(basis["correct"].fillna(False).sum())
            _prop(rows, snapshot_id, vendor, RANKING_SCOPE, ",".join(shared), "correct_rate", correct, len(basis))
            # the cost of the ranking figure's own rows: a configuration that also extracts pays for
            # (and gets right) rows its search-only siblings never see, so the frontier compares
            # like with like only on these
            spend = float(basis["billed_usd"].fillna(0.0).sum())
            _cost_metrics(rows, snapshot_id, vendor, "overall", "all", spend, correct, len(basis), suffix="_shared")
        for cls in RESPONSE_CLASSES:
            count = int((df["response_class"] == cls).sum())
            rows.append([snapshot_id, vendor, "response_class", cls, "count", float(count), len(df), None, None])
        fresh = (
            scored[(scored["task_type"] == "search") & scored["row_id"].isin(set(fresh_rows))] if fresh_rows else None
        )
        if fresh is not None and len(fresh):
            hits = int(fresh[FRESH_METRIC].fillna(False).sum())
            _prop(rows, snapshot_id, vendor, FRESH_SCOPE, "search", FRESH_METRIC, hits, len(fresh))
        # Why the rows the vendor did not get right were missed (`score.miss_reasons`), over its scored rows.
        reasons = count_miss_reasons(scored["miss_reason"].tolist()) if "miss_reason" in scored else {}
        for reason, count in reasons.items():
            rows.append(
                [snapshot_id, vendor, MISS_REASON_SCOPE, reason, "count", float(count), len(scored), None, None]
            )
        pub = scored[scored["split"] == "public"]
        hold = scored[scored["split"] == "holdout"]
        if len(pub) and len(hold):
            gap = overfit_gap(
                int(pub["correct"].fillna(False).sum()), len(pub), int(hold["correct"].fillna(False).sum()), len(hold)
            )
            rows.append(
                [
                    snapshot_id,
                    vendor,
                    "overall",
                    "all",
                    "overfit_gap",
                    gap.value,
                    len(pub) + len(hold),
                    gap.low,
                    gap.high,
                ]
            )
    out = pd.DataFrame(rows, columns=METRIC_COLUMNS)
    return out.astype({"value": "float64", "low": "float64", "high": "float64", "n": "int64"})


def snapshot_metrics(warehouse: Warehouse, snapshot_id: str) -> pd.DataFrame:
    """Every `vendor_metrics` row of the snapshot: the vendors' figures from their row scores, and
    time-to-retrievability from the sentinel probes so far."""
    with warehouse.session():  # its reads at once, the figures derived after
        scores = warehouse.rows("row_scores", snapshot_id)
        fresh = snapshot_fresh_rows(warehouse, snapshot_id) if len(scores) else set()
        sentinels = sentinel_tables(warehouse, snapshot_id)
    metrics = vendor_metrics(snapshot_id, scores, fresh) if len(scores) else pd.DataFrame()
    ttr = snapshot_ttr_metrics(snapshot_id, *sentinels)
    return pd.concat([metrics, ttr], ignore_index=True) if len(ttr) else metrics
