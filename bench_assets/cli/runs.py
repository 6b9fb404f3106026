"""What the `bench` commands share: the Dagster home and instance, the resources the code location
binds, and materializing assets in this process."""

from __future__ import annotations

import os
import shutil
import time
from typing import Any

import dagster as dg
from filelock import FileLock

from bench_assets.cli.home import bench_home
from bench_assets.defs.partitions import register_snapshot_partitions
from bench_assets.defs.resources import BenchPaths, VendorGateway, vendor_keys_from_env, warehouse_from_env
from bench_assets.manifest import load_manifest
from bench_assets.runtime import give_back_memory

# The full event log stays in the Dagster instance; the terminal shows warnings and errors only.
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def ensure_dagster_home() -> str:
    """Use $DAGSTER_HOME, or a persistent `.dagster_home` beside the data (so runs show in the UI)."""
    home = (os.environ.get("DAGSTER_HOME") and os.path.abspath(os.environ["DAGSTER_HOME"])) or str(
        bench_home() / ".dagster_home"
    )
    os.makedirs(home, exist_ok=True)
    # Dagster creates its storage on first use (SQLite files and their schema migrations), and two
    # commands starting together in a fresh home would both migrate it and both fail ("more than
    # one head present"): the home is set up and first opened by one command at a time.
    with FileLock(os.path.join(home, ".bench-setup.lock")):
        config = bench_home() / "dagster.yaml"
        if config.exists() and not os.path.exists(os.path.join(home, "dagster.yaml")):
            shutil.copy(config, os.path.join(home, "dagster.yaml"))
        os.environ["DAGSTER_HOME"] = home
        with dg.DagsterInstance.get():
            pass
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
    names: tuple[str, ...],
    partition_key: str | dg.MultiPartitionKey,
    launched_by: str,
    run_config: dict[str, Any] | None = None,
) -> dg.ExecuteInProcessResult:
    """Materialize `names` for one partition on the persistent instance, as a run the UI shows;
    `run_config`: the assets' config (`review_packets` needs `freeze: true` to send anything)."""
    # The asset definitions are imported by the commands that materialize, here: importing them
    # takes seconds, and the commands that only read (`bench rescore`, `bench estimate`) need none.
    from bench_assets.definitions import unbound_assets

    return dg.materialize(
        unbound_assets(*names),
        instance=dg.DagsterInstance.get(),
        partition_key=partition_key,
        resources=bench_resources(),
        raise_on_error=False,
        tags={"bench/launched_by": launched_by},
        run_config={**QUIET, **(run_config or {})},
    )


def why_it_failed(result: dg.ExecuteInProcessResult) -> str:
    """Why a run failed, as the operator can act on it: each blocking check that failed with its
    description, and each step that failed with its message (not the stack trace: that is in the
    run's event log)."""
    reasons = []
    for event in result.all_events:
        check = event.event_specific_data
        if isinstance(check, dg.AssetCheckEvaluation):
            if not check.passed:
                reasons.append(f"check {check.check_name} of {check.asset_key.to_user_string()}: {check.description}")
        elif event.event_type_value == "STEP_FAILURE":
            failure = event.step_failure_data
            said = failure.user_failure_data.description if failure.user_failure_data else None
            said = said or (failure.error.message.strip() if failure.error else "")
            if failure.error and failure.error.cls_name == "DagsterAssetCheckFailedError":
                continue  # the check itself is named above
            reasons.append(f"{event.step_key}: {said}")
    return "\n".join(reasons) or "see the run in the Dagster UI"


def materialize_snapshot_stage(snapshot_id: str, names: tuple[str, ...]) -> None:
    result = materialize(names, snapshot_id, "bench demo")
    if not result.success:
        raise SystemExit(
            f"materializing {', '.join(names)} for {snapshot_id} failed (run {result.run_id} in the Dagster UI):\n"
            + why_it_failed(result)
        )


def materialize_vendor_partition(snapshot_id: str, vendor: str) -> tuple[str, bool, float, str]:
    """One vendor partition (fetch + score) in its own process, on the persistent instance; returns
    (vendor, succeeded, seconds, why it failed). The memory the partition took is given back once
    it is done: a pool's process goes on to the next partition, and would otherwise keep the
    largest one's for the rest of its life."""
    started = time.monotonic()
    result = materialize(
        ("vendor_responses", "vendor_scores"),
        dg.MultiPartitionKey({"snapshot": snapshot_id, "vendor": vendor}),
        "bench demo",
    )
    give_back_memory()
    return vendor, result.success, time.monotonic() - started, "" if result.success else why_it_failed(result)


def register_snapshot(snapshot_id: str) -> list[str]:
    """Add the snapshot and the vendors its manifest configures as partitions (its manifest must
    validate first); returns the keys added."""
    manifest = load_manifest(
        bench_home() / "data" / "snapshots" / snapshot_id / "manifest.yaml"
    )  # a bad one fails here
    return register_snapshot_partitions(dg.DagsterInstance.get(), snapshot_id, manifest.vendors)
