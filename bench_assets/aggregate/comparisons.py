"""Paired comparisons of the vendors on the rows of the ranking figure: the `vendor_comparisons` table.

Every vendor answers the same golden rows, so each pair of scored vendors is compared row by row
on the rows both were scored on for the ranking figure (the task types of `shared_task_types`, or
every task type when none is shared; `unsupported` rows are not scored): the exact McNemar test
of the rows only one of them got right, Holm-adjusted over all pairs, and the difference of their
rates with Newcombe's paired interval (`bench_assets.metrics.paired`). The table keeps each pair's
2×2 counts beside what follows from them, so a reader can re-derive every p-value, interval, rank
range and letter from the counts alone.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from bench_assets.aggregate.figures import shared_task_types
from bench_assets.metrics import Interval, PairedComparison, PairedCounts, compare_pairs, paired_counts
from bench_assets.storage.warehouse import Warehouse

COMPARISON_COLUMNS = [
    "snapshot_id",
    "vendor_a",
    "vendor_b",
    "task_types",
    "n",
    "both_correct",
    "a_only",
    "b_only",
    "neither",
    "difference",
    "low",
    "high",
    "p_value",
    "p_adjusted",
    "better",
]


def ranking_task_types(scores: pd.DataFrame) -> list[str]:
    """The task types the ranking figure counts: those every scored vendor supports, else all."""
    shared = shared_task_types(scores)
    if shared:
        return shared
    scored = scores[scores["response_class"] != "unsupported"]
    return sorted(set(scored["task_type"]))


def ranking_records(scores: pd.DataFrame, task_types: list[str]) -> list[tuple[str, str, bool]]:
    """`(vendor, row_id, correct)` for every scored row of the ranking figure: the rows of
    `task_types` other than `unsupported` (a failure is a row answered not correct)."""
    rows = scores[(scores["response_class"] != "unsupported") & (scores["task_type"].isin(task_types))]
    return [
        (str(v), str(r), _truth(c)) for v, r, c in zip(rows["vendor"], rows["row_id"], rows["correct"].astype(object))
    ]


def _truth(x: Any) -> bool:
    """A stored verdict as a bool: a missing one (no verdict recorded) is not correct."""
    return False if x is None or x is pd.NA or (isinstance(x, float) and math.isnan(x)) else bool(x)


def vendor_comparisons(snapshot_id: str, scores: pd.DataFrame) -> pd.DataFrame:
    """Every pair of scored vendors compared on the ranking rows both were scored on (the module)."""
    if scores.empty:
        return pd.DataFrame(columns=COMPARISON_COLUMNS)
    task_types = ranking_task_types(scores)
    compared = compare_pairs(paired_counts(ranking_records(scores, task_types)))
    rows = [
        [
            snapshot_id,
            c.counts.first,
            c.counts.second,
            ",".join(task_types),
            c.counts.n,
            c.counts.both,
            c.counts.first_only,
            c.counts.second_only,
            c.counts.neither,
            c.difference.value,
            c.difference.low,
            c.difference.high,
            c.p_value,
            c.p_adjusted,
            c.better,
        ]
        for c in compared
    ]
    out = pd.DataFrame(rows, columns=COMPARISON_COLUMNS)
    return out.astype(
        {
            **dict.fromkeys(["n", "both_correct", "a_only", "b_only", "neither"], "int64"),
            **dict.fromkeys(["difference", "low", "high", "p_value", "p_adjusted"], "float64"),
        }
    )


def snapshot_comparisons(warehouse: Warehouse, snapshot_id: str) -> pd.DataFrame:
    """The snapshot's `vendor_comparisons` rows, from its row scores."""
    return vendor_comparisons(snapshot_id, warehouse.rows("row_scores", snapshot_id))


def _number(x: Any) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) or x is pd.NA else float(x)


def comparisons_from_frame(frame: pd.DataFrame) -> list[PairedComparison]:
    """The `vendor_comparisons` rows of one snapshot as the metrics' `PairedComparison` records."""
    out = []
    for r in frame.sort_values(["vendor_a", "vendor_b"]).to_dict("records"):
        counts = PairedCounts(
            str(r["vendor_a"]),
            str(r["vendor_b"]),
            int(r["both_correct"]),
            int(r["a_only"]),
            int(r["b_only"]),
            int(r["neither"]),
        )
        better = r["better"] if isinstance(r["better"], str) and r["better"] else None
        interval = Interval(_number(r["difference"]), _number(r["low"]), _number(r["high"]))
        out.append(PairedComparison(counts, float(r["p_value"]), float(r["p_adjusted"]), interval, better))
    return out
