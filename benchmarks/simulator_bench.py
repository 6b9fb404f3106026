"""The vendor simulator under a snapshot's load: CPU per request, memory, start-up.

The real simulator runs as a child process (`start_simulator`) with zero simulated latency, serving
`pages_per_stratum` golden pages per stratum (700 is the 12,600-row scale snapshot's corpus). It is
sent what a snapshot of 3 x `pages_per_stratum` rows per stratum sends it: every golden row (search
and answer rows to each vendor's search endpoint, extract rows to its extract endpoint) and the
decoys sent with the holdout (one decoy row per holdout row: 30 % of the rows, from the decoy
pool the simulator serves), to every vendor of the demo manifest, built by the vendor's own adapter
and sent over real HTTP on a few keep-alive connections by a lean client (`wire_request`). Vendors
go one after another, as a snapshot fetches them (so the first one meets the simulator with
nothing cached), searches then extracts.

The simulator's CPU is read from the child (psutil: user + system) around each vendor's searches
and extracts; its peak RSS from the kernel (VmHWM) and its RSS and PSS at the end. `sample` sends
every n-th request of each vendor's list (1: all of them, about 175,000 at 700 pages per stratum).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import psutil

from bench_assets.adapters import get_adapter
from bench_assets.adapters.base import HttpRequest, VendorTask
from bench_assets.golden.planted import demo_golden_rows, reserve_rows, reserve_size
from bench_assets.golden.rows import GoldenRow, capability_of
from bench_assets.manifest import VendorSpec, load_manifest
from bench_assets.simulator.app import sim_key, simulated_url
from bench_assets.simulator.server import SimulatorProcess, start_simulator
from benchmarks.common import REPO

DEMO_MANIFEST = REPO / "data" / "snapshots" / "web_search-2026-q3" / "manifest.yaml"
HOLDOUT_SHARE = 0.3  # the demo manifest's public_share 0.7
DECOY_RATIO = 1.0  # the manifest's default decoys.ratio: one decoy row per holdout row
TARGETS = {"cpu_ms_per_request": 1.5, "peak_rss_mib": 512.0}


def snapshot_rows(pages_per_stratum: int) -> list[GoldenRow]:
    """The golden rows at 3 x `pages_per_stratum` rows per stratum, then the decoys sent with their
    holdout: the first decoy pages of each stratum's pool (which the simulator serves), three rows
    per page, as many rows as DECOY_RATIO x the holdout's."""
    rows = demo_golden_rows(rows_per_stratum=3 * pages_per_stratum)
    decoy_pages = round(DECOY_RATIO * HOLDOUT_SHARE * pages_per_stratum)
    pool = reserve_rows("decoy", reserve_size(pages_per_stratum))  # the pool as the simulator's corpus draws it
    decoys = [r for r in pool if int(r.id.split("-")[1][1:]) <= decoy_pages]
    return rows + decoys


def vendor_requests(config: VendorSpec, rows: list[GoldenRow], num_results: int) -> dict[str, list[HttpRequest]]:
    """Each capability's requests for one endpoint configuration, as its provider's adapter builds
    them with the configuration's mode and options (paged searches give one request per page)."""
    adapter = get_adapter(config.adapter)
    options = config.request_options
    out: dict[str, list[HttpRequest]] = {}
    for row in rows:
        capability = capability_of(row)
        if capability not in config.capabilities:
            continue
        task = VendorTask(capability, row.request_text, num_results)
        for page in range(1, adapter.pages_for(task) + 1):
            paged = VendorTask(capability, row.request_text, num_results, page)
            out.setdefault(capability, []).append(
                adapter.build(paged, config.endpoints[capability], sim_key(config.provider), options)
            )
    return out


def wire_request(request: HttpRequest, base: str) -> bytes:
    """The request as it goes on the wire to the simulator (HTTP/1.1, kept alive), built before it
    is timed: the client should take little of the two cores the simulator is measured on (httpx
    takes about 1.4 ms of CPU a request, which made the simulator's own CPU per request 15-35 %
    higher than beside this client, measured on the shared 2-core machine)."""
    url = urlsplit(simulated_url(request.url, base))
    target = url.path + (f"?{urlencode(request.params, doseq=True)}" if request.params else "")
    body = json.dumps(request.json_body).encode() if request.json_body is not None else b""
    headers = {"host": url.netloc, "accept": "*/*", **{k.lower(): str(v) for k, v in request.headers.items()}}
    if body:
        headers.setdefault("content-type", "application/json")
        headers["content-length"] = str(len(body))
    head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    return f"{request.method} {target} HTTP/1.1\r\n{head}\r\n".encode() + body


async def _send_all(port: int, requests: list[bytes], connections: int) -> Counter:
    """Send every request on `connections` keep-alive connections, read each whole response (the
    simulator always sends a Content-Length); count the statuses."""
    statuses: Counter = Counter()
    waiting = list(reversed(requests))

    async def connection() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        while waiting:
            writer.write(waiting.pop())
            status = int((await reader.readline()).split()[1])
            length = None
            while (line := await reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if length is None:
                raise RuntimeError("a simulator response without Content-Length (this client reads no other)")
            await reader.readexactly(length)
            statuses[status] += 1
        writer.close()
        await writer.wait_closed()

    await asyncio.gather(*(connection() for _ in range(connections)))
    return statuses


def _cpu_seconds(proc: psutil.Process) -> tuple[float, float]:
    """The process's CPU seconds so far: user + system, and system alone (the kernel's part)."""
    times = proc.cpu_times()
    return times.user + times.system, times.system


def _kernel_mib(pid: int, field: str) -> float:
    """A VmXXX field of /proc/<pid>/status in MiB (VmHWM: the peak resident set)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024.0
    return 0.0


def _phase(
    sim: SimulatorProcess, proc: psutil.Process, requests: list[HttpRequest], connections: int
) -> dict[str, Any]:
    """One vendor endpoint's requests: the simulator's CPU for them, and the client's."""
    wire = [wire_request(r, sim.base_url) for r in requests]
    (cpu0, system0), client0, wall0 = _cpu_seconds(proc), time.process_time(), time.monotonic()
    got = asyncio.run(_send_all(sim.port, wire, connections))
    cpu, system = (after - before for after, before in zip(_cpu_seconds(proc), (cpu0, system0)))
    return {
        "requests": len(requests),
        "simulator_cpu_seconds": round(cpu, 3),
        "cpu_ms_per_request": round(cpu / len(requests) * 1000, 3),
        "system_cpu_ms_per_request": round(system / len(requests) * 1000, 3),
        "client_cpu_seconds": round(time.process_time() - client0, 3),
        "wall_seconds": round(time.monotonic() - wall0, 2),
        "load_average_after": round(os.getloadavg()[0], 2),
        "rss_mib_after": round(proc.memory_info().rss / 2**20, 1),
        "statuses": {str(k): v for k, v in sorted(got.items())},
    }


def _per_request_ms(phases: list[dict[str, Any]], key: str = "simulator_cpu_seconds") -> float:
    return sum(p[key] for p in phases) / sum(p["requests"] for p in phases) * 1000


def simulator(pages_per_stratum: int = 700, sample: int = 1, connections: int = 4) -> dict[str, Any]:
    """Every vendor's share of a snapshot's requests against one simulator; its CPU per request,
    memory and start-up time."""
    manifest = load_manifest(DEMO_MANIFEST)
    specs = manifest.vendors
    rows = snapshot_rows(pages_per_stratum)
    env = {
        "BENCH_SIM_PAGES_PER_STRATUM": str(pages_per_stratum),
        "BENCH_SIM_LATENCY_SCALE": "0",
        "BENCH_SIM_FAULTS": "",
    }
    started = time.monotonic()
    sim = start_simulator(env=env, timeout=600)
    startup_wall = time.monotonic() - started
    proc = psutil.Process(sim.pid)
    per_phase: dict[str, dict[str, Any]] = {}
    try:
        startup_cpu, startup_rss = _cpu_seconds(proc)[0], proc.memory_info().rss / 2**20
        for vendor in sorted(specs):  # one after another, as a snapshot fetches them
            built = vendor_requests(specs[vendor], rows, manifest.results_per_query)
            for capability in sorted(built, key=lambda c: c != "search"):
                phase = per_phase[f"{vendor}.{capability}"] = _phase(
                    sim, proc, built[capability][::sample], connections
                )
                print(
                    f"  {vendor}.{capability}: {phase['requests']} requests, {phase['cpu_ms_per_request']} ms CPU "
                    f"each, RSS {phase['rss_mib_after']} MiB, load {phase['load_average_after']}",
                    flush=True,
                )
        memory, peak_rss = proc.memory_full_info(), _kernel_mib(sim.pid, "VmHWM")
    finally:
        sim.stop()
    statuses: Counter = Counter()
    for phase in per_phase.values():
        statuses.update(phase["statuses"])
    worst = max(per_phase, key=lambda name: per_phase[name]["cpu_ms_per_request"])
    cpu_ms = _per_request_ms(list(per_phase.values()))
    return {
        "parameters": {
            "pages_per_stratum": pages_per_stratum,
            "rows_per_stratum": 3 * pages_per_stratum,
            "golden_and_decoy_rows": len(rows),
            "sample_every": sample,
            "connections": connections,
            "latency_scale": 0,
            "vendors": sorted(specs),
        },
        "figures": {
            "requests": sum(p["requests"] for p in per_phase.values()),
            "cpu_ms_per_request": round(cpu_ms, 3),
            "cpu_ms_per_request_by_endpoint": {
                endpoint: round(_per_request_ms([p for n, p in per_phase.items() if n.endswith(endpoint)]), 3)
                for endpoint in ("search", "extract")
            },
            "worst_phase": worst,
            "worst_phase_cpu_ms_per_request": per_phase[worst]["cpu_ms_per_request"],
            "startup_wall_seconds": round(startup_wall, 2),
            "startup_cpu_seconds": round(startup_cpu, 2),
            "rss_mib_after_startup": round(startup_rss, 1),
            "rss_mib_at_end": round(memory.rss / 2**20, 1),
            "pss_mib_at_end": round(memory.pss / 2**20, 1),
            "peak_rss_mib": round(peak_rss, 1),
            "statuses": dict(sorted(statuses.items())),
            "client_cpu_ms_per_request": round(_per_request_ms(list(per_phase.values()), "client_cpu_seconds"), 3),
            "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        },
        "per_phase": per_phase,
        "target": TARGETS,
        "passed": cpu_ms <= TARGETS["cpu_ms_per_request"] and peak_rss <= TARGETS["peak_rss_mib"],
    }
