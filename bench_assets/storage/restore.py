"""Rebuilding a lost or corrupt central warehouse (`bench warehouse restore`), and checking one
against its durable copies (`bench warehouse check`).

Every table is rebuilt from what survives the file: the custody journal (`storage.journal`: every
change to the central file, the rows it left), and the raw responses' own durable copies, the
partition archives (one DuckDB file per snapshot x vendor, durable per response) or, with the
Parquet data path, the lake's objects, which are read in place. Nothing is fetched, scored or
published again, so no vendor is called: the restored warehouse holds the very rows the lost one
did, and a published snapshot is published (immutable) again.

An unreadable, damaged or rolled-back file is moved aside (`<name>.lost-<time>`), never deleted; a
healthy warehouse is never replaced. `check` and `restore` read the warehouse's state the same
way (`diagnose`): missing although the journal or the partition archives say it held data,
unreadable, damaged (a block that fails its checksum when every column of every table is read),
or behind its journal is a warehouse to restore, which `check` reports and `restore` rebuilds. A
partition archive that cannot be read (a failed write's leftover, damage) is named in their
reports and left where it is; its responses are missing from what they rebuild.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from bench_assets.errors import BenchError, WarehouseLostError
from bench_assets.storage.file_health import damage_in, is_damage, is_unwritten
from bench_assets.storage.journal import ARCHIVED_ELSEWHERE, POSITION_TABLE, journaled
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
    unusable_archives: dict[str, str] = field(default_factory=dict)  # archive path -> why it was not read

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
            lines += [f"  NOT read: {path}: {why}" for path, why in sorted(self.unusable_archives.items())]
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
            report.archives, report.unusable_archives = _archived_responses(con, warehouse.partitions_dir)
        con.execute("CHECKPOINT")
        for table in TABLES:
            if warehouse.lake is None or journaled(table, warehouse.lake_tables()):
                row = con.execute(f"SELECT count(*) FROM main.{table}").fetchone()
                report.tables[table] = int(row[0]) if row else 0
    finally:
        con.close()
    return report


def _archived_responses(con: duckdb.DuckDBPyConnection, partitions_dir: Path) -> tuple[dict[str, int], dict[str, str]]:
    """raw_responses from every partition archive (each holds exactly what its partition loaded),
    and the archives that could not be read, with why (a failed write's leftover, a damaged file)."""
    counts, unusable = {}, {}
    columns = ", ".join(TABLES["raw_responses"].column_names)
    for path in sorted(partitions_dir.glob("*/*.duckdb")) if partitions_dir.exists() else []:
        snapshot_id, vendor = path.parent.name, path.stem
        if is_unwritten(path):
            unusable[str(path)] = (
                f"{path.stat().st_size} bytes, a write that failed (a full disk) left it and it holds nothing; the "
                "partition's next run removes it (and takes back from the warehouse what the warehouse holds)"
            )
            continue
        escaped = str(path).replace("'", "''")
        try:
            con.execute(f"ATTACH '{escaped}' AS archive (READ_ONLY)")
        except duckdb.Error as exc:
            if not is_damage(exc):
                raise
            unusable[str(path)] = f"not readable as a DuckDB file ({exc}); its responses are not in this rebuild"
            continue
        try:
            present = con.execute(
                "SELECT count(*) FROM duckdb_tables() WHERE database_name = 'archive' AND table_name = 'raw_responses'"
            ).fetchone()
            if not present or not present[0]:
                continue
            try:
                con.execute(
                    f"INSERT INTO main.raw_responses ({columns}) SELECT {columns} FROM archive.raw_responses "
                    "WHERE snapshot_id = ? AND vendor = ?",
                    [snapshot_id, vendor],
                )
            except duckdb.Error as exc:
                if not is_damage(exc):
                    raise
                unusable[str(path)] = f"damaged ({exc}); its responses are not in this rebuild"
                continue
            row = con.execute(
                "SELECT count(*) FROM main.raw_responses WHERE snapshot_id = ? AND vendor = ?", [snapshot_id, vendor]
            ).fetchone()
            if row and row[0]:  # (the snapshot's sentinel probe archive holds no partition's responses)
                counts[f"{snapshot_id}|{vendor}"] = int(row[0])
        finally:
            con.execute("DETACH archive")
    return counts, unusable


@dataclass(frozen=True)
class Diagnosis:
    """The warehouse's state as `check` and `restore` both read it: `healthy`; `lost` (missing
    although the journal or the partition archives say it held data, unreadable, damaged, or
    behind its journal: restore it); or `nothing` (no warehouse, and nothing says one existed)."""

    state: str
    why: str = ""


def diagnose(warehouse: Warehouse) -> Diagnosis:
    """Read the warehouse's state without creating or changing one: whether it exists (counting
    the partition archives as evidence that it did, as a command that expects data does), opens,
    is up to date with its journal, and reads back whole (every column of every table it stores)."""
    try:
        if not warehouse.exists(archives_too=True):
            return Diagnosis(
                "nothing",
                f"there is no warehouse at {warehouse.where}, and no custody journal ({warehouse.journal.url}) or "
                "partition archive says one held data (are $BENCH_HOME, $BENCH_WAREHOUSE and $BENCH_JOURNAL_URL right?)",
            )
        with warehouse.connect():
            pass  # opens; not behind its journal
        with warehouse.reading() as con:
            stored = [t for t in TABLES if t not in warehouse.lake_tables()]
            damage = damage_in(con, stored) if con is not None else None
    except WarehouseLostError as exc:
        return Diagnosis("lost", str(exc))
    if damage is not None:
        return Diagnosis("lost", str(warehouse.damaged_error(RuntimeError(damage))))
    return Diagnosis("healthy")


def _needs_restore(warehouse: Warehouse) -> None:
    """Refuse a restore of a healthy warehouse (WarehouseHealthy), or of one there is nothing to
    restore from (WarehouseLostError); never creates a warehouse."""
    found = diagnose(warehouse)
    if found.state == "nothing":
        raise WarehouseLostError(f"nothing to restore: {found.why}")
    if found.state == "healthy":
        raise WarehouseHealthy(
            f"the warehouse {warehouse.where} is present, reads back whole and is up to date with its custody "
            f"journal {warehouse.journal.url}: nothing to restore (`bench warehouse check` compares it with the journal)"
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
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        lines = [
            f"warehouse {self.warehouse}: journal position #{self.position}; custody journal {self.journal}: #{self.head}"
        ]
        lines += [f"  {d}" for d in self.differences] or ["  every table equals what the journal and archives rebuild"]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def check_warehouse(warehouse: Warehouse) -> CheckReport:
    """Compare every table of the warehouse with what a restore would rebuild (row by row, both
    ways). A warehouse `restore` would rebuild (`diagnose`) is reported as the one difference, with
    why; one that was never there is refused (WarehouseLostError), as nothing can be compared."""
    report = CheckReport(warehouse.where, warehouse.journal.url, head=warehouse.journal.head())
    found = diagnose(warehouse)  # never creates one to compare
    if found.state == "nothing":
        raise WarehouseLostError(f"bench warehouse check: {found.why}. Run the snapshot first.")
    if found.state == "lost":
        report.differences.append(found.why)
        return report
    scratch = warehouse.path.with_name(f".{warehouse.path.name}.check")
    rebuilt = _rebuild(warehouse, scratch)
    report.notes = [f"not read: {path}: {why}" for path, why in sorted(rebuilt.unusable_archives.items())]
    try:
        with warehouse.connect() as con:
            report.position = committed_seq(con)
            escaped = str(scratch).replace("'", "''")
            con.execute(f"ATTACH '{escaped}' AS rebuilt (READ_ONLY)")
            try:
                for table in rebuilt.tables:
                    source = "the partition archives" if table in ARCHIVED_ELSEWHERE else "the journal"
                    for a, b, what in (("main", "rebuilt", f"not in {source}"), ("rebuilt", "main", "missing")):
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
