"""`bench rescore`, `bench estimate`, `bench simulator`, `bench snapshot add` and `bench snapshot remove`.

Each command imports what only it uses (rescoring, the simulator, the estimate) when it runs:
`bench snapshot add` is run often and needs none of them."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

import dagster as dg

from bench_assets.cli.help import fit
from bench_assets.cli.home import bench_home
from bench_assets.cli.progress import step, tracked
from bench_assets.cli.runs import bench_resources, ensure_dagster_home, register_snapshot
from bench_assets.defs.partitions import SNAPSHOTS_PARTITIONS_NAME
from bench_assets.errors import BenchInputError
from bench_assets.manifest import Manifest, load_manifest

if TYPE_CHECKING:
    from bench_assets.adapters.base import Capability
    from bench_assets.golden.rows import GoldenRow


def cmd_rescore(args: argparse.Namespace) -> int:
    from bench_assets.rescore.snapshot import rescore_snapshot

    resources = bench_resources()
    resources["paths"].pull()  # the published site, beyond one machine ($BENCH_FILES_URL)
    warehouse = resources["duckdb"].warehouse()
    warehouse.require(f"bench rescore {args.snapshot}")  # never re-derive against a warehouse created empty
    report = rescore_snapshot(bench_home(), args.snapshot, warehouse, step=step, track=tracked)
    print(fit(report.summary()))
    return 0 if not report.differences else 1


def golden_rows_for(snapshot_id: str) -> list[GoldenRow]:
    """The snapshot's golden rows from its source (nothing is called or written)."""
    from bench_assets.golden.planted import demo_golden_rows
    from bench_assets.golden.rows import load_golden_file

    manifest = load_manifest(bench_home() / "data" / "snapshots" / snapshot_id / "manifest.yaml")
    if manifest.golden.source == "planted_demo":
        return demo_golden_rows(rows_per_stratum=manifest.golden.rows_per_stratum)
    if manifest.golden.source == "registry":  # drawn rows once golden_rows has run; none before
        drawn = Path(os.environ.get("BENCH_PRIVATE_DIR") or bench_home() / "data" / "private") / "golden"
        path = drawn / f"{snapshot_id}.jsonl"
        return load_golden_file(path) if path.exists() else []
    private = Path(os.environ.get("BENCH_PRIVATE_DIR") or bench_home() / "data" / "private")
    assert manifest.golden.path is not None  # GoldenSource requires a path for a file source
    return load_golden_file(private / manifest.golden.path)


def planned_registry_calls(manifest: Manifest) -> dict[Capability, int]:
    """Vendor calls per capability of a registry manifest's draw: each stratum's rows shared evenly
    among its tasks (a record gives one row per task); extract rows go to `extract`, the rest to `search`."""
    calls: dict[Capability, int] = {"search": 0, "extract": 0}
    for spec in manifest.golden.registries.values():
        rows = spec.rows or manifest.golden.rows_per_stratum
        for task in spec.tasks:
            calls["extract" if task == "extract" else "search"] += round(rows / len(spec.tasks))
    for mix in manifest.golden.mix:
        calls["search"] += 2 * (mix.rows_per_stratum // 3) * len(mix.strata)
        calls["extract"] += (mix.rows_per_stratum // 3) * len(mix.strata)
    return calls


def cmd_estimate(args: argparse.Namespace) -> int:
    from bench_assets.fetch.estimate import estimate_spend, format_estimates
    from bench_assets.split.decoys import expected_decoy_calls

    manifest = load_manifest(bench_home() / "data" / "snapshots" / args.snapshot / "manifest.yaml")
    rows = golden_rows_for(args.snapshot)
    planned = planned_registry_calls(manifest) if manifest.golden.source == "registry" and not rows else {}
    decoys = (
        expected_decoy_calls(
            manifest, rows, Path(os.environ.get("BENCH_PRIVATE_DIR") or bench_home() / "data" / "private")
        )
        if not planned
        else {cap: round(n * (1 - manifest.split.public_share) * manifest.decoys.ratio) for cap, n in planned.items()}
    )
    if planned:  # before the registries are fetched: the draw sizes the manifest asks for
        print(
            fit(
                f"{args.snapshot}: registries not fetched yet; counting the rows the manifest draws "
                f"({sum(planned.values())} calls: {planned}) and decoys for a {1 - manifest.split.public_share:.0%} holdout"
            )
        )
        decoys = {cap: planned[cap] + decoys.get(cap, 0) for cap in planned}
    estimates = estimate_spend(manifest, rows, extra_calls=decoys)
    if args.json:
        print(
            json.dumps(
                {
                    "snapshot_id": args.snapshot,
                    "mode": manifest.mode,
                    "golden_rows": len(rows),
                    "decoy_calls": decoys,
                    "total_usd": sum(e.usd for e in estimates),
                    "vendors": [e.as_json() for e in estimates],
                },
                indent=2,
            )
        )
        return 0
    print(
        fit(
            f"expected billed spend of {args.snapshot} ({manifest.mode} mode, {len(rows)} golden rows and "
            f"{sum(decoys.values())} decoy calls), before anything is called:"
        )
    )
    print(format_estimates(estimates))
    return 0


def cmd_simulator(args: argparse.Namespace) -> int:
    from bench_assets.simulator.server import serve

    serve(args.port, args.host, vendor_ports=args.vendor_ports)
    return 0


def cmd_snapshot_add(args: argparse.Namespace) -> int:
    ensure_dagster_home()
    added = register_snapshot(args.snapshot_id)
    what = ", ".join(added) if added else "nothing new (the snapshot and its vendors were registered)"
    print(fit(f"registered {args.snapshot_id!r} in {os.environ['DAGSTER_HOME']}: {what}"))
    return 0


def cmd_snapshot_remove(args: argparse.Namespace) -> int:
    """Remove a snapshot that is not published (`storage.removal`) and unregister its partition (the
    command line holds the snapshot meanwhile: no other command is running it)."""
    from bench_assets.storage.removal import SnapshotPlaces, remove_snapshot

    ensure_dagster_home()
    resources = bench_resources()
    paths = resources["paths"]
    warehouse = resources["duckdb"].warehouse()
    snapshot_id = args.snapshot_id
    instance = dg.DagsterInstance.get()
    registered = instance.has_dynamic_partition(SNAPSHOTS_PARTITIONS_NAME, snapshot_id)
    places = SnapshotPlaces(
        snapshot_dir=paths.snapshots_dir / snapshot_id,
        partitions_dir=warehouse.partitions_dir,
        private_dir=paths.private,
        publish_dir=paths.publish_dir / snapshot_id,
        sentinels_dir=paths.snapshots_dir.parent / "sentinels" / snapshot_id,
    )
    removal = remove_snapshot(warehouse, snapshot_id, places)
    if not registered and not removal.moved and not any(removal.rows.values()):
        raise BenchInputError(
            "bench snapshot remove",
            [(None, "snapshot_id", f"no snapshot {snapshot_id!r} in this home: nothing registered, stored or filed")],
        )
    if registered:
        instance.delete_dynamic_partition(SNAPSHOTS_PARTITIONS_NAME, snapshot_id)
    print(fit(removal.summary()))
    print(
        fit(f"unregistered snapshot partition {snapshot_id!r}" if registered else f"{snapshot_id!r} was not registered")
    )
    return 0
