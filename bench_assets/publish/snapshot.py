"""Publishing a snapshot: render every file into a staging directory, scan it for the holdout,
move it into place, and record each file's SHA-256; nothing is kept if the scan finds a leak.

The order matters for integrity: the lifecycle and review gate are decided first (a published
snapshot is never re-rendered), the holdout scan covers every byte before anything is visible,
and the lifecycle moves to `published` only once the files are in place.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from bench_assets.aggregate.leaderboard import current_leaderboard
from bench_assets.aggregate.provenance import set_status
from bench_assets.errors import HoldoutLeakError, NotReadyError
from bench_assets.fetch.versions import environment_record, record_publication_versions
from bench_assets.golden.store import load_golden_rows
from bench_assets.manifest import Manifest
from bench_assets.publish.build import build_snapshot, stale_vendors
from bench_assets.publish.files import file_digest
from bench_assets.publish.guard import PublicationGuard
from bench_assets.publish.inputs import private_needles, site_inputs, ttr_as_of
from bench_assets.publish.quarters import write_quarters_index
from bench_assets.publish.site import SiteInputs
from bench_assets.runtime import in_processes, worker_count
from bench_assets.sentinels.ttr import sentinel_tables
from bench_assets.split.leaks import LeakGuard
from bench_assets.storage.warehouse import Warehouse


@dataclass(frozen=True)
class Publication:
    """A snapshot as published: where, which files, from which inputs, and what guarded it."""

    out_dir: Path
    files: list[Path]
    inputs: SiteInputs
    guard: PublicationGuard
    leak_guard_counts: dict[str, Any]


def publication_inputs(
    warehouse: Warehouse,
    manifest: Manifest,
    snapshots_dir: Path,
    private_dir: Path,
    versions: dict[str, Any] | None = None,
) -> tuple[SiteInputs, PublicationGuard, LeakGuard, dict[str, int]]:
    """Decide whether the snapshot may be published now (PublicationRefused if not), then build
    what its files are rendered from (`publish.build`) and the leak guard that scans them.
    `versions`: this publication's record of code, environment and input files (`fetch.versions`).
    NotReadyError when a vendor's stored verdicts are not what its archive scores to now."""
    snapshot_id = manifest.snapshot_id
    board = current_leaderboard(warehouse, manifest, publication_versions=versions)
    # The stage's small reads share one connection, before the vendors' builds and after (each
    # build reads its own archive in its own process: no connection is held across them).
    with warehouse.session():
        rows = load_golden_rows(warehouse, snapshot_id)
        split = warehouse.split(snapshot_id)
        # lifecycle and review gate first (a published snapshot is never re-rendered), then the inputs
        guard = PublicationGuard.begin(warehouse, manifest, board, rows, split)
    set_status(board, manifest, guard.publish_as)  # the status leaderboard.json states, and its disclaimer
    leak_guard, needle_counts = private_needles(private_dir, manifest, warehouse, rows, split)
    build = build_snapshot(warehouse, manifest, rows, split, leak_guard, guard.commitment_key)
    with warehouse.session():
        stale = stale_vendors(warehouse.rows("row_scores", snapshot_id), build)
        if stale:
            raise NotReadyError(
                "the stored verdicts (row_scores) are not what the archive scores to now for "
                + ", ".join(f"{v} ({n} rows)" for v, n in sorted(stale.items()))
                + "; materialize vendor_scores and vendor_leaderboard for them again, then publish"
            )
        pages, probes = sentinel_tables(warehouse, snapshot_id)
        metrics = warehouse.rows("vendor_metrics", snapshot_id, columns=["metric", "value"])
        replies = warehouse.rows("vendor_replies", snapshot_id, columns=["vendor", "path", "sha256"])
        extra_files = guard.files(build.integrity)  # holdout commitments, exclusions ledger, review record
    inputs = site_inputs(
        manifest,
        board,
        build,
        snapshot_dir=snapshots_dir / snapshot_id,
        sentinel_pages=pages,
        sentinel_probes=probes,
        # the Kaplan–Meier chart draws the probes the leaderboard's time-to-retrievability figure includes
        as_of=ttr_as_of(metrics),
        recorded_replies=replies,
        extra_files=extra_files,
    )
    return inputs, guard, leak_guard, needle_counts


def scan_site(leak_guard: LeakGuard, directory: Path) -> list[str]:
    """`leak_guard.scan(directory)`, the files read side by side (`runtime.in_processes`: dealt out
    in turn, as pages, charts and data files cost differently per byte), each worker reporting the
    leaks of each of its files; put back in path order they are the whole scan's findings, leak
    for leak."""
    files = sorted(p for p in directory.rglob("*") if p.is_file())
    workers = worker_count(len(files))

    def scan(first: int) -> list[tuple[int, list[str]]]:
        found = []
        for index in range(first, len(files), workers):
            leaks = leak_guard.scan_file(files[index], files[index].relative_to(directory).as_posix())
            if leaks:
                found.append((index, leaks))
        return found

    by_file = dict(pair for part in in_processes(range(workers), scan, workers) for pair in part)
    return [leak for index in sorted(by_file) for leak in by_file[index]]


def publish_snapshot(
    warehouse: Warehouse, manifest: Manifest, snapshots_dir: Path, publish_dir: Path, private_dir: Path
) -> Publication:
    """Render, scan, move into place and record the snapshot's published files (see the module).
    A leak raises HoldoutLeakError: which rows only in the private store, nothing published."""
    snapshot_id = manifest.snapshot_id
    # the code, environment and inputs this publication runs with, rendered into its files
    versions = environment_record(manifest, snapshots_dir.parent.parent, private_dir)
    inputs, guard, leak_guard, term_counts = publication_inputs(
        warehouse, manifest, snapshots_dir, private_dir, versions
    )
    out_dir = publish_dir / snapshot_id
    publish_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{snapshot_id}-", dir=publish_dir))
    try:
        inputs.render(staging / snapshot_id)
        started = time.perf_counter()
        leaks = scan_site(leak_guard, staging / snapshot_id)
        scan_seconds = time.perf_counter() - started
        if leaks:
            raise _leak_error(leaks, leak_guard, private_dir, snapshot_id)
        if out_dir.exists():
            shutil.rmtree(out_dir)
        shutil.move(str(staging / snapshot_id), str(out_dir))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    now = datetime.now(UTC)
    files = sorted(p for p in out_dir.rglob("*") if p.is_file())
    warehouse.replace_rows(
        "publications",
        pd.DataFrame(
            [
                {
                    "snapshot_id": snapshot_id,
                    "path": str(p.relative_to(out_dir)),
                    "sha256": file_digest(p),
                    "bytes": p.stat().st_size,
                    "published_at": now,
                }
                for p in files
            ]
        ),
        {"snapshot_id": snapshot_id},
    )
    record_publication_versions(warehouse, snapshot_id, versions)
    guard.finish()
    write_quarters_index(publish_dir)  # the index above the snapshot folders lists this one too
    return Publication(
        out_dir,
        files,
        inputs,
        guard,
        {**term_counts, "scan_seconds": round(scan_seconds, 3)},
    )


def _leak_error(leaks: list[Any], leak_guard: LeakGuard, private_dir: Path, snapshot_id: str) -> HoldoutLeakError:
    """Which rows leaked, only in the private store: Dagster's event log may not name the holdout."""
    leaks_file = private_dir / "leaks" / f"{snapshot_id}.publication.txt"
    leaks_file.parent.mkdir(parents=True, exist_ok=True)
    leaks_file.write_text("".join(f"{x}\n" for x in leaks))
    counts = "\n".join(
        f"| {where} | {kind} | {n} |" for (where, kind), n in sorted(leak_guard.scan_counts(leaks).items())
    )
    return HoldoutLeakError(
        f"holdout leak: {len(leaks)} occurrences in the files to publish; nothing was published "
        f"(which rows: {leaks_file})",
        {"leaks": f"| file | kind | occurrences |\n| --- | --- | --- |\n{counts}", "which_rows": str(leaks_file)},
    )
