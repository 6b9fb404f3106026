"""The snapshot's pinned manifest, and the sensor that registers each new manifest (and its vendors) as partitions."""

from datetime import UTC, datetime

import dagster as dg

from bench_assets.defs.errors import reports_bench_errors
from bench_assets.defs.partitions import SNAPSHOTS_PARTITIONS_NAME, missing_partitions, snapshots_partitions_def
from bench_assets.defs.resources import BenchPaths, WarehouseResource, bench_paths_from_env
from bench_assets.errors import BenchInputError
from bench_assets.manifest import load_manifest, manifest_sha256


@dg.asset(partitions_def=snapshots_partitions_def, group_name="golden", kinds={"duckdb", "yaml"})
@reports_bench_errors
def snapshot_manifest(
    context: dg.AssetExecutionContext, paths: BenchPaths, duckdb: WarehouseResource
) -> dg.MaterializeResult:
    """The snapshot's pinned manifest (mode, vendors, plans, prices, limits, exclusions, k values,
    fidelity weights), validated and recorded with its SHA-256 so every number traces back to it."""
    import pandas as pd

    from bench_assets.storage.lifecycle import refuse_if_published, snapshot_status

    snapshot_id = context.partition_key
    warehouse = duckdb.warehouse()
    refuse_if_published(warehouse, snapshot_id, "snapshot_manifest")
    path = paths.manifest_path(snapshot_id)
    manifest = paths.manifest(snapshot_id)
    digest = manifest_sha256(path)
    warehouse.replace_rows(
        "snapshots",
        pd.DataFrame(
            [
                {
                    "snapshot_id": snapshot_id,
                    "mode": manifest.mode,
                    "manifest_path": str(path),
                    "manifest_sha256": digest,
                    "manifest_json": manifest.model_dump_json(),
                    "status": snapshot_status(warehouse, snapshot_id),  # the lifecycle state is kept
                    "registered_at": datetime.now(UTC),
                }
            ]
        ),
        {"snapshot_id": snapshot_id},
    )
    return dg.MaterializeResult(
        metadata={
            "mode": manifest.mode,
            "manifest_sha256": digest,
            "vendors": dg.MetadataValue.json(sorted(manifest.vendors)),
            "excluded": dg.MetadataValue.json([e.vendor for e in manifest.excluded]),
        }
    )


def manifest_review(paths: BenchPaths) -> tuple[dict[str, list[str]], dict[str, str], list[str]]:
    """The simulated snapshots under `paths` whose manifest validates, with the vendors each
    configures (the sensor registers those); the problems of those whose manifest does not
    (snapshot id -> the error, naming file and field); and the live ones, left to `bench snapshot add`."""
    valid: dict[str, list[str]] = {}
    problems: dict[str, str] = {}
    live: list[str] = []
    for path in sorted(paths.snapshots_dir.glob("*/manifest.yaml")):
        snapshot_id = path.parent.name
        try:
            manifest = load_manifest(path)  # its snapshot_id must also be its folder's name, the partition key
        except BenchInputError as exc:
            problems[snapshot_id] = str(exc)
            continue
        if manifest.mode == "live":
            live.append(snapshot_id)
        else:
            valid[snapshot_id] = sorted(manifest.vendors)
    return valid, problems, live


def snapshot_sensor(paths: BenchPaths) -> dg.SensorDefinition:
    """The sensor that registers new snapshots and vendors, reading manifests under `paths` (bound
    when defined, like the schedules)."""

    @dg.sensor(
        name="snapshot_manifests_sensor",
        minimum_interval_seconds=60,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Registers each new simulated data/snapshots/<id>/manifest.yaml that validates as a "
        "`snapshots` partition, and each vendor it configures as a `vendors` partition (as `bench "
        "snapshot add ID` does), so they appear in the UI's partition pickers. Registering runs "
        "nothing. A manifest that does not validate is reported, file and field, and registered once "
        "fixed. A live manifest is not registered here: its partitions would be in every backfill of "
        "all partitions, and each costs money, so it takes `bench snapshot add ID`. Running by default.",
    )
    def snapshot_manifests(context: dg.SensorEvaluationContext) -> dg.SensorResult | dg.SkipReason:
        valid, problems, live = manifest_review(paths)
        registered = set(context.instance.get_dynamic_partitions(SNAPSHOTS_PARTITIONS_NAME))
        # an unregistered snapshot's broken manifest is news; a registered one's is the operator's edit
        problems = {s: p for s, p in problems.items() if s not in registered}
        live = [s for s in live if s not in registered]
        for snapshot_id, problem in problems.items():
            context.log.warning(f"{snapshot_id} not registered: {problem}")
        vendors = [v for snapshot_vendors in valid.values() for v in snapshot_vendors]
        missing = missing_partitions(context.instance, valid, vendors)
        if not missing:
            reasons = ["no new snapshot manifest or vendor" if not problems else "no new valid snapshot manifest"]
            if problems:
                reasons.append(f"not registered: {'; '.join(problems.values())}")
            if live:
                reasons.append(f"live, registered by `bench snapshot add` only: {', '.join(live)}")
            return dg.SkipReason("; ".join(reasons))
        return dg.SensorResult(
            dynamic_partitions_requests=[
                dg.AddDynamicPartitionsRequest(partitions_def_name=name, partition_keys=keys)
                for name, keys in missing.items()
            ]
        )

    return snapshot_manifests


snapshot_manifests_sensor = snapshot_sensor(bench_paths_from_env())
