"""Crash safety: SIGKILL the fetch process mid-partition, materialize again.

The vendor partition is materialized in a child process (as `bench demo` and the Dagster run
launcher do), killed with SIGKILL once some responses are archived, and materialized again.
The simulator's request and billing logs prove what was sent: nothing that was archived as final
is requested again, every other query exactly once more. The warehouse then holds every query
once, and the scores equal those of an uninterrupted run of the same partition.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import dagster as dg
import duckdb
import pandas as pd

from bench_assets.storage.warehouse import Warehouse
from bench_assets_tests.helpers import (
    GOLDEN_STAGES,
    SNAPSHOT,
    VENDOR_STAGES,
    make_home,
    materialize,
    register_partitions,
    vendor_key,
)

VENDOR = "exa"
CHILD = textwrap.dedent("""
    import sys
    import dagster as dg
    from pathlib import Path
    from bench_assets_tests.helpers import VENDOR_STAGES, materialize, vendor_key
    home, sim, vendor = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    with dg.DagsterInstance.get() as instance:
        materialize(instance, home, sim, VENDOR_STAGES, vendor_key(vendor))
""")
NOT_DETERMINISTIC = ["latency_ms", "request_id"]  # wall-clock latency; ids the simulator numbers per process


def paced(data: dict) -> None:
    # Slow enough that the kill lands mid-partition: 90 calls at 15 a second.
    data["vendors"][VENDOR].update(rate_limit_per_second=15, concurrency=4)


def request_text(request: dict) -> str:
    """The query or URL an Exa call carries (search: `query`; contents: `urls[0]`)."""
    body = request if "query" in request or "urls" in request else json.loads(request.get("body") or "{}")
    return body["query"] if "query" in body else body["urls"][0]


def warehouse_table(home: Path, sql: str) -> pd.DataFrame:
    con = duckdb.connect(str(home / "data" / "warehouse" / "bench.duckdb"), read_only=True)
    try:
        return con.execute(sql).df()
    finally:
        con.close()


def test_a_killed_fetch_resumes_without_paying_twice_or_losing_a_row(tmp_path, simulator, sim_logs):
    home = make_home(tmp_path / "killed", [VENDOR], edit=paced)
    reference = make_home(tmp_path / "uninterrupted", [VENDOR], edit=paced)
    (tmp_path / "dagster").mkdir()
    with dg.instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
        register_partitions(instance, [SNAPSHOT])
        materialize(instance, home, simulator.base_url, GOLDEN_STAGES, SNAPSHOT)
        n_queries = int(warehouse_table(home, "SELECT count(*) n FROM golden_rows")["n"][0])

        env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "dagster")}
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(home), simulator.base_url, VENDOR],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 120
        while len(sim_logs.billing()) < 25:
            assert child.poll() is None, f"the fetch ended before it could be killed: {child.stderr.read()[-2000:]!r}"
            assert time.monotonic() < deadline, "the fetch never got going"
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
        child.stderr.close()
        assert child.returncode == -signal.SIGKILL
        sent_before_kill = len(sim_logs.requests())

        partition = Warehouse(home / "data" / "warehouse" / "bench.duckdb").partition_file(SNAPSHOT, VENDOR)
        assert Path(str(partition) + ".wal").exists()  # killed before any checkpoint: recovery replays the log
        con = duckdb.connect(str(partition), read_only=True)
        archived = con.execute("SELECT query_id, capability, request_json FROM raw_responses WHERE final").df()
        con.close()
        assert 0 < len(archived) < n_queries
        assert not archived.duplicated(["query_id", "capability"]).any()
        archived_texts = {request_text(json.loads(r)["json"]) for r in archived["request_json"]}

        materialize(instance, home, simulator.base_url, VENDOR_STAGES, vendor_key(VENDOR))
        resent = [request_text(r) for r in sim_logs.requests()[sent_before_kill:]]
        raw = warehouse_table(home, f"SELECT * FROM raw_responses WHERE vendor = '{VENDOR}'")
        n_calls = len(raw)  # golden rows and the decoys sent among them
        assert n_calls >= n_queries and raw["final"].all()  # one attempt each (no faults here), all final
        assert not raw.duplicated(["query_id", "capability"]).any()
        assert not archived_texts & set(resent)  # nothing archived was requested (or billed) again
        assert len(resent) == n_calls - len(archived)  # everything else exactly once (in-flight calls were lost)

        materialize(instance, reference, simulator.base_url, GOLDEN_STAGES, SNAPSHOT)
        materialize(instance, reference, simulator.base_url, VENDOR_STAGES, vendor_key(VENDOR))

    query = "SELECT * FROM row_scores ORDER BY row_id"
    resumed, uninterrupted = (warehouse_table(h, query).drop(columns=NOT_DETERMINISTIC) for h in (home, reference))
    assert len(resumed) == n_queries
    pd.testing.assert_frame_equal(resumed, uninterrupted)
    results = "SELECT * EXCLUDE (snippet) FROM response_results ORDER BY row_id, rank"
    pd.testing.assert_frame_equal(warehouse_table(home, results), warehouse_table(reference, results))
