"""What the snapshot's figures were measured on: how many golden rows, what a row is, the holdout
fraction, and the dates of the golden pages (`leaderboard.json`'s `cohort`).

The dates are read from the public rows only (each row's `published_on`, as `public_split.jsonl`
publishes it), so a reader can check them and nothing of the holdout is published beyond its count.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from typing import Any

import pandas as pd

from bench_assets.manifest import Manifest
from bench_assets.storage.warehouse import Warehouse

ROW_MEANING = (
    "one verified golden row: a search query with its golden URLs, a page to extract with its golden fields, or a "
    "question with its verified answer; every vendor that supports the row's task type is sent it once, and a "
    "figure's n counts these rows (latency: the responses timed; time-to-retrievability: the sentinel pages)"
)
DATES_NOTE = (
    "the day each public row's golden page was published (published_on in public_split.jsonl), where its source "
    "states it; first and last are null when no public row has a date"
)


def cohort_of(published_on: Mapping[str, date | None], split: Mapping[str, str], public_share: float) -> dict[str, Any]:
    """The `cohort` record from every golden row's `published_on` (None: its source states no date),
    each row's side of the split, and the manifest's public share (the holdout fraction is its rest)."""
    public = [row for row, side in split.items() if side == "public" and row in published_on]
    dated = sorted(d for row in public if (d := published_on[row]) is not None)
    return {
        "cohort_size": len(published_on),
        "row": ROW_MEANING,
        "public_rows": len(public),
        "holdout_rows": sum(1 for row, side in split.items() if side == "holdout" and row in published_on),
        "holdout_fraction": round(1.0 - public_share, 6),
        "golden_pages_published": {
            "first": dated[0].isoformat() if dated else None,
            "last": dated[-1].isoformat() if dated else None,
            "dated_rows": len(dated),
            "undated_rows": len(public) - len(dated),
            "note": DATES_NOTE,
        },
    }


def snapshot_cohort(warehouse: Warehouse, manifest: Manifest) -> dict[str, Any]:
    """`cohort_of` the snapshot's golden rows as the warehouse holds them (`golden_rows`, `query_split`)."""
    snapshot_id = manifest.snapshot_id
    golden = warehouse.rows("golden_rows", snapshot_id, columns=["row_id", "published_on"])
    published_on = {
        str(r): (None if pd.isna(d) else date.fromisoformat(str(d)[:10]))
        for r, d in zip(golden["row_id"], golden["published_on"])
    }
    return cohort_of(published_on, warehouse.split(snapshot_id), manifest.split.public_share)
