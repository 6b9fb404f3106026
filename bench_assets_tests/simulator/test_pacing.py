"""Pacing: a vendor's account-wide limit holds across its endpoints and across processes.

The simulator plays a vendor that enforces its limit for the whole account (a token bucket of one
second's worth; a request that finds it empty gets a 429, recorded as injected). Each check runs
the real fetch engine twice: paced as the pipeline paces (no 429), and without the shared vendor
limit, which the simulator punishes, so the check can fail.
"""

from __future__ import annotations

import asyncio
import dataclasses
import multiprocessing as mp
from pathlib import Path

import httpx
import pytest
import yaml

from bench_assets.adapters import get_adapter
from bench_assets.fetch.engine import FetchItem, FetchSettings, fetch_partition
from bench_assets.fetch.pacing import window_rate
from bench_assets.manifest import VendorSpec
from bench_assets.simulator.app import sim_key, simulated_url
from bench_assets.storage.archive import PartitionArchive
from bench_assets_tests.helpers import DEMO_MANIFEST, vendor_entry_from_defaults

SPEC = yaml.safe_load(DEMO_MANIFEST.read_text())["vendors"]
RATE = 20.0


def test_a_rate_becomes_a_whole_number_of_requests_per_window():
    assert (window_rate(10.0).limit, window_rate(10.0).interval) == (10, 1000)
    assert (window_rate(12.4).limit, window_rate(12.4).interval) == (12, 968)  # 12 / 12.4 s, rounded up
    assert (window_rate(0.25).limit, window_rate(0.25).interval) == (1, 4000)
    for rate in (0.25, 1.0, 4.1, 12.4, 99.0, 110.0):
        w = window_rate(rate)
        assert w.limit / (w.interval / 1000) <= rate  # never faster than the vendor allows


def test_an_endpoint_is_paced_at_its_own_limit_never_above_the_accounts():
    # Exa's documented limits (the adapter's defaults; the demo manifest paces its simulated accounts faster)
    documented = vendor_entry_from_defaults("exa")
    exa = VendorSpec.model_validate(documented)  # /search 10 QPS, /contents 100 QPS, account 110
    assert (exa.rate_limit("search"), exa.rate_limit("extract")) == (10, 100)
    slowed = VendorSpec.model_validate({**documented, "rate_limit_per_second": 15})
    assert (slowed.rate_limit("search"), slowed.rate_limit("extract")) == (10, 15)


@pytest.fixture()
def enforced(simulator):
    """The simulated vendors enforce RATE requests a second for the whole account."""
    base = simulator.base_url
    httpx.post(f"{base}/_sim/reset", timeout=5)
    assert (
        httpx.post(
            f"{base}/_sim/faults", json={"vendors": {"*": {"rate_limit_per_second": RATE}}}, timeout=5
        ).status_code
        == 200
    )

    def rate_limited() -> int:
        return len(httpx.get(f"{base}/_sim/faults", timeout=5).json()["injected"])

    yield rate_limited
    httpx.post(f"{base}/_sim/faults", json={}, timeout=5)
    httpx.post(f"{base}/_sim/reset", timeout=5)


def settings(
    sim_url: str, vendor: str, capabilities: dict[str, float], vendor_rate: float | None, pacing_dir: Path | None
) -> FetchSettings:
    spec = SPEC[vendor]
    return FetchSettings(
        endpoints={c: simulated_url(spec["endpoints"][c], sim_url) for c in capabilities},
        api_key=sim_key(vendor),
        options={},
        rate_limits_per_second=capabilities,
        concurrency=8,
        timeout_seconds=5.0,
        max_attempts=1,
        prices_usd=spec["prices_usd"],
        vendor_rate_per_second=vendor_rate,
        pacing_dir=pacing_dir,
    )


def items(prefix: str, capability: str, n: int) -> list[FetchItem]:
    text = "quarterly revenue" if capability == "search" else "https://example.com/"
    return [FetchItem(f"{prefix}{i:03d}", "public", capability, f"{text}{i}") for i in range(n)]


def fetch(archive_path: Path, vendor: str, todo: list[FetchItem], fetch_settings: FetchSettings) -> list:
    archive = PartitionArchive(archive_path, "web_search-2026-q3", vendor)
    try:
        asyncio.run(fetch_partition(get_adapter(vendor), todo, fetch_settings, archive))
        return archive.frame()["http_status"].tolist()
    finally:
        archive.close()


def test_search_and_extract_share_the_account_limit(tmp_path, simulator, enforced):
    # Each endpoint alone may go at the account's rate; together they must not exceed it.
    todo = [i for pair in zip(items("s", "search", 50), items("x", "extract", 50)) for i in pair]  # as rows interleave
    both = {"search": RATE, "extract": RATE}
    statuses = fetch(tmp_path / "paced.duckdb", "exa", todo, settings(simulator.base_url, "exa", both, RATE, None))
    assert statuses.count(200) == 100 and enforced() == 0
    # Unpaced, the two endpoints together ask at twice the account's rate for 2.5 s: 100 calls
    # against a bucket that holds 20 and refills 50. Concurrency 32 keeps that rate even when a
    # loaded machine answers each call in hundreds of milliseconds (CI once saw no overrun at 8).
    unpaced = dataclasses.replace(settings(simulator.base_url, "exa", both, None, None), concurrency=32)
    statuses = fetch(tmp_path / "unpaced.duckdb", "exa", todo, unpaced)
    assert enforced() > 0 and statuses.count(429) == enforced()  # endpoint pacing alone overruns the account


def _fetch_in_a_process(sim_url: str, archive_path: str, prefix: str, pacing_dir: str | None, start, out) -> None:
    fetch_settings = settings(sim_url, "brave", {"search": RATE}, RATE, Path(pacing_dir) if pacing_dir else None)
    # Both start fetching together, once both have started and imported: a busy machine (or the
    # other xdist workers) can delay one process's start by longer than its two seconds of fetching.
    start.wait(timeout=120)
    out.put(fetch(Path(archive_path), "brave", items(prefix, "search", 40), fetch_settings))


def run_two_processes(tmp_path: Path, sim_url: str, pacing_dir: Path | None, tag: str) -> list:
    """Two runs calling one vendor at once, each in its own process (a fetch run and a probe run, say)."""
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    start = ctx.Barrier(2)
    procs = [
        ctx.Process(
            target=_fetch_in_a_process,
            args=(
                sim_url,
                str(tmp_path / f"{tag}-{i}.duckdb"),
                f"{tag}{i}-",
                str(pacing_dir) if pacing_dir else None,
                start,
                out,
            ),
        )
        for i in range(2)
    ]
    for p in procs:
        p.start()
    statuses = [s for _ in procs for s in out.get(timeout=120)]
    for p in procs:
        p.join(timeout=30)
    assert all(p.exitcode == 0 for p in procs)
    return statuses


def test_two_processes_calling_one_vendor_share_its_limit(tmp_path, simulator, enforced):
    statuses = run_two_processes(tmp_path, simulator.base_url, tmp_path / "pacing", "shared")
    assert statuses.count(200) == 80 and enforced() == 0
    statuses = run_two_processes(tmp_path, simulator.base_url, None, "apart")
    assert enforced() > 0 and statuses.count(429) == enforced()  # each alone at the limit: twice the limit
