"""Partitions: a dynamic snapshot dimension, and snapshot x vendor for the fan-out stages."""

import dagster as dg

from bench_assets.adapters import available_adapters
from bench_assets.manifest import check_snapshot_id

# The vendors the pipeline knows (the static dimension): one per adapter module, so adding a
# vendor's adapter adds its partitions. A snapshot's manifest chooses which of them it calls; a
# partition of a vendor the manifest does not configure records that and calls nothing.
VENDORS = sorted(available_adapters())

# The name the instance keys the snapshot partitions by (`DynamicPartitionsDefinition.name` is Optional).
SNAPSHOTS_PARTITIONS_NAME = "snapshots"
snapshots_partitions_def = dg.DynamicPartitionsDefinition(name=SNAPSHOTS_PARTITIONS_NAME)
vendors_partitions_def = dg.StaticPartitionsDefinition(VENDORS)
snapshot_vendor_partitions_def = dg.MultiPartitionsDefinition(
    {"snapshot": snapshots_partitions_def, "vendor": vendors_partitions_def}
)


def snapshot_and_vendor(context: dg.AssetExecutionContext) -> tuple[str, str]:
    keys = context.partition_key.keys_by_dimension
    return check_snapshot_id(keys["snapshot"]), keys["vendor"]
