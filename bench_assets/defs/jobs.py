"""Jobs and sensors for operating snapshots."""


import dagster as dg

from bench_assets.defs.partitions import snapshots_partitions_def

SNAPSHOT_ASSETS = ["snapshot_manifest", "golden_rows", "golden_verifications", "query_split", "dead_golden_rows",
                   "decoy_queries"]
RESULT_ASSETS = ["agent_trials", "vendor_leaderboard", "published_snapshot"]

# Materializes a snapshot's golden stages in one run; vendor partitions and results follow as
# their own runs (different partitioning), or all together as one asset backfill from the UI.
snapshot_golden_job = dg.define_asset_job("snapshot_golden_job", selection=SNAPSHOT_ASSETS,
                                          partitions_def=snapshots_partitions_def)
snapshot_results_job = dg.define_asset_job("snapshot_results_job", selection=RESULT_ASSETS,
                                           partitions_def=snapshots_partitions_def)


@dg.definitions
def defs() -> dg.Definitions:
    return dg.Definitions(jobs=[snapshot_golden_job, snapshot_results_job])
