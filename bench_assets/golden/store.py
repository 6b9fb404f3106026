"""Golden rows as the warehouse holds them (`golden_rows`): the frame written, the rows read back."""

from __future__ import annotations

import json
from collections.abc import Iterable

import pandas as pd

from bench_assets.errors import NotReadyError
from bench_assets.golden.rows import GoldenRow
from bench_assets.storage.warehouse import Warehouse


def golden_frame(snapshot_id: str, numbered: Iterable[tuple[int, GoldenRow]], source_file: str) -> pd.DataFrame:
    """`golden_rows` rows for (line, row) pairs read from `source_file`."""
    return pd.DataFrame(
        [
            {
                "snapshot_id": snapshot_id,
                "row_id": r.id,
                "cohort": r.cohort,
                "stratum": r.stratum,
                "provenance": r.provenance,
                "task_type": r.task_type,
                "request_text": r.request_text,
                "task_json": r.task.model_dump_json(),
                "verification_json": r.verification.model_dump_json(),
                "published_on": None if r.published_on is None else r.published_on.isoformat(),
                "source_file": source_file,
                "source_line": line,
            }
            for line, r in numbered
        ]
    )


def load_golden_rows(warehouse: Warehouse, snapshot_id: str) -> list[GoldenRow]:
    """The snapshot's golden rows in file order; NotReadyError before golden_rows has run."""
    df = warehouse.rows(
        "golden_rows",
        snapshot_id,
        order_by="source_line",
        columns=["row_id", "cohort", "stratum", "provenance", "task_json", "verification_json", "published_on"],
    )
    if df.empty:
        raise NotReadyError(f"no golden rows for {snapshot_id}: materialize golden_rows first")
    return [
        GoldenRow.model_validate(
            {
                "id": r.row_id,
                "cohort": r.cohort,
                "stratum": r.stratum,
                "provenance": r.provenance,
                "task": json.loads(r.task_json),
                "verification": json.loads(r.verification_json),
                "published_on": None if pd.isna(r.published_on) else str(r.published_on),
            }
        )
        for r in df.itertuples(index=False)
    ]
