"""`bench demo`: a whole snapshot on the embedded simulator, end to end, then the leaderboard."""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import time
from collections.abc import Callable
from typing import Any

import dagster as dg

from bench_assets.cli.home import bench_home
from bench_assets.cli.main import DEMO_SNAPSHOT, env_positive_int
from bench_assets.cli.quarter import cmd_quarter_next
from bench_assets.cli.runs import (
    QUIET,
    bench_resources,
    ensure_dagster_home,
    materialize_snapshot_stage,
    materialize_vendor_partition,
    register_snapshot,
)
from bench_assets.cli.sentinel_cycle import simulate_probe_cycle
from bench_assets.errors import BenchInputError
from bench_assets.manifest import load_manifest
from bench_assets.publish.format import LETTERS_NOTE, format_rank_range
from bench_assets.review.quarter import next_snapshot_id
from bench_assets.runtime import machine_workers, spawned_pool
from bench_assets.sentinels.pages import parse_utc
from bench_assets.simulator.app import CANDIDATE_PAGES_ENV, DRIFT_QUARTERS_ENV
from bench_assets.simulator.server import start_simulator

# The demo's sentinel batch is published at a fixed simulated time, so the demo is reproducible and
# the probe schedule, running in real time under `make dev`, finds nothing of it due.
DEMO_SENTINELS_PUBLISHED_AT = "2026-07-01T00:00:00+00:00"
DEMO_SENTINELS = 10  # pages in the batch (each costs a probe per vendor and tick until found)


def run_sentinel_cycle(snapshot_id: str) -> tuple[bool, float, str]:
    """A simulated 30-day sentinel cycle (publish a batch, then 121 six-hourly probe ticks through
    the probe schedule and job) in its own process, beside the vendor partitions."""
    started = time.monotonic()
    try:
        outcome = simulate_probe_cycle(
            snapshot_id,
            bench_resources(),
            dg.DagsterInstance.get(),
            parse_utc(DEMO_SENTINELS_PUBLISHED_AT),
            count=DEMO_SENTINELS,
            run_config=QUIET,
        ).summary
    except Exception as exc:  # reported by the parent, which decides
        return False, time.monotonic() - started, f"{type(exc).__name__}: {exc}"
    ok = outcome["failed_runs"] == 0
    return (
        ok,
        time.monotonic() - started,
        (f"{outcome['ticks']} ticks, {outcome['probes']} probes, ${outcome['spend_usd']:.4f}"),
    )


def run_snapshot(snapshot_id: str, workers: int = 2, vendors_done: Callable[[], None] = lambda: None) -> dict[str, Any]:
    """Materialize a whole snapshot through Dagster: golden stages, vendor partitions in parallel
    processes (and, simulated, a 30-day sentinel cycle beside them), agent trials, then aggregates
    and publication; `vendors_done` is called once nothing more is asked of the vendors (before the
    aggregates). Returns the published leaderboard."""
    ensure_dagster_home()
    manifest = load_manifest(bench_home() / "data" / "snapshots" / snapshot_id / "manifest.yaml")
    register_snapshot(snapshot_id)
    # The simulated sentinel cycle needs no golden row: it runs in its own process beside the rest.
    with spawned_pool(1) as sentinels:
        cycle = sentinels.submit(run_sentinel_cycle, snapshot_id) if manifest.mode == "simulated" else None
        materialize_snapshot_stage(
            snapshot_id,
            (
                "snapshot_manifest",
                "golden_rows",
                "golden_verifications",
                "query_split",
                "dead_golden_rows",
                "decoy_queries",
            ),
        )
        vendors = sorted(manifest.vendors)
        failures = []
        with spawned_pool(workers) as pool:
            for vendor, ok, seconds, why in pool.map(
                materialize_vendor_partition, [snapshot_id] * len(vendors), vendors
            ):
                print(f"  {vendor:<11} {'ok' if ok else 'FAILED'} in {seconds:.1f}s", flush=True)
                if not ok:
                    failures.append(f"{vendor}: {why}")
        if failures:
            raise SystemExit("vendor partitions failed (their runs are in the Dagster UI):\n" + "\n".join(failures))
        if cycle is not None:
            ok, seconds, summary = cycle.result()
            print(
                f"  {'sentinels':<11} {'ok' if ok else 'FAILED'} in {seconds:.1f}s: simulated 30 days, {summary}",
                flush=True,
            )
            if not ok:
                raise SystemExit(f"the simulated sentinel cycle failed: {summary}")
    materialize_snapshot_stage(snapshot_id, ("agent_trials",))
    vendors_done()
    materialize_snapshot_stage(snapshot_id, ("vendor_leaderboard", "published_snapshot"))
    return json.loads((bench_home() / "data" / "publish" / snapshot_id / "leaderboard.json").read_text())


def ttr(metrics: dict[str, Any]) -> str:
    """The time-to-retrievability median as the terminal shows it: hours, "not reached", or —."""
    fig = metrics.get("ttr_median_hours")
    if not fig:
        return "—"
    return "not reached" if fig["value"] is None else f"{fig['value']:.1f}"


def _figure(metrics: dict[str, Any], name: str, fmt: str = "{:.3f}") -> str:
    x = (metrics.get(name) or {}).get("value")
    return "—" if x is None else fmt.format(x)


def print_leaderboard(board: dict[str, Any]) -> None:
    print(
        f"\nLeaderboard {board['snapshot_id']} (mode {board['mode']}; "
        f"{'headline' if board['headline_eligible'] else 'illustrative, not headline-eligible'})"
    )
    rank = board.get("rank_metric", "correct_rate")
    header = (
        f"{'#':>2} {'letters':<7} {'ranks':>5}  {'vendor':<11} {'ranked':>7} {'n':>4} {'correct':>8} {'n':>4}  {'hit@1':>6} "
        f"{'hit@10':>6} {'fidelity':>8} {'$/correct':>9} {'TTR h':>11}  agent-ready"
    )
    print(((board.get("ranking") or {}).get("note") or "") + "\n" + header)
    print("-" * len(header))
    for e in board["vendors"]:
        if e["status"] != "scored":
            print(f"{'':>2} {'':<7} {'':>5}  {e['vendor']:<11} {e['status']}: {e.get('reason')}")
            continue
        m = e["metrics"]
        v = functools.partial(_figure, m)
        print(
            f"{e['position']:>2} {e.get('rank_letters') or '—':<7} {format_rank_range(e):>5}  {e['vendor']:<11} {v(rank):>7} {m[rank]['n']:>4} "
            f"{v('correct_rate'):>8} {m['correct_rate']['n']:>4}  {v('hit_at_1'):>6} {v('hit_at_10'):>6} "
            f"{v('fidelity_mean'):>8} {v('cost_per_correct_usd', '${:.4f}'):>9} {ttr(m):>11}  {(e.get('agent_ready') or {}).get('label', '—')}"
        )


def print_comparisons(board: dict[str, Any]) -> None:
    """Which vendors the paired test tells apart, and what it could detect."""
    section = board.get("comparisons")
    if not section:
        print("\nNo paired comparison: no vendor has letters or a rank range.")
        return
    told = [p for p in section["pairs"] if p.get("better")]
    print(f"\n{LETTERS_NOTE}\n{len(told)} of {len(section['pairs'])} pairs told apart.")
    if board.get("power"):
        print(board["power"]["note"])


def quarters_after(snapshot_id: str, first: str = DEMO_SNAPSHOT) -> int:
    """How many quarters `snapshot_id` comes after the shipped demo quarter (0 for it or earlier)."""

    def index(sid: str) -> int:
        match = re.search(r"-(20[0-9]{2})-q([1-4])", sid)
        return int(match.group(1)) * 4 + int(match.group(2)) if match else 0

    return max(0, index(snapshot_id) - index(first))


def simulator_env(snapshot_id: str) -> dict[str, str]:
    """The simulated world of a quarter: the candidate reserve its manifest's planted pool names
    (grown by each quarter drawn), and the vendors drifted by its distance from the shipped quarter
    (`simulator.profiles.drifted_profiles`). Empty for the shipped quarter: the simulator as always."""
    manifest = load_manifest(bench_home() / "data" / "snapshots" / snapshot_id / "manifest.yaml")
    env = {}
    if manifest.pool_source(manifest.candidates) == "planted_demo" and manifest.candidates.reserve_pages:
        env[CANDIDATE_PAGES_ENV] = str(manifest.candidates.reserve_pages)
    if drift := quarters_after(snapshot_id):
        env[DRIFT_QUARTERS_ENV] = str(drift)
    return env


def run_quarter(snapshot_id: str, workers: int) -> dict[str, Any]:
    """One quarter on a simulator of its own (unless $BENCH_SIMULATOR_URL names one), stopped once
    the vendors are done; returns the published leaderboard."""
    sim = None
    if not os.environ.get("BENCH_SIMULATOR_URL"):
        env = simulator_env(snapshot_id)
        sim = start_simulator(env=env)
        os.environ["BENCH_SIMULATOR_URL"] = sim.base_url
        world = ", ".join(f"{k}={v}" for k, v in env.items())
        print(f"simulator on {sim.base_url} (pid {sim.pid}){f': {world}' if world else ''}", flush=True)

    def stop_simulator() -> None:
        # its corpus and index are let go before the aggregates and the site take their memory
        if sim is not None:
            sim.stop()
            os.environ.pop("BENCH_SIMULATOR_URL", None)

    try:
        return run_snapshot(snapshot_id, workers=workers, vendors_done=stop_simulator)
    finally:
        stop_simulator()


def cmd_demo(args: argparse.Namespace) -> int:
    started = time.monotonic()
    # one vendor partition per core the machine can hold in memory, unless the operator says otherwise
    workers = args.workers or env_positive_int("BENCH_WORKERS", machine_workers())
    if args.quarters > 1 and os.environ.get("BENCH_SIMULATOR_URL"):
        raise BenchInputError(
            "$BENCH_SIMULATOR_URL",
            [
                (
                    None,
                    "BENCH_SIMULATOR_URL",
                    "bench demo --quarters N starts a simulator per quarter (its vendors drift, its candidate "
                    "reserve grows): unset it",
                )
            ],
        )
    snapshot = args.snapshot
    for quarter in range(args.quarters):
        if quarter:
            # the next quarter drawn from the last exactly as `bench quarter next` draws it
            print(f"\nquarter {quarter + 1} of {args.quarters}: bench quarter next {snapshot}", flush=True)
            if cmd_quarter_next(argparse.Namespace(snapshot=snapshot)) != 0:
                return 1
            snapshot = next_snapshot_id(snapshot)
        board = run_quarter(snapshot, workers)
        print_leaderboard(board)
        print_comparisons(board)
        site = bench_home() / "data" / "publish" / snapshot / "index.html"
        print(f"\nsite: {site}", flush=True)
    if args.quarters > 1:
        print(f"quarters read together: {bench_home() / 'data' / 'publish' / 'index.html'}")
    print(f"Dagster runs: DAGSTER_HOME={os.environ['DAGSTER_HOME']} (open with `make dev`)")
    print(f"demo finished in {time.monotonic() - started:.1f}s")
    return 0
