"""The snapshot lifecycle: draft → frozen (review packets sent) → published.

- draft: anything may be re-run. A simulated snapshot may publish as a draft preview (the demo),
  which stays a draft and may be published again; a live or replay snapshot may not.
- frozen: the review packets went out (`review_packets`). Re-runs are still possible, but a vendor
  whose packet no longer matches what would be published must be sent a new one, and publication
  waits until every vendor has had its packet for the review period.
- published: immutable. Nothing replaces the snapshot's rows in the warehouse (the warehouse
  refuses), its archive or its published files. A correction is an erratum: a new version
  (`<id>-e1`, …) that re-runs one vendor partition, keeps the old figures and publishes both.

`snapshots.status` holds the current state; `snapshot_lifecycle` logs every transition.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd

from bench_assets.errors import NotReadyError, SnapshotImmutableError
from bench_assets.storage.warehouse import ERRATA_PROCESS, Warehouse

DRAFT, FROZEN, PUBLISHED = "draft", "frozen", "published"
TRANSITIONS = {DRAFT: {FROZEN, PUBLISHED}, FROZEN: {FROZEN, PUBLISHED}, PUBLISHED: set()}


def snapshot_status(warehouse: Warehouse, snapshot_id: str) -> str:
    """The snapshot's lifecycle state (draft when it is not registered yet)."""
    return warehouse.status(snapshot_id) or DRAFT


def refuse_if_published(warehouse: Warehouse, snapshot_id: str, what: str) -> None:
    """Stop a step that would change a published snapshot, before it does anything (the error
    names the errata process)."""
    if snapshot_status(warehouse, snapshot_id) == PUBLISHED:
        raise SnapshotImmutableError(
            f"{what}: snapshot {snapshot_id} is published and immutable. {ERRATA_PROCESS}",
            {"snapshot": snapshot_id, "status": PUBLISHED},
        )


def set_status(warehouse: Warehouse, snapshot_id: str, status: str, note: str) -> None:
    """Move the snapshot to `status`, logging the transition; an illegal transition raises."""
    changes = [("snapshots", {"snapshot_id": snapshot_id}), ("snapshot_lifecycle", {"snapshot_id": snapshot_id})]
    with warehouse.transaction(changes=changes) as con:
        row = con.execute("SELECT status FROM snapshots WHERE snapshot_id = ?", [snapshot_id]).fetchone()
        if row is None:
            raise NotReadyError(f"snapshot {snapshot_id} is not registered: materialize snapshot_manifest first")
        current = row[0] or DRAFT
        if status not in TRANSITIONS[current]:
            if current == PUBLISHED:
                raise SnapshotImmutableError(f"snapshot {snapshot_id} is published and immutable. {ERRATA_PROCESS}")
            raise ValueError(f"snapshot {snapshot_id}: no transition from {current} to {status}")
        con.execute("UPDATE snapshots SET status = ? WHERE snapshot_id = ?", [status, snapshot_id])
        con.execute(
            "INSERT INTO snapshot_lifecycle (snapshot_id, status, previous, changed_at, note) VALUES (?, ?, ?, ?, ?)",
            [snapshot_id, status, current, datetime.now(UTC), note],
        )


def lifecycle_log(warehouse: Warehouse, snapshot_id: str) -> pd.DataFrame:
    return warehouse.rows("snapshot_lifecycle", snapshot_id, order_by="changed_at")
