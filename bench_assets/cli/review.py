"""`bench errata …`, `bench review …` and `bench rotation …`: the integrity commands of the bench CLI."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

import dagster as dg

from bench_assets.aggregate.leaderboard import current_leaderboard
from bench_assets.cli.help import fit
from bench_assets.cli.runs import bench_resources, ensure_dagster_home, materialize, register_snapshot
from bench_assets.defs.resources import BenchPaths
from bench_assets.defs.review import FREEZE_CONFIG
from bench_assets.golden.store import load_golden_rows
from bench_assets.review.business_days import today
from bench_assets.review.gate import evaluate_review_gate
from bench_assets.storage.lifecycle import snapshot_status
from bench_assets.storage.warehouse import Warehouse


def _paths_and_warehouse() -> tuple[BenchPaths, Warehouse]:
    resources = bench_resources()
    warehouse = resources["duckdb"].warehouse()
    warehouse.require("this command reads the snapshot's records")  # never against a warehouse created empty
    return resources["paths"], warehouse


def _materializer(
    launched_by: str,
) -> tuple[Callable[..., None], Callable[[str, str], dg.MultiPartitionKey], Callable[[str], object]]:
    """(materialize(names, partition_key, run_config=None), vendor_key, register) on the persistent
    Dagster instance."""
    ensure_dagster_home()

    def run(names: tuple[str, ...], partition_key: Any, run_config: dict[str, Any] | None = None) -> None:
        result = materialize(names, partition_key, launched_by, run_config)
        if not result.success:
            failure = next((e for e in result.all_events if e.event_type_value == "STEP_FAILURE"), None)
            error = failure.step_failure_data.error if failure else None
            detail = error.message.strip() if error else "see the run in the Dagster UI"
            raise SystemExit(f"materializing {', '.join(names)} for {partition_key} failed: {detail}")

    def vendor_key(snapshot: str, vendor: str) -> dg.MultiPartitionKey:
        return dg.MultiPartitionKey({"snapshot": snapshot, "vendor": vendor})

    return run, vendor_key, register_snapshot


def cmd_errata_apply(args: argparse.Namespace) -> int:
    from bench_assets.publish.errata import apply_erratum  # publication's code: only the commands that publish

    materialize, vendor_key, register = _materializer("bench errata apply")
    entry = apply_erratum(*_paths_and_warehouse(), args.snapshot, args.erratum_id, materialize, vendor_key, register)
    print(fit(entry["summary"]))
    print(
        fit(
            f"published {entry['version']} (corrects {entry['corrects']}, which is kept unchanged): "
            f"data/publish/{entry['version']}/errata.json"
        )
    )
    return 0


def cmd_review_send(args: argparse.Namespace) -> int:
    """Write the packets (freezing the snapshot), then show the gate. The gate is closed the day
    the packets go out (that is the review period), so it is shown, not returned: sending succeeded."""
    materialize, _, register = _materializer("bench review send")
    register(args.snapshot)
    materialize(("review_packets",), args.snapshot, FREEZE_CONFIG)  # sending is the decision to freeze
    cmd_review_status(args)
    return 0


def cmd_review_status(args: argparse.Namespace) -> int:
    paths, warehouse = _paths_and_warehouse()
    manifest = paths.manifest(args.snapshot)
    status = snapshot_status(warehouse, args.snapshot)
    on = date.fromisoformat(args.on) if getattr(args, "on", None) else today()
    print(fit(f"{args.snapshot}: {status} ({manifest.mode} mode)"))
    if status != "frozen":
        return 0
    gate = evaluate_review_gate(
        warehouse,
        manifest,
        current_leaderboard(warehouse, manifest),
        load_golden_rows(warehouse, args.snapshot),
        warehouse.split(args.snapshot),
        on,
    )
    for vendor, v in gate.vendors.items():
        print(
            fit(
                f"  {vendor:<11} sent {v['sent_on']}  {v['business_days_elapsed']:>2}/{manifest.review.business_days} "
                f"business days  publishable from {v['opens_on']}"
            )
        )
    print(fit(gate.summary()))
    return 0 if gate.passed else 1


def cmd_review_reply(args: argparse.Namespace) -> int:
    """Store a vendor's reply verbatim. Before publication it goes with the snapshot; after, it is
    published at once as a new version (nothing re-run; the published version is kept unchanged)."""
    from bench_assets.publish.replies import file_reply

    def materializer() -> tuple[Callable[[tuple[str, ...], Any], None], Callable[[str], object]]:
        materialize, _, register = _materializer("bench review reply")
        return materialize, register

    received = date.fromisoformat(args.received_on) if args.received_on else today()
    done = file_reply(*_paths_and_warehouse(), args.snapshot, args.vendor, Path(args.file), received, materializer)
    print(fit(f"stored {args.vendor}'s reply verbatim: {done['path']} (received {received}, sha256 {done['sha256']})"))
    if done["new_version"]:
        print(
            fit(
                f"{args.snapshot} is published: published the reply as {done['version']} (supersedes "
                f"{done['corrects']}, which is kept unchanged): data/publish/{done['version']}/replies/"
            )
        )
    return 0


def cmd_rotation_plan(args: argparse.Namespace) -> int:
    materialize, _, register = _materializer("bench rotation plan")
    register(args.snapshot)
    materialize(("rotation_plan",), args.snapshot)
    paths, _ = _paths_and_warehouse()
    plan = paths.private / "rotation" / f"{args.snapshot}.yaml"
    print(fit(f"rotation plan for the next quarter (review it; nothing is rewritten): {plan}"))
    return 0
