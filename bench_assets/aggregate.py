"""Aggregates per vendor and per stratum, task type, cohort and split: every figure with n and a 95 % interval.

Input is the `row_scores` table of a snapshot; output is the long `vendor_metrics` table
(vendor, scope, scope_value, metric, value, n, low, high) from which every published surface is
rendered, so the HTML, the JSON and the CSV cannot disagree.
"""

from __future__ import annotations

import math

import pandas as pd

from bench_assets.classify import RESPONSE_CLASSES
from bench_assets.metrics import cost_per_correct, overfit_gap, percentile, wilson_interval

METRIC_COLUMNS = ["snapshot_id", "vendor", "scope", "scope_value", "metric", "value", "n", "low", "high"]
HEADLINE_MIN_N = 10
CHART_MIN_N = 20


def _prop(rows: list, snapshot: str, vendor: str, scope: str, value: str, metric: str, successes: int, n: int) -> None:
    iv = wilson_interval(int(successes), int(n))
    rows.append([snapshot, vendor, scope, value, metric, iv.value, int(n), iv.low, iv.high])


def _mean_interval(values: pd.Series) -> tuple[float | None, float | None, float | None]:
    """Mean with a normal-approximation 95 % interval clipped to [0, 1] (fidelity is bounded)."""
    n = len(values)
    if n == 0:
        return None, None, None
    mean = float(values.mean())
    if n == 1:
        return mean, None, None
    half = 1.959963984540054 * float(values.std(ddof=1)) / math.sqrt(n)
    return mean, max(0.0, mean - half), min(1.0, mean + half)


def _scope_metrics(rows: list, snapshot: str, vendor: str, scope: str, value: str, df: pd.DataFrame) -> None:
    scored = df[df["response_class"] != "unsupported"]
    if scored.empty:
        return
    _prop(rows, snapshot, vendor, scope, value, "correct_rate", int(scored["correct"].fillna(False).sum()), len(scored))
    _prop(rows, snapshot, vendor, scope, value, "coverage", int((scored["response_class"] == "ok").sum()), len(scored))
    search = scored[scored["task_type"] == "search"]
    for k in (1, 3, 5, 10):
        if len(search):
            _prop(rows, snapshot, vendor, scope, value, f"hit_at_{k}", int(search[f"hit_at_{k}"].fillna(False).sum()), len(search))
    extract = scored[scored["task_type"] == "extract"]
    if len(extract):
        mean, low, high = _mean_interval(extract["fidelity"].fillna(0.0).astype(float))
        rows.append([snapshot, vendor, scope, value, "fidelity_mean", mean, len(extract), low, high])


def vendor_metrics(snapshot_id: str, scores: pd.DataFrame) -> pd.DataFrame:
    """Compute the long metrics table of a snapshot from its row scores."""
    rows: list = []
    for vendor, df in scores.groupby("vendor", sort=True):
        _scope_metrics(rows, snapshot_id, vendor, "overall", "all", df)
        for scope in ("task_type", "stratum", "cohort", "split"):
            for value, part in df.groupby(scope, sort=True):
                _scope_metrics(rows, snapshot_id, vendor, scope, str(value), part)
        scored = df[df["response_class"] != "unsupported"]
        n = len(scored)
        correct = int(scored["correct"].fillna(False).sum())
        spend = float(scored["billed_usd"].fillna(0.0).sum())
        rows.append([snapshot_id, vendor, "overall", "all", "spend_usd", spend, n, None, None])
        rows.append([snapshot_id, vendor, "overall", "all", "cost_per_correct_usd", cost_per_correct(spend, correct),
                     correct, None, None])
        latencies = scored["latency_ms"].dropna().astype(float).tolist()
        for q in (50, 95):
            rows.append([snapshot_id, vendor, "overall", "all", f"latency_p{q}_ms", percentile(latencies, q),
                         len(latencies), None, None])
        for cls in RESPONSE_CLASSES:
            count = int((df["response_class"] == cls).sum())
            rows.append([snapshot_id, vendor, "response_class", cls, "count", float(count), len(df), None, None])
        pub = scored[scored["split"] == "public"]
        hold = scored[scored["split"] == "holdout"]
        if len(pub) and len(hold):
            gap = overfit_gap(int(pub["correct"].fillna(False).sum()), len(pub),
                              int(hold["correct"].fillna(False).sum()), len(hold))
            rows.append([snapshot_id, vendor, "overall", "all", "overfit_gap", gap.value, len(pub) + len(hold),
                         gap.low, gap.high])
    out = pd.DataFrame(rows, columns=METRIC_COLUMNS)
    return out.astype({"value": "float64", "low": "float64", "high": "float64", "n": "int64"})
