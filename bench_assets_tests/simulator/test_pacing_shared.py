"""Account-wide pacing beyond one machine: two processes with different local directories (as on
two machines) calling one vendor hold its account limit through a shared Redis store.

The simulator plays a vendor that enforces its limit for the whole account (a request that finds
its one-second bucket empty gets a 429, counted as injected). Each process runs the real fetch
engine with its own archive and its own pacing directory; with the Redis store configured the
simulator counts no 429; with only the local directories (what two machines have without a
shared store) it punishes the overrun, so the check can fail.
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
from pathlib import Path

import httpx
import pytest
import yaml

from bench_assets.adapters import get_adapter
from bench_assets.fetch.engine import FetchItem, FetchSettings, fetch_partition
from bench_assets.simulator.app import sim_key, simulated_url
from bench_assets.storage.archive import PartitionArchive
from bench_assets_tests.distributed_services import redis_server
from bench_assets_tests.helpers import DEMO_MANIFEST

SPEC = yaml.safe_load(DEMO_MANIFEST.read_text())["vendors"]["brave"]
RATE = 20.0
CALLS = 40  # per process: two seconds' worth of the account limit each


@pytest.fixture()
def enforced(simulator):
    base = simulator.base_url
    httpx.post(f"{base}/_sim/reset", timeout=5)
    httpx.post(f"{base}/_sim/faults", json={"vendors": {"*": {"rate_limit_per_second": RATE}}}, timeout=5)

    def rate_limited() -> int:
        return len(httpx.get(f"{base}/_sim/faults", timeout=5).json()["injected"])

    yield rate_limited
    httpx.post(f"{base}/_sim/faults", json={}, timeout=5)
    httpx.post(f"{base}/_sim/reset", timeout=5)


def _machine(sim_url: str, home: str, pacing: str, prefix: str, start, out) -> None:
    """One machine's fetch of the vendor: its own directory for the archive and (without Redis) pacing."""
    settings = FetchSettings(
        endpoints={"search": simulated_url(SPEC["endpoints"]["search"], sim_url)},
        api_key=sim_key("brave"),
        options={},
        rate_limits_per_second={"search": RATE},
        concurrency=8,
        timeout_seconds=5.0,
        max_attempts=1,
        prices_usd=SPEC["prices_usd"],
        vendor_rate_per_second=RATE,
        pacing_dir=pacing if pacing.startswith("redis://") else Path(pacing),
    )
    todo = [FetchItem(f"{prefix}{i:03d}", "public", "search", f"quarterly revenue {prefix}{i}") for i in range(CALLS)]
    archive = PartitionArchive(Path(home) / "archive.duckdb", "web_search-2026-q3", "brave")
    try:
        # both machines call in the same seconds: a spawned interpreter's imports take seconds on a
        # loaded machine, long enough for one machine's two seconds of calls to end before the other's begin
        start.wait(timeout=60)
        asyncio.run(fetch_partition(get_adapter("brave"), todo, settings, archive))
        out.put(archive.frame()["http_status"].tolist())
    finally:
        archive.close()


def two_machines(tmp_path: Path, sim_url: str, pacing_of, tag: str) -> list[int]:
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    start = ctx.Barrier(2)
    procs = []
    for i in range(2):
        home = tmp_path / f"{tag}-machine-{i}"
        home.mkdir()
        procs.append(ctx.Process(target=_machine, args=(sim_url, str(home), pacing_of(home), f"{tag}{i}-", start, out)))
    for p in procs:
        p.start()
    statuses = [s for _ in procs for s in out.get(timeout=120)]
    for p in procs:
        p.join(timeout=30)
    assert all(p.exitcode == 0 for p in procs)
    return statuses


def test_two_machines_hold_a_vendors_account_limit_through_redis(tmp_path, simulator, enforced):
    with redis_server(tmp_path / "redis") as url:
        statuses = two_machines(tmp_path, simulator.base_url, lambda home: url, "shared")
    assert statuses.count(200) == 2 * CALLS and enforced() == 0
    # each machine pacing on its own disk only: together they overrun the account, which the vendor punishes
    statuses = two_machines(tmp_path, simulator.base_url, lambda home: str(home / "pacing"), "apart")
    assert enforced() > 0 and statuses.count(429) == enforced()
