"""Rebuilding a lost or corrupt central warehouse (`bench warehouse restore`), and checking one
against its durable copies (`bench warehouse check`).

Every table is rebuilt from what survives the file: the custody journal (`storage.journal`: every
change to the central file, the rows it left), and the raw responses' own durable copies, the
partition archives (one DuckDB file per snapshot x vendor, durable per response) or, with the
Parquet data path, the lake's objects, which are read in place. Nothing is fetched, scored or
published again, so no vendor is called: the restored warehouse holds the very rows the lost one
did, and a published snapshot is published (immutable) again.

An unreadable or rolled-back file is moved aside (`<name>.lost-<time>`), never deleted; a healthy
warehouse is never replaced.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from bench_assets.errors import BenchError, WarehouseLostError
from bench_assets.storage.journal import POSITION_TABLE, journaled
from bench_assets.storage.tables import TABLES
from bench_assets.storage.warehouse import Warehouse, committed_seq, ensure_schema


@dataclass
class RestoreReport:
    warehouse: str
    journal: str
    entries: int = 0
    last_entry: str = ""
    tables: dict[str, int] = field(default_factory=dict)
    archives: dict[str, int] = field(default_factory=dict)  # "<snapshot>|<vendor>" -> raw responses
    moved_aside: str | None = None
    pending_not_applied: str | None = None
    lake: str | None = None

    def summary(self) -> str:
        lines = [f"restored the warehouse {self.warehouse}"]
        if self.moved_aside:
            lines.append(f"  the unreadable or rolled-back file was moved aside to {self.moved_aside}")
        lines.append(f"  custody journal {self.journal}: {self.entries} changes replayed ({self.last_entry or 'none'})")
        if self.pending_not_applied:
            lines.append(
                f"  NOT applied: a change interrupted by a crash before it was known to commit: {self.pending_not_applied}"
            )
        if self.lake:
            lines.append(f"  raw responses, results and scores: read in place from the lake {self.lake}")
        else:
            total = sum(self.archives.values())
            lines.append(f"  raw responses: {total} from {len(self.archives)} partition archives")
        for table, n in sorted(self.tables.items()):
            lines.append(f"    {table}: {n} rows")
        lines.append("  nothing was fetched: no vendor was called")
        return "\n".join(lines)


class WarehouseHealthy(BenchError):
    """A restore was asked for a warehouse that is present, readable and up to date with its journal."""


def _rebuild(warehouse: Warehouse, target: Path) -> RestoreReport:
    """Every table into a new DuckDB file at `target`, from the journal and the partition archives."""
    report = RestoreReport(warehouse.where, warehouse.journal.url, lake=warehouse.lake.url if warehouse.lake else None)
    for stale in (target, target.with_name(target.name + ".wal")):
        if stale.exists():
            stale.unlink()
    con = duckdb.connect(str(target))
    try:
        ensure_schema(con)
        con.execute("BEGIN TRANSACTION")
        last = None
        for info in warehouse.journal.replay(con):
            report.entries += 1
            last = info
        report.last_entry = last.summary() if last else ""
        con.execute(f"DELETE FROM {POSITION_TABLE}")
        con.execute(f"INSERT INTO {POSITION_TABLE} VALUES (?)", [last.seq if last else 0])
        pending = warehouse.journal.pending()
        if pending is not None and (last is None or pending.seq > last.seq):
            report.pending_not_applied = pending.summary()
        con.execute("COMMIT")
        if warehouse.lake is None:
            report.archives = _archived_responses(con, warehouse.partitions_dir)
        con.execute("CHECKPOINT")
        for table in TABLES:
            if warehouse.lake is None or journaled(table, warehouse.lake_tables()):
                row = con.execute(f"SELECT count(*) FROM main.{table}").fetchone()
                report.tables[table] = int(row[0]) if row else 0
    finally:
        con.close()
    return report


def _archived_responses(con: duckdb.DuckDBPyConnection, partitions_dir: Path) -> dict[str, int]:
    """raw_responses from every partition archive (each holds exactly what its partition loaded)."""
    counts = {}
    columns = ", ".join(TABLES["raw_responses"].column_names)
    for path in sorted(partitions_dir.glob("*/*.duckdb")) if partitions_dir.exists() else []:
        snapshot_id, vendor = path.parent.name, path.stem
        escaped = str(path).replace("'", "''")
        con.execute(f"ATTACH '{escaped}' AS archive (READ_ONLY)")
        try:
            present = con.execute(
                "SELECT count(*) FROM duckdb_tables() WHERE database_name = 'archive' AND table_name = 'raw_responses'"
            ).fetchone()
            if not present or not present[0]:
                continue
            con.execute(
                f"INSERT INTO main.raw_responses ({columns}) SELECT {columns} FROM archive.raw_responses "
                "WHERE snapshot_id = ? AND vendor = ?",
                [snapshot_id, vendor],
            )
            row = con.execute(
                "SELECT count(*) FROM main.raw_responses WHERE snapshot_id = ? AND vendor = ?", [snapshot_id, vendor]
            ).fetchone()
            if row and row[0]:  # (the snapshot's sentinel probe archive holds no partition's responses)
                counts[f"{snapshot_id}|{vendor}"] = int(row[0])
        finally:
            con.execute("DETACH archive")
    return counts


def _needs_restore(warehouse: Warehouse) -> bool:
    """Whether the warehouse is lost (missing although it held data, unreadable, or behind its
    journal). Raises WarehouseHealthy when it is fine, and WarehouseLostError when there is
    nothing to restore from; never creates a warehouse."""
    try:
        present = warehouse.exists()
    except WarehouseLostError:
        return True  # missing, and the journal or the archives say it held data
    if not present:
        raise WarehouseLostError(
            f"nothing to restore the warehouse {warehouse.where} from: the custody journal {warehouse.journal.url} "
            "is empty and there are no partition archives (are $BENCH_HOME and $BENCH_JOURNAL_URL right?)"
        )
    try:
        with warehouse.connect():
            pass
    except WarehouseLostError:
        return True  # unreadable, or behind its journal
    raise WarehouseHealthy(
        f"the warehouse {warehouse.where} is present, readable and up to date with its custody journal "
        f"{warehouse.journal.url}: nothing to restore (`bench warehouse check` compares it with the journal)"
    )


def restore_warehouse(warehouse: Warehouse, stamp: datetime | None = None) -> RestoreReport:
    """Rebuild the warehouse when it is missing, unreadable or behind its journal; refuse when it
    is healthy (WarehouseHealthy). The old file, if any, is moved aside, never deleted."""
    _needs_restore(warehouse)
    when = (stamp or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    target = warehouse.path.with_name(f".{warehouse.path.name}.restoring")
    with warehouse.lock:
        report = _rebuild(warehouse, target)
        if warehouse.shared is None:
            report.moved_aside = _move_aside(warehouse.path, when)
            os.replace(target, warehouse.path)
            return report
    with warehouse.lock, warehouse.shared.turn(sync=False):
        # the restored file becomes the next generation when the turn ends
        _move_aside(warehouse.path, when)
        os.replace(target, warehouse.path)
    return report


def _move_aside(path: Path, when: str) -> str | None:
    moved = None
    for name in (path, path.with_name(path.name + ".wal")):
        if name.exists():
            aside = name.with_name(f"{name.name}.lost-{when}")
            os.replace(name, aside)
            moved = moved or str(aside)
    return moved


@dataclass
class CheckReport:
    warehouse: str
    journal: str
    position: int = 0
    head: int = 0
    differences: list[str] = field(default_factory=list)

    def summary(self) -> str:
        lines = [
            f"warehouse {self.warehouse}: journal position #{self.position}; custody journal {self.journal}: #{self.head}"
        ]
        lines += [f"  {d}" for d in self.differences] or ["  every table equals what the journal and archives rebuild"]
        return "\n".join(lines)


def check_warehouse(warehouse: Warehouse) -> CheckReport:
    """Compare every table of the warehouse with what a restore would rebuild (row by row, both ways)."""
    warehouse.require("bench warehouse check")  # never creates one to compare
    report = CheckReport(warehouse.where, warehouse.journal.url, head=warehouse.journal.head())
    scratch = warehouse.path.with_name(f".{warehouse.path.name}.check")
    rebuilt = _rebuild(warehouse, scratch)
    try:
        with warehouse.connect() as con:
            report.position = committed_seq(con)
            escaped = str(scratch).replace("'", "''")
            con.execute(f"ATTACH '{escaped}' AS rebuilt (READ_ONLY)")
            try:
                for table in rebuilt.tables:
                    for a, b, what in (("main", "rebuilt", "not in the journal"), ("rebuilt", "main", "missing")):
                        n = con.execute(
                            f"SELECT count(*) FROM (SELECT * FROM {a}.{table} EXCEPT ALL SELECT * FROM {b}.{table})"
                        ).fetchone()
                        if n and n[0]:
                            report.differences.append(f"{table}: {n[0]} rows {what}")
            finally:
                con.execute("DETACH rebuilt")
    finally:
        for name in (scratch, scratch.with_name(scratch.name + ".wal")):
            if name.exists():
                name.unlink()
    if report.position != report.head:
        report.differences.append(
            f"journal position: the warehouse is at #{report.position}, the journal's HEAD at #{report.head}"
        )
    return report
