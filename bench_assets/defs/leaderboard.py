"""Aggregates of a snapshot: every vendor's figures with n and a 95 % interval, and rank groups."""


import dagster as dg
import pandas as pd

from bench_assets.aggregate import vendor_metrics
from bench_assets.defs.agent_trials import agent_trials, load_trial_records
from bench_assets.defs.partitions import snapshots_partitions_def
from bench_assets.defs.resources import BenchPaths
from bench_assets.defs.scores import vendor_scores
from bench_assets.defs.sentinels import sentinel_probes
from bench_assets.integrity import eligibility
from bench_assets.leaderboard import build_leaderboard
from bench_assets.manifest import Manifest
from bench_assets.publish import leaderboard_markdown
from bench_assets.ttr import snapshot_ttr_metrics
from bench_assets.warehouse import Warehouse


def complete_vendors(warehouse: Warehouse, snapshot_id: str) -> set[str]:
    """Vendors whose scores cover every golden row of the snapshot (the full run is complete)."""
    df = warehouse.query_df(
        "SELECT s.vendor, count(*) AS n FROM row_scores s WHERE s.snapshot_id = ? GROUP BY 1", [snapshot_id])
    total = warehouse.query_df("SELECT count(*) AS n FROM golden_rows WHERE snapshot_id = ?", [snapshot_id])["n"][0]
    return set(df.loc[df["n"] == total, "vendor"])


def current_leaderboard(warehouse: Warehouse, manifest: Manifest) -> dict:
    metrics = warehouse.query_df("SELECT * FROM vendor_metrics WHERE snapshot_id = ?", [manifest.snapshot_id])
    return build_leaderboard(manifest, metrics, complete_vendors(warehouse, manifest.snapshot_id),
                             load_trial_records(warehouse, manifest.snapshot_id),
                             snapshot_reasons=eligibility.snapshot_reasons(warehouse, manifest))


def markdown_leaderboard(board: dict) -> str:
    """The UI preview, formatted as the published site shows each figure."""
    return leaderboard_markdown(board)


def ttr_metrics(warehouse: Warehouse, snapshot_id: str):
    """Time-to-retrievability rows of the snapshot from every sentinel probe so far."""
    with warehouse.connect() as con:
        pages = con.execute("SELECT sentinel_id, published_at FROM sentinel_pages WHERE snapshot_id = ?",
                            [snapshot_id]).df()
        probes = con.execute("SELECT vendor, sentinel_id, tick_at, probed_at, response_class, found "
                             "FROM sentinel_probes WHERE snapshot_id = ?", [snapshot_id]).df()
    return snapshot_ttr_metrics(snapshot_id, pages, probes)


@dg.asset(partitions_def=snapshots_partitions_def, group_name="results",
          deps=[vendor_scores, sentinel_probes, agent_trials], kinds={"duckdb"},
          tags={"bench/stage": "aggregate"})
def vendor_leaderboard(context: dg.AssetExecutionContext, paths: BenchPaths) -> dg.MaterializeResult:
    """The snapshot's aggregates per vendor and per stratum, task type, cohort and split: correct
    rate, hit@k, fidelity, coverage, cost per correct, overfit gap, latency, response classes and
    time-to-retrievability (from the sentinel probes so far), each with n and a 95 % interval;
    vendors whose intervals overlap share a rank group."""
    snapshot_id = context.partition_key
    manifest = paths.manifest(snapshot_id)
    warehouse = paths.warehouse()
    scores = warehouse.query_df("SELECT * FROM row_scores WHERE snapshot_id = ?", [snapshot_id])
    metrics = vendor_metrics(snapshot_id, scores) if len(scores) else pd.DataFrame()
    ttr = ttr_metrics(warehouse, snapshot_id)
    metrics = pd.concat([metrics, ttr], ignore_index=True) if len(ttr) else metrics
    warehouse.replace_rows("vendor_metrics", metrics, {"snapshot_id": snapshot_id})
    board = current_leaderboard(warehouse, manifest)
    scored = [e for e in board["vendors"] if e["status"] == "scored"]
    return dg.MaterializeResult(metadata={
        "dagster/row_count": len(metrics), "vendors_scored": len(scored),
        "headline_eligible": board["headline_eligible"], "mode": manifest.mode,
        "leaderboard": dg.MetadataValue.md(markdown_leaderboard(board)),
        **{f"correct_rate/{e['vendor']}": e["metrics"]["correct_rate"]["value"] for e in scored
           if e["metrics"].get("correct_rate", {}).get("value") is not None},
    })
