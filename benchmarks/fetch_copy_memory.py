"""The fetch stage's peak memory when a vendor's whole archive is copied into a full warehouse.

    python -m benchmarks.fetch_copy_memory HOME [VENDOR] [--copy-limit 128MB]

HOME is a bench home kept by the scale benchmark (`python -m benchmarks.run_all scale --sizes 12600
--keep DIR`, then DIR/12600). The warehouse and its journal are first copied aside (once, to
HOME.before/) and restored from there before each run; the vendor's attempts are deleted from
`raw_responses`, so its fetch stage (`benchmarks.scale_stage vendor ... vendor_responses`) sends
nothing (its partition archive already holds every attempt) and copies all of them across, as
the first fetch of a vendor does into a warehouse that holds every other vendor's. Prints and
writes `results/fetch_copy_memory.json`: the stage's wall time, peak PSS and RSS of its process
tree, and the attempts copied.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import duckdb

from benchmarks.common import machine, run_measured, write_result

SNAPSHOT = "web_search-2026-q3"


def _restored(home: Path, vendor: str) -> Path:
    """The home's warehouse and journal as they were kept, without the vendor's attempts."""
    folder = home / "data" / "warehouse"
    kept = home.with_name(home.name + ".before")
    if not kept.exists():
        kept.mkdir()
        shutil.copy(folder / "bench.duckdb", kept / "bench.duckdb")
        shutil.copytree(folder / "journal", kept / "journal")
    shutil.copy(kept / "bench.duckdb", folder / "bench.duckdb")
    shutil.rmtree(folder / "journal")
    shutil.copytree(kept / "journal", folder / "journal")
    con = duckdb.connect(str(folder / "bench.duckdb"))
    try:
        con.execute("SET enable_progress_bar = false")
        # not journaled: the journal's head stays the warehouse's, as after a fetch that never copied
        con.execute("DELETE FROM raw_responses WHERE snapshot_id = ? AND vendor = ?", [SNAPSHOT, vendor])
        con.execute("CHECKPOINT")
    finally:
        con.close()
    return folder / "bench.duckdb"


def fetch_copy_memory(home: Path, vendor: str, copy_limit: str | None) -> dict[str, Any]:
    from bench_assets.simulator.server import start_simulator

    warehouse = _restored(home, vendor)
    sim_env = {"BENCH_SIM_LATENCY_SCALE": "0"}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCH_", "DAGSTER_"))}
    env.update(BENCH_HOME=str(home), DAGSTER_HOME=str(home / ".dagster_home"), **sim_env)
    if copy_limit:
        env["BENCH_DUCKDB_COPY_MEMORY_LIMIT"] = copy_limit
    cmd = [sys.executable, "-m", "benchmarks.scale_stage", "vendor", SNAPSHOT, vendor, "vendor_responses"]
    with start_simulator(env=sim_env) as sim:  # nothing is sent: the archive has every attempt
        env["BENCH_SIMULATOR_URL"] = sim.base_url
        measured = run_measured(cmd, env=env, cwd=home)
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        row = con.execute(
            "SELECT count(*) FROM raw_responses WHERE snapshot_id = ? AND vendor = ?", [SNAPSHOT, vendor]
        ).fetchone()
    finally:
        con.close()
    return {
        "parameters": {"home": str(home), "vendor": vendor, "copy_memory_limit": copy_limit or "default"},
        "machine": machine(),
        "figures": {
            "returncode": measured["returncode"],
            "wall_seconds": measured["wall_seconds"],
            "peak_tree_pss_mib": measured["peak_tree_pss_mib"],
            "peak_tree_rss_mib": measured["peak_tree_rss_mib"],
            "attempts_copied": int(row[0]) if row else 0,
        },
        "passed": measured["returncode"] == 0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("home", type=Path)
    parser.add_argument("vendor", nargs="?", default="youcom")
    parser.add_argument("--copy-limit", default="", help="$BENCH_DUCKDB_COPY_MEMORY_LIMIT for the stage")
    args = parser.parse_args()
    result = fetch_copy_memory(args.home.resolve(), args.vendor, args.copy_limit or None)
    result["command"] = "python -m benchmarks.fetch_copy_memory " + " ".join(sys.argv[1:])
    print(result["figures"])
    write_result("fetch_copy_memory", result)


if __name__ == "__main__":
    main()
