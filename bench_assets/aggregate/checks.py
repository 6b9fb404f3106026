"""What the pipeline's asset checks assert of its tables, as pure functions of the tables' rows.

Each returns a `Finding`: passed or not, a sentence saying what was found, and counts for the
check's metadata. The Dagster shell (`defs`) turns them into asset check results, scoped to the
partition the asset materialized (a snapshot x vendor partition for the fetch and the scores).
No function here names a holdout row: the counts are all a check publishes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from bench_assets.fetch.classify import RESPONSE_CLASSES, UNPRICED_UNIT_STOP

# Figures that are shares of rows (or means of scores in [0, 1]): each value and bound within [0, 1].
SHARE_METRICS = frozenset(
    {"correct_rate", "coverage", "hit_at_1", "hit_at_3", "hit_at_5", "hit_at_10", "fidelity_mean", "answer_score_mean"}
)
# A value a hair outside its bound is floating-point rounding, not a wrong interval.
TOLERANCE = 1e-9


@dataclass(frozen=True)
class Finding:
    passed: bool
    description: str
    metadata: dict[str, Any] = field(default_factory=dict)


def without_superseded_stops(finals: pd.DataFrame) -> pd.DataFrame:
    """`finals` without the markers of calls an unpriced unit stopped that a later run then sent:
    the archive is append-only, so such a marker stays final beside the answer that replaced it
    (`fetch.engine.stopped_for_unpriced`). Needs `attempt`; without it, `finals` as they are."""
    if finals.empty or "attempt" not in finals:
        return finals
    stop = finals["transport_error"].fillna("").astype(str).str.startswith(UNPRICED_UNIT_STOP)
    last = finals.groupby(["query_id", "capability"])["attempt"].transform("max")
    return finals[~(stop & (finals["attempt"] < last))]


def fetch_completeness(items: Iterable[tuple[str, str]], finals: pd.DataFrame) -> Finding:
    """Every (query, capability) the partition had to send has exactly one final archived attempt,
    and each is either an answer (an HTTP status) or a classified failure (a transport error, a
    call not sent and why): nothing dropped, nothing counted twice. `finals`: the partition's final
    attempts (query_id, capability, http_status, transport_error, and attempt to tell a stopped
    call that was sent later: `without_superseded_stops`)."""
    wanted = set(items)
    finals = without_superseded_stops(finals)
    got = Counter(zip(finals["query_id"], finals["capability"])) if len(finals) else Counter()
    missing = len(wanted - set(got))
    twice = sum(1 for n in got.values() if n > 1)
    unexpected = len(set(got) - wanted)
    if len(finals):
        no_status = finals["http_status"].isna()
        no_error = finals["transport_error"].isna() | (finals["transport_error"].astype(str) == "")
        answered = int((~no_status).sum())
        classified = int((no_status & ~no_error).sum())
        blank = int((no_status & no_error).sum())
    else:
        answered = classified = blank = 0
    passed = missing == twice == unexpected == blank == 0
    problems = [
        f"{missing} rows without a final attempt" if missing else "",
        f"{twice} rows with more than one final attempt" if twice else "",
        f"{unexpected} final attempts for rows not asked" if unexpected else "",
        f"{blank} final attempts with neither a status nor an error" if blank else "",
    ]
    return Finding(
        passed,
        f"all {len(wanted)} rows answered ({answered}) or classified ({classified})"
        if passed
        else "; ".join(p for p in problems if p),
        {
            "rows": len(wanted),
            "answered": answered,
            "classified_failures": classified,
            "missing": missing,
            "more_than_one_final": twice,
            "not_asked": unexpected,
            "neither_status_nor_error": blank,
        },
    )


def scores_completeness(golden_row_ids: Iterable[str], scores: pd.DataFrame) -> Finding:
    """Every golden row of the snapshot has exactly one verdict for the vendor, in a known response
    class: none missing, none scored twice, none for a row that is not golden."""
    wanted = set(golden_row_ids)
    counts = Counter(scores["row_id"]) if len(scores) else Counter()
    missing = len(wanted - set(counts))
    twice = sum(1 for n in counts.values() if n > 1)
    unknown_rows = len(set(counts) - wanted)
    bad_class = int((~scores["response_class"].isin(RESPONSE_CLASSES)).sum()) if len(scores) else 0
    passed = missing == twice == unknown_rows == bad_class == 0
    problems = [
        f"{missing} golden rows not scored" if missing else "",
        f"{twice} rows scored more than once" if twice else "",
        f"{unknown_rows} scores of rows that are not golden" if unknown_rows else "",
        f"{bad_class} scores in no known response class" if bad_class else "",
    ]
    return Finding(
        passed,
        f"each of the {len(wanted)} golden rows scored exactly once" if passed else "; ".join(p for p in problems if p),
        {
            "golden_rows": len(wanted),
            "scores": int(sum(counts.values())),
            "not_scored": missing,
            "scored_more_than_once": twice,
            "not_golden": unknown_rows,
            "unknown_class": bad_class,
        },
    )


def figure_bounds(metrics: pd.DataFrame) -> Finding:
    """Every share (`SHARE_METRICS`) and its interval lie within [0, 1], and every interval contains
    its value (low <= value <= high, where all three are known). Names the first few offenders."""
    if metrics.empty:
        return Finding(True, "no figures", {"figures": 0, "shares_out_of_range": 0, "intervals_without_value": 0})
    value, low, high = (pd.to_numeric(metrics[c], errors="coerce") for c in ("value", "low", "high"))
    share = metrics["metric"].isin(SHARE_METRICS)
    out_of_range = pd.Series(False, index=metrics.index)
    for column in (value, low, high):
        out_of_range |= share & column.notna() & ((column < -TOLERANCE) | (column > 1 + TOLERANCE))
    known = value.notna() & low.notna() & high.notna()
    outside = known & ((low > value + TOLERANCE) | (value > high + TOLERANCE))
    bad = metrics[out_of_range | outside]
    examples = [
        f"{r.vendor} {r.metric} ({r.scope}={r.scope_value}): {r.value} [{r.low}, {r.high}]"
        for r in bad.head(5).itertuples(index=False)
    ]
    passed = bad.empty
    return Finding(
        passed,
        f"{len(metrics)} figures: shares within [0, 1], every interval contains its value"
        if passed
        else f"{int(out_of_range.sum())} shares outside [0, 1], {int(outside.sum())} intervals without their value: "
        + "; ".join(examples),
        {
            "figures": len(metrics),
            "shares": int(share.sum()),
            "intervals": int(known.sum()),
            "shares_out_of_range": int(out_of_range.sum()),
            "intervals_without_value": int(outside.sum()),
        },
    )
