"""`bench demo`: a whole snapshot on the embedded simulator, end to end, then the leaderboard."""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import time
from collections import Counter
from collections.abc import Callable, Mapping
from concurrent.futures import Future, as_completed
from pathlib import Path
from typing import Any

import dagster as dg

from bench_assets.adapters.base import Capability
from bench_assets.cli.help import fit
from bench_assets.cli.home import bench_home
from bench_assets.cli.main import DEMO_SNAPSHOT, env_positive_int
from bench_assets.cli.progress import bar, say, shown_path, step
from bench_assets.cli.quarter import cmd_quarter_next
from bench_assets.cli.runs import (
    QUIET,
    bench_resources,
    ensure_dagster_home,
    materialize_snapshot_stage,
    materialize_vendor_partition,
    register_snapshot,
)
from bench_assets.defs.jobs import SNAPSHOT_ASSETS
from bench_assets.errors import BenchInputError
from bench_assets.fetch.schedule import next_configuration, paced_seconds
from bench_assets.golden.rows import capability_of
from bench_assets.manifest import Manifest, load_manifest
from bench_assets.publish.format import LETTERS_NOTE, format_rank_range
from bench_assets.runtime import give_back_memory, machine_workers, spawned_pool
from bench_assets.simulator.app import CANDIDATE_PAGES_ENV, DRIFT_QUARTERS_ENV
from bench_assets.simulator.server import start_simulator

# The demo's sentinel batch is published at a fixed simulated time, so the demo is reproducible and
# the probe schedule, running in real time under `make dev`, finds nothing of it due.
DEMO_SENTINELS_PUBLISHED_AT = "2026-07-01T00:00:00+00:00"
DEMO_SENTINELS = 10  # pages in the batch (each costs a probe per vendor and tick until found)
SENTINELS = "sentinels"  # the sentinel cycle's line among the vendor partitions'
GOLDEN_STAGES = tuple(SNAPSHOT_ASSETS)  # the golden stages, in one run (as `snapshot_golden_job`)


def run_sentinel_cycle(snapshot_id: str) -> tuple[bool, float, str]:
    """A simulated 30-day sentinel cycle (publish a batch, then 121 six-hourly probe ticks through
    the probe schedule and job) in one of the demo's pool processes, beside the vendor partitions."""
    from bench_assets.cli.sentinel_cycle import simulate_probe_cycle
    from bench_assets.sentinels.pages import parse_utc

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
    finally:
        give_back_memory()  # its process goes on to the vendor partitions
    ok = outcome["failed_runs"] == 0
    return (
        ok,
        time.monotonic() - started,
        (f"{outcome['ticks']} ticks, {outcome['probes']} probes, ${outcome['spend_usd']:.4f}"),
    )


def golden_stages(snapshot_id: str) -> Counter[Capability]:
    """The golden stages, in one run; returns how many golden rows each capability has (what the
    vendor partitions are scheduled by). Run in a process of its own, which ends with it: what the
    stages read and built (the rows, their frames, the planted corpus they are drawn from, the
    stage code's imports) is not kept by `bench demo` while it waits for its pool."""
    from bench_assets.cli.snapshot import golden_rows_for

    materialize_snapshot_stage(snapshot_id, GOLDEN_STAGES)
    return Counter(capability_of(r) for r in golden_rows_for(snapshot_id))


def run_snapshot(snapshot_id: str, workers: int = 2, vendors_done: Callable[[], None] = lambda: None) -> dict[str, Any]:
    """Materialize a whole snapshot through Dagster: golden stages, vendor partitions in parallel
    processes (and, simulated, a 30-day sentinel cycle in one of them), agent trials, then aggregates
    and publication; `vendors_done` is called once nothing more is asked of the vendors (before the
    aggregates). Each step is shown as it starts and ends (`cli.progress`), each vendor partition
    as it finishes. Returns the published leaderboard."""
    with step("Dagster instance and snapshot partition"):
        say(f"  DAGSTER_HOME={shown_path(Path(ensure_dagster_home()))}")
        manifest = load_manifest(bench_home() / "data" / "snapshots" / snapshot_id / "manifest.yaml")
        register_snapshot(snapshot_id)
    # One pool of `workers` processes does all the work beside this one: the simulated sentinel
    # cycle (it needs no golden row, so it starts at once) and the vendor partitions after the
    # golden stages. Each of its processes holds the whole code location's imports, so the cycle
    # takes a slot of its own rather than a process more.
    vendors = sorted(manifest.vendors)
    with spawned_pool(workers) as pool:
        cycle = pool.submit(run_sentinel_cycle, snapshot_id) if manifest.mode == "simulated" else None
        with step(f"golden stages ({GOLDEN_STAGES[0]} … {GOLDEN_STAGES[-1]})"), spawned_pool(1) as golden:
            calls = golden.submit(golden_stages, snapshot_id).result()
        with step(
            f"{len(vendors)} vendor partitions (fetch, scoring), {min(workers, len(vendors))} at a time"
            + (", with the sentinel cycle" if cycle is not None else "")
        ):
            failures = vendor_partitions_finished(
                VendorQueue(pool, snapshot_id, manifest, min(workers, len(vendors)), calls, cycle), cycle
            )
        if failures:
            raise SystemExit(
                fit("vendor partitions failed (their runs are in the Dagster UI):\n" + "\n".join(failures))
            )
    with step("agent trials"):
        materialize_snapshot_stage(snapshot_id, ("agent_trials",))
    vendors_done()
    with step("leaderboard and site"):
        materialize_snapshot_stage(snapshot_id, ("vendor_leaderboard", "published_snapshot"))
    return json.loads((bench_home() / "data" / "publish" / snapshot_id / "leaderboard.json").read_text())


class VendorQueue:
    """The vendor partitions, started `slots` at a time as workers free up (`fetch.schedule`): never
    one whose provider is already fetching (it would hold a worker while it waits for its sibling's
    lease), the provider with the most paced seconds left first, so a long chain of modes starts
    early (`calls`: the golden rows of each capability, which the paced seconds are counted from).
    While `cycle` (the sentinel cycle, in the same pool) runs it holds one of the slots."""

    def __init__(
        self,
        pool: Any,
        snapshot_id: str,
        manifest: Manifest,
        slots: int,
        calls: Mapping[Capability, int],
        cycle: Future[Any] | None = None,
    ):
        self.pool, self.snapshot_id = pool, snapshot_id
        self.slots = max(1, slots - 1) if cycle is not None and not cycle.done() else slots
        self.all_slots = slots
        self.provider_of = {v: spec.provider for v, spec in manifest.vendors.items()}
        self.seconds = {v: paced_seconds(spec, calls) for v, spec in manifest.vendors.items()}
        self.pending = set(manifest.vendors)
        self.running: dict[Future[Any], str] = {}

    def __len__(self) -> int:
        return len(self.provider_of)

    def start(self) -> None:
        """Start partitions while a slot is free and a pending one's provider is idle."""
        while len(self.running) < self.slots:
            busy = {self.provider_of[v] for v in self.running.values()}
            name = next_configuration(self.pending, busy, self.provider_of, self.seconds)
            if name is None:
                return
            self.pending.discard(name)
            self.running[self.pool.submit(materialize_vendor_partition, self.snapshot_id, name)] = name

    def finished(self, future: Future[Any]) -> None:
        self.running.pop(future, None)
        self.start()

    def cycle_finished(self) -> None:
        """The sentinel cycle's slot goes to the vendor partitions."""
        self.slots = self.all_slots
        self.start()


def vendor_partitions_finished(queue: VendorQueue, cycle: Future[Any] | None = None) -> list[str]:
    """A line per vendor partition (and the sentinel cycle) as it finishes, whatever the order,
    with a bar over them; returns what failed and why (a failed sentinel cycle ends the demo)."""
    failures = []
    total = len(queue) + (cycle is not None)
    queue.start()
    with bar(total, "vendor partitions", "partition") as progress:
        for done in range(1, total + 1):
            future = next(as_completed([*queue.running, *([cycle] if cycle is not None else [])]))
            of = f"({done} of {total})"
            if future is cycle:
                cycle = None
                ok, seconds, summary = future.result()
                say(
                    f"  {SENTINELS:<11} {'ok' if ok else 'FAILED'} in {seconds:.1f}s {of}: simulated 30 days, {summary}"
                )
                if not ok:
                    raise SystemExit(fit(f"the simulated sentinel cycle failed: {summary}"))
                queue.cycle_finished()
            else:
                vendor, ok, seconds, why = future.result()
                queue.finished(future)
                say(f"  {vendor:<11} {'ok' if ok else 'FAILED'} in {seconds:.1f}s {of}")
                if not ok:
                    failures.append(f"{vendor}: {why}")
            progress.update()
    return failures


def ttr(metrics: dict[str, Any]) -> str:
    """The time-to-retrievability median as the terminal shows it: hours, "not reached", or —."""
    fig = metrics.get("ttr_median_hours")
    if not fig:
        return "—"
    return "not reached" if fig["value"] is None else f"{fig['value']:.1f}"


def _figure(metrics: dict[str, Any], name: str, fmt: str = "{:.3f}") -> str:
    x = (metrics.get(name) or {}).get("value")
    return "—" if x is None else fmt.format(x)


def agent_ready(entry: dict[str, Any]) -> str:
    """The agent-ready verdict as the table shows it: yes, no, or — without a trial."""
    agent = entry.get("agent_ready") or {}
    return "—" if not agent else "yes" if agent.get("ready") else "no"


def not_agent_ready(board: dict[str, Any]) -> str:
    """Why the vendors that are not agent-ready are not, grouped by the trial's outcome (the
    method, date and evidence of each trial are on the site)."""
    why: dict[str, list[str]] = {}
    for e in board["vendors"]:
        agent = e.get("agent_ready") or {}
        if agent and not agent.get("ready"):
            why.setdefault(agent.get("outcome") or "no outcome", []).append(e["vendor"])
    return "not agent-ready: " + "; ".join(f"{o} ({', '.join(vs)})" for o, vs in sorted(why.items())) if why else ""


def print_leaderboard(board: dict[str, Any]) -> None:
    """The leaderboard as a table within `WIDTH` columns: position, letters, rank range, the ranking
    figure and the overall correct rate with their n, hit@10, fidelity, cost per correct answer,
    the time-to-retrievability median and agent-ready, then why vendors are not agent-ready
    (hit@1, the trials and the rest are on the site)."""
    print(
        fit(
            f"\nLeaderboard {board['snapshot_id']} (mode {board['mode']}; "
            f"{'headline' if board['headline_eligible'] else 'illustrative, not headline-eligible'})"
        )
    )
    rank = board.get("rank_metric", "correct_rate")
    # as wide as the longest configuration id (`tavily.advanced`), letters as the most a vendor has
    wide = max([10, *(len(e["vendor"]) for e in board["vendors"] if e["status"] == "scored")])
    lw = max([7, *(len(e.get("rank_letters") or "") for e in board["vendors"])])
    note = (board.get("ranking") or {}).get("note")
    if note:
        print(fit(note))
    header = (
        f"{'#':>2} {'letters':<{lw}} {'ranks':>5} {'vendor':<{wide}} {'ranked':>6} {'n':>4} {'correct':>7} {'n':>4} "
        f"{'hit@10':>6} {'fidel.':>6} {'$/correct':>9} {'TTR h':>11} agent-ready"
    )
    print(header + "\n" + "-" * len(header))
    for e in board["vendors"]:
        if e["status"] != "scored":
            print(fit(f"{'':>2} {'':<7} {'':>5} {e['vendor']:<10} {e['status']}: {e.get('reason')}", indent=" " * 19))
            continue
        m = e["metrics"]
        v = functools.partial(_figure, m)
        print(
            f"{e['position']:>2} {e.get('rank_letters') or '—':<{lw}} {format_rank_range(e):>5} {e['vendor']:<{wide}} "
            f"{v(rank):>6} {m[rank]['n']:>4} {v('correct_rate'):>7} {m['correct_rate']['n']:>4} "
            f"{v('hit_at_10'):>6} {v('fidelity_mean'):>6} {v('cost_per_correct_usd', '${:.4f}'):>9} {ttr(m):>11} "
            f"{agent_ready(e)}"
        )
    if not_agent_ready(board):
        print(fit(not_agent_ready(board)))


def print_comparisons(board: dict[str, Any]) -> None:
    """Which vendors the paired test tells apart, and what it could detect."""
    section = board.get("comparisons")
    if not section:
        print("\nNo paired comparison: no vendor has letters or a rank range.")
        return
    told = [p for p in section["pairs"] if p.get("better")]
    print(fit(f"\n{LETTERS_NOTE}\n{len(told)} of {len(section['pairs'])} pairs told apart."))
    if board.get("power"):
        print(fit(board["power"]["note"]))


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
        with step("starting the simulator"):
            sim = start_simulator(env=env)
        os.environ["BENCH_SIMULATOR_URL"] = sim.base_url
        world = ", ".join(f"{k}={v}" for k, v in env.items())
        say(f"simulator on {sim.base_url} (pid {sim.pid}){f': {world}' if world else ''}")

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
            say(f"quarter {quarter + 1} of {args.quarters}: bench quarter next {snapshot}")
            if cmd_quarter_next(argparse.Namespace(snapshot=snapshot)) != 0:
                return 1
            from bench_assets.review.quarter import next_snapshot_id  # pandas: only for quarters after the first

            snapshot = next_snapshot_id(snapshot)
        board = run_quarter(snapshot, workers)
        print_leaderboard(board)
        print_comparisons(board)
        print(fit(f"\nsite: {shown_path(bench_home() / 'data' / 'publish' / snapshot / 'index.html')}"), flush=True)
    if args.quarters > 1:
        print(fit(f"quarters read together: {shown_path(bench_home() / 'data' / 'publish' / 'index.html')}"))
    dagster_home = shown_path(Path(os.environ["DAGSTER_HOME"]))
    print(fit(f"Dagster runs: DAGSTER_HOME={dagster_home} (open with `make dev`)"))
    print(f"demo finished in {time.monotonic() - started:.1f}s")
    return 0
