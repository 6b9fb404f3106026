"""Partitions: a dynamic snapshot dimension, and snapshot x vendor for the fan-out stages."""

import dagster as dg

from bench_assets.adapters import available_adapters

# The vendors the pipeline knows (the static dimension): one per adapter module, so adding a
# vendor's adapter adds its partitions. A snapshot's manifest chooses which of them it calls; a
# partition of a vendor the manifest does not configure records that and calls nothing.
VENDORS = sorted(available_adapters())

snapshots_partitions_def = dg.DynamicPartitionsDefinition(name="snapshots")
vendors_partitions_def = dg.StaticPartitionsDefinition(VENDORS)
snapshot_vendor_partitions_def = dg.MultiPartitionsDefinition(
    {"snapshot": snapshots_partitions_def, "vendor": vendors_partitions_def}
)


def snapshot_and_vendor(context: dg.AssetExecutionContext) -> tuple[str, str]:
    keys = context.partition_key.keys_by_dimension  # type: ignore[union-attr]
    return keys["snapshot"], keys["vendor"]
