"""Publication: the snapshot's site, data files and charts, with a blocking holdout-leak scan."""


import base64
import json
import shutil
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import dagster as dg
import pandas as pd

from bench_assets import charts
from bench_assets.defs.golden import load_golden_from_warehouse
from bench_assets.defs.leaderboard import current_leaderboard, markdown_leaderboard, vendor_leaderboard
from bench_assets.defs.partitions import snapshots_partitions_def
from bench_assets.defs.resources import BenchPaths, input_errors_as_failures
from bench_assets.defs.split import public_split_records
from bench_assets.drilldown import HoldoutGuard, query_drilldowns
from bench_assets.integrity.publication import PublicationGuard
from bench_assets.publish import Reply, file_digest, find_holdout_leaks, render_site
from bench_assets.ttr import ttr_figures
from bench_assets.verify import row_urls
from bench_assets.warehouse import Warehouse


def _snapshot_texts(snapshot_dir: Path) -> tuple[dict[str, Reply], str | None]:
    """Vendors' replies (`replies/<vendor>.md` or `.txt`, published verbatim under the same name)
    and the operator's conflict-of-interest declaration (`disclosures.md`) filed beside the manifest."""
    replies = {}
    for path in sorted((snapshot_dir / "replies").glob("*")):
        if path.suffix in (".md", ".txt") and path.is_file():
            replies[path.stem] = Reply(path.name, path.read_text(encoding="utf-8"))
    disclosures = snapshot_dir / "disclosures.md"
    return replies, disclosures.read_text(encoding="utf-8") if disclosures.exists() else None


def ttr_observations(warehouse: Warehouse, snapshot_id: str) -> dict[str, tuple[list[float], list[bool]]]:
    """Each vendor's sentinel subjects (hours, found) for the Kaplan–Meier chart, derived from the
    sentinel tables by `ttr.ttr_figures` (the same derivation as the TTR metric); empty until probes ran."""
    pages = warehouse.query_df("SELECT * FROM sentinel_pages WHERE snapshot_id = ?", [snapshot_id])
    probes = warehouse.query_df("SELECT vendor, sentinel_id, probed_at, response_class, found FROM sentinel_probes "
                                "WHERE snapshot_id = ?", [snapshot_id])
    if pages.empty or probes.empty:
        return {}
    return {v: (list(f.durations), list(f.observed)) for v, f in ttr_figures(pages, probes).items() if f.sentinels}


def _failure_classes_md(board: dict) -> str:
    rows = {e["vendor"]: e.get("response_classes", {}) for e in board["vendors"] if e["status"] == "scored"}
    if not rows:
        return "no scored vendors"
    df = pd.DataFrame(rows).T.fillna(0).astype(int)
    df = df.loc[:, (df != 0).any(axis=0)]
    return df.to_markdown()


def _chart_previews(out_dir: Path, board: dict, observations: dict) -> dict[str, dg.MetadataValue]:
    """The published charts inside markdown (SVG as a data URI, which the Dagster UI's markdown
    allows for images), so an operator sees them without leaving the UI."""
    out = {}
    for chart in charts.site_charts(board, observations):
        path = out_dir / "charts" / f"{chart.name}.svg"
        if path.exists():
            svg = base64.b64encode(path.read_bytes()).decode()
            out[f"chart_{chart.name}"] = dg.MetadataValue.md(
                f"**{chart.title}**\n\n![{chart.name}](data:image/svg+xml;base64,{svg})\n\n{chart.caption}")
    return out


@dg.asset(partitions_def=snapshots_partitions_def, group_name="results", deps=[vendor_leaderboard],
          kinds={"html", "json", "csv"}, tags={"bench/stage": "publish"})
def published_snapshot(context: dg.AssetExecutionContext, paths: BenchPaths) -> dg.MaterializeResult:
    """The published snapshot under data/publish/<snapshot_id>/: the leaderboard (HTML, JSON with
    its schema, CSV), a page and a JSON per vendor, a drill-down page per public golden row,
    charts, methodology generated from the code, exclusions, errata, limitations, disclosures,
    the public split and llms.txt. Nothing is kept if any holdout id, query text or golden URL
    appears in any file."""
    snapshot_id = context.partition_key
    manifest = paths.manifest(snapshot_id)
    warehouse = paths.warehouse()
    board = current_leaderboard(warehouse, manifest)
    rows = load_golden_from_warehouse(paths, snapshot_id)
    split_df = warehouse.query_df("SELECT row_id, split FROM query_split WHERE snapshot_id = ?", [snapshot_id])
    split = dict(zip(split_df["row_id"], split_df["split"]))
    errata_path = paths.snapshots_dir / snapshot_id / "errata.json"
    errata = json.loads(errata_path.read_text()) if errata_path.exists() else []
    replies, disclosures = _snapshot_texts(paths.snapshots_dir / snapshot_id)
    holdout = [{"row_id": r.id, "request_text": r.request_text, "golden_urls": row_urls(r)}
               for r in rows if split.get(r.id) == "holdout"]
    # lifecycle and review gate (a published snapshot is never re-rendered); decoys are private like the holdout
    with input_errors_as_failures():
        guard = PublicationGuard.begin(warehouse, manifest, board, rows, split, paths.private)
    holdout += guard.leak_needles
    scores = warehouse.query_df("SELECT * FROM row_scores WHERE snapshot_id = ? AND split = 'public'", [snapshot_id])
    results = warehouse.query_df(
        "SELECT r.* FROM response_results r JOIN query_split q USING (snapshot_id, row_id) "
        "WHERE r.snapshot_id = ? AND q.split = 'public'", [snapshot_id])
    raw = warehouse.query_df("SELECT * FROM raw_responses WHERE snapshot_id = ? AND role = 'public'", [snapshot_id])
    queries = query_drilldowns(manifest, rows, split, scores, results, raw, HoldoutGuard(holdout))
    observations = ttr_observations(warehouse, snapshot_id)
    counts = {"total": len(rows), "public": sum(1 for s in split.values() if s == "public"),
              "holdout": sum(1 for s in split.values() if s == "holdout")}
    out_dir = paths.publish_dir / snapshot_id
    paths.publish_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{snapshot_id}-", dir=paths.publish_dir))
    try:
        written = render_site(staging / snapshot_id, board, manifest, public_split_records(rows, split), errata,
                              queries=queries, ttr_observations=observations, replies=replies,
                              disclosures=disclosures, split_counts=counts,
                              extra_files=guard.files())  # holdout commitments, exclusions ledger, review record
        leaks = find_holdout_leaks(staging / snapshot_id, holdout)
        if leaks:
            raise dg.Failure(f"holdout leak: {len(leaks)} occurrences in the files to publish; nothing was published",
                             metadata={"leaks": dg.MetadataValue.md("\n".join(f"- {x}" for x in leaks[:50]))})
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
    guard.finish()
    withheld = sum(1 for q in queries for e in q["vendors"] for r in e["results"] if r["withheld"])
    return dg.MaterializeResult(metadata={
        "dagster/row_count": len(files), "index": dg.MetadataValue.path(str(out_dir / "index.html")),
        "leaderboard": dg.MetadataValue.md(markdown_leaderboard(board)),
        "failure_classes": dg.MetadataValue.md(_failure_classes_md(board)),
        "files_written": len(written), "vendor_pages": sum(1 for e in board["vendors"] if e["status"] == "scored"),
        "public_rows": counts["public"], "query_pages": len(queries), "results_withheld_as_holdout": withheld,
        "charts": sum(1 for p in files if p.suffix == ".svg"), "holdout_leaks": 0, "lifecycle": guard.publish_as,
        **_chart_previews(out_dir, board, observations),
    })
