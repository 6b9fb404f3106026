"""The methodology page and the limitations, generated from the code's own definitions and
constants (docstrings, source lines, thresholds), so the page cannot drift from what runs."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from markupsafe import Markup

from bench_assets import metrics
from bench_assets.aggregate import comparisons, eligibility, frontier, leaderboard, provenance
from bench_assets.aggregate import figures as aggregate
from bench_assets.fetch.classify import RESPONSE_CLASSES
from bench_assets.manifest import Manifest
from bench_assets.metrics import paired as paired_stats
from bench_assets.publish.format import CLASS_MEANINGS, MARKDOWN, MISS_REASON_LABELS, docstring_html
from bench_assets.score.miss_reasons import MISS_REASONS

# The definitions the methodology page cites: each function's own docstring and source line.
DEFINITIONS = [
    "normalize_url",
    "hit_at_k",
    "first_hit_rank",
    "extraction_fidelity",
    "fidelity_label",
    "contains_normalized",
    "answer_in_text",
    "wilson_interval",
    "bounded_mean_interval",
    "overfit_gap",
    "newcombe_interval",
    "cost_per_correct",
    "cost_per_correct_interval",
    "usd_per_thousand_correct",
    "percentile",
    "percentile_interval",
    "paired_counts",
    "mcnemar_exact_p",
    "holm_adjust",
    "compare_pairs",
    "paired_difference_interval",
    "paired_rank_ranges",
    "compact_letter_display",
    "mcnemar_power",
    "minimum_detectable_difference",
    "power_statement",
    "km_median",
    "km_median_interval",
    "read_cell_answer",
    "score_cell",
    "CellRubric",
    "rubric_mean_interval",
]

# ##### METHODOLOGY, GENERATED FROM THE CODE


def _source_of(obj: Any) -> str:
    path = Path(inspect.getsourcefile(obj) or "")
    try:
        rel = path.relative_to(Path(__file__).resolve().parents[2])
    except ValueError:
        rel = path
    return f"{rel.as_posix()}:{inspect.getsourcelines(obj)[1]}"


def methodology_context(manifest: Manifest) -> dict[str, Any]:
    """Everything the methodology page states, read from the code and the manifest."""
    defaults = inspect.signature(metrics.wilson_interval).parameters
    constants = [
        ("Fidelity: correct at or above", metrics.CORRECT_THRESHOLD, "bench_assets.metrics.CORRECT_THRESHOLD"),
        ("Fidelity: partial at or above", metrics.PARTIAL_THRESHOLD, "bench_assets.metrics.PARTIAL_THRESHOLD"),
        ("Confidence of every interval", defaults["confidence"].default, "wilson_interval(confidence=…)"),
        (
            "Kaplan–Meier right-censoring (hours)",
            metrics.DEFAULT_CENSOR_AT_HOURS,
            "bench_assets.metrics.DEFAULT_CENSOR_AT_HOURS",
        ),
        (
            "Minimum n behind a headline aggregate",
            eligibility.AGGREGATE_MIN_N,
            "bench_assets.aggregate.eligibility.AGGREGATE_MIN_N",
        ),
        (
            "Minimum n behind a headline per-stratum figure",
            eligibility.CHART_MIN_N,
            "bench_assets.aggregate.eligibility.CHART_MIN_N",
        ),
        ("Ranking metric", leaderboard.RANK_METRIC, "bench_assets.aggregate.leaderboard.RANK_METRIC"),
        (
            "Family-wise error rate of the paired comparisons (Holm)",
            metrics.FAMILY_ALPHA,
            "bench_assets.metrics.FAMILY_ALPHA",
        ),
        (
            "Power the minimum detectable difference is stated at",
            metrics.TARGET_POWER,
            "bench_assets.metrics.TARGET_POWER",
        ),
    ]
    weights = [(f, metrics.FIDELITY_WEIGHTS[f], manifest.fidelity_weights.get(f)) for f in metrics.FIDELITY_FIELDS]
    definitions = [
        (name, docstring_html(getattr(metrics, name).__doc__), _source_of(getattr(metrics, name)))
        for name in DEFINITIONS
        if hasattr(metrics, name)
    ]
    return {
        "constants": constants,
        "weights": weights,
        "definitions": definitions,
        "eligibility": Markup(MARKDOWN.render(leaderboard.eligibility_rules())),
        "aggregation": docstring_html(aggregate.__doc__ or ""),
        "ranking": docstring_html(aggregate.shared_task_types.__doc__ or ""),
        "comparisons": docstring_html(comparisons.__doc__ or ""),
        "frontier": docstring_html(frontier.__doc__ or ""),
        "paired": docstring_html(paired_stats.__doc__ or ""),
        "classes": [(c, CLASS_MEANINGS.get(c, "")) for c in RESPONSE_CLASSES],
        # the rules a result names the golden document by, as leaderboard.json publishes them
        "identity": metrics.identity_rules(),
        "miss_reasons": [(code, MISS_REASON_LABELS.get(code, ""), meaning) for code, meaning in MISS_REASONS.items()],
        # the license of the published data and how leaderboard.json's content hash is computed
        "license": provenance.LICENSE,
        "license_url": provenance.LICENSE_URL,
        "license_note": provenance.LICENSE_NOTE,
        "hash_method": provenance.HASH_METHOD,
    }


def known_limitations(board: Mapping[str, Any], manifest: Manifest) -> list[str]:
    """Limitations that follow from this snapshot's data, stated where a reader will look."""
    out = []
    if board["mode"] != "live":
        out.append(
            f"This snapshot runs in {board['mode']} mode: every vendor is the local simulator, so the "
            "figures show the pipeline working, not how the real services compare."
        )
    scored = [e for e in board["vendors"] if e["status"] == "scored"]
    no_extract = [e["vendor"] for e in scored if "fidelity_mean" not in e["metrics"]]
    if no_extract:
        out.append(
            "No extraction endpoint, so no fidelity figure and a smaller denominator for the overall "
            f"correct rate (search and answer rows only): {', '.join(no_extract)}. The ranking uses only "
            "the task types every scored vendor supports, so it compares all vendors on the same rows."
        )
    strata_n = sorted(
        {
            f["n"]
            for e in scored
            for figs in (e.get("breakdown") or {}).get("stratum", {}).values()
            for m, f in figs.items()
            if m == "correct_rate"
        }
    )
    if strata_n:
        out.append(
            f"Per-stratum figures rest on few rows (n = {strata_n[0]}–{strata_n[-1]} per vendor and "
            "stratum); their intervals are wide, and the charts show them."
        )
    power = board.get("power")
    if power:
        out.append(
            "Which vendors differ is decided by paired tests at a family-wise error rate of 5 %, so a difference "
            "the test does not find is not shown to be absent. " + power["note"]
        )
    pairs = (board.get("comparisons") or {}).get("pairs") or []
    if pairs and len({p["n"] for p in pairs}) > 1:
        out.append(
            "Not every vendor was scored on every ranking row (an incomplete run, or rows a vendor could not "
            f"serve): pairs are compared on the rows both answered, from {min(p['n'] for p in pairs)} to "
            f"{max(p['n'] for p in pairs)} rows."
        )
    if not any("ttr_median_hours" in e["metrics"] for e in scored):
        out.append("Time-to-retrievability is not reported in this snapshot: no sentinel probe results yet.")
    return out
