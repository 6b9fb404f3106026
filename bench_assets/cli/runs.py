"""What the `bench` commands share: the Dagster home and instance, the resources the code location
binds, and materializing assets in this process."""

from __future__ import annotations

import os
import shutil
import time
from typing import Any

import dagster as dg

from bench_assets.cli.home import bench_home
from bench_assets.definitions import unbound_assets
from bench_assets.defs.partitions import SNAPSHOTS_PARTITIONS_NAME
from bench_assets.defs.resources import BenchPaths, VendorGateway, vendor_keys_from_env, warehouse_from_env
from bench_assets.manifest import load_manifest

# The full event log stays in the Dagster instance; the terminal shows warnings and errors only.
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def ensure_dagster_home() -> str:
    """Use $DAGSTER_HOME, or a persistent `.dagster_home` beside the data (so runs show in the UI)."""
    home = (os.environ.get("DAGSTER_HOME") and os.path.abspath(os.environ["DAGSTER_HOME"])) or str(
        bench_home() / ".dagster_home"
    )
    os.makedirs(home, exist_ok=True)
    config = bench_home() / "dagster.yaml"
    if config.exists() and not os.path.exists(os.path.join(home, "dagster.yaml")):
        shutil.copy(config, os.path.join(home, "dagster.yaml"))
    os.environ["DAGSTER_HOME"] = home
    return home


def bench_resources() -> dict[str, Any]:
    """The resources the code location binds, for the bench home of this command."""
    paths = BenchPaths(
        root=str(bench_home()),
        private_dir=os.environ.get("BENCH_PRIVATE_DIR", ""),
        files_url=os.environ.get("BENCH_FILES_URL", ""),
        private_url=os.environ.get("BENCH_PRIVATE_URL", ""),
    )
    return {
        "paths": paths,
        "duckdb": warehouse_from_env(paths),
        "gateway": VendorGateway(simulator_url=os.environ.get("BENCH_SIMULATOR_URL", "")),
        "vendor_keys": vendor_keys_from_env(paths.snapshots_dir),
    }


def materialize(
    names: tuple[str, ...], partition_key: str | dg.MultiPartitionKey, launched_by: str
) -> dg.ExecuteInProcessResult:
    """Materialize `names` for one partition on the persistent instance, as a run the UI shows."""
    return dg.materialize(
        unbound_assets(*names),
        instance=dg.DagsterInstance.get(),
        partition_key=partition_key,
        resources=bench_resources(),
        raise_on_error=False,
        tags={"bench/launched_by": launched_by},
        run_config=QUIET,
    )


def materialize_snapshot_stage(snapshot_id: str, names: tuple[str, ...]) -> None:
    if not materialize(names, snapshot_id, "bench demo").success:
        raise SystemExit(f"materializing {', '.join(names)} for {snapshot_id} failed; see the run in the Dagster UI")


def materialize_vendor_partition(snapshot_id: str, vendor: str) -> tuple[str, bool, float]:
    """One vendor partition (fetch + score) in its own process, on the persistent instance."""
    started = time.monotonic()
    result = materialize(
        ("vendor_responses", "vendor_scores"),
        dg.MultiPartitionKey({"snapshot": snapshot_id, "vendor": vendor}),
        "bench demo",
    )
    return vendor, result.success, time.monotonic() - started


def register_snapshot(snapshot_id: str) -> None:
    """Add the snapshot as a `snapshots` partition (its manifest must validate first)."""
    load_manifest(bench_home() / "data" / "snapshots" / snapshot_id / "manifest.yaml")  # a bad manifest fails here
    instance = dg.DagsterInstance.get()
    if not instance.has_dynamic_partition(SNAPSHOTS_PARTITIONS_NAME, snapshot_id):
        instance.add_dynamic_partitions(SNAPSHOTS_PARTITIONS_NAME, [snapshot_id])
