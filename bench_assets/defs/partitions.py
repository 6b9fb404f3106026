"""Partitions: a dynamic snapshot dimension, and snapshot x vendor for the fan-out stages.

Both dimensions are dynamic: a snapshot and the vendors its manifest configures are registered
together (`bench snapshot add`, the manifests sensor, `bench demo`), so a whole-snapshot backfill
launches a run for each configured vendor and none for the adapters a manifest does not use.
"""

from collections.abc import Iterable

import dagster as dg

from bench_assets.manifest import check_snapshot_id

# The names the instance keys the partitions by (`DynamicPartitionsDefinition.name` is Optional).
SNAPSHOTS_PARTITIONS_NAME = "snapshots"
VENDORS_PARTITIONS_NAME = "vendors"
snapshots_partitions_def = dg.DynamicPartitionsDefinition(name=SNAPSHOTS_PARTITIONS_NAME)
# The vendor keys are shared by every snapshot (Dagster has no per-snapshot dimension): a vendor one
# snapshot configures is a partition of the others too, where it records "not configured" and calls
# nothing.
vendors_partitions_def = dg.DynamicPartitionsDefinition(name=VENDORS_PARTITIONS_NAME)
snapshot_vendor_partitions_def = dg.MultiPartitionsDefinition(
    {"snapshot": snapshots_partitions_def, "vendor": vendors_partitions_def}
)


def snapshot_and_vendor(context: dg.AssetExecutionContext) -> tuple[str, str]:
    keys = context.partition_key.keys_by_dimension
    return check_snapshot_id(keys["snapshot"]), keys["vendor"]


def missing_partitions(
    instance: dg.DagsterInstance, snapshot_ids: Iterable[str], vendors: Iterable[str]
) -> dict[str, list[str]]:
    """The snapshot and vendor keys not registered yet, by partitions name (empty lists omitted)."""
    wanted = {SNAPSHOTS_PARTITIONS_NAME: set(snapshot_ids), VENDORS_PARTITIONS_NAME: set(vendors)}
    missing = {name: sorted(keys - set(instance.get_dynamic_partitions(name))) for name, keys in wanted.items()}
    return {name: keys for name, keys in missing.items() if keys}


def register_snapshot_partitions(instance: dg.DagsterInstance, snapshot_id: str, vendors: Iterable[str]) -> list[str]:
    """Register the snapshot and the vendors its manifest configures (those not registered yet);
    returns the keys added, as `name:key`. Re-running it after a vendor is added to the manifest
    registers that vendor's partitions."""
    added = []
    for name, keys in missing_partitions(instance, [snapshot_id], vendors).items():
        instance.add_dynamic_partitions(name, keys)
        added += [f"{name}:{key}" for key in keys]
    return added
