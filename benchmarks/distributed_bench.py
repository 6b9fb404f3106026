"""A whole snapshot's wall time on the local path, and on shared-nothing Celery workers (1 and 2).

Each configuration runs the same snapshot the same way an operator does: `bench snapshot add`,
dagster-webserver and dagster-daemon as their own processes on Postgres instance storage, and the
whole-snapshot backfill launched over GraphQL (`launchPartitionBackfill`), timed from launch to
the backfill's end; each configuration's `leaderboard.json` must give the local path's figures
(every metric but latency, and the response classes), or the benchmark fails. Only where steps execute and where data lives differ:

- `local`: every run's steps in its own process (the in-process executor), one DuckDB file,
  local archives, pacing log and files (the default path);
- `celery_1_worker`, `celery_2_workers`: every step a Celery task on `bench worker` processes
  (concurrency 1 each, own bench and Dagster homes), Redis broker and pacing, the lake, the shared
  warehouse, the journal and the files on moto's S3 server, turns in Postgres.

Every vendor's rate limit is raised (200 req/s, concurrency 8) and the simulator answers at 5 %
of its profiles' latency, so vendors are not the bottleneck. It starts what the tests start
(bench_assets_tests/distributed_services.py): PostgreSQL, Redis and moto's S3 server of its own.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import yaml

from bench_assets.definitions import defs
from bench_assets.defs.jobs import backfill_params, snapshot_selection
from bench_assets.simulator.server import start_simulator
from bench_assets_tests.distributed_services import Postgres, postgres_server, redis_server, s3_server
from bench_assets_tests.e2e.dagster_services import DagsterServices
from benchmarks.common import REPO

SNAPSHOT = "web_search-2026-q3"
ROWS_PER_STRATUM = 6  # 6 strata x 6 pages x 3 tasks = 108 golden rows, to each of 12 vendors


def _home(root: Path) -> Path:
    data = yaml.safe_load((REPO / "data" / "snapshots" / SNAPSHOT / "manifest.yaml").read_text())
    data["golden"]["rows_per_stratum"] = ROWS_PER_STRATUM
    for spec in data["vendors"].values():
        spec.update(rate_limit_per_second=200, concurrency=8)
        spec.pop("capability_rate_limits", None)
    path = root / "data" / "snapshots" / SNAPSHOT / "manifest.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return root


def _run(name: str, workers: int, sim_url: str, postgres: Postgres, stack: ExitStack, scratch: Path) -> dict[str, Any]:
    database = stack.enter_context(postgres.database())
    base = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("BENCH_", "DAGSTER_"))},
        **postgres.env,
        "DAGSTER_PG_DB": database,
        "DAGSTER_DISABLE_TELEMETRY": "yes",
        "BENCH_SIMULATOR_URL": sim_url,
        "PYTHONPATH": str(REPO),
    }
    instance_yaml = REPO / "deploy" / ("dagster-celery.yaml" if workers else "dagster-local-postgres.yaml")
    store = None
    if workers:
        redis_url = stack.enter_context(redis_server(scratch / "redis"))
        store = stack.enter_context(s3_server(scratch / "s3"))
        base.update(
            store.env,
            BENCH_CELERY_BROKER=redis_url,
            BENCH_PACING_URL=redis_url.removesuffix("/0") + "/1",
            BENCH_LAKE_URL=store.url("lake"),
            BENCH_WAREHOUSE_URL=store.url("warehouse"),
            BENCH_LOCK_URL=postgres.url(database),
            BENCH_FILES_URL=store.url("files"),
        )

    def machine(label: str) -> tuple[Path, dict[str, str]]:
        root = scratch / label
        home = _home(root / "home")
        postgres.instance_file(instance_yaml, root / "dagster_home")
        return home, {**base, "BENCH_HOME": str(home), "DAGSTER_HOME": str(root / "dagster_home")}

    control, env = machine("control")
    subprocess.run(
        [sys.executable, "-m", "bench_assets.cli.main", "snapshot", "add", SNAPSHOT],
        env=env,
        cwd=REPO,
        check=True,
        timeout=300,
    )
    procs = []
    for i in range(workers):
        worker_home, worker_env = machine(f"w{i}")
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "bench_assets.cli.main", "worker", "--name", f"w{i}", "--concurrency", "1"],
                env=worker_env,
                cwd=worker_home,
                stdout=(scratch / f"w{i}.log").open("ab"),
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )
    services = DagsterServices(scratch, env, REPO / "workspace.yaml", REPO)
    try:
        services.start_webserver()
        services.start_daemon()
        keys = snapshot_selection.resolve(defs().resolve_asset_graph())
        load = os.getloadavg()
        started = time.monotonic()
        _, status = services.backfill(backfill_params(sorted(keys), [SNAPSHOT]), timeout=3600)
        wall = time.monotonic() - started
    finally:
        services.stop()
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
    tasks = {}
    for i in range(workers):  # what each worker did: its tasks and the seconds they took
        durations = [float(d) for d in re.findall(r"succeeded in ([0-9.]+)s", (scratch / f"w{i}.log").read_text())]
        tasks[f"w{i}"] = {"steps": len(durations), "step_seconds": round(sum(durations), 1)}
    published = (
        store.filesystem().cat(f"{store.bucket}/files/publish/{SNAPSHOT}/leaderboard.json")
        if store is not None
        else (control / "data" / "publish" / SNAPSHOT / "leaderboard.json").read_bytes()
    )
    return {
        "configuration": name,
        "figures": _figures(json.loads(published)),
        "workers": workers,
        "status": status,
        "wall_seconds": round(wall, 1),
        "steps_by_worker": tasks,
        "load_average_before": [round(x, 2) for x in load],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }


def _figures(board: dict[str, Any]) -> dict[str, Any]:
    """What a leaderboard says about each vendor's answers: every metric but latency (each run
    fetched anew, so its timings differ; the simulator's answers do not), and the classes of its
    responses."""
    return {
        e["vendor"]: {
            "metrics": {k: v for k, v in e["metrics"].items() if not k.startswith("latency_")},
            "response_classes": e["response_classes"],
        }
        for e in board["vendors"]
    }


def distributed() -> dict[str, Any]:
    runs = []
    sim = start_simulator(env={"BENCH_SIM_LATENCY_SCALE": "0.05"})
    try:
        with postgres_server() as postgres:
            for name, workers in (("local", 0), ("celery_1_worker", 1), ("celery_2_workers", 2)):
                httpx.post(f"{sim.base_url}/_sim/reset", timeout=5)
                with tempfile.TemporaryDirectory(prefix=f"bench-{name}-") as tmp, ExitStack() as stack:
                    run = _run(name, workers, sim.base_url, postgres, stack, Path(tmp))
                load = run["load_average_before"]
                print(f"  {name}: {run['wall_seconds']} s ({run['status']}), load {load}", flush=True)
                runs.append(run)
    finally:
        sim.stop()
    by = {r["configuration"]: r for r in runs}
    local, one, two = (by[k]["wall_seconds"] for k in ("local", "celery_1_worker", "celery_2_workers"))
    ok = all(r["status"] in ("COMPLETED", "COMPLETED_SUCCESS") for r in runs)
    # the same snapshot, from the same simulated answers, publishes the same leaderboard wherever it ran
    same = all(r.pop("figures") == by["local"]["figures"] for r in runs if r is not by["local"])
    by["local"].pop("figures")
    return {
        "parameters": {
            "snapshot": SNAPSHOT,
            "vendors": 12,
            "golden_rows": ROWS_PER_STRATUM * 6 * 3,
            "rate_limit_per_second": 200,
            "vendor_concurrency": 8,
            "simulator_latency_scale": 0.05,
            "worker_concurrency": 1,
            "what": "whole-snapshot backfill over GraphQL, launch to end, webserver + daemon on Postgres",
        },
        "figures": {
            "local_seconds": local,
            "celery_1_worker_seconds": one,
            "celery_2_workers_seconds": two,
            "speedup_2_over_1_worker": round(one / two, 2) if two else None,
            "distributed_overhead_over_local_2_workers": round(two / local, 2) if local else None,
            "distributed_overhead_over_local_1_worker": round(one / local, 2) if local else None,
        },
        "same_figures_as_local": same,
        "runs": runs,
        "passed": ok and same,
    }
