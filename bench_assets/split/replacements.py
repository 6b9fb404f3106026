"""Replacing dead golden rows: each dead row (`golden.dead_rows`) is replaced by a verified
candidate of its stratum and task type that takes the dead row's side of the split.

The replacement is adopted everywhere the dead row was: `golden_rows`, `golden_verifications`,
`query_split` and the exported public split (or the private holdout file). Re-running re-applies
the recorded replacements and never draws again; a row that verifies again is alive and leaves
the dead list. Every dead row stays whole in the private store, so publication can still guard
a dead holdout row's query and URLs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import pandas as pd

from bench_assets.errors import BenchInputError
from bench_assets.golden.dead_rows import (
    DeadRowCheck,
    DeadRowsShown,
    dead_row_check,
    dead_rows_file,
    dead_rows_shown,
    draw_replacement,
    load_dead_rows,
)
from bench_assets.golden.pools import load_pool
from bench_assets.golden.rows import GoldenRow
from bench_assets.golden.store import golden_frame, load_golden_rows
from bench_assets.golden.verify import RowVerification, verification_frame
from bench_assets.manifest import Manifest
from bench_assets.split.assign import export_split, split_key
from bench_assets.storage.tables import TABLES
from bench_assets.storage.warehouse import Warehouse

# Replacement rows are numbered after every row of the golden file, in the order adopted.
REPLACEMENT_LINE_BASE = 1_000_000

Verifier = Callable[[list[GoldenRow]], list[RowVerification]]


@dataclass(frozen=True)
class DeadRowsOutcome:
    """The snapshot's dead rows after this run, the check on them, and what Dagster may show."""

    dead: pd.DataFrame  # the dead_rows table of the snapshot
    check: DeadRowCheck
    shown: DeadRowsShown
    note: str  # why no replacement could be drawn ("" when a pool was available)


def replacements_file(private_dir: Path, snapshot_id: str) -> Path:
    return private_dir / "golden" / f"{snapshot_id}.replacements.jsonl"


def _read_rows(path: Path) -> dict[str, GoldenRow]:
    if not path.exists():
        return {}
    rows = (GoldenRow.model_validate_json(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip())
    return {r.id: r for r in rows}


def _write_rows(path: Path, rows: list[GoldenRow]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(r.model_dump_json() + "\n" for r in rows))


def _dead_records(
    warehouse: Warehouse, snapshot_id: str, by_id: dict[str, GoldenRow], split: dict[str, str], day: date
) -> dict[str, dict]:
    """Known dead rows plus rows failing verification now; a row that verifies again leaves the list."""
    ver = warehouse.rows("golden_verifications", snapshot_id, columns=["row_id", "passed", "failures_json"])
    failed = {r.row_id: r.failures_json for r in ver.itertuples(index=False) if not r.passed}
    records = {r["row_id"]: dict(r) for r in warehouse.rows("dead_rows", snapshot_id).to_dict("records")}
    for row_id, failures in failed.items():
        if row_id not in records and row_id in by_id:
            row = by_id[row_id]
            records[row_id] = {
                "snapshot_id": snapshot_id,
                "row_id": row_id,
                "stratum": row.stratum,
                "task_type": row.task_type,
                "split": split.get(row_id),
                "dead_since": day,
                "failures_json": failures,
                "replacement_row_id": None,
                "replaced_on": None,
            }
    for row_id in [r for r, rec in records.items() if r not in failed and pd.isna(rec["replacement_row_id"])]:
        del records[row_id]  # it verifies again: alive, nothing to replace
    return records


def _draw(
    records: dict[str, dict],
    waiting: list[dict],
    manifest: Manifest,
    private_dir: Path,
    golden: list[GoldenRow],
    adopted: dict[str, GoldenRow],
    verify: Verifier,
    day: date,
) -> str:
    """Draw a verified replacement for each waiting dead row (recorded in `records` and `adopted`);
    returns why none could be drawn, or ""."""
    try:
        key = split_key(manifest.split.key_env, manifest.mode)
        candidates = load_pool(manifest, manifest.candidates, "candidate", private_dir, golden + list(adopted.values()))
    except BenchInputError as exc:
        return f"no candidate pool: {exc}"
    by_id = {r.id: r for r in golden}
    used: set[str] = set()
    for rec in sorted(waiting, key=lambda r: r["row_id"]):
        got = (
            draw_replacement(
                by_id[rec["row_id"]], candidates, used, key, manifest.snapshot_id, lambda row: verify([row])[0].passed
            )
            if candidates
            else None
        )
        if got is not None:
            row, group = got
            used.add(group)
            adopted[row.id] = row
            rec["replacement_row_id"], rec["replaced_on"] = row.id, day
    return ""


def _adopt(
    warehouse: Warehouse,
    snapshot_id: str,
    records: dict[str, dict],
    adopted: dict[str, GoldenRow],
    by_id: dict[str, GoldenRow],
    source_file: str,
    verify: Verifier,
) -> int:
    """Put every recorded replacement in its dead row's place; returns how many were adopted."""
    to_adopt = [
        (rec, adopted[rec["replacement_row_id"]])
        for rec in records.values()
        if not pd.isna(rec["replacement_row_id"]) and rec["replacement_row_id"] in adopted
    ]
    fresh = [rep for _, rep in to_adopt if rep.id not in by_id]
    checks = {c.row_id: c for c in verify(fresh)} if fresh else {}
    for n, (rec, rep) in enumerate(to_adopt, start=1):
        where_dead = {"snapshot_id": snapshot_id, "row_id": rec["row_id"]}
        where_rep = {"snapshot_id": snapshot_id, "row_id": rep.id}
        if rec["row_id"] in by_id:
            for table in ("golden_rows", "golden_verifications", "query_split"):
                warehouse.replace_rows(table, pd.DataFrame(), where_dead)
        if rep.id not in by_id:
            warehouse.replace_rows(
                "golden_rows", golden_frame(snapshot_id, [(REPLACEMENT_LINE_BASE + n, rep)], source_file), where_rep
            )
            warehouse.replace_rows("golden_verifications", verification_frame(snapshot_id, [checks[rep.id]]), where_rep)
            warehouse.replace_rows(
                "query_split",
                pd.DataFrame(
                    [{"snapshot_id": snapshot_id, "row_id": rep.id, "stratum": rep.stratum, "split": rec["split"]}]
                ),
                where_rep,
            )
    return len(to_adopt)


def replace_dead_rows(
    warehouse: Warehouse, manifest: Manifest, private_dir: Path, snapshots_dir: Path, verify: Verifier, day: date
) -> DeadRowsOutcome:
    """Record the snapshot's dead rows, draw a replacement for each that has none, and adopt every
    recorded replacement (warehouse tables, the exported split files, the private dead-row file)."""
    snapshot_id = manifest.snapshot_id
    golden = load_golden_rows(warehouse, snapshot_id)
    by_id = {r.id: r for r in golden}
    split = warehouse.split(snapshot_id)
    records = _dead_records(warehouse, snapshot_id, by_id, split, day)
    # keep every dead row whole in the private store: once replaced it leaves the golden set, and a
    # dead holdout row must still never be published (publication guards it from this file)
    dead_whole = {**load_dead_rows(private_dir, snapshot_id), **{r: by_id[r] for r in records if r in by_id}}
    _write_rows(
        dead_rows_file(private_dir, snapshot_id), [row for r, row in sorted(dead_whole.items()) if r in records]
    )

    rep_path = replacements_file(private_dir, snapshot_id)
    adopted = _read_rows(rep_path)
    waiting = [rec for rec in records.values() if pd.isna(rec["replacement_row_id"])]
    note = _draw(records, waiting, manifest, private_dir, golden, adopted, verify, day) if waiting else ""
    _write_rows(rep_path, list(adopted.values()))
    adopted_count = _adopt(warehouse, snapshot_id, records, adopted, by_id, str(rep_path), verify)

    dead = pd.DataFrame(list(records.values()), columns=TABLES["dead_rows"].column_names)
    warehouse.replace_rows("dead_rows", dead, {"snapshot_id": snapshot_id})
    if adopted_count:  # the exported public split and the private holdout follow the adopted replacements
        export_split(
            load_golden_rows(warehouse, snapshot_id),
            warehouse.split(snapshot_id),
            snapshots_dir,
            private_dir,
            snapshot_id,
        )
    check = dead_row_check(dead, day)
    return DeadRowsOutcome(dead, check, dead_rows_shown(dead, check.overdue), note)
