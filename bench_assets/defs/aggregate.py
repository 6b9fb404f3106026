"""Aggregates of a snapshot: every vendor's figures with n and a 95 % interval, and the paired
comparisons that decide which vendors differ."""

import dagster as dg

from bench_assets.defs.agent_ready import agent_trials
from bench_assets.defs.checks import check_result, partition_check
from bench_assets.defs.code_versions import AGGREGATE_CODE_VERSION
from bench_assets.defs.errors import reports_bench_errors
from bench_assets.defs.partitions import snapshots_partitions_def
from bench_assets.defs.resources import BenchPaths, WarehouseResource
from bench_assets.defs.score import vendor_scores
from bench_assets.defs.sentinels import sentinel_probes

LEADERBOARD_CHECK = "figures_within_bounds"


@dg.asset(
    partitions_def=snapshots_partitions_def,
    group_name="results",
    deps=[vendor_scores, sentinel_probes, agent_trials],
    kinds={"duckdb"},
    tags={"bench/stage": "aggregate"},
    code_version=AGGREGATE_CODE_VERSION,
    check_specs=[
        partition_check(
            LEADERBOARD_CHECK,
            "vendor_leaderboard",
            snapshots_partitions_def,
            description="Every share (correct rate, coverage, hit@k, mean fidelity and answer score) and its "
            "interval lie within [0, 1], and every 95 % interval contains its value.",
        )
    ],
)
@reports_bench_errors
def vendor_leaderboard(
    context: dg.AssetExecutionContext, paths: BenchPaths, duckdb: WarehouseResource
) -> dg.MaterializeResult:
    """The snapshot's aggregates per vendor and per stratum, task type, cohort and split: correct
    rate, hit@k, fidelity, coverage, cost per correct, overfit gap, latency, response classes and
    time-to-retrievability (from the sentinel probes so far), each with n and a 95 % interval; and
    every pair of vendors compared on the rows both answered for the ranking figure (exact McNemar,
    Holm-adjusted), from which each vendor's rank range and letters follow."""
    from bench_assets.aggregate.checks import figure_bounds
    from bench_assets.aggregate.comparisons import snapshot_comparisons
    from bench_assets.aggregate.figures import snapshot_metrics
    from bench_assets.aggregate.leaderboard import current_leaderboard
    from bench_assets.publish.format import leaderboard_markdown

    snapshot_id = context.partition_key
    manifest = paths.manifest(snapshot_id)
    warehouse = duckdb.warehouse()
    metrics = snapshot_metrics(warehouse, snapshot_id)
    warehouse.replace_rows("vendor_metrics", metrics, {"snapshot_id": snapshot_id})
    comparisons = snapshot_comparisons(warehouse, snapshot_id)
    warehouse.replace_rows("vendor_comparisons", comparisons, {"snapshot_id": snapshot_id})
    board = current_leaderboard(warehouse, manifest)
    scored = [e for e in board["vendors"] if e["status"] == "scored"]
    return dg.MaterializeResult(
        check_results=[check_result(LEADERBOARD_CHECK, figure_bounds(metrics))],
        metadata={
            "dagster/row_count": len(metrics),
            "vendors_scored": len(scored),
            "headline_eligible": board["headline_eligible"],
            "mode": manifest.mode,
            "pairs_compared": len(comparisons),
            "pairs_told_apart": int(comparisons["better"].notna().sum()) if len(comparisons) else 0,
            "minimum_detectable_difference": (board.get("power") or {}).get("minimum_detectable_difference"),
            "leaderboard": dg.MetadataValue.md(leaderboard_markdown(board)),
            **{
                f"correct_rate/{e['vendor']}": e["metrics"]["correct_rate"]["value"]
                for e in scored
                if e["metrics"].get("correct_rate", {}).get("value") is not None
            },
        },
    )
