"""One run of a snapshot at a time in a home: a second is refused at once, naming the first (pid,
command, start time); other snapshots run side by side; a run that dies frees its snapshot."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from bench_assets.cli.run_lock import SnapshotBusy, runs_dir, snapshot_run

HOLDER = textwrap.dedent("""
    import sys, time
    from bench_assets.cli.run_lock import snapshot_run
    with snapshot_run(sys.argv[1], sys.argv[2], "bench demo"):
        print("holding", flush=True)
        time.sleep(120)
""")


def hold(warehouse: Path, snapshot: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(warehouse), snapshot], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "holding"
    return proc


def test_a_second_run_of_the_same_snapshot_is_refused_naming_the_first(tmp_path):
    warehouse = tmp_path / "data" / "warehouse" / "bench.duckdb"
    first = hold(warehouse, "web_search-2026-q3")
    try:
        started = time.monotonic()
        with pytest.raises(SnapshotBusy) as info, snapshot_run(warehouse, "web_search-2026-q3", "bench demo"):
            pytest.fail("the second run went ahead")
        assert time.monotonic() - started < 1.0  # at once, not after a wait
        message = str(info.value)
        assert "\n" not in message
        assert f"by pid {first.pid} (bench demo, started 20" in message
        assert "web_search-2026-q3 is already being run in this home" in message
        assert first.poll() is None  # the first run goes on
        # another snapshot proceeds beside it
        with snapshot_run(warehouse, "web_search-2026-q4", "bench demo"):
            assert (runs_dir(warehouse) / "web_search-2026-q4.json").exists()
        assert not (runs_dir(warehouse) / "web_search-2026-q4.json").exists()
    finally:
        first.kill()
        first.wait()


def test_a_run_that_dies_frees_its_snapshot(tmp_path):
    warehouse = tmp_path / "bench.duckdb"
    first = hold(warehouse, "web_search-2026-q3")
    os.kill(first.pid, signal.SIGKILL)  # no clean-up runs
    first.wait()
    with snapshot_run(warehouse, "web_search-2026-q3", "bench demo"):
        pass


@pytest.mark.parametrize("warehouse", [None, "elsewhere/bench.duckdb"])
def test_the_lock_sits_beside_the_warehouse_the_commands_bind(tmp_path, monkeypatch, warehouse):
    """The command line finds the warehouse without importing Dagster: the file the resources bind."""
    from bench_assets.cli.home import warehouse_file
    from bench_assets.defs.resources import warehouse_from_env

    monkeypatch.setenv("BENCH_HOME", str(tmp_path))
    if warehouse:
        monkeypatch.setenv("BENCH_WAREHOUSE", str(tmp_path / warehouse))
    else:
        monkeypatch.delenv("BENCH_WAREHOUSE", raising=False)
    assert warehouse_file() == Path(warehouse_from_env().database)


STARTER = textwrap.dedent("""
    import os
    import dagster as dg
    from bench_assets.cli.runs import ensure_dagster_home
    ensure_dagster_home()
    with dg.DagsterInstance.get() as instance:
        instance.add_dynamic_partitions("snapshots", [os.environ["SNAPSHOT"]])
""")


def test_commands_starting_together_in_a_fresh_dagster_home_all_start(tmp_path):
    """Dagster creates its SQLite storage on first use; four commands opening a fresh home at once
    raced its schema migrations ("more than one head present") until the first use was serialized."""
    home = tmp_path / "dagster_home"
    starters = [
        subprocess.Popen(
            [sys.executable, "-c", STARTER],
            env={**os.environ, "BENCH_HOME": str(tmp_path), "DAGSTER_HOME": str(home), "SNAPSHOT": f"s{i}-2026-q1"},
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(4)
    ]
    errors = [p.communicate(timeout=240)[1] for p in starters]
    assert [p.returncode for p in starters] == [0, 0, 0, 0], "\n".join(errors)[-3000:]
