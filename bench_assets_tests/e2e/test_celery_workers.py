"""A snapshot on Dagster's Celery executor with two workers that share no directory.

Everything runs for real on 127.0.0.1: PostgreSQL (Dagster's instance storage, and the turns and
versions of the shared warehouse), Redis (the Celery broker, and each vendor's account-wide pacing
log), moto's S3 server (the object store: the lake, the warehouse's versions, the custody journal,
the mirrored snapshot, private and published files), the simulator, dagster-webserver and
dagster-daemon (its run queue launches the runs), and two `bench worker` processes (Celery
workers), each with its own bench home, Dagster home and working directory, as if on two hosts.

The operator launches a whole, tiny snapshot's runs over GraphQL as the UI's "Materialize" does
(the golden stages, a run per vendor, the results); every step runs on a worker. One vendor is
paced slowly, and the worker fetching it is killed with SIGKILL (the whole worker, as a lost
machine) mid-partition: the broker hands the step to the other worker, which resumes from the
archive the killed one left in the object store, and nothing archived is requested (or paid)
again. The broker hands a lost step on once it has gone unacknowledged for the visibility timeout
of a worker sweeping for such steps; the workers keep the deployment's, which must exceed the
longest step, and a third worker that consumes no queue sweeps with a short one while the lost
fetch is the only step in flight, so the test does not wait the deployment's. Finally `bench
rescore` on an operator's fresh machine finds no difference. One distributed run proves the
executor; that a single machine publishes the same leaderboard, and how long each path takes, is
`benchmarks/distributed_bench.py`'s (a longer run). That a whole snapshot is one backfill through
the daemon is test_dagster_ui.py's (as is re-running one vendor with its downstream assets), and
a vendor added to a registered manifest becoming a partition is test_snapshot_registration.py's.
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

from bench_assets.cli.worker import config_module
from bench_assets.defs.executors import celery_settings
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
# Dagster's implicit job of every asset, which the UI launches a selection of (the vendor stages have
# no job of their own: a backfill launches them the same way)
ASSET_JOB = "__ASSET_JOB"
VENDOR_ASSETS = ["vendor_responses", "vendor_scores"]
# the steps that must have run on a worker: of the golden run, the vendor runs and the results run
STEPS = ("golden_rows", "vendor_responses", "vendor_scores", "vendor_leaderboard", "published_snapshot")
# The broker hands a step on to another worker once it has gone unacknowledged for the visibility
# timeout of a worker sweeping for such steps (every worker does, see defs/executors.py). The workers
# keep the deployment's (the default): it must exceed the longest step (the leaderboard's or the
# publication's, minutes on a loaded machine), or a running step is handed out again. The sweeper
# sweeps with this one while the lost fetch is the only step in flight, and executes none.
SWEEP_VISIBILITY_TIMEOUT = 20
SWEEP_QUEUE = "bench-sweep"  # a queue no step is sent to


def slow_vendor(data: dict) -> None:
    """The slow vendor paced slowly enough that a kill lands mid-partition: its 18 calls take
    about 18 s, one at a time, and the kill follows its first archived attempt. (At 4 calls a
    second, two at a time, the whole fetch once ended between two looks of a loaded CI machine.)"""
    demo = yaml.safe_load((REPO / "data" / "snapshots" / SNAPSHOT / "manifest.yaml").read_text())
    data["vendors"][SLOW] = {**demo["vendors"][SLOW], "rate_limit_per_second": 1, "concurrency": 1}


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


def start_sweeper(directory: Path, env: dict[str, str], settings: dict) -> subprocess.Popen:
    """A Celery worker of dagster-celery's app with `settings` (the deployment's, but its visibility
    timeout), consuming a queue no step is sent to: it only sweeps the broker for lost steps."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "dagster_celery_config.py").write_text(config_module(settings))
    argv = ["worker", "--queues", SWEEP_QUEUE, "--hostname", "sweeper@%h", "--concurrency", "1"]
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "--app", "dagster_celery.app", *argv, "--without-gossip", "--without-mingle"],
        env={**env, "PYTHONPATH": os.pathsep.join([str(directory), env["PYTHONPATH"]])},
        cwd=directory,
        stdout=(directory / "worker.log").open("ab"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def stop_worker(proc: subprocess.Popen) -> None:
    """Celery's warm shutdown (SIGTERM), then SIGKILL if it takes a minute."""
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def vendor_tags(vendor: str) -> dict[str, str]:
    """A snapshot x vendor partition's run tags, as the UI (and a backfill) sets them."""
    return {
        "dagster/partition": f"{SNAPSHOT}|{vendor}",
        "dagster/partition/snapshot": SNAPSHOT,
        "dagster/partition/vendor": vendor,
    }


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
@pytest.mark.timeout(1200)
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
        # first: it creates the Dagster instance's tables in the empty database, which processes
        # starting together would each try to create
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
        sweeper: subprocess.Popen | None = None
        services = DagsterServices(machines["control"], envs["control"], REPO / "workspace.yaml", REPO)
        try:
            services.start_webserver(wait=False)  # both start beside the workers
            services.start_daemon()
            services.wait_webserver()

            # the snapshot's runs as the operator launches them from the UI, every step on a worker
            golden = services.launch_run("snapshot_golden_job", {"dagster/partition": SNAPSHOT})
            assert services.wait_run(golden, timeout=600) == "SUCCESS", services.log_tail()
            vendor_runs = {v: services.launch_run(ASSET_JOB, vendor_tags(v), VENDOR_ASSETS) for v in VENDORS}

            # the slow vendor's worker killed mid-fetch
            deadline = time.monotonic() + 600
            lake = ParquetLake(store.url("lake"))
            fetching: list[str] = []
            while not fetching:  # its partition's file on the machine fetching it (a local look)
                assert time.monotonic() < deadline, f"the fetch never started:\n{services.log_tail()}"
                time.sleep(0.1)
                fetching = [
                    n
                    for n in workers
                    if (homes[n] / "data" / "warehouse" / "partitions" / SNAPSHOT / f"{SLOW}.duckdb").exists()
                ]
            while not lake.archive_segments(SNAPSHOT, SLOW):  # its first attempts are archived
                assert lake.read_partition("raw_responses", SNAPSHOT, SLOW) is None, "the fetch ended before the kill"
                assert time.monotonic() < deadline, f"the fetch never got going:\n{services.log_tail()}"
                time.sleep(0.1)
            assert len(fetching) == 1, fetching
            killed = fetching[0]
            survivor = ({"w0", "w1"} - {killed}).pop()
            os.killpg(workers[killed].pid, signal.SIGKILL)  # the machine is gone, pool and all
            workers[killed].wait(timeout=30)
            sent_before_kill = len(sim_logs.requests())
            archived = lake.archived_rows(SNAPSHOT, SLOW)
            assert archived is not None and len(archived) > 0
            billed_before_kill = [b for b in sim_logs.billing() if b.get("vendor") == SLOW]
            archived_texts = {request_text(json.loads(r)["json"]) for r in archived[archived["final"]]["request_json"]}

            # the broker hands the lost step to the survivor once it has gone unacknowledged for a
            # sweeping worker's visibility timeout: the sweeper's, started when nothing else is in
            # flight (the fast vendor's run over), and stopped as soon as the survivor has the step
            assert services.wait_run(vendor_runs[FAST], timeout=600) == "SUCCESS", services.log_tail()
            with monkeypatch.context() as sweeping:
                sweeping.setenv("BENCH_CELERY_BROKER", redis_url)
                sweeping.setenv("BENCH_CELERY_VISIBILITY_TIMEOUT", str(SWEEP_VISIBILITY_TIMEOUT))
                sweeper = start_sweeper(machines["control"] / "sweeper", envs["control"], celery_settings())
            while len(celery_worker_of_steps(postgres, database, "vendor_responses", SLOW)) < 2:
                assert sweeper.poll() is None, (machines["control"] / "sweeper" / "worker.log").read_text()[-3000:]
                assert time.monotonic() < deadline, f"the lost step was never handed on:\n{services.log_tail()}"
                time.sleep(0.2)
            stop_worker(sweeper)
            assert services.wait_run(vendor_runs[SLOW], timeout=600) == "SUCCESS", services.log_tail()

            results = services.launch_run("snapshot_results_job", {"dagster/partition": SNAPSHOT})
            assert services.wait_run(results, timeout=900) == "SUCCESS", services.log_tail()
            # both machines worked, and no step ran on the operator's
            ran_on = {step: set(celery_worker_of_steps(postgres, database, step)) for step in STEPS}
            assert all(ran_on.values()) and ran_on["vendor_responses"] | ran_on["vendor_scores"] == {"w0", "w1"}, ran_on
            assert not (homes["control"] / "data" / "warehouse" / "partitions").exists()
            # the slow vendor's fetch went from the killed worker to the survivor, once, which resumed it
            fetched_on = celery_worker_of_steps(postgres, database, "vendor_responses", SLOW)
            assert fetched_on == [killed, survivor], fetched_on
            resent = [request_text(r) for r in sim_logs.requests()[sent_before_kill:] if r.get("vendor") == SLOW]
            assert not archived_texts & set(resent)  # nothing archived was requested (or paid) again
            raw = lake.read_partition("raw_responses", SNAPSHOT, SLOW)
            assert raw is not None and raw["final"].all() and not raw.duplicated(["query_id", "capability"]).any()
            assert len(resent) <= len(raw) - len(archived_texts) + 3  # the rest once (+ the calls in flight)
            assert len(billed_before_kill) < len(raw)  # killed mid-fetch, not after it
            assert not lake.archive_segments(SNAPSHOT, SLOW)  # held in the partition's object now
        finally:
            services.stop()
            for proc in [*workers.values(), *([sweeper] if sweeper else [])]:
                if proc.poll() is None:
                    stop_worker(proc)

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
