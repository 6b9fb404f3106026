"""Removing a snapshot that was never published (`bench snapshot remove`), losing nothing by mistake.

Its rows leave every warehouse table in one journaled transaction (so a restore does not bring them
back), and its files leave the places the pipeline reads: the manifest's folder (else the snapshot
sensor would register it again), the partition archives, its files in the private store, its
sentinel pages and any draft of its site. The files are moved, not deleted, into the private store
under `removed/<snapshot>-<time>/`: the archives hold responses that were paid for and the private
files hold the holdout, so they stay in the operator's private store until the operator deletes them.

A published snapshot is never removed: it is immutable, and corrections go through errata.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from bench_assets.errors import BenchError, SnapshotImmutableError
from bench_assets.storage.lifecycle import PUBLISHED, snapshot_status
from bench_assets.storage.tables import TABLES
from bench_assets.storage.warehouse import ERRATA_PROCESS, Warehouse

# Every table a snapshot has rows in (each carries its id); raw_responses' durable copy is the
# partition archives, moved aside with the rest.
SNAPSHOT_TABLES = tuple(sorted(name for name, table in TABLES.items() if "snapshot_id" in table.column_names))


@dataclass(frozen=True)
class SnapshotPlaces:
    """Where a snapshot's files live in a bench home."""

    snapshot_dir: Path  # data/snapshots/<id>
    partitions_dir: Path  # the warehouse's partition archives, <dir>/<id>
    private_dir: Path  # the private store: <sub>/<id>… files of it in each subfolder
    publish_dir: Path  # data/publish/<id> (a draft preview; a published snapshot is refused)
    sentinels_dir: Path  # data/sentinels/<id>


@dataclass
class Removal:
    snapshot_id: str
    moved_to: Path
    rows: dict[str, int] = field(default_factory=dict)  # table -> rows deleted
    moved: list[str] = field(default_factory=list)  # what was moved, relative to where it was

    def summary(self) -> str:
        tables = ", ".join(f"{t} {n}" for t, n in sorted(self.rows.items()) if n) or "none"
        files = "\n".join(f"  {m}" for m in self.moved) or "  (no files)"
        return (
            f"removed snapshot {self.snapshot_id}: warehouse rows deleted ({tables}); files moved to "
            f"{self.moved_to} (delete that folder once you no longer need them):\n{files}"
        )


def _own_files(private_dir: Path, snapshot_id: str) -> list[Path]:
    """The snapshot's files in the private store: `<sub>/<id>` and `<sub>/<id>.<anything>` (not
    another snapshot's, such as an errata version `<id>-e1`)."""
    if not private_dir.is_dir():
        return []
    return sorted(
        entry
        for sub in private_dir.iterdir()
        if sub.is_dir() and sub.name != "removed"
        for entry in sub.iterdir()
        if entry.name == snapshot_id or entry.name.startswith(f"{snapshot_id}.")
    )


def remove_snapshot(warehouse: Warehouse, snapshot_id: str, places: SnapshotPlaces) -> Removal:
    """Remove a snapshot that is not published (see the module); SnapshotImmutableError if it is."""
    if warehouse.lake is not None or warehouse.shared is not None:
        raise BenchError(
            f"bench snapshot remove: {snapshot_id} was not removed: it works on a warehouse kept on this "
            "machine, and this one keeps data in a lake or a shared warehouse ($BENCH_LAKE_URL, "
            "$BENCH_WAREHOUSE_URL), whose objects it does not move"
        )
    exists = warehouse.exists(archives_too=True)
    if exists and snapshot_status(warehouse, snapshot_id) == PUBLISHED:
        raise SnapshotImmutableError(
            f"bench snapshot remove: snapshot {snapshot_id} is published and immutable, so it is kept as it is. "
            f"{ERRATA_PROCESS}",
            {"snapshot": snapshot_id, "status": PUBLISHED},
        )
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    removal = Removal(snapshot_id, places.private_dir / "removed" / f"{snapshot_id}-{stamp}")
    if exists:  # rows first, in one transaction: if it fails, nothing has moved
        where = {"snapshot_id": snapshot_id}
        with warehouse.transaction(changes=[(t, where) for t in SNAPSHOT_TABLES]) as con:
            present = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
            for table in SNAPSHOT_TABLES:
                if table in present:
                    row = con.execute(f"SELECT count(*) FROM {table} WHERE snapshot_id = ?", [snapshot_id]).fetchone()
                    removal.rows[table] = int(row[0]) if row else 0
                    con.execute(f"DELETE FROM {table} WHERE snapshot_id = ?", [snapshot_id])
    moves = [
        (places.snapshot_dir, Path("snapshot")),
        (places.partitions_dir / snapshot_id, Path("partitions")),
        (places.publish_dir, Path("publish")),
        (places.sentinels_dir, Path("sentinels")),
        *(
            (path, Path("private") / path.parent.name / path.name)
            for path in _own_files(places.private_dir, snapshot_id)
        ),
    ]
    for source, target in moves:
        if source.exists():
            destination = removal.moved_to / target
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(source), str(destination))
            removal.moved.append(f"{source} -> {target}")
    return removal
