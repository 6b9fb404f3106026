"""Jobs, and the asset selection that materializes a whole snapshot in one backfill."""

import dagster as dg

from bench_assets.defs.partitions import snapshots_partitions_def

SNAPSHOT_ASSETS = [
    "snapshot_manifest",
    "golden_rows",
    "golden_verifications",
    "query_split",
    "dead_golden_rows",
    "decoy_queries",
]
RESULT_ASSETS = ["agent_trials", "vendor_leaderboard", "published_snapshot"]

# A whole snapshot: golden truth, every vendor partition, agent-ready trials, the aggregates and the
# published site. Not the sentinels (their own 6-hourly schedule probes them) nor the review group
# (sending review packets freezes the snapshot: that is a decision, not part of a run).
SNAPSHOT_GROUPS = ("golden", "vendors", "results")
snapshot_selection = dg.AssetSelection.groups(*SNAPSHOT_GROUPS)
# The same selection as typed into the selection box of the UI's asset graph. Its one root,
# snapshot_manifest, is partitioned by snapshot, so the UI's "Materialize all" offers the snapshot
# partitions and launches one asset backfill; Dagster maps each snapshot partition to every
# snapshot x vendor partition of vendor_responses and vendor_scores and back to the snapshot's
# aggregate, and runs them in dependency order (the vendor runs in parallel).
SNAPSHOT_SELECTION_QUERY = " or ".join(f'group:"{g}"' for g in SNAPSHOT_GROUPS)

# One vendor again after a fix: its fetch (archived responses are re-used, nothing is paid twice),
# its scores, and the snapshot's aggregate and site. Backfilled over one snapshot x vendor
# partition of its root, vendor_responses.
VENDOR_RERUN_ASSETS = ("vendor_responses", "vendor_scores", "vendor_leaderboard", "published_snapshot")
VENDOR_RERUN_QUERY = " or ".join(f'key:"{a}"' for a in VENDOR_RERUN_ASSETS)


def backfill_params(asset_keys: list[dg.AssetKey], partition_keys: list[str]) -> dict:
    """The GraphQL `LaunchBackfillParams` the UI's "Launch backfill" sends for a selection: its
    assets and partitions of its root (`launchPartitionBackfill`; the daemon runs the backfill)."""
    return {
        "assetSelection": [{"path": list(k.path)} for k in sorted(asset_keys, key=lambda k: tuple(k.path))],
        "partitionNames": list(partition_keys),
        "title": f"backfill {', '.join(partition_keys)}",
    }


# Materializes a snapshot's golden stages in one run, and its results in another; the vendor
# partitions in between are runs of their own (a different partitioning). For everything at once,
# backfill `snapshot_selection` (above).
snapshot_golden_job = dg.define_asset_job(
    "snapshot_golden_job", selection=SNAPSHOT_ASSETS, partitions_def=snapshots_partitions_def
)
snapshot_results_job = dg.define_asset_job(
    "snapshot_results_job", selection=RESULT_ASSETS, partitions_def=snapshots_partitions_def
)
# The quarterly cycle: launched on the quarter drawn from, it writes the next quarter's manifest
# and golden set for review and adds the next snapshot partition.
quarter_cycle_job = dg.define_asset_job(
    "quarter_cycle_job", selection=["next_quarter"], partitions_def=snapshots_partitions_def
)


@dg.definitions
def defs() -> dg.Definitions:
    return dg.Definitions(jobs=[snapshot_golden_job, snapshot_results_job, quarter_cycle_job])
