"""The leaderboard record: built once from `vendor_metrics` and rendered to every surface.

Headline eligibility follows the methodology (`bench_assets.aggregate.eligibility`); the rules as
published, their thresholds read from the constants the rules use, are `eligibility_rules()`.
Every vendor entry carries `headline_eligible` and its reasons, `metric_eligibility` for each of
its figures and `breakdown_eligibility` for each breakdown group; anything not eligible is
labelled illustrative on every surface. Vendors are placed by the ranking figure; which of them
differ is decided by paired tests on the rows every vendor answered (`aggregate.comparisons`,
`metrics.paired`): each ranked vendor has a `rank_range` (the ranks it can hold given the vendors
found better and worse than it) and `rank_letters` (vendors sharing a letter cannot be told
apart), and the record carries every pair's test (`comparisons`) and the smallest difference the
snapshot could detect (`power`). `versions` holds the code, environment and input files the
snapshot was fetched and published with. Each entry's `pareto_optimal` says whether it is on the
cost–quality frontier (`aggregate.frontier`: ranking figure against $ per 1,000 correct on the same rows). `miss_reasons` counts, per vendor, the reason each row it
did not get right was missed (`score.miss_reasons`).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from bench_assets.agent_ready.records import TrialRecord, agent_ready_summary, load_trial_records
from bench_assets.aggregate import eligibility
from bench_assets.aggregate.cohort import snapshot_cohort
from bench_assets.aggregate.comparisons import comparisons_from_frame, vendor_comparisons
from bench_assets.aggregate.descriptors import metric_descriptors
from bench_assets.aggregate.figures import (
    FRESH_DAYS,
    FRESH_METRIC,
    FRESH_SCOPE,
    MISS_REASON_SCOPE,
    RANKING_SCOPE,
)
from bench_assets.aggregate.frontier import COST_METRIC, FRONTIER_NOTE, mark_pareto_optimal
from bench_assets.aggregate.provenance import provenance_fields
from bench_assets.fetch.classify import RESPONSE_CLASSES
from bench_assets.fetch.versions import recorded_versions
from bench_assets.manifest import Manifest
from bench_assets.metrics import (
    FAMILY_ALPHA,
    TARGET_POWER,
    PairedComparison,
    PairedRanking,
    PowerStatement,
    identity_rules,
    ranking_from_comparisons,
)
from bench_assets.storage.warehouse import Warehouse

HEADLINE_METRICS = [
    "correct_rate",
    "correct_rate_shared",
    "hit_at_1",
    "hit_at_3",
    "hit_at_5",
    "hit_at_10",
    "fidelity_mean",
    "answer_score_mean",
    "coverage",
    "cost_per_correct_usd",
    "usd_per_1000_correct",
    "cost_per_correct_shared_usd",
    "usd_per_1000_correct_shared",
    "spend_usd",
    "overfit_gap",
    "latency_p50_ms",
    "latency_p95_ms",
    "ttr_median_hours",
    "ttr_probes",
]
# The public rows' own figures (breakdown.split.public), also columns of leaderboard.csv (`public_<metric>`):
# what `bench reproduce` re-derives from the evidence bundle.
PUBLIC_METRICS = [
    "correct_rate_shared",
    "correct_rate",
    "coverage",
    "hit_at_1",
    "hit_at_3",
    "hit_at_5",
    "hit_at_10",
    "fidelity_mean",
    "answer_score_mean",
    "spend_usd",
    "cost_per_correct_usd",
    "usd_per_1000_correct",
    "latency_p50_ms",
    "latency_p95_ms",
]
# A Kaplan–Meier median that never falls to 1/2 is "not reached": its figure has value null and
# n > 0 (a vendor with no sentinel subject has no figure at all). The CSV spells the flag out.
NOT_REACHED_METRICS = ["ttr_median_hours"]
# A vendor's figures by group: task type, stratum, cohort, split, and freshness (hit@5 on the search
# rows whose golden page was under FRESH_DAYS days old at the fetch: `fresh_lt_30d.search`, absent
# when the vendor has no such row).
BREAKDOWN_SCOPES = ("task_type", "stratum", "cohort", "split", FRESH_SCOPE)
# 3: metric descriptors (`metrics`), provenance (generated_at, content_hash, license, status,
# disclaimer) and the cohort added
# 4: one entry per endpoint configuration, each naming its `provider` and `mode`
# 5: the frontier priced on the ranking figure's own rows (`usd_per_1000_correct_shared`)
SCHEMA_VERSION = 5
# Positions: the correct rate over the task types every scored vendor supports
# (`aggregate.shared_task_types`), so every vendor is compared on the same rows; the record's
# `ranking` names the metric used, its task types and a note.
RANK_METRIC = "correct_rate_shared"
# The overall correct rate: published for every vendor, and the ranking fallback when no task type is shared.
BASE_METRIC = "correct_rate"


def eligibility_rules() -> str:
    """The headline-eligibility rules in words (markdown) for the methodology page, with every
    threshold read from the constant the rules themselves use, so the page cannot drift from them."""
    no_rule = ", ".join(f"`{m}`" for m in sorted(eligibility.NO_N_RULE))
    chart_scopes = ", ".join(sorted(eligibility.CHART_SCOPES))
    return "\n".join(
        [
            "A figure is headline-eligible only when every rule holds; otherwise it is illustrative and carries the "
            "reasons:",
            "",
            "- **Live mode only**: simulated and replay runs are never headline figures.",
            "- **An operator declaration**: a live snapshot needs the operator's conflict-of-interest declaration filed "
            "and valid.",
            f"- **Enough rows behind the figure itself**: n ≥ {eligibility.AGGREGATE_MIN_N} behind an aggregate claim "
            f"(a vendor's overall figures, its task-type, cohort and split breakdowns), n ≥ {eligibility.CHART_MIN_N} "
            f"behind a per-stratum figure (breakdown by {chart_scopes}, drawn in the charts). The n is the figure's "
            "own: hit@k counts search rows, fidelity extract rows, latency the responses timed, time-to-retrievability "
            f"the sentinel pages, and the overfit gap needs n ≥ {eligibility.AGGREGATE_MIN_N} on both sides (public and "
            f"holdout). Totals ({no_rule}) have no n rule.",
            "- **Adapter and plan pinned**: the manifest pins the adapter version the code implements, names the plan, "
            "and (outside simulated mode) archives the pricing page its prices were read from.",
            "- **The first full run is complete** for the vendor: every golden row scored.",
            "",
            "A vendor's position rests on its ranking figure and its overall correct rate: the vendor is "
            "headline-eligible when both are. Each figure is judged by its own n, so an eligible vendor can still have "
            "an illustrative figure (a stratum with few rows, a median over few sentinel pages): every surface marks it "
            "(the site with an *illustrative* tag whose title gives the reason, leaderboard.csv in "
            "`<metric>_headline_eligible`, leaderboard.json in `metric_eligibility` and `breakdown_eligibility`). "
            "A chart is headline-eligible only when every figure it draws is.",
        ]
    )


def _clean(x: Any) -> Any:
    if x is None:
        return None
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
        return None
    return x


def figure_of(rec: pd.Series) -> dict[str, Any]:
    value = _clean(float(rec["value"])) if rec["value"] is not None else None
    return {
        "value": None if value is None else round(value, 6),
        "n": int(rec["n"]),
        "low": None if _clean(rec["low"]) is None else round(float(rec["low"]), 6),
        "high": None if _clean(rec["high"]) is None else round(float(rec["high"]), 6),
    }


def _ranking(entries: list[dict[str, Any]], shared: list[str] | None, all_types: set[str]) -> dict[str, Any]:
    """Which figure ranks the scored vendors, over which task types, and why (the record's `ranking`)."""
    scored = [e for e in entries if e["status"] == "scored" and BASE_METRIC in e["metrics"]]
    if shared and all(RANK_METRIC in e["metrics"] for e in scored):
        left_out = sorted(all_types - set(shared))
        note = (
            f"Ranked by the correct rate over the task types every scored vendor supports "
            f"({', '.join(shared)}), so every vendor is compared on the same rows. "
        )
        note += (
            f"The overall correct rate also counts {', '.join(left_out)} rows, which not every vendor "
            "supports; it is published beside the ranking figure but does not set the order."
            if left_out
            else "Every scored vendor supports every task type: the ranking figure equals the overall correct rate."
        )
        return {
            "metric": RANK_METRIC,
            "base_metric": BASE_METRIC,
            "task_types": list(shared),
            "task_types_left_out": left_out,
            "note": note,
        }
    if not scored:
        return {
            "metric": BASE_METRIC,
            "base_metric": BASE_METRIC,
            "task_types": [],
            "task_types_left_out": [],
            "note": "No vendor is scored yet.",
        }
    return {
        "metric": BASE_METRIC,
        "base_metric": BASE_METRIC,
        "task_types": sorted(all_types),
        "task_types_left_out": [],
        "note": "No task type is supported by every scored vendor: ranked by the overall correct rate, whose "
        "rows differ between vendors (each counts only the task types it supports).",
    }


def _trials_of(trials: list[TrialRecord], vendor: str, provider: str) -> list[TrialRecord]:
    """The agent-ready trials that speak for a configuration: its own, else its provider's. An agent
    signs up for the provider's account, and every mode of the provider runs on that one key, so
    `exa.deep` is as agent-ready as the `exa` trial found the account."""
    own = [t for t in trials if t.vendor == vendor]
    return own or [t for t in trials if t.vendor == provider]


def build_leaderboard(
    manifest: Manifest,
    metrics: pd.DataFrame,
    complete_vendors: set[str],
    agent_trials: list[TrialRecord] | None = None,
    snapshot_reasons: list[str] | None = None,
    comparisons: pd.DataFrame | None = None,
    versions: dict[str, Any] | None = None,
    public_comparisons: pd.DataFrame | None = None,
    cohort: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The leaderboard as a plain JSON-ready dict (the schema of leaderboard.json). `agent_trials`
    are the snapshot's agent-ready trial records (each vendor's `agent_ready` summarizes its own, or
    its provider's for a configuration with none of its own: one account and key serve every mode);
    `comparisons` its `vendor_comparisons` rows, from which rank ranges, letters and the power
    statement follow (without them no vendor has a rank range); `versions` the recorded code,
    environment and input files (`fetch.versions`); `public_comparisons` the same pairs compared on
    the public rows alone (`comparisons_public`: what a reader can re-derive from the evidence bundle);
    `cohort` what the figures were measured on (`aggregate.cohort`). The record also describes every
    metric (`metrics`: `aggregate.descriptors`) and states its provenance (`aggregate.provenance`:
    `status` as for a record not being published, `content_hash` null until its files are rendered)."""
    entries: list[dict[str, Any]] = []
    shared: list[str] | None = None
    all_types: set[str] = set()
    for vendor, spec in sorted(manifest.vendors.items()):
        m = metrics[metrics["vendor"] == vendor]
        overall = {r["metric"]: figure_of(r) for _, r in m[(m["scope"] == "overall")].iterrows()}
        for _, r in m[(m["scope"] == RANKING_SCOPE) & (m["metric"] == BASE_METRIC)].iterrows():
            overall[RANK_METRIC] = figure_of(r)
            shared = str(r["scope_value"]).split(",")
        breakdown: dict[str, dict[str, dict[str, Any]]] = {}
        for scope in BREAKDOWN_SCOPES:
            part = m[m["scope"] == scope]
            breakdown[scope] = {}
            for value, grp in part.groupby("scope_value", sort=True):
                breakdown[scope][value] = {r["metric"]: figure_of(r) for _, r in grp.iterrows()}
        all_types |= {t for t, figs in breakdown["task_type"].items() if BASE_METRIC in figs}
        classes = {r["scope_value"]: int(r["value"]) for _, r in m[m["scope"] == "response_class"].iterrows()}
        missed = m[m["scope"] == MISS_REASON_SCOPE]
        miss_reasons = {
            r["scope_value"]: int(r["value"])
            for _, r in missed.sort_values(["value", "scope_value"], ascending=[False, True]).iterrows()
        }
        # The rows behind the vendor's claims: its overall rate, and the ranking figure its position rests on.
        n = overall.get(BASE_METRIC, {}).get("n", 0)
        if RANK_METRIC in overall:
            n = min(n, overall[RANK_METRIC]["n"])
        reasons = eligibility.vendor_reasons(manifest.mode, spec, n, vendor in complete_vendors, snapshot_reasons or ())
        status = "scored" if overall else "not_run"
        entries.append(
            {
                "vendor": vendor,
                "provider": spec.provider,
                "mode": spec.mode,
                "status": status,
                "reason": None if overall else "no scores yet",
                "adapter": spec.adapter,
                "adapter_version": spec.adapter_version,
                "plan": spec.plan,
                "metrics": {k: overall[k] for k in HEADLINE_METRICS if k in overall},
                "breakdown": breakdown,
                "response_classes": classes,
                "miss_reasons": miss_reasons,
                "headline_eligible": not reasons,
                "reasons": reasons,
                # each figure by its own n (aggregate.eligibility); snapshot_reasons: e.g. no operator declaration
                "metric_eligibility": eligibility.metric_eligibility(
                    manifest.mode, spec, vendor in complete_vendors, overall, breakdown, snapshot_reasons or ()
                ),
                "breakdown_eligibility": eligibility.breakdown_eligibility(
                    manifest.mode, spec, vendor in complete_vendors, breakdown, BASE_METRIC, snapshot_reasons or ()
                ),
                "agent_ready": agent_ready_summary(_trials_of(agent_trials or [], vendor, spec.provider)),
            }
        )
    ranking = _ranking(entries, shared, all_types)
    rank = ranking["metric"]
    scored = [e for e in entries if e["status"] == "scored" and rank in e["metrics"]]
    # An undefined ranking figure (no rows) sorts last and is compared with nobody.
    ordered = sorted(
        scored, key=lambda e: (e["metrics"][rank]["value"] is None, -(e["metrics"][rank]["value"] or 0.0), e["vendor"])
    )
    ranked = [e["vendor"] for e in ordered if e["metrics"][rank]["value"] is not None]
    paired = None
    if comparisons is not None:
        pairs = [c for c in comparisons_from_frame(comparisons) if {c.counts.first, c.counts.second} <= set(ranked)]
        paired = ranking_from_comparisons(ranked, pairs)
    for position, entry in enumerate(ordered, start=1):
        entry["position"] = position
        best_worst = paired.rank_ranges.get(entry["vendor"]) if paired else None
        # no paired comparison (none given, or an undefined ranking figure): no rank range, no letters
        entry["rank_range"] = {"best": best_worst[0], "worst": best_worst[1]} if best_worst else None
        entry["rank_letters"] = paired.letters.get(entry["vendor"]) if paired else None
    for excluded in manifest.excluded:
        entries.append(
            {
                "vendor": excluded.vendor,
                "provider": excluded.vendor.partition(".")[0],
                "mode": excluded.vendor.partition(".")[2] or None,
                "status": "excluded",
                "reason": excluded.reason,
                "reason_code": excluded.reason_code,
                "evidence": excluded.evidence,
                "metrics": {},
                "headline_eligible": False,
                "reasons": ["excluded: never called, never scored"],
            }
        )
    entries.sort(key=lambda e: (e.get("position") or 10_000, e["vendor"]))
    # on the ranking figure and $ per 1,000 correct, point estimates as published (aggregate.frontier)
    mark_pareto_optimal(entries, rank)
    return {
        "schema_version": SCHEMA_VERSION,
        "snapshot_id": manifest.snapshot_id,
        "mode": manifest.mode,
        "title": manifest.title,
        **provenance_fields(manifest, versions),
        "cohort": cohort,
        # what each metric key of the vendor entries is: definition, direction, unit, statistic, interval, null
        "metrics": metric_descriptors(),
        "rank_metric": rank,
        "ranking": ranking,
        "comparisons": _comparisons_section(rank, ranking, paired) if paired else None,
        "comparisons_public": public_comparisons_section(public_comparisons, ranked)
        if public_comparisons is not None
        else None,
        "power": power_section(paired.power) if paired and paired.power else None,
        "frontier": {"cost_metric": COST_METRIC, "quality_metric": rank, "note": FRONTIER_NOTE},
        "k_values": manifest.k_values,
        "headline_eligible": any(e["headline_eligible"] for e in entries),
        "vendors": entries,
        "versions": versions,
        # the document identity rules hit@k applied (`metrics.identity_rules`), with their version
        "identity_rules": identity_rules(),
        "freshness": {
            "scope": FRESH_SCOPE,
            "metric": FRESH_METRIC,
            "days": FRESH_DAYS,
            "note": f"{FRESH_METRIC} over the search rows whose golden page was published less than {FRESH_DAYS} days "
            "before the snapshot's first fetch run (the row's published_on, in public_split.jsonl, against the first "
            "versions.fetch recorded_at); each vendor's figure is breakdown."
            f"{FRESH_SCOPE}.search.{FRESH_METRIC}, absent when it has no such row.",
        },
    }


def _rounded(x: float | None) -> float | None:
    return None if x is None else round(x, 6)


def pair_record(c: PairedComparison) -> dict[str, Any]:
    """One pair as published: its counts, rates, difference (vendor_a − vendor_b) with its 95 %
    interval, raw and Holm-adjusted p-values, and the vendor found better (null: not told apart)."""
    k = c.counts
    return {
        "vendor_a": k.first,
        "vendor_b": k.second,
        "n": k.n,
        "both_correct": k.both,
        "a_only": k.first_only,
        "b_only": k.second_only,
        "neither": k.neither,
        "rate_a": _rounded(k.first_rate),
        "rate_b": _rounded(k.second_rate),
        "difference": {
            "value": _rounded(c.difference.value),
            "low": _rounded(c.difference.low),
            "high": _rounded(c.difference.high),
        },
        "p_value": c.p_value,
        "p_adjusted": c.p_adjusted,
        "better": c.better,
    }


COMPARISON_METHOD = (
    "Each pair of vendors is compared on the rows both were scored on for the ranking figure: an exact "
    "two-sided McNemar test of the rows only one of the two answered correctly (p = min(1, 2·P(X ≤ min(b, c))), "
    "X ~ Binomial(b + c, 1/2)), the p-values of all pairs Holm-adjusted so that the chance of declaring any "
    "difference that is not there stays at most 5 %. A vendor is better than another when its rate on those "
    "rows is higher and the adjusted p-value is below 0.05. Rank range: best = 1 + the vendors better than "
    "it, worst = the number of vendors compared − the vendors it is better than. Vendors sharing a letter "
    "cannot be told apart. The difference of the two rates has Newcombe's 95 % interval for paired proportions."
)


def _comparisons_section(rank: str, ranking: dict[str, Any], paired: PairedRanking) -> dict[str, Any]:
    return {
        "metric": rank,
        "task_types": list(ranking["task_types"]),
        "vendors": list(paired.vendors),
        "test": "exact two-sided McNemar test (binomial test of the discordant rows)",
        "correction": "holm",
        "alpha": FAMILY_ALPHA,
        "confidence": 0.95,
        "interval": "Newcombe's paired score interval (Newcombe 1998, method 10)",
        "method": COMPARISON_METHOD,
        "pairs": [pair_record(c) for c in paired.comparisons],
    }


PUBLIC_COMPARISON_NOTE = (
    "The same paired tests on the public rows alone (the holdout's rows left out), Holm-adjusted over these "
    "pairs: every count, p-value and interval here can be re-derived from the published evidence bundle "
    "(bench reproduce). Rank ranges and letters rest on all rows (comparisons), not on these."
)


def public_comparisons_section(frame: pd.DataFrame, ranked: list[str]) -> dict[str, Any]:
    pairs = [c for c in comparisons_from_frame(frame) if {c.counts.first, c.counts.second} <= set(ranked)]
    task_types = sorted({t for v in frame["task_types"] for t in str(v).split(",") if t}) if len(frame) else []
    return {
        "rows": "public",
        "task_types": task_types,
        "note": PUBLIC_COMPARISON_NOTE,
        "pairs": [pair_record(c) for c in pairs],
    }


def public_comparisons_frame(scores: pd.DataFrame, snapshot_id: str) -> pd.DataFrame:
    """Every pair compared on the public rows alone (`vendor_comparisons` of the public row scores)."""
    return vendor_comparisons(snapshot_id, scores[scores["split"] == "public"] if len(scores) else scores)


def _points(x: float) -> str:
    return f"{x * 100:.1f} percentage points"


def power_note(power: PowerStatement) -> str:
    """The power statement in words, as the site, llms.txt and the terminal show it."""
    typical = (
        f"Over the {power.pairs} pairs of vendors, the typical pair is compared on {power.n} rows, on "
        f"{power.discordance * 100:.1f} % of which exactly one of the two is correct. "
    )
    if power.minimum_detectable_difference is None:
        return typical + (
            f"At that n and disagreement no difference in the ranking figure can be found with "
            f"{power.power:.0%} power at α = {power.alpha:g}/{power.pairs}: vendors shown as not told apart may "
            "differ by any amount."
        )
    single = power.minimum_detectable_difference_single_pair
    return typical + (
        f"A true difference of {_points(power.minimum_detectable_difference)} in the ranking figure is found "
        f"with {power.power:.0%} power at α = {power.alpha:g}/{power.pairs} = {power.alpha_strictest:.2g} (Holm's "
        "strictest step, which a pair meets whatever the other pairs show; exact McNemar power, Duffy 1984)"
        + (f"; a pair tested alone at α = {power.alpha:g} would need {_points(single)}" if single else "")
        + ". Vendors that cannot be told apart may still differ by less than that."
    )


def power_section(power: PowerStatement) -> dict[str, Any]:
    return {
        "pairs": power.pairs,
        "n": power.n,
        "discordance": round(power.discordance, 6),
        "alpha": power.alpha,
        "alpha_strictest": power.alpha_strictest,
        "power": power.power,
        "minimum_detectable_difference": _rounded(power.minimum_detectable_difference),
        "minimum_detectable_difference_single_pair": _rounded(power.minimum_detectable_difference_single_pair),
        "method": (
            "exact unconditional power of the exact McNemar test (metrics.mcnemar_power) at the median rows "
            "compared and the median share of discordant rows over all pairs, at Holm's strictest step "
            f"(α/pairs), {TARGET_POWER:.0%} power"
        ),
        "note": power_note(power),
    }


def leaderboard_rows(board: dict[str, Any]) -> list[dict[str, Any]]:
    """Flat rows (one per vendor) for the CSV: position, rank letters and rank range with the ranking
    basis, every headline figure as value, n, low, high and whether it is headline-eligible on its
    own, the public rows' own figures (`public_<metric>`, `_n`, `_low`, `_high`), and the count of
    rows in each response class."""
    out = []
    for e in board["vendors"]:
        ranks = e.get("rank_range") or {}
        row: dict[str, Any] = {
            "vendor": e["vendor"],
            "provider": e.get("provider"),
            "mode": e.get("mode"),
            "status": e["status"],
            "position": e.get("position"),
            "rank_letters": e.get("rank_letters"),
            "rank_best": ranks.get("best"),
            "rank_worst": ranks.get("worst"),
            "rank_metric": board["rank_metric"],
            "rank_task_types": " ".join((board.get("ranking") or {}).get("task_types") or []),
            "plan": e.get("plan"),
            "headline_eligible": e["headline_eligible"],
        }
        for name in HEADLINE_METRICS:
            fig = e["metrics"].get(name) or {}
            row[name] = fig.get("value")
            row[f"{name}_n"] = fig.get("n")
            row[f"{name}_low"] = fig.get("low")
            row[f"{name}_high"] = fig.get("high")
            if name in NOT_REACHED_METRICS:
                row[f"{name}_not_reached"] = (fig.get("value") is None) if fig else None
            verdict = (e.get("metric_eligibility") or {}).get(name) if fig else None
            row[f"{name}_headline_eligible"] = None if verdict is None else verdict["headline_eligible"]
        public = ((e.get("breakdown") or {}).get("split") or {}).get("public") or {}
        for name in PUBLIC_METRICS:
            fig = public.get(name) or {}
            for suffix, key in (("", "value"), ("_n", "n"), ("_low", "low"), ("_high", "high")):
                row[f"public_{name}{suffix}"] = fig.get(key)
        classes = e.get("response_classes")
        for cls in RESPONSE_CLASSES:
            row[f"class_{cls}"] = None if classes is None else int(classes.get(cls, 0))
        row["reasons"] = "; ".join(e["reasons"])
        agent = e.get("agent_ready") or {}
        row["agent_ready"], row["agent_ready_method"], row["agent_ready_date"] = (
            agent.get("ready"),
            agent.get("method"),
            agent.get("trial_date"),
        )
        out.append(row)
    return out


def complete_vendors(warehouse: Warehouse, snapshot_id: str) -> set[str]:
    """Vendors whose scores cover every golden row of the snapshot (the full run is complete)."""
    df = warehouse.query_df(
        "SELECT vendor, count(*) AS n FROM row_scores WHERE snapshot_id = ? GROUP BY 1", [snapshot_id]
    )
    total = warehouse.query_df("SELECT count(*) AS n FROM golden_rows WHERE snapshot_id = ?", [snapshot_id])["n"][0]
    return set(df.loc[df["n"] == total, "vendor"])


def current_leaderboard(
    warehouse: Warehouse, manifest: Manifest, publication_versions: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The leaderboard record of the snapshot as the warehouse holds it now (`vendor_metrics`,
    `vendor_comparisons`, complete vendors, agent-ready trials, eligibility, recorded versions):
    what every surface is rendered from. `publication_versions`: the record of the publication
    being rendered (it is stored once the files are in place)."""
    snapshot_id = manifest.snapshot_id
    with warehouse.session():  # a dozen small reads: one connection
        versions = recorded_versions(warehouse, snapshot_id)
        metrics = warehouse.rows("vendor_metrics", snapshot_id)
        complete = complete_vendors(warehouse, snapshot_id)
        trials = load_trial_records(warehouse, snapshot_id)
        reasons = eligibility.snapshot_reasons(warehouse, manifest)
        comparisons = warehouse.rows("vendor_comparisons", snapshot_id)
        public_scores = warehouse.rows("row_scores", snapshot_id, split="public")
        cohort = snapshot_cohort(warehouse, manifest)
    if publication_versions is not None:
        versions["publication"] = publication_versions
    return build_leaderboard(
        manifest,
        metrics,
        complete,
        trials,
        snapshot_reasons=reasons,
        comparisons=comparisons,
        versions=versions,
        public_comparisons=public_comparisons_frame(public_scores, snapshot_id),
        cohort=cohort,
    )
