"""Headline eligibility: when a published aggregate may be quoted as a claim about real vendors.

An aggregate is headline-eligible only when every rule holds; otherwise it is illustrative and
carries the reasons:
- live mode only: simulated and replay runs are never headline figures;
- enough rows: n ≥ 10 behind an aggregate claim, n ≥ 20 behind a per-stratum chart;
- adapter and plan pinned: the manifest pins the adapter version the code implements, names the
  plan, and (outside simulated mode) archives the pricing page its prices were read from;
- the snapshot's first full run is complete for the vendor (every golden row scored).
"""

from __future__ import annotations

from typing import Any

from bench_assets.aggregate import CHART_MIN_N, HEADLINE_MIN_N

AGGREGATE_MIN_N = HEADLINE_MIN_N
CHART_SCOPES = frozenset({"stratum"})  # breakdowns drawn as per-stratum charts


def mode_reasons(mode: str) -> list[str]:
    return [] if mode == "live" else [f"{mode} mode: illustrative, never headline (live runs only)"]


def pinning_reasons(spec: Any, mode: str) -> list[str]:
    """Why a vendor's adapter or plan is not pinned (empty when both are)."""
    from bench_assets.adapters import get_adapter

    reasons = []
    try:
        code_version = get_adapter(spec.adapter).version
    except KeyError:
        reasons.append(f"adapter not pinned: no adapter named {spec.adapter!r}")
    else:
        if str(code_version) != str(spec.adapter_version):
            reasons.append(f"adapter not pinned: the manifest pins {spec.adapter} version {spec.adapter_version}, "
                           f"the code is version {code_version}")
    if not (spec.plan or "").strip():
        reasons.append("plan not pinned: no plan named")
    elif mode != "simulated" and spec.pricing_source is None:
        reasons.append("plan not pinned: no archived pricing page (pricing_source) for its prices")
    return reasons


def n_reason(n: int, minimum: int, what: str) -> list[str]:
    return [f"n = {n} < {minimum} rows behind {what}"] if n < minimum else []


def vendor_reasons(mode: str, spec: Any, n: int, complete: bool) -> list[str]:
    """Reasons the vendor's overall aggregate is not headline-eligible (empty: eligible)."""
    reasons = mode_reasons(mode) + n_reason(n, AGGREGATE_MIN_N, "the aggregate") + pinning_reasons(spec, mode)
    if not complete:
        reasons.append("the snapshot's first full run is not complete for this vendor")
    return reasons


def breakdown_eligibility(mode: str, spec: Any, complete: bool, breakdown: dict[str, dict[str, dict[str, Any]]],
                          rank_metric: str = "correct_rate") -> dict[str, dict[str, dict[str, Any]]]:
    """headline_eligible and reasons for every breakdown figure group (scope → value)."""
    shared = mode_reasons(mode) + pinning_reasons(spec, mode)
    if not complete:
        shared.append("the snapshot's first full run is not complete for this vendor")
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for scope, groups in breakdown.items():
        minimum, what = (CHART_MIN_N, "a per-stratum chart") if scope in CHART_SCOPES else (AGGREGATE_MIN_N, "the aggregate")
        out[scope] = {}
        for value, figures in groups.items():
            n = int((figures.get(rank_metric) or {}).get("n", 0))
            reasons = shared + n_reason(n, minimum, what)
            out[scope][value] = {"headline_eligible": not reasons, "reasons": reasons}
    return out
