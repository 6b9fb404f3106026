"""Publication: the snapshot's site, data files and charts, with a blocking holdout-leak scan."""


import base64
import shutil
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import dagster as dg
import pandas as pd

from bench_assets import charts
from bench_assets.defs.golden import load_golden_from_warehouse
from bench_assets.defs.leaderboard import current_leaderboard, markdown_leaderboard, vendor_leaderboard
from bench_assets.defs.partitions import snapshots_partitions_def
from bench_assets.defs.resources import BenchPaths, input_errors_as_failures
from bench_assets.integrity.leaks import LeakGuard
from bench_assets.integrity.publication import PublicationGuard
from bench_assets.publish import file_digest, private_terms, site_inputs, snapshot_replies, ttr_as_of
from bench_assets.publish import ttr_observations as publish_ttr_observations
from bench_assets.warehouse import Warehouse

__all__ = ["published_snapshot", "snapshot_replies", "private_terms", "ttr_observations"]


def ttr_observations(warehouse: Warehouse, snapshot_id: str,
                     as_of: datetime | None = None) -> dict[str, tuple[list[float], list[bool]]]:
    """Each vendor's sentinel subjects (hours, found) for the Kaplan–Meier chart, from the probes
    of ticks up to `as_of` (`publish.ttr_observations`); empty until probes ran."""
    pages, probes = sentinel_tables(warehouse, snapshot_id)
    return publish_ttr_observations(pages, probes, as_of)


def sentinel_tables(warehouse: Warehouse, snapshot_id: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    pages = warehouse.query_df("SELECT * FROM sentinel_pages WHERE snapshot_id = ?", [snapshot_id])
    probes = warehouse.query_df("SELECT vendor, sentinel_id, tick_at, probed_at, response_class, found "
                                "FROM sentinel_probes WHERE snapshot_id = ?", [snapshot_id])
    return pages, probes


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
    vendors' replies (their bytes as received), the public split and llms.txt. Nothing is kept if
    any holdout, dead holdout or decoy id, query text or golden URL appears in any file, in any
    spelling a reader would read as the same (`integrity.leaks`)."""
    snapshot_id = context.partition_key
    manifest = paths.manifest(snapshot_id)
    warehouse = paths.warehouse()
    board = current_leaderboard(warehouse, manifest)
    rows = load_golden_from_warehouse(paths, snapshot_id)
    split_df = warehouse.query_df("SELECT row_id, split FROM query_split WHERE snapshot_id = ?", [snapshot_id])
    split = dict(zip(split_df["row_id"], split_df["split"]))
    snapshot_dir = paths.snapshots_dir / snapshot_id
    with input_errors_as_failures():
        # lifecycle and review gate first (a published snapshot is never re-rendered), then the inputs
        guard = PublicationGuard.begin(warehouse, manifest, board, rows, split, paths.private)
    terms, term_counts = private_terms(paths.private, manifest, warehouse, rows, split)
    leak_guard = LeakGuard(terms + guard.leak_needles)  # decoys are private like the holdout
    scores = warehouse.query_df("SELECT * FROM row_scores WHERE snapshot_id = ? AND split = 'public'", [snapshot_id])
    results = warehouse.query_df(
        "SELECT r.* FROM response_results r JOIN query_split q USING (snapshot_id, row_id) "
        "WHERE r.snapshot_id = ? AND q.split = 'public'", [snapshot_id])
    raw = warehouse.query_df("SELECT * FROM raw_responses WHERE snapshot_id = ? AND role = 'public'", [snapshot_id])
    pages, probes = sentinel_tables(warehouse, snapshot_id)
    # the Kaplan–Meier chart draws the probes the leaderboard's time-to-retrievability figure includes
    as_of = ttr_as_of(warehouse.query_df("SELECT metric, value FROM vendor_metrics WHERE snapshot_id = ?",
                                         [snapshot_id]))
    with input_errors_as_failures():
        inputs = site_inputs(manifest, board, rows, split, snapshot_dir=snapshot_dir, scores=scores, results=results,
                             raw=raw, sentinel_pages=pages, sentinel_probes=probes, as_of=as_of,
                             recorded_replies=warehouse.query_df(
                                 "SELECT vendor, path, sha256 FROM vendor_replies WHERE snapshot_id = ?", [snapshot_id]),
                             leak_guard=leak_guard,
                             extra_files=guard.files())  # holdout commitments, exclusions ledger, review record
    queries, replies, observations, counts = inputs.queries, inputs.replies, inputs.ttr_observations, inputs.split_counts
    out_dir = paths.publish_dir / snapshot_id
    paths.publish_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{snapshot_id}-", dir=paths.publish_dir))
    try:
        written = inputs.render(staging / snapshot_id)
        started = time.perf_counter()
        leaks = leak_guard.scan(staging / snapshot_id)
        scan_seconds = time.perf_counter() - started
        if leaks:  # which rows, only in the private store: Dagster's event log may not name the holdout
            leaks_file = paths.private / "leaks" / f"{snapshot_id}.publication.txt"
            leaks_file.parent.mkdir(parents=True, exist_ok=True)
            leaks_file.write_text("".join(f"{x}\n" for x in leaks))
            counts = "\n".join(f"| {where} | {kind} | {n} |" for (where, kind), n
                               in sorted(leak_guard.scan_counts(leaks).items()))
            raise dg.Failure(f"holdout leak: {len(leaks)} occurrences in the files to publish; nothing was published "
                             f"(which rows: {leaks_file})",
                             metadata={"leaks": dg.MetadataValue.md(f"| file | kind | occurrences |\n| --- | --- | --- |\n"
                                                                    f"{counts}"),
                                       "which_rows": dg.MetadataValue.path(str(leaks_file))})
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
        "leak_guard": dg.MetadataValue.json({**term_counts, "decoys": len(guard.leak_needles),
                                             "scan_seconds": round(scan_seconds, 3)}),
        "replies": dg.MetadataValue.json({v: {"file": r.filename, "sha256": r.sha256} for v, r in sorted(replies.items())}),
        **_chart_previews(out_dir, board, observations),
    })
