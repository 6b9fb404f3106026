"""What an operator meets around a run, through the commands as they run them:

- `.env` in the bench home is read by every command, never over the environment, and no key it
  holds is printed;
- `bench snapshot remove` takes a snapshot that was never published out of the home (its partition,
  its warehouse rows, its files moved into the private store's removed/ folder) and the other
  snapshots keep working, their sentinel schedule included; a published snapshot is refused;
- `bench review send` exits 0 once the packets are written (the review gate is closed that day by
  design: it is shown, not returned as a failure).

The last two are shown on the snapshot the removal kept: one home with its golden stages and
vendor partitions serves all three claims.
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest

from bench_assets.cli import main as cli
from bench_assets.cli.preflight import simulated_probe
from bench_assets.defs.sentinels import probe_schedule, sentinel_pages, sentinel_probes
from bench_assets.simulator.app import sim_key, simulated_url
from bench_assets.storage.lifecycle import PUBLISHED, set_status
from bench_assets.storage.removal import SNAPSHOT_TABLES
from bench_assets.storage.warehouse import Warehouse
from bench_assets_tests.helpers import (
    GOLDEN_STAGES,
    SNAPSHOT,
    VENDOR_STAGES,
    fingerprint,
    make_home,
    materialize,
    resources,
    unwrapped,
    vendor_key,
    warehouse_rows,
)

BENCH = str(Path(sys.executable).parent / "bench")
OTHER = "web_search-2026-q4"


# ##### .env


def live_home(tmp_path: Path, simulator) -> Path:
    def live(data: dict) -> None:
        data["mode"] = "live"
        for spec in data["vendors"].values():
            spec["endpoints"] = {c: simulated_url(u, simulator.base_url) for c, u in spec["endpoints"].items()}

    return make_home(tmp_path / "home", ["brave"], edit=live)


def run_bench(home: Path, *argv: str, **env: str) -> subprocess.CompletedProcess:
    """`bench ...` as an operator runs it in the home, with only the environment given here set
    for bench (besides what any shell has)."""
    base = {
        k: v for k, v in os.environ.items() if not k.startswith(("BENCH_", "DAGSTER_")) and not k.endswith("_API_KEY")
    }
    return subprocess.run([BENCH, *argv], cwd=home, env={**base, **env}, capture_output=True, text=True, timeout=300)


def test_every_command_reads_the_homes_env_file_without_overriding_the_environment(tmp_path, simulator, sim_control):
    home = live_home(tmp_path, simulator)
    key = sim_key("brave")
    (home / ".env").write_text(f"BRAVE_API_KEY={key}\nBENCH_SPLIT_KEY=a-long-random-split-secret-for-this-test\n")
    query, url = simulated_probe()
    done = run_bench(home, "preflight", SNAPSHOT)  # a rehearsal: its endpoints are the simulator's
    assert done.returncode == 0, done.stderr
    assert "a rehearsal against bench simulator): asking for a planted page" in done.stdout
    assert "all 1 vendors ready" in done.stdout
    assert key not in done.stdout + done.stderr
    # the environment wins over the file: a key set there is the one sent (and refused here)
    done = run_bench(
        home,
        "preflight",
        SNAPSHOT,
        "--recheck",
        "--query",
        query,
        "--url",
        url,
        BRAVE_API_KEY="wrong-key-from-the-shell",
    )
    assert done.returncode == 1
    assert "brave: key refused" in done.stderr and "$BRAVE_API_KEY" in done.stderr
    assert key not in done.stdout + done.stderr and "wrong-key-from-the-shell" not in done.stdout + done.stderr
    # from another directory, $BENCH_HOME names the home whose .env is read
    done = run_bench(tmp_path, "preflight", SNAPSHOT, "--query", query, "--url", url, BENCH_HOME=str(home))
    assert done.returncode == 0, done.stderr


# ##### bench snapshot remove


@pytest.fixture()
def two_snapshots(tmp_path, simulator, monkeypatch):
    """A home with two snapshots registered on a persistent Dagster home: each with its golden
    stages, a vendor partition and a batch of sentinel pages."""
    home = tmp_path / "home"
    for snapshot in (SNAPSHOT, OTHER):
        make_home(home, ["serper"], rows_per_stratum=5, snapshot=snapshot)
    monkeypatch.setenv("BENCH_HOME", str(home))
    monkeypatch.delenv("BENCH_SIMULATOR_URL", raising=False)
    (tmp_path / "dagster").mkdir()
    with dg.instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:  # sets $DAGSTER_HOME for the CLI
        for snapshot in (SNAPSHOT, OTHER):
            assert cli.main(["snapshot", "add", snapshot]) == 0
            materialize(instance, home, simulator.base_url, GOLDEN_STAGES, snapshot)
            materialize(instance, home, simulator.base_url, VENDOR_STAGES, vendor_key("serper", snapshot))
            dg.materialize(
                [sentinel_pages],
                instance=instance,
                partition_key=snapshot,
                resources=resources(home, simulator.base_url),
                run_config={
                    "ops": {"sentinel_pages": {"config": {"published_at": "2026-07-01T00:00:00+00:00", "count": 2}}}
                },
            )
        yield home, instance


def rows_of(home: Path, snapshot: str) -> dict[str, int]:
    present = {r[0] for r in warehouse_rows(home, "SELECT table_name FROM information_schema.tables")}
    return {
        t: warehouse_rows(home, f"SELECT count(*) FROM {t} WHERE snapshot_id = ?", [snapshot])[0][0]
        for t in SNAPSHOT_TABLES
        if t in present
    }


def probe_requests(home: Path, simulator, instance) -> list[str]:
    schedule = probe_schedule(resources(home, "")["paths"], resources(home, "")["duckdb"])
    repository = dg.Definitions(
        assets=[sentinel_pages, sentinel_probes], schedules=[schedule], resources=resources(home, simulator.base_url)
    ).get_repository_def()
    context = dg.build_schedule_context(
        instance=instance, scheduled_execution_time=datetime(2026, 7, 1, 6, tzinfo=UTC), repository_def=repository
    )
    return sorted(r.partition_key for r in schedule.evaluate_tick(context).run_requests or [])


def test_removing_a_snapshot_leaves_the_others_working_and_never_takes_a_published_one(
    two_snapshots, simulator, monkeypatch, capsys
):
    home, instance = two_snapshots
    assert probe_requests(home, simulator, instance) == [SNAPSHOT, OTHER]
    kept = rows_of(home, SNAPSHOT)
    assert all(rows_of(home, OTHER)[t] > 0 for t in ("golden_rows", "raw_responses", "row_scores", "sentinel_pages"))

    assert cli.main(["snapshot", "remove", OTHER]) == 0
    out = capsys.readouterr().out
    assert f"removed snapshot {OTHER}" in out and f"unregistered snapshot partition '{OTHER}'" in out
    assert not any(rows_of(home, OTHER).values())
    assert rows_of(home, SNAPSHOT) == kept
    assert not (home / "data" / "snapshots" / OTHER).exists()
    assert not (home / "data" / "warehouse" / "partitions" / OTHER).exists()
    assert not instance.has_dynamic_partition("snapshots", OTHER)
    [moved] = (home / "data" / "private" / "removed").iterdir()
    assert moved.name.startswith(f"{OTHER}-")
    assert (moved / "snapshot" / "manifest.yaml").exists() and (moved / "partitions" / "serper.duckdb").exists()
    assert (moved / "private" / "golden" / f"{OTHER}.jsonl").exists()  # the private files stay private
    assert not list((home / "data" / "private").glob(f"*/{OTHER}.*"))

    # the other snapshot: its probe schedule, its runs and the warehouse's custody are as before
    assert probe_requests(home, simulator, instance) == [SNAPSHOT]
    result = materialize(instance, home, simulator.base_url, VENDOR_STAGES, vendor_key("serper"))
    assert result.success
    assert cli.main(["warehouse", "check"]) == 0, capsys.readouterr()
    # a snapshot that is no longer anywhere is named as such
    assert cli.main(["snapshot", "remove", OTHER]) == 2
    assert f"no snapshot '{OTHER}' in this home" in capsys.readouterr().err

    # ##### bench review send, then a published snapshot (the one kept above) is never removed
    # `bench review send` exits 0 once the packets are written: the gate, closed that day, is shown
    materialize(instance, home, simulator.base_url, ("vendor_leaderboard",), SNAPSHOT)
    monkeypatch.setenv("BENCH_SIMULATOR_URL", simulator.base_url)
    capsys.readouterr()  # what the materialization above logged
    assert cli.main(["review", "send", SNAPSHOT]) == 0
    out = capsys.readouterr().out
    assert f"{SNAPSHOT}: frozen" in out and "serper" in out  # the gate shown: closed, as it is that day
    assert cli.main(["review", "status", SNAPSHOT]) == 1  # status still says the gate is closed
    assert (home / "data" / "private" / "review" / SNAPSHOT).is_dir()

    set_status(Warehouse(home / "data" / "warehouse" / "bench.duckdb"), SNAPSHOT, PUBLISHED, "published for this test")
    before = fingerprint(home)
    capsys.readouterr()
    assert cli.main(["snapshot", "remove", SNAPSHOT]) == 1
    err = unwrapped(capsys.readouterr().err)
    assert f"snapshot {SNAPSHOT} is published and immutable, so it is kept as it is" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert fingerprint(home) == before
    assert (home / "data" / "snapshots" / SNAPSHOT / "manifest.yaml").exists()
    assert instance.has_dynamic_partition("snapshots", SNAPSHOT)
