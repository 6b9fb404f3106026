"""A run killed with nothing left to notice it does not stay STARTED, holding its vendor's slot.

A vendor partition is materialized in a child process against a Dagster home configured with the
repository's own dagster.yaml (what `make dev` and `bench demo` copy), and killed with SIGKILL
mid-fetch: no code server is left to notice (as when a whole `dagster dev` is killed), so the
run stays STARTED. A real `dagster-daemon` is then started on that home: its run monitoring, on
in dagster.yaml, fails the run once it passes its maximum runtime, and the vendor's one run slot
(`tag_concurrency_limits`) is free again. The test's only change to dagster.yaml shortens the
maximum runtime and the polling interval, so it does not wait six hours.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import dagster as dg
import yaml

from bench_assets_tests.e2e.dagster_services import BIN
from bench_assets_tests.helpers import REPO, make_home

VENDOR = "brave"
CHILD = textwrap.dedent("""
    import sys
    import dagster as dg
    from pathlib import Path
    from bench_assets_tests.helpers import GOLDEN_STAGES, SNAPSHOT, VENDOR_STAGES, materialize, register_partitions, vendor_key
    home, sim, vendor = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    with dg.DagsterInstance.get() as instance:
        register_partitions(instance, [SNAPSHOT])
        materialize(instance, home, sim, GOLDEN_STAGES, SNAPSHOT)
        materialize(instance, home, sim, VENDOR_STAGES, vendor_key(vendor))
""")


def paced(data: dict) -> None:
    data["vendors"][VENDOR].update(rate_limit_per_second=5, concurrency=2)  # minutes of calls: killed mid-fetch


def test_the_repo_instance_config_has_run_monitoring_on_with_a_maximum_runtime():
    for path in (
        REPO / "dagster.yaml",
        REPO / "deploy" / "dagster-local-postgres.yaml",
        REPO / "deploy" / "dagster-celery.yaml",
    ):
        monitoring = yaml.safe_load(path.read_text())["run_monitoring"]
        assert monitoring["enabled"] is True, path
        # the default launcher cannot check a worker: without a maximum runtime a dead run is STARTED forever
        assert 0 < monitoring["max_runtime_seconds"] <= 24 * 3600, path
        assert monitoring["max_resume_run_attempts"] == 0, path  # the default launcher cannot resume a run


def vendor_runs(instance: dg.DagsterInstance) -> list[dg.DagsterRun]:
    return [r for r in instance.get_runs() if r.tags.get("dagster/partition/vendor") == VENDOR]


def test_a_killed_run_is_failed_by_the_daemons_run_monitoring(tmp_path, simulator, sim_logs):
    home = make_home(tmp_path / "home", [VENDOR], rows_per_stratum=6, edit=paced)
    dagster_home = tmp_path / "dagster_home"
    dagster_home.mkdir()
    config = yaml.safe_load((REPO / "dagster.yaml").read_text())
    # only shorter waits: whether monitoring is on is the repository's file's own say
    config["run_monitoring"] = {
        **config.get("run_monitoring", {}),
        "max_runtime_seconds": 20,
        "poll_interval_seconds": 2,
    }
    (dagster_home / "dagster.yaml").write_text(yaml.safe_dump(config))
    env = {**os.environ, "DAGSTER_HOME": str(dagster_home), "BENCH_HOME": str(home)}

    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(home), simulator.base_url, VENDOR],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 300
    while not [b for b in sim_logs.billing() if b["vendor"] == VENDOR]:
        assert child.poll() is None, f"the run ended before it could be killed: {child.stderr.read()[-2000:]!r}"
        assert time.monotonic() < deadline, "the fetch never got going"
        time.sleep(0.2)
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    child.stderr.close()

    os.environ["DAGSTER_HOME"] = str(dagster_home)
    try:
        with dg.DagsterInstance.get() as instance:
            [run] = vendor_runs(instance)
            assert run.status == dg.DagsterRunStatus.STARTED
            time.sleep(5)  # nothing else would ever end it
            assert instance.get_run_by_id(run.run_id).status == dg.DagsterRunStatus.STARTED

            log = (tmp_path / "daemon.log").open("wb")
            daemon = subprocess.Popen(
                [str(BIN / "dagster-daemon"), "run", "-w", str(REPO / "workspace.yaml")],
                env=env,
                cwd=REPO,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            try:
                deadline = time.monotonic() + 240
                while instance.get_run_by_id(run.run_id).status == dg.DagsterRunStatus.STARTED:
                    assert daemon.poll() is None, (tmp_path / "daemon.log").read_text()[-3000:]
                    assert time.monotonic() < deadline, (tmp_path / "daemon.log").read_text()[-3000:]
                    time.sleep(1)
            finally:
                daemon.terminate()
                try:
                    daemon.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    daemon.kill()
                    daemon.wait(timeout=30)
                log.close()
            ended = instance.get_run_by_id(run.run_id)
            assert ended.status == dg.DagsterRunStatus.FAILURE
            said = [e.message or "" for e in instance.all_logs(run.run_id)]
            assert any("exceeding maximum runtime of 20 seconds" in m for m in said), said[-5:]
    finally:
        del os.environ["DAGSTER_HOME"]
