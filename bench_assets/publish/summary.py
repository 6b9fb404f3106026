"""The leaderboard read in ten seconds: who is placed first, by how much it leads the next vendor
(the paired difference on the rows both answered, with its interval), with what certainty (the
vendors it cannot be told apart from, its rank range) and at what cost. A pure view of the
leaderboard record; the front page shows it above every other column."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# The cost shown beside the ranking figure on the first screen: of the ranking figure's own rows
# (the task types every vendor supports), else of every row when the board ranks on all of them.
SHARED_COST, OVERALL_COST = "cost_per_correct_shared_usd", "cost_per_correct_usd"
# Columns where a smaller figure is better: a reader's first click on their heading puts the best first.
LOWER_IS_BETTER = (
    "cost_per_correct_usd",
    "usd_per_1000_correct",
    "cost_per_correct_shared_usd",
    "usd_per_1000_correct_shared",
    "latency_p50_ms",
    "latency_p95_ms",
    "ttr_median_hours",
)


def _pair_from(pair: Mapping[str, Any], vendor: str) -> dict[str, Any]:
    """A paired comparison from `vendor`'s side: its rate minus the other's, with the interval."""
    d = pair.get("difference") or {}
    if pair["vendor_a"] == vendor:
        other, value, low, high = pair["vendor_b"], d.get("value"), d.get("low"), d.get("high")
    else:  # B's side of A − B: negated, the interval's ends swapped
        other, value, low, high = pair["vendor_a"], _neg(d.get("value")), _neg(d.get("high")), _neg(d.get("low"))
    return {
        "other": other,
        "n": pair.get("n"),
        "value": value,
        "low": low,
        "high": high,
        "told_apart": bool(pair.get("better")),
    }


def _neg(x: float | None) -> float | None:
    return None if x is None else -x


def _pairs(board: Mapping[str, Any]) -> dict[frozenset[str], Mapping[str, Any]]:
    return {frozenset((p["vendor_a"], p["vendor_b"])): p for p in (board.get("comparisons") or {}).get("pairs") or []}


def gaps_to_next(board: Mapping[str, Any]) -> dict[str, dict[str, Any] | None]:
    """Per scored vendor, in the board's order: its paired difference with the vendor placed next
    (`other`, `value`, `low`, `high` in rate units, `n` rows, `told_apart`), or None for the last
    vendor and for a pair the snapshot did not compare."""
    scored = [e["vendor"] for e in board["vendors"] if e["status"] == "scored"]
    pairs = _pairs(board)
    gaps: dict[str, dict[str, Any] | None] = {}
    for vendor, following in zip(scored, [*scored[1:], None], strict=True):
        pair = pairs.get(frozenset((vendor, following))) if following else None
        gaps[vendor] = _pair_from(pair, vendor) if pair else None
    return gaps


def summary_cost(board: Mapping[str, Any]) -> str:
    """The cost metric the first screen shows: counted on the rows the ranking figure counts."""
    return SHARED_COST if board.get("rank_metric") == "correct_rate_shared" else OVERALL_COST


def first_place(board: Mapping[str, Any]) -> dict[str, Any] | None:
    """The vendor placed first, its ranking figure and cost, and the vendors the paired test could
    not tell apart from it (`tied`, in the board's order); None when no vendor is scored."""
    scored = [e for e in board["vendors"] if e["status"] == "scored"]
    if not scored:
        return None
    best = scored[0]
    pairs = _pairs(board)
    compared = bool(pairs)
    tied = [
        e["vendor"]
        for e in scored[1:]
        if compared and (p := pairs.get(frozenset((best["vendor"], e["vendor"])))) is not None and not p.get("better")
    ]
    metrics = best.get("metrics") or {}
    return {
        "vendor": best["vendor"],
        "figure": metrics.get(board["rank_metric"]),
        "cost": metrics.get(summary_cost(board)),
        "compared": compared,
        "tied": tied,
        "gap": gaps_to_next(board).get(best["vendor"]),
    }
