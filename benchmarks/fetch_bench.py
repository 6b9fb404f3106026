"""Fetch benchmarks: throughput against a vendor's rate limit, and every vendor partition in parallel.

Both drive the real fetch engine (`bench_assets.fetch.engine.fetch_partition`: pacing, retries, one
DuckDB insert per attempt) against the real simulator over a real socket.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing as mp
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from bench_assets.adapters import get_adapter
from bench_assets.fetch.engine import FetchItem, FetchSettings, fetch_partition
from bench_assets.golden.planted import demo_golden_rows
from bench_assets.golden.rows import capability_of
from bench_assets.manifest import VendorSpec
from bench_assets.simulator.app import sim_key, simulated_url
from bench_assets.simulator.profiles import PROFILES
from bench_assets.simulator.server import start_simulator
from bench_assets.storage.archive import PartitionArchive
from benchmarks.common import REPO

DEMO_MANIFEST = REPO / "data" / "snapshots" / "web_search-2026-q3" / "manifest.yaml"
SNAPSHOT = "web_search-2026-q3"


def _vendor_specs() -> dict[str, dict]:
    return yaml.safe_load(DEMO_MANIFEST.read_text())["vendors"]


def _settings(spec: dict, sim_url: str, vendor: str, **overrides: Any) -> FetchSettings:
    vendor_spec = VendorSpec.model_validate(spec)  # endpoint paces as the pipeline derives them
    values = {
        "endpoints": {c: simulated_url(u, sim_url) for c, u in spec["endpoints"].items()},
        "api_key": sim_key(vendor),
        "options": dict(spec.get("options") or {}),
        "rate_limits_per_second": {c: vendor_spec.rate_limit(c) for c in spec["endpoints"]},
        "vendor_rate_per_second": vendor_spec.rate_limit_per_second,
        "concurrency": int(spec["concurrency"]),
        "timeout_seconds": float(spec.get("timeout_seconds", 30)),
        "max_attempts": int(spec.get("max_attempts", 4)),
        "prices_usd": spec["prices_usd"],
    }
    return FetchSettings(**{**values, **overrides})


def n_over_rate(by_capability: dict[str, int], settings: FetchSettings) -> float:
    """The least time the vendor's limits allow: each endpoint's n / its pace, and all n / the
    account's limit."""
    bounds = [n / settings.rate_limits_per_second[c] for c, n in by_capability.items()]
    if settings.vendor_rate_per_second:
        bounds.append(sum(by_capability.values()) / settings.vendor_rate_per_second)
    return max(bounds)


def _items(vendor: str, rows_per_stratum: int = 42) -> list[FetchItem]:
    adapter = get_adapter(vendor)
    return [
        FetchItem(r.id, "public", capability_of(r), r.request_text, 10)
        for r in demo_golden_rows(rows_per_stratum=rows_per_stratum)
        if capability_of(r) in adapter.capabilities
    ]


def _latency_percentiles(archive: PartitionArchive) -> dict[str, float]:
    (row,) = archive.con.execute(
        "SELECT quantile_cont(latency_ms, 0.5), quantile_cont(latency_ms, 0.95) FROM raw_responses"
    ).fetchall()
    return {"p50_ms": round(row[0], 1), "p95_ms": round(row[1], 1)}


def throughput(
    n: int = 400, rate: float = 20.0, concurrency: int = 8, latency_ms: float = 50.0, vendor: str = "serper"
) -> dict[str, Any]:
    """n searches to one vendor whose simulator enforces `rate` req/s (429 beyond it) and answers in
    `latency_ms` on average; the fetcher is configured with the same limit and `concurrency`."""
    scale = latency_ms / PROFILES[vendor].latency_ms
    plan = {"vendors": {vendor: {"rate_limit_per_second": rate}}}
    sim = start_simulator(env={"BENCH_SIM_LATENCY_SCALE": str(scale), "BENCH_SIM_FAULTS": json.dumps(plan)})
    try:
        texts = [i.text for i in _items(vendor) if i.capability == "search"]
        items = [FetchItem(f"q{i:05d}", "public", "search", texts[i % len(texts)] + f" {i}") for i in range(n)]
        spec = _vendor_specs()[vendor]
        settings = _settings(
            spec,
            sim.base_url,
            vendor,
            rate_limits_per_second={"search": rate},
            vendor_rate_per_second=rate,
            concurrency=concurrency,
        )
        with tempfile.TemporaryDirectory() as tmp:
            archive = PartitionArchive(Path(tmp) / "p.duckdb", SNAPSHOT, vendor)
            try:
                stats = asyncio.run(fetch_partition(get_adapter(vendor), items, settings, archive))
                latency = _latency_percentiles(archive)
                statuses = dict(
                    archive.con.execute("SELECT http_status, count(*) FROM raw_responses GROUP BY 1").fetchall()
                )
            finally:
                archive.close()
        injected = __import__("httpx").get(f"{sim.base_url}/_sim/faults", timeout=10).json()["injected"]
    finally:
        sim.stop()
    achieved = n / stats.wall_seconds
    return {
        "parameters": {
            "requests": n,
            "rate_limit_per_second": rate,
            "concurrency": concurrency,
            "simulator_mean_latency_ms": latency_ms,
            "vendor": vendor,
            "enforced_by_simulator": "token bucket of one second's worth of requests (429 beyond it)",
        },
        "figures": {
            "wall_seconds": round(stats.wall_seconds, 2),
            "achieved_per_second": round(achieved, 2),
            "share_of_limit": round(achieved / rate, 3),
            "attempts": stats.attempts,
            "http_statuses": {str(k): v for k, v in statuses.items()},
            "rate_limited_by_simulator": len(injected),
            "client_cpu_seconds": round(stats.cpu_seconds, 3),
            "client_cpu_ms_per_request": round(stats.cpu_seconds / n * 1000, 3),
            "latency": latency,
        },
        "target": {"share_of_limit_at_least": 0.9},
        "passed": achieved / rate >= 0.9 and not injected,
    }


def _vendor_worker(vendor: str, sim_url: str, barrier, results) -> None:
    spec = _vendor_specs()[vendor]
    items = _items(vendor)
    settings = _settings(spec, sim_url, vendor)
    adapter = get_adapter(vendor)
    with tempfile.TemporaryDirectory() as tmp:
        archive = PartitionArchive(Path(tmp) / f"{vendor}.duckdb", SNAPSHOT, vendor)
        barrier.wait()
        started = time.time()
        stats = asyncio.run(fetch_partition(adapter, items, settings, archive))
        finished = time.time()
        (n_429,) = archive.con.execute("SELECT count(*) FROM raw_responses WHERE http_status = 429").fetchall()[0]
        archive.close()
    by_cap: dict[str, int] = {}
    for item in items:
        by_cap[item.capability] = by_cap.get(item.capability, 0) + 1
    bound = n_over_rate(by_cap, settings)
    results.put(
        {
            "vendor": vendor,
            "started": started,
            "finished": finished,
            "queries": len(items),
            "by_capability": by_cap,
            "rate_limits": settings.rate_limits_per_second,
            "concurrency": settings.concurrency,
            "n_over_rate_seconds": round(bound, 2),
            "wall_seconds": round(finished - started, 2),
            "attempts": stats.attempts,
            "http_429": n_429,
            "cpu_seconds": round(stats.cpu_seconds, 2),
        }
    )


def parallel_vendors() -> dict[str, Any]:
    """Every vendor of the demo manifest fetched at once, each in its own process (as Dagster runs
    partitions), at the manifest's rate limits and concurrency, against one simulator with the
    profiles' latencies. The bound is the slowest vendor's n / rate (per capability)."""
    vendors = sorted(_vendor_specs())
    sim = start_simulator(env={"BENCH_SIM_LATENCY_SCALE": "1.0"})
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(len(vendors) + 1)
    results = ctx.Queue()
    procs = [ctx.Process(target=_vendor_worker, args=(v, sim.base_url, barrier, results)) for v in vendors]
    try:
        for p in procs:
            p.start()
        barrier.wait(timeout=300)
        t0 = time.time()
        rows = [results.get(timeout=900) for _ in vendors]
        for p in procs:
            p.join(timeout=60)
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
        sim.stop()
    wall = max(r["finished"] for r in rows) - t0
    slowest = max(rows, key=lambda r: r["n_over_rate_seconds"])
    ratio = wall / slowest["n_over_rate_seconds"]
    return {
        "parameters": {
            "vendors": len(vendors),
            "golden_rows": 252,
            "processes": len(vendors),
            "limits": "the demo manifest's rate limits and concurrency: per endpoint and account-wide",
            "simulator_latency": "each profile's latency (12-45 ms mean)",
        },
        "figures": {
            "wall_seconds": round(wall, 2),
            "slowest_vendor": slowest["vendor"],
            "slowest_n_over_rate_seconds": slowest["n_over_rate_seconds"],
            "wall_over_slowest_n_over_rate": round(ratio, 3),
            "http_429": sum(r["http_429"] for r in rows),
            "vendors": sorted(
                (
                    {
                        k: r[k]
                        for k in ("vendor", "queries", "n_over_rate_seconds", "wall_seconds", "attempts", "cpu_seconds")
                    }
                    for r in rows
                ),
                key=lambda r: r["vendor"],
            ),
        },
        "target": {"wall_over_slowest_n_over_rate_at_most": 1.2},
        "passed": ratio <= 1.2,
    }


def http_stack(n: int = 3000, vendor: str = "exa", concurrency: int = 8, rounds: int = 2) -> dict[str, Any]:
    """Where a fetch's client CPU goes: the same n searches (as the vendor's adapter builds them) sent
    to the simulator at zero latency three ways, each the best of `rounds`: by the fetch engine
    (`fetch_partition`: pacing, retries, the archive's inserts, scrubbing, parsing, classifying),
    by its HTTP stack alone (httpx's client on the aiohttp transport the engine uses, each body read
    whole), and by aiohttp alone. The engine's own work is the first less the second; what httpx
    adds over aiohttp is the second less the third."""
    import aiohttp
    import httpx

    from bench_assets.adapters.base import VendorTask
    from bench_assets.fetch.engine import vendor_transport

    sim = start_simulator(env={"BENCH_SIM_LATENCY_SCALE": "0"})
    try:
        texts = [i.text for i in _items(vendor) if i.capability == "search"]
        items = [FetchItem(f"q{i:05d}", "public", "search", texts[i % len(texts)] + f" {i}", 10) for i in range(n)]
        settings = _settings(
            _vendor_specs()[vendor],
            sim.base_url,
            vendor,
            rate_limits_per_second={"search": 100_000.0},
            vendor_rate_per_second=100_000.0,
            concurrency=concurrency,
        )
        adapter = get_adapter(vendor)
        requests = [
            adapter.build(VendorTask("search", i.text, 10), settings.endpoints["search"], settings.api_key, {})
            for i in items
        ]

        def engine() -> list[int]:
            with tempfile.TemporaryDirectory() as tmp:
                archive = PartitionArchive(Path(tmp) / "p.duckdb", SNAPSHOT, vendor)
                try:
                    asyncio.run(fetch_partition(adapter, items, settings, archive))
                    return [s for (s,) in archive.con.execute("SELECT http_status FROM raw_responses").fetchall()]
                finally:
                    archive.close()

        async def through_httpx() -> list[int]:
            gate = asyncio.Semaphore(concurrency)
            async with httpx.AsyncClient(transport=vendor_transport(concurrency * 2), timeout=30) as client:

                async def one(r: Any) -> int:
                    async with (
                        gate,
                        client.stream(
                            r.method, r.url, headers=r.headers, params=r.params or None, json=r.json_body
                        ) as response,
                    ):
                        await response.aread()
                        return response.status_code

                return list(await asyncio.gather(*(one(r) for r in requests)))

        async def through_aiohttp() -> list[int]:
            gate = asyncio.Semaphore(concurrency)
            connector = aiohttp.TCPConnector(limit=concurrency * 2)
            async with aiohttp.ClientSession(connector=connector) as session:

                async def one(r: Any) -> int:
                    async with (
                        gate,
                        session.request(
                            r.method, r.url, headers=r.headers, params=r.params or None, json=r.json_body
                        ) as response,
                    ):
                        await response.read()
                        return response.status

                return list(await asyncio.gather(*(one(r) for r in requests)))

        ways = {
            "engine": engine,
            "httpx_on_aiohttp": lambda: asyncio.run(through_httpx()),
            "aiohttp": lambda: asyncio.run(through_aiohttp()),
        }
        best: dict[str, float] = {}
        for _ in range(rounds):
            for name, send in ways.items():  # in turn, so a change of the machine's speed touches all three
                started = time.process_time()
                statuses = send()
                cpu_ms = (time.process_time() - started) / n * 1000
                if statuses != [200] * n:
                    raise RuntimeError(f"{name}: statuses {sorted(set(statuses))} for {len(statuses)} of {n}")
                best[name] = min(best.get(name, cpu_ms), cpu_ms)
    finally:
        sim.stop()
    engine_ms, httpx_ms, aiohttp_ms = best["engine"], best["httpx_on_aiohttp"], best["aiohttp"]
    return {
        "parameters": {"requests": n, "vendor": vendor, "concurrency": concurrency, "rounds": rounds},
        "figures": {
            "engine_cpu_ms_per_request": round(engine_ms, 3),
            "httpx_on_aiohttp_cpu_ms_per_request": round(httpx_ms, 3),
            "aiohttp_cpu_ms_per_request": round(aiohttp_ms, 3),
            "engine_own_share": round((engine_ms - httpx_ms) / engine_ms, 3),
            "httpx_over_aiohttp_share": round((httpx_ms - aiohttp_ms) / engine_ms, 3),
        },
        "passed": True,  # no target: it says where the CPU goes
    }
