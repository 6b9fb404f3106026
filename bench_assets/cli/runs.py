"""What every `bench` command shares: the bench home, the Dagster home and instance, the
resources the code location binds, and materializing assets in this process."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

# The full event log stays in the Dagster instance; the terminal shows warnings and errors only.
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def _root() -> Path:
    return Path(os.environ.get("BENCH_HOME", os.getcwd())).resolve()


def ensure_dagster_home() -> Path:
    """Use $DAGSTER_HOME, or a persistent `.dagster_home` beside the data (so runs show in the UI)."""
    home = Path(os.environ.get("DAGSTER_HOME") or _root() / ".dagster_home").resolve()
    home.mkdir(parents=True, exist_ok=True)
    config = _root() / "dagster.yaml"
    if config.exists() and not (home / "dagster.yaml").exists():
        shutil.copy(config, home / "dagster.yaml")
    os.environ["DAGSTER_HOME"] = str(home)
    return home


def _resources() -> dict[str, Any]:
    """The resources the code location binds, for the bench home of this command."""
    from bench_assets.defs.resources import BenchPaths, VendorGateway, vendor_keys_from_env, warehouse_from_env

    paths = BenchPaths(root=str(_root()), private_dir=os.environ.get("BENCH_PRIVATE_DIR", ""))
    return {"paths": paths, "duckdb": warehouse_from_env(paths),
            "gateway": VendorGateway(simulator_url=os.environ.get("BENCH_SIMULATOR_URL", "")),
            "vendor_keys": vendor_keys_from_env(paths.snapshots_dir)}


def _assets(*names: str) -> list:
    from bench_assets.definitions import unbound_assets

    return unbound_assets(*names)


def materialize_snapshot_stage(snapshot_id: str, names: tuple[str, ...]) -> None:
    import dagster as dg

    instance = dg.DagsterInstance.get()
    result = dg.materialize(_assets(*names), instance=instance, partition_key=snapshot_id, resources=_resources(),
                            raise_on_error=False, tags={"bench/launched_by": "bench demo"}, run_config=QUIET)
    if not result.success:
        raise SystemExit(f"materializing {', '.join(names)} for {snapshot_id} failed; see the run in the Dagster UI")


def materialize_vendor_partition(snapshot_id: str, vendor: str) -> tuple[str, bool, float]:
    """One vendor partition (fetch + score) in its own process, on the persistent instance."""
    import dagster as dg

    started = time.monotonic()
    instance = dg.DagsterInstance.get()
    key = dg.MultiPartitionKey({"snapshot": snapshot_id, "vendor": vendor})
    result = dg.materialize(_assets("vendor_responses", "vendor_scores"), instance=instance, partition_key=key,
                            resources=_resources(), raise_on_error=False, tags={"bench/launched_by": "bench demo"},
                            run_config=QUIET)
    return vendor, result.success, time.monotonic() - started


def register_snapshot(snapshot_id: str) -> None:
    import dagster as dg

    from bench_assets.defs.partitions import snapshots_partitions_def
    from bench_assets.manifest import load_manifest

    load_manifest(_root() / "data" / "snapshots" / snapshot_id / "manifest.yaml")  # a bad manifest fails here
    instance = dg.DagsterInstance.get()
    if not instance.has_dynamic_partition(snapshots_partitions_def.name, snapshot_id):
        instance.add_dynamic_partitions(snapshots_partitions_def.name, [snapshot_id])


