"""Agent-ready trials of a snapshot: the harness against the simulator, and hand-entered live trials."""

import dagster as dg

from bench_assets.defs.errors import reports_bench_errors
from bench_assets.defs.partitions import snapshots_partitions_def
from bench_assets.defs.resources import BenchPaths, VendorGateway, WarehouseResource
from bench_assets.defs.snapshots import snapshot_manifest

HAND_ENTERED_FILE = "agent_trials.yaml"


# Partitioned by snapshot like the leaderboard it feeds: a snapshot's trials are run (or entered)
# for that snapshot and replaced as a whole on a re-run, while a published snapshot keeps its own.
@dg.asset(
    partitions_def=snapshots_partitions_def,
    group_name="vendors",
    deps=[snapshot_manifest],
    kinds={"duckdb", "yaml"},
    tags={"bench/stage": "agent_trials"},
)
@reports_bench_errors
def agent_trials(
    context: dg.AssetExecutionContext, paths: BenchPaths, duckdb: WarehouseResource, gateway: VendorGateway
) -> dg.MaterializeResult:
    """Agent-ready trials, one row per vendor per trial: method (OTP e-mail, device code, keyless,
    x402, manual), date, outcome, reason and the evidence (every step, secrets removed). In
    simulated mode the harness signs up at each simulated vendor as an agent would and proves the
    key with one search; trials run by hand against live vendors are loaded from
    data/snapshots/<id>/agent_trials.yaml, validated (a bad record names file, line and field)."""
    import pandas as pd

    from bench_assets.agent_ready.harness import snapshot_trials
    from bench_assets.agent_ready.records import agent_ready_by_vendor, trials_frame
    from bench_assets.storage.lifecycle import refuse_if_published

    snapshot_id = context.partition_key
    warehouse = duckdb.warehouse()
    refuse_if_published(warehouse, snapshot_id, "agent_trials")  # before any trial signs up anywhere
    manifest = paths.manifest(snapshot_id)
    records = snapshot_trials(
        manifest,
        paths.snapshots_dir / snapshot_id / HAND_ENTERED_FILE,
        gateway.sim_base() if manifest.mode == "simulated" else None,
        lambda url: gateway.url(url, manifest.mode),
    )
    df = trials_frame(records)
    warehouse.replace_rows("agent_trials", df, {"snapshot_id": snapshot_id})
    summary = agent_ready_by_vendor(records, sorted(manifest.vendors))
    table = pd.DataFrame(
        [
            {
                "vendor": r.vendor,
                "method": r.method,
                "by": r.recorded_by,
                "date": r.trial_date,
                "outcome": r.outcome,
                "reason": r.reason,
            }
            for r in records
        ]
    )
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": len(df),
            "harness_trials": sum(r.recorded_by == "harness" for r in records),
            "hand_entered": sum(r.recorded_by == "hand" for r in records),
            "agent_ready": dg.MetadataValue.json(sorted(v for v, s in summary.items() if s["ready"])),
            "trials": dg.MetadataValue.md(table.to_markdown(index=False) if len(table) else "no trials"),
        }
    )
