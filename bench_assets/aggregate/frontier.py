"""The cost–quality frontier: which configurations no other beats on both price and quality, and
which one is best at each budget.

A configuration is a point (ranking figure, $ per 1,000 correct on the ranking figure's own rows:
`usd_per_1000_correct_shared`), both point estimates as `leaderboard.json` publishes them (rounded
to 6 decimals), so a reader can recompute the frontier from the file. Both axes count the same
rows: a configuration that also extracts would otherwise be priced with extract rows its
search-only siblings never see. Definitions:

- **Candidates**: scored entries with both a ranking figure and a `usd_per_1000_correct_shared` value.
  An entry without one of them (not run, excluded, or no correct answer, where the cost is
  undefined) is not a candidate and is never Pareto-optimal.
- **Dominance**: A dominates B when A's cost ≤ B's cost and A's ranking figure ≥ B's, with at
  least one of the two strictly better.
- **Pareto-optimal**: a candidate no other candidate dominates. Ties: two candidates with the same
  cost and the same ranking figure do not dominate each other, so both are optimal (or neither);
  among equal costs only the highest ranking figure is optimal, among equal ranking figures only
  the lowest cost. A free plan (cost 0) is a candidate like any other.
- **Best at a budget** B ($ per 1,000 correct): the candidate with the highest ranking figure among
  those costing at most B, i.e. the Pareto-optimal candidate with the highest cost ≤ B (tied
  candidates are named together). The budget bands follow: below the cheapest optimal candidate
  nothing measured fits; from each optimal cost up to the next, that candidate is best; from the
  dearest optimal cost up, the best overall.

These are point estimates: the paired tests (`rank_letters`) say which ranking figures can be told
apart, and each cost has its interval; a band's best is the best measured, not proven better.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

COST_METRIC = "usd_per_1000_correct_shared"
FRONTIER_NOTE = (
    "pareto_optimal: among scored entries with both a ranking figure and a usd_per_1000_correct_shared value (the "
    "cost of the ranking figure's own rows; point estimates as published), true when no other entry is at most as dear and at least as good with one of the two "
    "strictly better. Entries with equal cost and equal ranking figure are both optimal or neither; an entry "
    "without a cost (no correct answer) or without a ranking figure is never optimal. Point estimates: rank_letters "
    "and the intervals say which differences the data can tell apart."
)


@dataclass(frozen=True)
class FrontierPoint:
    """One candidate: its name, $ per 1,000 correct and ranking figure (point estimates)."""

    name: str
    cost: float
    quality: float


@dataclass(frozen=True)
class BudgetBand:
    """A budget range in $ per 1,000 correct, `low` ≤ budget < `high` (`high` None: no upper end),
    and the best candidates within it (empty below the cheapest: nothing measured fits)."""

    low: float
    high: float | None
    best: tuple[str, ...]
    quality: float | None
    cost: float | None


def dominates(a: FrontierPoint, b: FrontierPoint) -> bool:
    """A is at most as dear and at least as good as B, and strictly better in one of the two."""
    return a.cost <= b.cost and a.quality >= b.quality and (a.cost < b.cost or a.quality > b.quality)


def _checked(points: Iterable[FrontierPoint]) -> list[FrontierPoint]:
    out = list(points)
    names = [p.name for p in out]
    if len(set(names)) != len(names):
        raise ValueError(f"frontier points must have unique names, got {sorted(names)}")
    for p in out:
        if not (p.cost >= 0 and p.cost != float("inf")) or p.quality != p.quality:
            raise ValueError(f"frontier point {p.name!r}: cost must be a finite amount >= 0, quality a number")
    return out


def pareto_optimal(points: Iterable[FrontierPoint]) -> list[FrontierPoint]:
    """The candidates no other dominates, cheapest first (ties by name)."""
    pts = _checked(points)
    front = [p for p in pts if not any(dominates(q, p) for q in pts if q.name != p.name)]
    return sorted(front, key=lambda p: (p.cost, -p.quality, p.name))


def budget_bands(points: Iterable[FrontierPoint]) -> list[BudgetBand]:
    """The best candidate at each budget as bands (see the module); no candidate, no band."""
    front = pareto_optimal(points)
    if not front:
        return []
    groups: list[list[FrontierPoint]] = []
    for p in front:  # on the front, equal cost means equal quality: tied candidates share a band
        if groups and groups[-1][0].cost == p.cost:
            groups[-1].append(p)
        else:
            groups.append([p])
    bands = [BudgetBand(0.0, groups[0][0].cost, (), None, None)] if groups[0][0].cost > 0 else []
    for i, group in enumerate(groups):
        high = groups[i + 1][0].cost if i + 1 < len(groups) else None
        bands.append(BudgetBand(group[0].cost, high, tuple(p.name for p in group), group[0].quality, group[0].cost))
    return bands


def board_points(entries: Sequence[Mapping[str, Any]], rank_metric: str) -> list[FrontierPoint]:
    """The candidates of a leaderboard's entries (see the module): scored, with both figures."""
    out = []
    for e in entries:
        metrics = e.get("metrics") or {}
        quality = (metrics.get(rank_metric) or {}).get("value")
        cost = (metrics.get(COST_METRIC) or {}).get("value")
        if e.get("status") == "scored" and quality is not None and cost is not None:
            out.append(FrontierPoint(str(e["vendor"]), float(cost), float(quality)))
    return out


def board_bands(board: Mapping[str, Any]) -> list[BudgetBand]:
    """The budget bands of a published leaderboard record (its ranking figure, its costs)."""
    return budget_bands(board_points(board.get("vendors") or [], board.get("rank_metric") or "correct_rate"))


def mark_pareto_optimal(entries: Sequence[dict[str, Any]], rank_metric: str) -> None:
    """Set each entry's `pareto_optimal` (False for a non-candidate)."""
    optimal = {p.name for p in pareto_optimal(board_points(entries, rank_metric))}
    for e in entries:
        e["pareto_optimal"] = e["vendor"] in optimal
