"""A snapshot on Dagster's Celery executor with two workers that share no directory.

Everything runs for real on 127.0.0.1: PostgreSQL (Dagster's instance storage, and the turns and
versions of the shared warehouse), Redis (the Celery broker, and each vendor's account-wide pacing
log), moto's S3 server (the object store: the lake, the warehouse's versions, the custody journal,
the mirrored snapshot, private and published files), the simulator, dagster-webserver and
dagster-daemon, and two `bench worker` processes (Celery workers), each with its own bench home,
Dagster home and working directory, as if on two hosts.

The operator backfills a whole, tiny snapshot over GraphQL as the UI does; every step runs on a
worker. One vendor is paced slowly, and the worker fetching it is killed with SIGKILL (the whole
worker, as a lost machine) mid-partition: the broker hands the step to the other worker, which
resumes from the archive the killed one left in the object store, and nothing archived is
requested (or paid) again. Finally `bench rescore` on an operator's fresh machine finds no
difference. One distributed run proves the executor; that a single machine publishes the same
leaderboard, and how long each path takes, is `benchmarks/distributed_bench.py`'s (a longer run).
Re-running one vendor with its downstream assets is the UI test's (test_dagster_ui.py), and a
vendor added to a registered manifest becoming a partition is test_snapshot_registration.py's.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
import yaml

from bench_assets.definitions import defs
from bench_assets.defs.jobs import backfill_params, snapshot_selection
from bench_assets.storage.lake import ParquetLake
from bench_assets_tests.distributed_services import Postgres, redis_server, s3_server
from bench_assets_tests.e2e.dagster_services import DagsterServices
from bench_assets_tests.helpers import (
    REPO,
    SNAPSHOT,
    make_home,
)

FAST = "brave"
SLOW = "exa"  # paced slowly: its worker is killed mid-fetch
VENDORS = [FAST, SLOW]
ROWS_PER_STRATUM = 5  # the least a manifest takes: one page a stratum, 18 rows
# Seconds before the broker hands a lost worker's task to another: most of the test's time is this
# wait after the kill. It must exceed the longest step (see defs/executors.py), the leaderboard's or
# the publication's, or that step is handed out again, and again, while it runs: at 60 s, on this
# 2-core machine under other test suites (load 24-50), the leaderboard step took 75-184 s.
VISIBILITY_TIMEOUT = 120


def slow_vendor(data: dict) -> None:
    """The slow vendor paced slowly enough that a kill lands mid-partition: its 18 calls take
    about 4 s, and the kill follows its first archived attempt within a fraction of a second."""
    demo = yaml.safe_load((REPO / "data" / "snapshots" / SNAPSHOT / "manifest.yaml").read_text())
    data["vendors"][SLOW] = {**demo["vendors"][SLOW], "rate_limit_per_second": 4, "concurrency": 2}


def request_text(request: dict) -> str:
    """The query or URL an Exa call carries (search: `query`; contents: `urls[0]`)."""
    body = request if "query" in request or "urls" in request else json.loads(request.get("body") or "{}")
    return body["query"] if "query" in body else body["urls"][0]


def start_worker(name: str, home: Path, env: dict[str, str], log: Path) -> subprocess.Popen:
    """`bench worker` in its own session (so the test can kill the whole worker, pool and all)."""
    return subprocess.Popen(
        [sys.executable, "-m", "bench_assets.cli.main", "worker", "--name", name, "--concurrency", "1"],
        env=env,
        cwd=home,
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def celery_worker_of_steps(postgres: Postgres, database: str, step_key: str, vendor: str | None = None) -> list[str]:
    """The Celery workers that executed `step_key` (of `vendor`'s runs only, when given), in order
    (from dagster-celery's engine events)."""
    con = postgres.connect(database)
    try:
        cur = con.cursor()
        cur.execute(
            "SELECT event FROM event_logs WHERE step_key = %s AND event LIKE %s"
            + (
                " AND run_id IN (SELECT run_id FROM run_tags WHERE key = 'dagster/partition/vendor' AND value = %s)"
                if vendor
                else ""
            )
            + " ORDER BY id",
            [step_key, "%in celery worker%", *([vendor] if vendor else [])],
        )
        return [m.group(1) for (event,) in cur.fetchall() for m in [re.search(r"(w[01])@", event)] if m]
    finally:
        con.close()


def registered_vendors(postgres: Postgres, database: str) -> list[str]:
    con = postgres.connect(database)
    try:
        cur = con.cursor()
        cur.execute("SELECT partition FROM dynamic_partitions WHERE partitions_def_name = 'vendors'")
        return sorted(v for (v,) in cur.fetchall())
    finally:
        con.close()


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_a_snapshot_on_two_celery_workers_sharing_no_directory_one_killed_mid_fetch(
    tmp_path, simulator, sim_logs, monkeypatch, postgres
):
    with (
        redis_server(tmp_path / "redis") as redis_url,
        s3_server(tmp_path / "s3") as store,
        postgres.database() as database,
    ):
        for key, value in store.env.items():  # this process reads the bucket too
            monkeypatch.setenv(key, value)
        shared = {
            **postgres.env,
            "DAGSTER_PG_DB": database,
            "DAGSTER_DISABLE_TELEMETRY": "yes",
            **store.env,
            "BENCH_SIMULATOR_URL": simulator.base_url,
            "BENCH_CELERY_BROKER": redis_url,
            "BENCH_CELERY_VISIBILITY_TIMEOUT": str(VISIBILITY_TIMEOUT),
            "BENCH_PACING_URL": redis_url.removesuffix("/0") + "/1",
            "BENCH_LAKE_URL": store.url("lake"),
            "BENCH_WAREHOUSE_URL": store.url("warehouse"),
            "BENCH_LOCK_URL": postgres.url(database),
            "BENCH_FILES_URL": store.url("files"),
            "PYTHONPATH": str(REPO),
        }
        # the operator's machine (webserver and daemon) and two worker machines: a directory each
        machines = {name: tmp_path / name for name in ("control", "w0", "w1")}
        homes, envs = {}, {}
        for name, root in machines.items():
            homes[name] = make_home(root / "home", VENDORS, rows_per_stratum=ROWS_PER_STRATUM, edit=slow_vendor)
            postgres.instance_file(REPO / "deploy" / "dagster-celery.yaml", root / "dagster_home")
            envs[name] = {
                **os.environ,
                **shared,
                "BENCH_HOME": str(homes[name]),
                "DAGSTER_HOME": str(root / "dagster_home"),
                "TMPDIR": str(root),
            }
        subprocess.run(
            [sys.executable, "-m", "bench_assets.cli.main", "snapshot", "add", SNAPSHOT],
            env=envs["control"],
            cwd=REPO,
            check=True,
            timeout=180,
        )
        assert registered_vendors(postgres, database) == sorted(VENDORS)
        workers = {
            name: start_worker(name, homes[name], envs[name], machines[name] / "worker.log") for name in ("w0", "w1")
        }
        services = DagsterServices(machines["control"], envs["control"], REPO / "workspace.yaml", REPO)
        try:
            services.start_webserver()
            services.start_daemon()
            graph = defs().resolve_asset_graph()

            # the whole snapshot, every step on a worker; the slow vendor's worker killed mid-fetch
            keys = snapshot_selection.resolve(graph)
            backfill_id = services.launch_backfill(backfill_params(sorted(keys), [SNAPSHOT]))
            deadline = time.monotonic() + 900
            lake = ParquetLake(store.url("lake"))
            while not lake.archive_segments(SNAPSHOT, SLOW):  # its first attempts are archived
                assert time.monotonic() < deadline, f"the fetch never got going:\n{services.log_tail()}"
                time.sleep(0.1)
            fetching = [
                n
                for n in workers
                if (homes[n] / "data" / "warehouse" / "partitions" / SNAPSHOT / f"{SLOW}.duckdb").exists()
            ]
            assert len(fetching) == 1, fetching
            killed = fetching[0]
            os.killpg(workers[killed].pid, signal.SIGKILL)  # the machine is gone, pool and all
            workers[killed].wait(timeout=30)
            sent_before_kill = len(sim_logs.requests())
            archived = lake.archived_rows(SNAPSHOT, SLOW)
            assert archived is not None and len(archived) > 0
            billed_before_kill = [b for b in sim_logs.billing() if b.get("vendor") == SLOW]
            archived_texts = {request_text(json.loads(r)["json"]) for r in archived[archived["final"]]["request_json"]}

            status = services.wait_backfill(backfill_id, timeout=1500)
            assert status in ("COMPLETED", "COMPLETED_SUCCESS"), (status, services.log_tail())
            survivor = ({"w0", "w1"} - {killed}).pop()
            # both machines worked, and no step ran on the operator's
            ran_on = {
                step: set(celery_worker_of_steps(postgres, database, step))
                for step in ("golden_rows", "vendor_responses", "vendor_scores")
            }
            assert ran_on["golden_rows"] and ran_on["vendor_responses"] | ran_on["vendor_scores"] == {"w0", "w1"}, (
                ran_on
            )
            assert not (homes["control"] / "data" / "warehouse" / "partitions").exists()
            # the slow vendor's fetch went from the killed worker to the survivor, which resumed it (a
            # fetch slower than the visibility timeout, on a loaded machine, is delivered to it again:
            # the partition lease makes that delivery wait and pay nothing, see defs/executors.py)
            fetched_on = celery_worker_of_steps(postgres, database, "vendor_responses", SLOW)
            assert fetched_on[0] == killed and fetched_on[1:] and set(fetched_on[1:]) == {survivor}, fetched_on
            resent = [request_text(r) for r in sim_logs.requests()[sent_before_kill:] if r.get("vendor") == SLOW]
            assert not archived_texts & set(resent)  # nothing archived was requested (or paid) again
            raw = lake.read_partition("raw_responses", SNAPSHOT, SLOW)
            assert raw is not None and raw["final"].all() and not raw.duplicated(["query_id", "capability"]).any()
            assert len(resent) <= len(raw) - len(archived_texts) + 3  # the rest once (+ the calls in flight)
            assert len(billed_before_kill) < len(raw)  # killed mid-fetch, not after it
            assert not lake.archive_segments(SNAPSHOT, SLOW)  # held in the partition's object now
        finally:
            services.stop()
            for proc in workers.values():
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGTERM)
                    try:
                        proc.wait(timeout=60)
                    except subprocess.TimeoutExpired:
                        os.killpg(proc.pid, signal.SIGKILL)
                        proc.wait(timeout=30)

        # what the workers published is what the archive scores to: `bench rescore` from an
        # operator's fresh machine of the distributed deployment (the same snapshot run on one machine
        # publishing the same leaderboard is compared by benchmarks/distributed_bench.py)
        paid = len(sim_logs.billing())
        fs = store.filesystem()
        board = json.loads(fs.cat(f"{store.bucket}/files/publish/{SNAPSHOT}/leaderboard.json"))
        assert sorted(e["vendor"] for e in board["vendors"] if e["status"] == "scored") == sorted(VENDORS)
        operator = make_home(tmp_path / "operator", VENDORS, rows_per_stratum=ROWS_PER_STRATUM, edit=slow_vendor)
        done = subprocess.run(
            [sys.executable, "-m", "bench_assets.cli.main", "rescore", SNAPSHOT],
            env={**os.environ, **shared, "BENCH_HOME": str(operator)},
            cwd=operator,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0 and "no differences" in done.stdout, done.stdout + done.stderr
        assert len(sim_logs.billing()) == paid
        # the central file every machine shares holds the snapshot-level tables; the lake the rest
        con = duckdb.connect(str(operator / "data" / "warehouse" / "bench.duckdb"), read_only=True)
        try:
            assert con.execute("SELECT count(DISTINCT vendor) FROM vendor_metrics").fetchone()[0] == len(VENDORS)
            assert con.execute("SELECT count(*) FROM raw_responses").fetchone()[0] == 0
        finally:
            con.close()
