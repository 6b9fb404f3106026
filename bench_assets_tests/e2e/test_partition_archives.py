"""A vendor partition's archive under stress: two runs at once, a lost archive, a full disk.

- Two processes run the same vendor partition at the same moment (two launches, or a Celery step
  delivered again while the first still runs): both succeed, one waits for the other, and the
  simulator's billing log shows every call paid once. The archive used to be copied into the
  warehouse after the partition's lease was released, and the second run, holding the archive
  open by then, made the first one crash on DuckDB's file lock.
- The partition archive is lost (deleted, or left as 0 bytes by a full disk) while the warehouse
  holds its attempts: the next run of the partition sends nothing, and the warehouse keeps the
  very attempts it had (it used to send every call again and replace the evidence with the new
  answers).
- The disk really fills up (a 4 KiB tmpfs mounted over the partition archives, in a user and
  mount namespace of a child process): the fetch fails, `bench warehouse check` reports instead of
  crashing, and once space is freed the next run clears what the failed write left and completes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import dagster as dg
import duckdb
import httpx
import pandas as pd
import pytest

from bench_assets.cli.main import main
from bench_assets_tests.helpers import (
    GOLDEN_STAGES,
    SNAPSHOT,
    VENDOR_STAGES,
    make_home,
    materialize,
    register_partitions,
    require,
    vendor_key,
)

VENDOR = "brave"
# One run of the partition's fetch step, as a run worker or a Celery worker executes it: the
# asset's own function, given its context and resources.
STEP = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    import dagster as dg
    from bench_assets.defs.fetch import vendor_responses
    from bench_assets_tests.helpers import SNAPSHOT, register_partitions, resources, vendor_key
    home, sim, vendor = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    with dg.instance_for_test() as instance:
        register_partitions(instance, [SNAPSHOT])
        context = dg.build_asset_context(partition_key=vendor_key(vendor), instance=instance)
        done = vendor_responses(context, **resources(home, sim))
    print(json.dumps({k: getattr(v, "value", v) for k, v in done.metadata.items()}, default=str))
""")


def paced(data: dict) -> None:
    # slow enough that the two runs overlap: a few seconds of calls
    data["vendors"][VENDOR].update(rate_limit_per_second=20, concurrency=4)


@pytest.fixture(scope="module")
def golden_home(tmp_path_factory, simulator):
    """A home whose golden stages have run (every test works on a copy of it)."""
    home = make_home(tmp_path_factory.mktemp("golden"), [VENDOR], rows_per_stratum=6, edit=paced)
    with dg.instance_for_test() as instance:
        register_partitions(instance, [SNAPSHOT])
        materialize(instance, home, simulator.base_url, GOLDEN_STAGES, SNAPSHOT)
    return home


@pytest.fixture()
def home(golden_home, tmp_path) -> Path:
    copy = tmp_path / "home"
    shutil.copytree(golden_home, copy)
    return copy


def raw_responses(home: Path) -> pd.DataFrame:
    con = duckdb.connect(str(home / "data" / "warehouse" / "bench.duckdb"), read_only=True)
    try:
        return con.execute("SELECT * FROM raw_responses ORDER BY query_id, capability, attempt").df()
    finally:
        con.close()


def archive_of(home: Path) -> Path:
    return home / "data" / "warehouse" / "partitions" / SNAPSHOT / f"{VENDOR}.duckdb"


def test_two_runs_of_the_same_vendor_partition_at_once_both_succeed_and_pay_once(home, simulator, sim_logs):
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", STEP, str(home), simulator.base_url, VENDOR],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outcomes = [run.communicate(timeout=300) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], [err[-3000:] for _, err in outcomes]
    done = [json.loads(out.strip().splitlines()[-1]) for out, _ in outcomes]
    raw = raw_responses(home)
    assert len(raw) > 20 and raw["final"].all() and not raw.duplicated(["query_id", "capability"]).any()
    # one run sent everything, the other waited for the lease and found it all answered
    assert sorted(d["sent_this_run"] for d in done) == [0, len(raw)]
    assert sorted(d["reused_from_archive"] for d in done) == [0, len(raw)]
    assert [d["dagster/row_count"] for d in done] == [len(raw), len(raw)]
    billed = [b for b in sim_logs.billing() if b["vendor"] == VENDOR]
    assert len(billed) == len(raw)  # every call paid once


@pytest.mark.parametrize("loss", ["deleted", "left empty by a full disk", "cut short by a full disk"])
def test_a_lost_archive_is_taken_back_from_the_warehouse_without_paying_again(home, simulator, sim_logs, capsys, loss):
    with dg.instance_for_test() as instance:
        register_partitions(instance, [SNAPSHOT])
        materialize(instance, home, simulator.base_url, VENDOR_STAGES, vendor_key(VENDOR))
        before = raw_responses(home)
        archive = archive_of(home)
        header = archive.read_bytes()[:4096]
        archive.unlink()
        Path(f"{archive}.wal").unlink(missing_ok=True)
        if loss == "left empty by a full disk":
            archive.write_bytes(b"")
        elif loss == "cut short by a full disk":
            archive.write_bytes(header)  # the file's own header written, the rest refused
        httpx.post(f"{simulator.base_url}/_sim/reset", timeout=5)  # only what the re-run sends is logged
        result = materialize(instance, home, simulator.base_url, VENDOR_STAGES, vendor_key(VENDOR))
    assert sim_logs.requests() == [] and sim_logs.billing() == []  # nothing sent, nothing paid
    after = raw_responses(home)
    pd.testing.assert_frame_equal(after, before)  # the original evidence, attempt for attempt
    metadata = result.asset_materializations_for_node("vendor_responses")[0].metadata
    assert metadata["sent_this_run"].value == 0 and metadata["taken_back_from_warehouse"].value == len(before)
    con = duckdb.connect(str(archive_of(home)), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM raw_responses").fetchone()[0] == len(before)
    finally:
        con.close()
    os.environ["BENCH_HOME"] = str(home)
    try:
        assert main(["warehouse", "check"]) == 0
    finally:
        del os.environ["BENCH_HOME"]
    assert "every table equals" in capsys.readouterr().out


DISK_FULL = textwrap.dedent("""
    import contextlib, io, json, subprocess, sys
    from pathlib import Path
    from bench_assets.cli.main import main
    from bench_assets.fetch.partition import fetch_vendor_partition
    from bench_assets.simulator.app import sim_key
    from bench_assets.storage.warehouse import Warehouse
    from bench_assets_tests.helpers import SNAPSHOT, resources
    home, sim, vendor = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    partitions = home / "data" / "warehouse" / "partitions"
    partitions.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4k", "tmpfs", str(partitions)], check=True)
    bound = resources(home, sim)
    paths, gateway = bound["paths"], bound["gateway"]
    manifest = paths.manifest(SNAPSHOT)

    def fetch():
        try:
            done = fetch_vendor_partition(  # opened directly: DuckDBResource's back-off would wait 100 s on the full disk
                Warehouse(home / "data" / "warehouse" / "bench.duckdb"), manifest, vendor, paths.private,
                lambda url: gateway.url(url, manifest.mode), sim_key(vendor),
            )
            return {"sent": done.stats.sent, "rows": done.rows}
        except Exception as exc:
            return {"error": f"{type(exc).__name__}: {exc}"}

    def check():
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(["warehouse", "check"])
            except BaseException as exc:
                code = f"raised {type(exc).__name__}: {exc}"
        return {"code": code, "out": out.getvalue() + err.getvalue()}

    report = {"full": fetch()}
    report["left"] = {p.name: p.stat().st_size for p in (partitions / SNAPSHOT).glob("*.duckdb*")}
    report["check_full"] = check()
    subprocess.run(["mount", "-o", "remount,size=64m", str(partitions)], check=True)
    report["freed"] = fetch()
    report["check_freed"] = check()
    print(json.dumps(report))
""")


def test_a_full_disk_leaves_nothing_that_blocks_the_next_run(home, simulator, sim_logs):
    unshare = shutil.which("unshare")
    require(
        unshare is not None and subprocess.run([unshare, "-rm", "true"], capture_output=True).returncode == 0,
        "unshare with user namespaces (a tmpfs mounted without root)",
    )
    env = {**os.environ, "BENCH_HOME": str(home)}
    child = subprocess.run(
        [unshare, "-rm", sys.executable, "-c", DISK_FULL, str(home), simulator.base_url, VENDOR],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert child.returncode == 0, child.stderr[-3000:]
    report = json.loads(child.stdout.strip().splitlines()[-1])
    assert "No space left on device" in report["full"]["error"], report["full"]
    assert report["left"].get(f"{VENDOR}.duckdb", 0) < 12288  # the failed write's leftover
    # check reports the state instead of a traceback (the warehouse holds no attempt yet: it agrees)
    assert isinstance(report["check_full"]["code"], int), report["check_full"]
    assert "Traceback" not in report["check_full"]["out"]
    assert report["freed"]["sent"] > 20 and report["freed"]["rows"] == report["freed"]["sent"]
    assert report["check_freed"]["code"] == 0, report["check_freed"]
    raw = raw_responses(home)
    assert len(raw) == report["freed"]["rows"] and not raw.duplicated(["query_id", "capability"]).any()
