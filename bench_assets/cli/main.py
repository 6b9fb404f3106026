"""The `bench` command: demo, rescore, simulator, snapshot add."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

from bench_assets.cli.runs import (QUIET, _resources, _root, ensure_dagster_home, materialize_snapshot_stage,
                                   materialize_vendor_partition, register_snapshot)
from bench_assets.errors import BenchError, BenchInputError

DEMO_SNAPSHOT = "web_search-2026-q3"

# The demo's sentinel batch is published at a fixed simulated time, so the demo is reproducible and
# the probe schedule, running in real time under `make dev`, finds nothing of it due.
DEMO_SENTINELS_PUBLISHED_AT = "2026-07-01T00:00:00+00:00"
DEMO_SENTINELS = 10  # pages in the batch (each costs a probe per vendor and tick until found)


def run_sentinel_cycle(snapshot_id: str) -> tuple[bool, float, str]:
    """A simulated 30-day sentinel cycle (publish a batch, then 121 six-hourly probe ticks through
    the probe schedule and job) in its own process, beside the vendor partitions."""
    import dagster as dg

    from bench_assets.cli.sentinel_cycle import simulate_probe_cycle
    from bench_assets.sentinels.pages import parse_utc

    started = time.monotonic()
    try:
        outcome = simulate_probe_cycle(snapshot_id, _resources(), dg.DagsterInstance.get(),
                                       parse_utc(DEMO_SENTINELS_PUBLISHED_AT), count=DEMO_SENTINELS,
                                       run_config=QUIET).summary
    except Exception as exc:  # reported by the parent, which decides
        return False, time.monotonic() - started, f"{type(exc).__name__}: {exc}"
    ok = outcome["failed_runs"] == 0
    return ok, time.monotonic() - started, (f"{outcome['ticks']} ticks, {outcome['probes']} probes, "
                                            f"${outcome['spend_usd']:.4f}")


def run_snapshot(snapshot_id: str, workers: int = 4) -> dict:
    """Materialize a whole snapshot through Dagster: golden stages, vendor partitions in parallel
    processes (and, simulated, a 30-day sentinel cycle beside them), then aggregates and
    publication. Returns the published leaderboard."""
    from bench_assets.manifest import load_manifest

    ensure_dagster_home()
    manifest = load_manifest(_root() / "data" / "snapshots" / snapshot_id / "manifest.yaml")
    register_snapshot(snapshot_id)
    # The simulated sentinel cycle needs no golden row: it runs in its own process beside the rest.
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as sentinels:
        cycle = sentinels.submit(run_sentinel_cycle, snapshot_id) if manifest.mode == "simulated" else None
        materialize_snapshot_stage(snapshot_id, ("snapshot_manifest", "golden_rows", "golden_verifications",
                                                 "query_split", "dead_golden_rows", "decoy_queries"))
        vendors = sorted(manifest.vendors)
        failures = []
        with ProcessPoolExecutor(max_workers=max(1, workers), mp_context=get_context("spawn")) as pool:
            for vendor, ok, seconds in pool.map(materialize_vendor_partition, [snapshot_id] * len(vendors), vendors):
                print(f"  {vendor:<11} {'ok' if ok else 'FAILED'} in {seconds:.1f}s", flush=True)
                if not ok:
                    failures.append(vendor)
        if failures:
            raise SystemExit(f"vendor partitions failed: {failures}; see the runs in the Dagster UI")
        if cycle is not None:
            ok, seconds, summary = cycle.result()
            print(f"  {'sentinels':<11} {'ok' if ok else 'FAILED'} in {seconds:.1f}s: simulated 30 days, {summary}",
                  flush=True)
            if not ok:
                raise SystemExit(f"the simulated sentinel cycle failed: {summary}")
    materialize_snapshot_stage(snapshot_id, ("agent_trials", "vendor_leaderboard", "published_snapshot"))
    return json.loads((_root() / "data" / "publish" / snapshot_id / "leaderboard.json").read_text())


def ttr(metrics: dict) -> str:
    """The time-to-retrievability median as the terminal shows it: hours, "not reached", or —."""
    fig = metrics.get("ttr_median_hours")
    if not fig:
        return "—"
    return "not reached" if fig["value"] is None else f"{fig['value']:.1f}"


def print_leaderboard(board: dict) -> None:
    from bench_assets.publish.format import format_rank_range

    print(f"\nLeaderboard {board['snapshot_id']} (mode {board['mode']}; "
          f"{'headline' if board['headline_eligible'] else 'illustrative, not headline-eligible'})")
    rank = board.get("rank_metric", "correct_rate")
    header = (f"{'#':>2} {'grp':>3} {'ranks':>5}  {'vendor':<11} {'ranked':>7} {'n':>4} {'correct':>8} {'n':>4}  {'hit@1':>6} "
              f"{'hit@10':>6} {'fidelity':>8} {'$/correct':>9} {'TTR h':>11}  agent-ready")
    print(((board.get("ranking") or {}).get("note") or "") + "\n" + header)
    print("-" * len(header))
    for e in board["vendors"]:
        if e["status"] != "scored":
            print(f"{'':>2} {'':>3} {'':>5}  {e['vendor']:<11} {e['status']}: {e.get('reason')}")
            continue
        m = e["metrics"]

        def v(name: str, fmt: str = "{:.3f}") -> str:
            x = (m.get(name) or {}).get("value")
            return "—" if x is None else fmt.format(x)

        print(f"{e['position']:>2} {e['rank_group']:>3} {format_rank_range(e):>5}  {e['vendor']:<11} {v(rank):>7} {m[rank]['n']:>4} "
              f"{v('correct_rate'):>8} {m['correct_rate']['n']:>4}  {v('hit_at_1'):>6} {v('hit_at_10'):>6} "
              f"{v('fidelity_mean'):>8} {v('cost_per_correct_usd', '${:.4f}'):>9} {ttr(m):>11}  {(e.get('agent_ready') or {}).get('label', '—')}")


def snapshot_arg(text: str) -> str:
    """A snapshot id argument: well-formed, and with a manifest under data/snapshots/ (checked before anything runs)."""
    import re

    from bench_assets.manifest import SNAPSHOT_ID_PATTERN

    if not re.match(SNAPSHOT_ID_PATTERN, text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a snapshot id (like web_search-2026-q3: "
                                         f"{SNAPSHOT_ID_PATTERN})")
    snapshots = _root() / "data" / "snapshots"
    if not (snapshots / text / "manifest.yaml").exists():
        known = sorted(p.parent.name for p in snapshots.glob("*/manifest.yaml"))
        raise argparse.ArgumentTypeError(f"unknown snapshot {text!r}: no {snapshots / text / 'manifest.yaml'} "
                                         f"(known: {', '.join(known) or 'none'})")
    return text


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return value


def port_arg(text: str) -> int:
    value = positive_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a TCP port (1-65535)")
    return value


def env_positive_int(name: str, default: int) -> int:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        return positive_int(text)
    except argparse.ArgumentTypeError as exc:
        raise BenchInputError(f"${name}", [(None, name, str(exc))]) from None


def cmd_demo(args: argparse.Namespace) -> int:
    from bench_assets.simulator.server import start_simulator

    started = time.monotonic()
    workers = args.workers or env_positive_int("BENCH_WORKERS", 4)
    sim = None
    if not os.environ.get("BENCH_SIMULATOR_URL"):
        sim = start_simulator()
        os.environ["BENCH_SIMULATOR_URL"] = sim.base_url
        print(f"simulator on {sim.base_url} (pid {sim.pid})", flush=True)
    try:
        board = run_snapshot(args.snapshot, workers=workers)
    finally:
        if sim is not None:
            sim.stop()
            os.environ.pop("BENCH_SIMULATOR_URL", None)
    print_leaderboard(board)
    site = _root() / "data" / "publish" / args.snapshot / "index.html"
    print(f"\nsite: {site}\nDagster runs: DAGSTER_HOME={os.environ['DAGSTER_HOME']} (open with `make dev`)")
    print(f"demo finished in {time.monotonic() - started:.1f}s")
    return 0


def cmd_rescore(args: argparse.Namespace) -> int:
    from bench_assets.rescore.snapshot import rescore_snapshot

    report = rescore_snapshot(_root(), args.snapshot, _resources()["duckdb"].warehouse())
    print(report.summary())
    return 0 if not report.differences else 1


def golden_rows_for(snapshot_id: str) -> list:
    """The snapshot's golden rows from its source (nothing is called or written)."""
    from bench_assets.golden.rows import load_golden_file
    from bench_assets.manifest import load_manifest
    from bench_assets.golden.planted import demo_golden_rows

    manifest = load_manifest(_root() / "data" / "snapshots" / snapshot_id / "manifest.yaml")
    if manifest.golden.source == "planted_demo":
        return demo_golden_rows(rows_per_stratum=manifest.golden.rows_per_stratum)
    private = Path(os.environ.get("BENCH_PRIVATE_DIR") or _root() / "data" / "private")
    return load_golden_file(private / manifest.golden.path)


def cmd_estimate(args: argparse.Namespace) -> int:
    from bench_assets.fetch.estimate import estimate_spend, format_estimates
    from bench_assets.manifest import load_manifest

    manifest = load_manifest(_root() / "data" / "snapshots" / args.snapshot / "manifest.yaml")
    from bench_assets.split.decoys import expected_decoy_calls

    rows = golden_rows_for(args.snapshot)
    decoys = expected_decoy_calls(manifest, rows, Path(os.environ.get("BENCH_PRIVATE_DIR") or _root() / "data" / "private"))
    estimates = estimate_spend(manifest, rows, extra_calls=decoys)
    if args.json:
        print(json.dumps({"snapshot_id": args.snapshot, "mode": manifest.mode, "golden_rows": len(rows),
                          "decoy_calls": decoys, "total_usd": sum(e.usd for e in estimates),
                          "vendors": [e.as_json() for e in estimates]}, indent=2))
        return 0
    print(f"expected billed spend of {args.snapshot} ({manifest.mode} mode, {len(rows)} golden rows and "
          f"{sum(decoys.values())} decoy calls), before anything is called:")
    print(format_estimates(estimates))
    return 0


def cmd_simulator(args: argparse.Namespace) -> int:
    from bench_assets.simulator.server import serve

    serve(args.port, args.host)
    return 0


def cmd_snapshot_add(args: argparse.Namespace) -> int:
    ensure_dagster_home()
    register_snapshot(args.snapshot_id)
    print(f"registered snapshot partition {args.snapshot_id!r} in {os.environ['DAGSTER_HOME']}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bench", description="Reproducible benchmark of web-search APIs.")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run a whole snapshot on the embedded simulator and print the leaderboard")
    demo.add_argument("--snapshot", type=snapshot_arg, default=DEMO_SNAPSHOT)
    demo.add_argument("--workers", type=positive_int, default=None,
                      help="vendor partitions fetched in parallel processes (default: $BENCH_WORKERS or 4)")
    demo.set_defaults(func=cmd_demo)
    rescore = sub.add_parser("rescore", help="re-derive every score from archived responses; report differences")
    rescore.add_argument("snapshot", type=snapshot_arg)
    rescore.set_defaults(func=cmd_rescore)
    estimate = sub.add_parser("estimate", help="print the expected billed spend per vendor before anything is called")
    estimate.add_argument("snapshot", type=snapshot_arg)
    estimate.add_argument("--json", action="store_true", help="print the estimate as JSON (one object per vendor)")
    estimate.set_defaults(func=cmd_estimate)
    simulator = sub.add_parser("simulator", help="run the local vendor simulator")
    simulator.add_argument("--port", type=port_arg, default=8765)
    simulator.add_argument("--host", default="127.0.0.1")
    simulator.set_defaults(func=cmd_simulator)
    snapshot = sub.add_parser("snapshot", help="manage snapshot partitions")
    snap_sub = snapshot.add_subparsers(dest="snapshot_command", required=True)
    add = snap_sub.add_parser("add", help="register a snapshot (its manifest must validate) as a Dagster partition")
    add.add_argument("snapshot_id", type=snapshot_arg)
    add.set_defaults(func=cmd_snapshot_add)
    from bench_assets.cli.review import add_integrity_commands

    add_integrity_commands(sub)  # errata, review, rotation
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except BenchInputError as exc:
        print(f"bench: bad input:\n{exc}", file=sys.stderr)
        return 2
    except BenchError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
