"""The 70/30 public/holdout split per stratum, keyed by a secret, and the decoys that hide the
holdout on the wire."""

import dagster as dg

from bench_assets.defs.errors import reports_bench_errors
from bench_assets.defs.golden import golden_rows
from bench_assets.defs.partitions import snapshots_partitions_def
from bench_assets.defs.resources import BenchPaths, WarehouseResource


@dg.asset(partitions_def=snapshots_partitions_def, group_name="golden", deps=[golden_rows], kinds={"duckdb"})
@reports_bench_errors
def query_split(
    context: dg.AssetExecutionContext, paths: BenchPaths, duckdb: WarehouseResource
) -> dg.MaterializeResult:
    """Which golden rows are public (70 %) and which are holdout (30 %), within every stratum.
    Keyed by the secret in $BENCH_SPLIT_KEY: stable across re-runs, unpredictable without it.
    Once recorded, a row's side never changes: re-materializing keeps every recorded side, and
    only rows never assigned get one (a dead row's replacement takes the dead row's side, as
    `dead_rows` records it). Rows the benchmark's earlier snapshots gave out keep their side
    (holdout if any held them out), so next quarter never publishes this quarter's holdout. The
    public split is exported beside the manifest; the holdout stays in the private store."""
    from bench_assets.golden.store import load_golden_rows
    from bench_assets.split.assign import assign_split, export_split, recorded_split, split_frame, split_key
    from bench_assets.storage.lifecycle import refuse_if_published

    snapshot_id = context.partition_key
    warehouse = duckdb.warehouse()
    refuse_if_published(warehouse, snapshot_id, "query_split")
    manifest = paths.manifest(snapshot_id)
    rows = load_golden_rows(warehouse, snapshot_id)
    # a public row may already be exported and a holdout row sent as holdout: never move either
    recorded = recorded_split(warehouse, snapshot_id)
    split = assign_split(
        rows, split_key(manifest.split.key_env, manifest.mode), manifest.split.public_share, recorded=recorded
    )
    df = split_frame(snapshot_id, rows, split)
    warehouse.replace_rows("query_split", df, {"snapshot_id": snapshot_id})
    public_path = export_split(rows, split, paths.snapshots_dir, paths.private, snapshot_id)
    kept = sum(1 for r in rows if r.id in recorded)
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": len(df),
            "public": int((df["split"] == "public").sum()),
            "holdout": int((df["split"] == "holdout").sum()),
            "public_split_file": str(public_path),
            "kept_recorded": kept,
            "newly_assigned": len(rows) - kept,
            "by_stratum": dg.MetadataValue.md(
                df.groupby(["stratum", "split"]).size().unstack(fill_value=0).to_markdown()
            ),
        }
    )


@dg.asset(partitions_def=snapshots_partitions_def, group_name="golden", deps=[query_split], kinds={"duckdb"})
@reports_bench_errors
def decoy_queries(
    context: dg.AssetExecutionContext, paths: BenchPaths, duckdb: WarehouseResource
) -> dg.MaterializeResult:
    """The decoys sent with the holdout: per stratum, `decoys.ratio` × as many rows as the holdout,
    drawn in whole groups from the decoy pool in an order keyed by the split secret. Private (the
    private store and DuckDB only), archived when sent, never scored. Each vendor fetch draws the
    same decoys from the same function, so this record is for the operator."""
    import pandas as pd

    from bench_assets.golden.store import load_golden_rows
    from bench_assets.split.decoys import decoys_for_snapshot, record_decoys
    from bench_assets.storage.lifecycle import refuse_if_published

    snapshot_id = context.partition_key
    warehouse = duckdb.warehouse()
    refuse_if_published(warehouse, snapshot_id, "decoy_queries")
    manifest = paths.manifest(snapshot_id)
    rows = load_golden_rows(warehouse, snapshot_id)
    split = warehouse.split(snapshot_id)
    df = record_decoys(snapshot_id, decoys_for_snapshot(manifest, rows, split, paths.private), paths.private)
    warehouse.replace_rows("decoy_queries", df, {"snapshot_id": snapshot_id})
    holdout = pd.Series([r.stratum for r in rows if split.get(r.id) == "holdout"]).value_counts()
    table = pd.DataFrame({"holdout": holdout, "decoys": df["stratum"].value_counts() if len(df) else 0}).fillna(0)
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": len(df),
            "ratio": manifest.decoys.ratio,
            "source": manifest.pool_source(manifest.decoys),
            "by_stratum": dg.MetadataValue.md(table.astype(int).to_markdown()),
        }
    )
