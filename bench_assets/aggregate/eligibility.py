"""Headline eligibility: when a published figure may be quoted as a claim about real vendors.

A figure is headline-eligible only when every rule holds; otherwise it is illustrative and
carries the reasons:
- live mode only: simulated and replay runs are never headline figures;
- an operator declaration: a live snapshot needs the operator's conflict-of-interest
  declaration filed and valid (`disclosures.md` beside the manifest, see
  `bench_assets.aggregate.declaration`);
- enough rows behind the figure itself: n ≥ `AGGREGATE_MIN_N` behind an aggregate claim, n ≥
  `CHART_MIN_N` behind a per-stratum chart (`bench_assets.aggregate.figures`). The n is the charted metric's own: hit@k counts search rows, fidelity
  extract rows, latency the responses timed, time-to-retrievability the sentinel pages, and the
  overfit gap needs enough rows on both sides (public and holdout). Totals (spend, probes made)
  have no n rule;
- adapter and plan pinned: the manifest pins the adapter version the code implements, names the
  plan, and (outside simulated mode) archives the pricing page its prices were read from;
- the snapshot's first full run is complete for the vendor (every golden row scored).

Every vendor entry carries `headline_eligible` and `reasons` for its ranking claim,
`metric_eligibility` for each of its figures, and `breakdown_eligibility` for each breakdown
group and each figure in it; a chart is headline-eligible only when every figure it draws is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench_assets.adapters import get_adapter
from bench_assets.aggregate.declaration import declaration_reasons
from bench_assets.aggregate.figures import CHART_MIN_N, HEADLINE_MIN_N

AGGREGATE_MIN_N = HEADLINE_MIN_N
CHART_SCOPES = frozenset({"stratum"})  # breakdowns drawn as per-stratum charts
# Figures that are totals or counts, not estimates: no n rule applies to them.
NO_N_RULE = frozenset({"spend_usd", "ttr_probes"})
# What a figure's n counts (for the reason a reader sees); proportions, means and cost per correct count rows.
N_UNITS = {
    "latency_p50_ms": "timed responses",
    "latency_p95_ms": "timed responses",
    "ttr_median_hours": "sentinel pages",
}


def mode_reasons(mode: str) -> list[str]:
    return [] if mode == "live" else [f"{mode} mode: illustrative, never headline (live runs only)"]


def pinning_reasons(spec: Any, mode: str) -> list[str]:
    """Why a vendor's adapter or plan is not pinned (empty when both are)."""

    reasons = []
    try:
        code_version = get_adapter(spec.adapter).version
    except KeyError:
        reasons.append(f"adapter not pinned: no adapter named {spec.adapter!r}")
    else:
        if str(code_version) != str(spec.adapter_version):
            reasons.append(
                f"adapter not pinned: the manifest pins {spec.adapter} version {spec.adapter_version}, "
                f"the code is version {code_version}"
            )
    if not (spec.plan or "").strip():
        reasons.append("plan not pinned: no plan named")
    elif mode != "simulated" and spec.pricing_source is None:
        reasons.append("plan not pinned: no archived pricing page (pricing_source) for its prices")
    return reasons


def n_reason(n: int, minimum: int, what: str, unit: str = "rows") -> list[str]:
    return [f"n = {n} < {minimum} {unit} behind {what}"] if n < minimum else []


def shared_reasons(mode: str, spec: Any, complete: bool, snapshot_reasons: Sequence[str] = ()) -> list[str]:
    """The reasons that hold for every figure of a vendor (mode, declaration, pinning, completeness)."""
    reasons = mode_reasons(mode) + list(snapshot_reasons) + pinning_reasons(spec, mode)
    if not complete:
        reasons.append("the snapshot's first full run is not complete for this vendor")
    return reasons


def vendor_reasons(mode: str, spec: Any, n: int, complete: bool, snapshot_reasons: Sequence[str] = ()) -> list[str]:
    """Reasons the vendor's overall aggregate (its ranking claim) is not headline-eligible (empty: eligible)."""
    reasons = mode_reasons(mode) + list(snapshot_reasons) + n_reason(n, AGGREGATE_MIN_N, "the aggregate")
    reasons += pinning_reasons(spec, mode)
    if not complete:
        reasons.append("the snapshot's first full run is not complete for this vendor")
    return reasons


def figure_n_reasons(
    metric: str,
    figure: Mapping[str, Any] | None,
    minimum: int,
    where: str,
    split_breakdown: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[str]:
    """The n rule of one figure: its own n against `minimum` (`where` says what claims it, e.g. "the
    aggregate"). The overfit gap needs `minimum` rows on each side of the split."""
    if metric in NO_N_RULE:
        return []
    if metric == "overfit_gap":
        out = []
        for side in ("public", "holdout"):
            n = int((((split_breakdown or {}).get(side) or {}).get("correct_rate") or {}).get("n", 0))
            out += n_reason(n, minimum, f"the overfit gap ({where})", f"{side} rows")
        return out
    n = int((figure or {}).get("n", 0))
    return n_reason(n, minimum, f"{metric} ({where})", N_UNITS.get(metric, "rows"))


def _verdict(reasons: list[str]) -> dict[str, Any]:
    return {"headline_eligible": not reasons, "reasons": reasons}


def metric_eligibility(
    mode: str,
    spec: Any,
    complete: bool,
    metrics: Mapping[str, Mapping[str, Any]],
    breakdown: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None,
    snapshot_reasons: Sequence[str] = (),
) -> dict[str, dict[str, Any]]:
    """headline_eligible and reasons for each of a vendor's overall figures, each by its own n."""
    shared = shared_reasons(mode, spec, complete, snapshot_reasons)
    split = (breakdown or {}).get("split")
    return {
        metric: _verdict(shared + figure_n_reasons(metric, fig, AGGREGATE_MIN_N, "the aggregate", split))
        for metric, fig in metrics.items()
    }


def breakdown_eligibility(
    mode: str,
    spec: Any,
    complete: bool,
    breakdown: dict[str, dict[str, dict[str, Any]]],
    rank_metric: str = "correct_rate",
    snapshot_reasons: Sequence[str] = (),
) -> dict[str, dict[str, dict[str, Any]]]:
    """For every breakdown group (scope → value): headline_eligible and reasons of the group's
    `rank_metric` figure, and under `metrics` the same for each of its figures by its own n (a
    per-stratum chart of hit@k rests on the stratum's search rows, not on all its rows)."""
    shared = shared_reasons(mode, spec, complete, snapshot_reasons)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for scope, groups in breakdown.items():
        chart = scope in CHART_SCOPES
        minimum, what = (CHART_MIN_N, "a per-stratum chart") if chart else (AGGREGATE_MIN_N, "the aggregate")
        out[scope] = {}
        for value, figures in groups.items():
            n = int((figures.get(rank_metric) or {}).get("n", 0))
            entry = _verdict(shared + n_reason(n, minimum, what))
            entry["metrics"] = {m: _verdict(shared + figure_n_reasons(m, f, minimum, what)) for m, f in figures.items()}
            out[scope][value] = entry
    return out


def snapshot_reasons(warehouse: Any, manifest: Any) -> list[str]:
    """Reasons that hold for every figure of the snapshot beyond its mode: in live mode, a
    missing or invalid operator declaration (read beside the registered manifest)."""
    if manifest.mode != "live":
        return []

    df = warehouse.query_df("SELECT manifest_path FROM snapshots WHERE snapshot_id = ?", [manifest.snapshot_id])
    snapshot_dir = Path(df["manifest_path"][0]).parent if len(df) and df["manifest_path"][0] else None
    return declaration_reasons(snapshot_dir, manifest.mode)


def figures_eligibility(
    board: Mapping[str, Any], refs: Sequence[tuple[str, str, str | None]]
) -> tuple[bool, list[str]]:
    """Whether every figure in `refs` (vendor, metric, stratum or None for the overall figure) is
    headline-eligible in the leaderboard record, and the distinct reasons why not (a chart's eligibility)."""
    entries = {e["vendor"]: e for e in board.get("vendors", [])}
    reasons: list[str] = []
    for vendor, metric, stratum in refs:
        e = entries.get(vendor) or {}
        if stratum is None:
            verdict = (e.get("metric_eligibility") or {}).get(metric)
        else:
            group = ((e.get("breakdown_eligibility") or {}).get("stratum") or {}).get(stratum) or {}
            verdict = (group.get("metrics") or {}).get(metric)
        if verdict is None:
            verdict = {"headline_eligible": False, "reasons": ["no eligibility recorded for the figure"]}
        for r in verdict["reasons"]:
            if r not in reasons:
                reasons.append(r)
    return (not reasons and bool(refs)), reasons
