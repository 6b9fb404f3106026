"""Every figure of `leaderboard.json`, each in exactly one place: re-derived from the public
evidence, checked against the published parts it is made of, or unverifiable from the public
folder (named, with why); any of them that fails its check is a difference instead.

The figures are walked generically, by where they sit and by their metric's kind
(`reproduce.parts.kind_of`), so a new scope of `breakdown` or a new metric is checked without
code here:

- `breakdown.split.public.*`: re-derived from the public verdicts (`reproduce.snapshot.
  compare_figures` compares them);
- `metrics.*` (each vendor's figures over all its rows): checked against their parts, the
  re-derived public figure and the published holdout figure (`breakdown.split.holdout`): counts and
  n add up, the rate is count / n, the interval is recomputed by the aggregation's own function; the
  overfit gap from the two correct rates; a percentile's n only (its value is named unverifiable);
- every other breakdown figure (the holdout's, a task type's, a stratum's, any other scope's) is
  unverifiable: the holdout's rows are not published. It is still checked for what it must be by
  itself (a count over n with its interval, the group's spend over its correct rows), for holding
  at least the public rows of its group and no more holdout rows than the holdout has, and, for the
  scopes the aggregation groups every row by (`PARTITION_SCOPES`), for adding up to the vendor's
  overall figure;
- `response_classes` and `miss_reasons`: `ok` is the coverage figure's count (checked); the rest
  must add up to the scored rows (and to the rows not correct) and hold at least the public counts;
- `position` from the order of the ranking figure, `rank_range` and `rank_letters` from the
  published pair counts (checked); the pair counts over all rows are unverifiable (each at least
  its public count); the tests computed from them are checked (`reproduce.snapshot.
  compare_from_counts`); `comparisons_public` is re-derived.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from bench_assets.aggregate.leaderboard import figure_of
from bench_assets.reproduce import parts
from bench_assets.rescore.compare import Difference

BOARD = "leaderboard.json"
REDERIVED = "re-derived from the public evidence"
CHECKED = "checked against its parts"
UNVERIFIABLE = "unverifiable from the public folder"
DIFFERENT = "different"
CATEGORIES = (REDERIVED, CHECKED, UNVERIFIABLE, DIFFERENT)

PUBLIC, HOLDOUT = ("split", "public"), ("split", "holdout")
# The scopes `aggregate.figures` groups each vendor's rows by: their groups partition the rows.
PARTITION_SCOPES = ("task_type", "stratum", "cohort")
HOLDOUT_WHY = (
    "counted over the holdout's rows, which are never published; holdout_commitments.json commits to "
    "their responses, so they can be checked once the holdout is revealed"
)
# Why a figure of `metrics` that is not made of public and holdout parts is unverifiable, by metric prefix.
UNVERIFIABLE_METRICS = {
    "ttr_": "sentinel probes are not in the evidence bundle",
    "latency_p": "a percentile over all rows is not made of its parts' percentiles, and the holdout's latencies "
    "are not published (its n is checked)",
}
PAIR_COUNTS = ("n", "both_correct", "a_only", "b_only", "neither")


@dataclass
class FigureLedger:
    """Each figure of leaderboard.json (vendor, path) and where it landed; the unverifiable ones by
    group (group → why, figures); the differences the checks here found."""

    figures: dict[tuple[str | None, str], str] = field(default_factory=dict)
    groups: dict[str, tuple[str, list[str]]] = field(default_factory=dict)
    differences: list[Difference] = field(default_factory=list)

    def mark(self, vendor: str | None, path: str, category: str, group: str = "", why: str = "") -> None:
        self.figures[(vendor, path)] = category
        if category == UNVERIFIABLE:
            self.groups.setdefault(group or path, (why, []))[1].append(path if vendor is None else f"{vendor}")

    def differ(self, vendor: str | None, item: str, published: Any, derived: Any) -> None:
        self.differences.append(Difference(BOARD, vendor, item, published, derived))

    def expect(
        self, vendor: str, path: str, published: Mapping[str, Any], expected: parts.Expected | None, how: str
    ) -> None:
        if expected is None:
            return
        for name, a, b in expected.mismatches(published):
            self.differ(vendor, f"{path}.{name} ({how})", a, b)

    def different(self, vendor: str | None, path: str, differences: list[Difference]) -> bool:
        """Whether leaderboard.json's figure at `path` has a difference at or under it."""
        return any(
            d.surface == BOARD
            and d.vendor == vendor
            and (d.item == path or d.item.startswith((f"{path}.", f"{path} ")))
            for d in differences
        )

    def tally(self, differences: list[Difference]) -> Counter[str]:
        """How many figures landed where, a figure with a difference at or under its path counting as different."""
        by_vendor: dict[str | None, list[Difference]] = {}
        for d in differences:
            if d.surface == BOARD:
                by_vendor.setdefault(d.vendor, []).append(d)
        out: Counter[str] = Counter()
        for (vendor, path), category in self.figures.items():
            out[DIFFERENT if self.different(vendor, path, by_vendor.get(vendor, [])) else category] += 1
        return out


def metric_groups(metrics: pd.DataFrame, vendor: str) -> dict[tuple[str, str], dict[str, dict[str, Any]]]:
    """One vendor's figures of a `vendor_metrics` frame as (scope, value) → metric → figure."""
    out: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    if metrics.empty:
        return out
    for _, rec in metrics[metrics["vendor"] == vendor].iterrows():
        if rec["metric"] != "count":
            out.setdefault((str(rec["scope"]), str(rec["scope_value"])), {})[str(rec["metric"])] = figure_of(rec)
        else:
            out.setdefault((str(rec["scope"]), str(rec["scope_value"])), {})["count"] = {"value": int(rec["value"])}
    return out


def _unverifiable_metric(metric: str) -> str:
    return next((why for p, why in UNVERIFIABLE_METRICS.items() if metric.startswith(p)), "")


class _VendorCheck:
    """The figures of one vendor's entry (see the module)."""

    def __init__(
        self, ledger: FigureLedger, entry: Mapping[str, Any], public: dict[tuple[str, str], dict[str, dict[str, Any]]]
    ):
        self.ledger = ledger
        self.vendor = str(entry["vendor"])
        self.entry = entry
        self.public = public  # re-derived from the public verdicts
        self.breakdown: Mapping[str, Mapping[str, Mapping[str, Any]]] = entry.get("breakdown") or {}
        self.overall: Mapping[str, Any] = entry.get("metrics") or {}
        self.holdout: Mapping[str, Any] = (self.breakdown.get("split") or {}).get("holdout") or {}

    def overall_figures(self) -> None:
        pub = self.public.get(PUBLIC, {})
        for metric, figure in sorted(self.overall.items()):
            path = f"metrics.{metric}"
            kind = parts.kind_of(metric)
            if kind == parts.GAP:
                expected = parts.gap_of(pub.get(parts.CORRECT) or {}, self.holdout.get(parts.CORRECT) or {})
            else:
                expected = parts.sum_of_parts(metric, [pub, self.holdout])
            if expected is not None:
                self.ledger.mark(self.vendor, path, CHECKED)
                self.ledger.expect(self.vendor, path, figure, expected, "public + holdout")
                continue
            n = parts.n_of_parts(metric, [pub, self.holdout]) if kind == parts.PERCENTILE else None
            if n is not None and figure.get("n") != n:
                self.ledger.differ(self.vendor, f"{path}.n (public + holdout)", figure.get("n"), n)
            why = _unverifiable_metric(metric) or "not made of published parts"
            self.ledger.mark(self.vendor, path, UNVERIFIABLE, f"metrics.{metric}", why)

    def own(self, path: str, metric: str, figure: Mapping[str, Any], group: Mapping[str, Any]) -> None:
        """A figure's checks by itself (and its group's other figures)."""
        if parts.kind_of(metric) == parts.PROPORTION and figure.get("n") and parts.count_of(figure) is None:
            self.ledger.differ(
                self.vendor, f"{path}.value (no count over n = {figure.get('n')} gives it)", figure.get("value"), None
            )
            return
        self.ledger.expect(self.vendor, path, figure, parts.own_consistency(metric, figure, group), "its n and count")

    def within_public_and_holdout(
        self, path: str, metric: str, figure: Mapping[str, Any], public: Mapping[str, Any]
    ) -> None:
        """A group's figure over all rows holds its public rows and at most the holdout's."""
        pub, hold = public.get(metric) or {}, self.holdout.get(metric) or {}
        n, pub_n, hold_n = figure.get("n"), pub.get("n", 0), hold.get("n", 0)
        if isinstance(n, int) and not (pub_n <= n <= pub_n + hold_n):
            self.ledger.differ(self.vendor, f"{path}.n (public rows {pub_n}, holdout rows {hold_n})", n, None)
        if parts.kind_of(metric) == parts.PROPORTION and n:
            k, pub_k = parts.count_of(figure), parts.count_of(pub) or 0
            hold_k = parts.count_of(hold) if hold.get("n") else 0  # None: the holdout's own figure is the difference
            if k is not None and hold_k is not None and not (pub_k <= k <= pub_k + hold_k):
                self.ledger.differ(
                    self.vendor,
                    f"{path}.value (public count {pub_k}, holdout count {hold_k})",
                    figure.get("value"),
                    None,
                )

    def breakdown_figures(self) -> None:
        for scope, groups in sorted(self.breakdown.items()):
            for value, figures in sorted(groups.items()):
                for metric, figure in sorted(figures.items()):
                    path = f"breakdown.{scope}.{value}.{metric}"
                    if (scope, value) == PUBLIC:
                        self.ledger.mark(self.vendor, path, REDERIVED)
                        continue
                    if (scope, value) == HOLDOUT:
                        self.ledger.mark(self.vendor, path, UNVERIFIABLE, "breakdown.split.holdout", HOLDOUT_WHY)
                    else:
                        self.ledger.mark(
                            self.vendor,
                            path,
                            UNVERIFIABLE,
                            f"breakdown.{scope}",
                            "counted over public and holdout rows, and the holdout's rows of each group are not "
                            "published (each is checked against its group's public rows and the holdout's total)",
                        )
                        self.within_public_and_holdout(path, metric, figure, self.public.get((scope, value), {}))
                    self.own(path, metric, figure, figures)
            if scope in PARTITION_SCOPES:
                self.partition_adds_up(scope, groups)

    def partition_adds_up(self, scope: str, groups: Mapping[str, Mapping[str, Any]]) -> None:
        """A scope whose groups partition the rows: its groups together are the overall figure
        (checked where the overall figure passed its own check, so a difference names the groups)."""
        failed = {d.item.split(" ")[0].rsplit(".", 1)[0] for d in self.ledger.differences if d.vendor == self.vendor}
        for metric, overall in sorted(self.overall.items()):
            if (
                parts.kind_of(metric) not in (parts.PROPORTION, parts.MEAN, parts.TOTAL)
                or f"metrics.{metric}" in failed
            ):
                continue
            if not any(metric in figures for figures in groups.values()):
                continue
            expected = parts.sum_of_parts(metric, list(groups.values()))
            for name, published, _ in expected.mismatches(overall) if expected else ():
                together = expected.n if name == "n" else expected.shown(name)  # type: ignore[union-attr]
                self.ledger.differ(
                    self.vendor,
                    f"breakdown.{scope}.*.{metric}.{name} (together, against metrics.{metric})",
                    together,
                    published,
                )

    def counts(self) -> None:
        """response_classes and miss_reasons."""
        correct = self.overall.get(parts.CORRECT) or {}
        scored_n, right = correct.get("n"), parts.count_of(correct)
        coverage = parts.count_of(self.overall.get("coverage") or {})
        for name, expected_total, exclude in (
            ("response_classes", scored_n, "unsupported"),
            ("miss_reasons", None if scored_n is None or right is None else scored_n - right, None),
        ):
            counts: Mapping[str, int] = self.entry.get(name) or {}
            scope = "response_class" if name == "response_classes" else "miss_reason"
            for key, count in sorted(counts.items()):
                path = f"{name}.{key}"
                public = (self.public.get((scope, key)) or {}).get("count", {}).get("value", 0)
                if name == "response_classes" and key == "ok" and coverage is not None:
                    self.ledger.mark(self.vendor, path, CHECKED)
                    if count != coverage:
                        self.ledger.differ(self.vendor, f"{path} (the count of metrics.coverage)", count, coverage)
                else:
                    self.ledger.mark(
                        self.vendor,
                        path,
                        UNVERIFIABLE,
                        name,
                        "counted over all rows (their sum and public part checked)",
                    )
                if count < public:
                    self.ledger.differ(self.vendor, f"{path} (at least its public rows)", count, public)
            total = sum(c for k, c in counts.items() if k != exclude)
            if self.ledger.different(self.vendor, f"metrics.{parts.CORRECT}", self.ledger.differences):
                continue  # its total rests on a figure already found different
            if counts and expected_total is not None and total != expected_total:
                self.ledger.differ(
                    self.vendor, f"{name} (together, against metrics.{parts.CORRECT})", total, expected_total
                )


def check_board(
    board: Mapping[str, Any], public_metrics: pd.DataFrame, public_pairs: Mapping[str, Any] | None
) -> FigureLedger:
    """Every figure of `board` (leaderboard.json) placed and checked (see the module);
    `public_metrics` is `vendor_metrics` of the re-derived public verdicts, `public_pairs` the
    re-derived `comparisons_public` section."""
    ledger = FigureLedger()
    entries = [e for e in board.get("vendors") or [] if e.get("status") == "scored"]
    for entry in entries:
        check = _VendorCheck(ledger, entry, metric_groups(public_metrics, str(entry["vendor"])))
        check.overall_figures()
        check.breakdown_figures()
        check.counts()
        if "agent_ready" in entry and entry.get("agent_ready") is not None:
            ledger.mark(
                entry["vendor"],
                "agent_ready",
                UNVERIFIABLE,
                "agent_ready",
                "the trials' evidence is not in the evidence bundle",
            )
    _positions(board, entries, ledger)
    _pairs(board, public_pairs, ledger)
    return ledger


def _positions(board: Mapping[str, Any], entries: list[Mapping[str, Any]], ledger: FigureLedger) -> None:
    """Positions follow the published ranking figure (as `aggregate.leaderboard` orders them); rank
    ranges and letters are re-derived from the pair counts (`compare_from_counts`)."""
    rank = board.get("rank_metric")
    ranked = [e for e in entries if rank in (e.get("metrics") or {})]
    ordered = sorted(
        ranked,
        key=lambda e: (e["metrics"][rank]["value"] is None, -(e["metrics"][rank]["value"] or 0.0), e["vendor"]),
    )
    for position, e in enumerate(ordered, start=1):
        ledger.mark(e["vendor"], "position", CHECKED)
        if e.get("position") != position:
            ledger.differ(e["vendor"], f"position (the order of metrics.{rank})", e.get("position"), position)
        for item in ("rank_range", "rank_letters"):
            if e.get(item) is not None:
                ledger.mark(e["vendor"], item, CHECKED)


def _pairs(board: Mapping[str, Any], public_pairs: Mapping[str, Any] | None, ledger: FigureLedger) -> None:
    public = {(p["vendor_a"], p["vendor_b"]): p for p in (public_pairs or {}).get("pairs") or []}
    for p in (board.get("comparisons") or {}).get("pairs") or []:
        name = f"comparisons.pairs[{p['vendor_a']} vs {p['vendor_b']}]"
        mine = public.get((p["vendor_a"], p["vendor_b"])) or {}
        for key in p:
            path = f"{name}.{key}"
            if key in ("vendor_a", "vendor_b"):
                continue
            if key in PAIR_COUNTS:
                ledger.mark(
                    None,
                    path,
                    UNVERIFIABLE,
                    "comparisons.pairs counts",
                    "counted over all rows (each at least its public count); every rate, p-value, interval, "
                    "verdict, rank range, letter and the power statement are re-derived from them",
                )
                if isinstance(p[key], int) and isinstance(mine.get(key), int) and p[key] < mine[key]:
                    ledger.differ(None, f"{path} (at least its public count)", p[key], mine[key])
            else:
                ledger.mark(None, path, CHECKED)
    for p in (board.get("comparisons_public") or {}).get("pairs") or []:
        ledger.mark(None, f"comparisons_public.pairs[{p['vendor_a']} vs {p['vendor_b']}]", REDERIVED)
    if board.get("power") is not None:
        ledger.mark(None, "power", CHECKED)
