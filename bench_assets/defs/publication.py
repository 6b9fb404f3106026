"""Publication: the snapshot's site, JSON and CSV, with a blocking holdout-leak scan."""


import json
import shutil
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import dagster as dg
import pandas as pd

from bench_assets.defs.golden import load_golden_from_warehouse
from bench_assets.defs.leaderboard import current_leaderboard, markdown_leaderboard, vendor_leaderboard
from bench_assets.defs.partitions import snapshots_partitions_def
from bench_assets.defs.resources import BenchPaths
from bench_assets.defs.split import public_split_records
from bench_assets.publish import file_digest, find_holdout_leaks, render_site
from bench_assets.verify import row_urls


@dg.asset(partitions_def=snapshots_partitions_def, group_name="results", deps=[vendor_leaderboard],
          kinds={"html", "json", "csv"}, tags={"bench/stage": "publish"})
def published_snapshot(context: dg.AssetExecutionContext, paths: BenchPaths) -> dg.MaterializeResult:
    """The published snapshot under data/publish/<snapshot_id>/: leaderboard (HTML, JSON, CSV),
    a page per vendor, methodology, errata and the public split. Nothing is kept if any holdout
    id, query text or golden URL appears in any file."""
    snapshot_id = context.partition_key
    manifest = paths.manifest(snapshot_id)
    warehouse = paths.warehouse()
    board = current_leaderboard(warehouse, manifest)
    rows = load_golden_from_warehouse(paths, snapshot_id)
    split_df = warehouse.query_df("SELECT row_id, split FROM query_split WHERE snapshot_id = ?", [snapshot_id])
    split = dict(zip(split_df["row_id"], split_df["split"]))
    errata_path = paths.snapshots_dir / snapshot_id / "errata.json"
    errata = json.loads(errata_path.read_text()) if errata_path.exists() else []
    holdout = [{"row_id": r.id, "request_text": r.request_text, "golden_urls": row_urls(r)}
               for r in rows if split.get(r.id) == "holdout"]
    out_dir = paths.publish_dir / snapshot_id
    staging = Path(tempfile.mkdtemp(prefix=f".{snapshot_id}-", dir=paths.publish_dir.parent if paths.publish_dir.parent.exists() else None))
    try:
        written = render_site(staging / snapshot_id, board, manifest, public_split_records(rows, split), errata)
        leaks = find_holdout_leaks(staging / snapshot_id, holdout)
        if leaks:
            raise dg.Failure(f"holdout leak: {len(leaks)} occurrences in the files to publish; nothing was published",
                             metadata={"leaks": dg.MetadataValue.md("\n".join(f"- {x}" for x in leaks[:50]))})
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        if out_dir.exists():
            shutil.rmtree(out_dir)
        shutil.move(str(staging / snapshot_id), str(out_dir))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    now = datetime.now(timezone.utc)
    files = sorted(p for p in out_dir.rglob("*") if p.is_file())
    df = pd.DataFrame([{"snapshot_id": snapshot_id, "path": str(p.relative_to(out_dir)), "sha256": file_digest(p),
                        "bytes": p.stat().st_size, "published_at": now} for p in files])
    warehouse.replace_rows("publications", df, {"snapshot_id": snapshot_id})
    return dg.MaterializeResult(metadata={
        "dagster/row_count": len(files), "index": dg.MetadataValue.path(str(out_dir / "index.html")),
        "leaderboard": dg.MetadataValue.md(markdown_leaderboard(board)), "files_written": len(written),
        "holdout_leaks": 0,
    })
