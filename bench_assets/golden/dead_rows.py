"""Dead golden rows: a row whose page or fact no longer holds is marked dead with the date, and
replaced from its stratum's candidate pool.

A replacement is a candidate row of the same stratum and task type, verified against its own page
before it is adopted; it takes the dead row's side of the split (so a stratum keeps its 70/30 and
no public row can reveal a holdout page), and it consumes its whole candidate group (rows of one
candidate page never end up on both sides). A dead row without a verified replacement is a
problem that grows with time: the check warns from day 5 and fails after day 7.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import duckdb
import pandas as pd

from bench_assets.golden.rows import GoldenRow, split_groups
from bench_assets.storage.warehouse import Warehouse

WARN_AFTER_DAYS = 5
FAIL_AFTER_DAYS = 7


def dead_rows_file(private_dir: Path, snapshot_id: str) -> Path:
    """The private file keeping each dead row whole (a dead holdout row stays private after it left
    the golden set: publication still guards its query and URLs)."""
    return private_dir / "golden" / f"{snapshot_id}.dead.jsonl"


def load_dead_rows(private_dir: Path, snapshot_id: str) -> dict[str, GoldenRow]:
    path = dead_rows_file(private_dir, snapshot_id)
    if not path.exists():
        return {}
    rows = (
        GoldenRow.model_validate_json(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    )
    return {r.id: r for r in rows}


def draw_replacement(
    dead: GoldenRow,
    candidates: list[GoldenRow],
    used_groups: set[str],
    key: bytes,
    snapshot_id: str,
    verified: Callable[[GoldenRow], bool],
) -> tuple[GoldenRow, str] | None:
    """The first candidate of the dead row's stratum and task type, in an order keyed by the
    secret, whose group is unused and which verifies; returns (row, its group) or None."""
    groups = split_groups(candidates)
    order = sorted(
        (
            c
            for c in candidates
            if c.stratum == dead.stratum and c.task_type == dead.task_type and groups[c.id] not in used_groups
        ),
        key=lambda c: hmac.new(
            key, f"replace\x1f{snapshot_id}\x1f{dead.id}\x1f{c.id}".encode(), hashlib.sha256
        ).hexdigest(),
    )
    for candidate in order:
        if verified(candidate):
            return candidate, groups[candidate.id]
    return None


@dataclass(frozen=True)
class DeadRowCheck:
    passed: bool
    severity: str  # "WARN" or "ERROR"
    description: str
    overdue: list[tuple[str, int]]  # (row id, days dead) of rows with no replacement


def dead_row_check(dead: pd.DataFrame, today: date) -> DeadRowCheck:
    """Dead rows without a replacement: a warning from day 5, a failure after day 7."""
    if dead.empty:
        return DeadRowCheck(True, "WARN", "no dead golden rows", [])
    open_rows = dead[dead["replacement_row_id"].isna()]
    ages = [
        (str(r.row_id), (today - pd.Timestamp(r.dead_since).date()).days) for r in open_rows.itertuples(index=False)
    ]
    failing = [a for a in ages if a[1] > FAIL_AFTER_DAYS]
    warning = [a for a in ages if a[1] >= WARN_AFTER_DAYS]
    replaced = len(dead) - len(open_rows)
    if failing:
        return DeadRowCheck(
            False,
            "ERROR",
            f"{len(failing)} dead rows have had no replacement for more than "
            f"{FAIL_AFTER_DAYS} days ({replaced} replaced)",
            ages,
        )
    if warning:
        return DeadRowCheck(
            False,
            "WARN",
            f"{len(warning)} dead rows have had no replacement for "
            f"{WARN_AFTER_DAYS} days or more ({replaced} replaced); it fails after {FAIL_AFTER_DAYS}",
            ages,
        )
    return DeadRowCheck(
        True,
        "WARN",
        f"{len(dead)} dead rows, {replaced} replaced, {len(open_rows)} waiting (none for {WARN_AFTER_DAYS} days yet)",
        ages,
    )


@dataclass(frozen=True)
class DeadRowsShown:
    """What Dagster's event log may show of the dead rows: public rows by id, the others (holdout,
    or dead before the split existed) only as counts per stratum. The ids stay in DuckDB."""

    by_stratum: pd.DataFrame  # stratum, side, dead, replaced
    public: pd.DataFrame  # row_id, stratum, dead_since, replacement_row_id
    public_days: dict[str, int]  # public row id -> days without a replacement (from day 5)
    private_days_by_stratum: dict[str, list[int]]  # stratum -> days, for the other rows


def dead_rows_shown(dead: pd.DataFrame, overdue: list[tuple[str, int]]) -> DeadRowsShown:
    is_public = dead["split"] == "public"
    side = dead["split"].where(dead["split"].isin(["public", "holdout"]), "unassigned")
    by_stratum = (
        dead.assign(side=side, replaced=dead["replacement_row_id"].notna())
        .groupby(["stratum", "side"])
        .agg(dead=("row_id", "size"), replaced=("replaced", "sum"))
        .reset_index()
    )
    public_ids = set(dead.loc[is_public, "row_id"])
    stratum_of = dict(zip(dead["row_id"], dead["stratum"]))
    private_days: dict[str, list[int]] = {}
    for row_id, days in overdue:
        if row_id not in public_ids:
            private_days.setdefault(stratum_of[row_id], []).append(days)
    return DeadRowsShown(
        by_stratum=by_stratum,
        public=dead.loc[is_public, ["row_id", "stratum", "dead_since", "replacement_row_id"]],
        public_days={r: d for r, d in overdue if r in public_ids},
        private_days_by_stratum={k: sorted(v) for k, v in sorted(private_days.items())},
    )


def snapshots_awaiting_replacement(warehouse: Warehouse) -> list[str]:
    """Snapshots not yet published with a dead row awaiting its replacement, or a golden row failing
    verification (not yet recorded as dead). Read-only: a schedule never creates the warehouse."""
    with warehouse.reading() as con:
        if con is None:
            return []
        try:
            return [
                r[0]
                for r in con.execute(
                    "SELECT s.snapshot_id FROM snapshots s WHERE coalesce(s.status, 'draft') <> 'published' AND ("
                    " EXISTS (SELECT 1 FROM dead_rows d WHERE d.snapshot_id = s.snapshot_id AND d.replacement_row_id IS NULL)"
                    " OR EXISTS (SELECT 1 FROM golden_verifications v WHERE v.snapshot_id = s.snapshot_id AND NOT v.passed))"
                    " ORDER BY 1"
                ).fetchall()
            ]
        except duckdb.CatalogException:  # a warehouse with no snapshot yet
            return []
