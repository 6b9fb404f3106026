"""The leaderboard record: built once from `vendor_metrics` and rendered to every surface.

Headline eligibility follows the methodology (`bench_assets.integrity.eligibility`): live mode
only (simulated and replay never), at least 10 rows behind an aggregate claim and 20 behind a
per-stratum chart, adapter and plan pinned, the snapshot's first full run complete. Every vendor
entry and every breakdown group carries `headline_eligible` and its reasons; anything else is
labelled illustrative.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from bench_assets.agent_ready import TrialRecord, agent_ready_summary
from bench_assets.integrity import eligibility
from bench_assets.manifest import Manifest
from bench_assets.metrics import tie_groups

HEADLINE_METRICS = ["correct_rate", "hit_at_1", "hit_at_3", "hit_at_5", "hit_at_10", "fidelity_mean", "coverage",
                    "cost_per_correct_usd", "spend_usd", "overfit_gap", "latency_p50_ms", "latency_p95_ms",
                    "ttr_median_hours", "ttr_probes"]
# A Kaplan–Meier median that never falls to 1/2 is "not reached": its figure has value null and
# n > 0 (a vendor with no sentinel subject has no figure at all). The CSV spells the flag out.
NOT_REACHED_METRICS = ["ttr_median_hours"]
RANK_METRIC = "correct_rate"


def _clean(x: Any) -> Any:
    if x is None:
        return None
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
        return None
    return x


def _figure(rec: pd.Series) -> dict[str, Any]:
    value = _clean(float(rec["value"])) if rec["value"] is not None else None
    return {"value": None if value is None else round(value, 6), "n": int(rec["n"]),
            "low": None if _clean(rec["low"]) is None else round(float(rec["low"]), 6),
            "high": None if _clean(rec["high"]) is None else round(float(rec["high"]), 6)}


def build_leaderboard(manifest: Manifest, metrics: pd.DataFrame, complete_vendors: set[str],
                      agent_trials: list[TrialRecord] | None = None) -> dict[str, Any]:
    """The leaderboard as a plain JSON-ready dict (the schema of leaderboard.json). `agent_trials`
    are the snapshot's agent-ready trial records (each vendor's `agent_ready` summarizes its own)."""
    entries: list[dict[str, Any]] = []
    for vendor, spec in sorted(manifest.vendors.items()):
        m = metrics[metrics["vendor"] == vendor]
        overall = {r["metric"]: _figure(r) for _, r in m[(m["scope"] == "overall")].iterrows()}
        breakdown: dict[str, dict[str, dict[str, Any]]] = {}
        for scope in ("task_type", "stratum", "cohort", "split"):
            part = m[m["scope"] == scope]
            breakdown[scope] = {}
            for value, grp in part.groupby("scope_value", sort=True):
                breakdown[scope][value] = {r["metric"]: _figure(r) for _, r in grp.iterrows()}
        classes = {r["scope_value"]: int(r["value"]) for _, r in m[m["scope"] == "response_class"].iterrows()}
        n = overall.get(RANK_METRIC, {}).get("n", 0)
        reasons = eligibility.vendor_reasons(manifest.mode, spec, n, vendor in complete_vendors)
        status = "scored" if overall else "not_run"
        entries.append({
            "vendor": vendor, "status": status, "reason": None if overall else "no scores yet",
            "adapter": spec.adapter, "adapter_version": spec.adapter_version, "plan": spec.plan,
            "metrics": {k: overall[k] for k in HEADLINE_METRICS if k in overall},
            "breakdown": breakdown, "response_classes": classes,
            "headline_eligible": not reasons, "reasons": reasons,
            "breakdown_eligibility": eligibility.breakdown_eligibility(manifest.mode, spec, vendor in complete_vendors,
                                                                      breakdown, RANK_METRIC),
            "agent_ready": agent_ready_summary([t for t in agent_trials or [] if t.vendor == vendor]),
        })
    scored = [e for e in entries if e["status"] == "scored" and RANK_METRIC in e["metrics"]]
    ordered = sorted(scored, key=lambda e: (-(e["metrics"][RANK_METRIC]["value"] or 0.0), e["vendor"]))
    groups = tie_groups([(e["vendor"], e["metrics"][RANK_METRIC]["value"] or 0.0,
                          e["metrics"][RANK_METRIC]["low"] or 0.0, e["metrics"][RANK_METRIC]["high"] or 0.0)
                         for e in ordered])
    for position, (e, g) in enumerate(zip(ordered, groups), start=1):
        e["position"], e["rank_group"] = position, g
    for e in manifest.excluded:
        entries.append({"vendor": e.vendor, "status": "excluded", "reason": e.reason, "reason_code": e.reason_code,
                        "evidence": e.evidence, "metrics": {}, "headline_eligible": False,
                        "reasons": ["excluded: never called, never scored"]})
    entries.sort(key=lambda e: (e.get("position") or 10_000, e["vendor"]))
    return {
        "schema_version": 1,
        "snapshot_id": manifest.snapshot_id,
        "mode": manifest.mode,
        "title": manifest.title,
        "rank_metric": RANK_METRIC,
        "k_values": manifest.k_values,
        "headline_eligible": any(e["headline_eligible"] for e in entries),
        "vendors": entries,
    }


def leaderboard_rows(board: dict[str, Any]) -> list[dict[str, Any]]:
    """Flat rows (one per vendor) for the CSV and the markdown preview."""
    out = []
    for e in board["vendors"]:
        row: dict[str, Any] = {"vendor": e["vendor"], "status": e["status"], "position": e.get("position"),
                               "rank_group": e.get("rank_group"), "plan": e.get("plan"),
                               "headline_eligible": e["headline_eligible"]}
        for name in HEADLINE_METRICS:
            fig = e["metrics"].get(name) or {}
            row[name] = fig.get("value")
            row[f"{name}_n"] = fig.get("n")
            row[f"{name}_low"] = fig.get("low")
            row[f"{name}_high"] = fig.get("high")
            if name in NOT_REACHED_METRICS:
                row[f"{name}_not_reached"] = (fig.get("value") is None) if fig else None
        row["reasons"] = "; ".join(e["reasons"])
        agent = e.get("agent_ready") or {}
        row["agent_ready"], row["agent_ready_method"], row["agent_ready_date"] = (
            agent.get("ready"), agent.get("method"), agent.get("trial_date"))
        out.append(row)
    return out
