"""The memory of scoring one vendor partition on a kept home, in-process, and whether it scores as stored.

    python -m benchmarks.score_memory --home DIR [--vendor V] [--body-chars N] [--compare]

A home kept by the scale benchmark (`scale_end_to_end --keep DIR`, then DIR/<size>) holds a whole
snapshot. This scores one vendor (default: the one with the most archived body characters) as
`vendor_scores` does (`score.partition.score_vendor_partition`), writing nothing, and reports the
process's resident memory: after its imports and the golden rows, its peak while scoring
(VmHWM, reset once the golden rows are read), and what it holds after. `--compare` checks the frames against the partition's stored
`row_scores` and `response_results`, row for row (EXCEPT ALL both ways), and exits 1 on any
difference: with a home published by other code, that is whether this code scores it the same.
"""

from __future__ import annotations

import argparse
import inspect
import json
import time
from pathlib import Path
from typing import Any

SNAPSHOT = "web_search-2026-q3"


def _memory_mib() -> dict[str, int]:
    """Resident memory now and the process's peak (VmRSS, VmHWM), MiB."""
    status = Path("/proc/self/status").read_text()
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return {key: int(fields[name].split()[0]) // 1024 for key, name in (("rss", "VmRSS"), ("peak", "VmHWM"))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", required=True, type=Path)
    parser.add_argument("--vendor", default="")
    parser.add_argument("--body-chars", type=int, default=0, help="characters of bodies per batch (default: scoring's)")
    parser.add_argument("--compare", action="store_true", help="compare with the stored row_scores, response_results")
    args = parser.parse_args(argv)

    from bench_assets.golden.store import load_golden_rows
    from bench_assets.manifest import load_manifest
    from bench_assets.runtime import give_back_memory
    from bench_assets.score import partition
    from bench_assets.storage.tables import TABLES
    from bench_assets.storage.warehouse import Warehouse

    home = args.home.resolve()
    warehouse = Warehouse(home / "data" / "warehouse" / "bench.duckdb")
    manifest = load_manifest(home / "data" / "snapshots" / SNAPSHOT / "manifest.yaml")
    vendor = args.vendor or max(warehouse.public_body_chars(SNAPSHOT).items(), key=lambda kv: kv[1])[0]
    rows = len(load_golden_rows(warehouse, SNAPSHOT))
    give_back_memory()
    Path("/proc/self/clear_refs").write_text("5")  # the peak (VmHWM) from here on, not the golden rows' load
    before = _memory_mib()
    extra: dict[str, Any] = {}
    if args.body_chars and "body_chars" in inspect.signature(partition.score_vendor_partition).parameters:
        extra["body_chars"] = args.body_chars
    started = time.monotonic()
    scores, results = partition.score_vendor_partition(warehouse, manifest, vendor, **extra)
    seconds = time.monotonic() - started
    after = _memory_mib()
    differing = None
    if args.compare:
        differing = 0
        where = "snapshot_id = ? AND vendor = ?"
        with warehouse.connect() as con:
            for table, frame in (("row_scores", scores), ("response_results", results)):
                columns = ", ".join(TABLES[table].column_names)
                con.register("scored_now", frame)
                stored = f"SELECT {columns} FROM {table} WHERE {where}"
                now = f"SELECT {columns} FROM scored_now"
                for sql in (f"{stored} EXCEPT ALL {now}", f"{now} EXCEPT ALL {stored}"):
                    found = con.execute(f"SELECT count(*) FROM ({sql})", [SNAPSHOT, vendor]).fetchone()
                    differing += int(found[0]) if found else 0
                con.unregister("scored_now")
    print(
        json.dumps(
            {
                "vendor": vendor,
                "golden_rows": rows,
                "results": len(results),
                "seconds": round(seconds, 1),
                "rss_before_mib": before["rss"],
                "peak_mib": after["peak"],
                "peak_over_before_mib": after["peak"] - before["rss"],
                "rss_after_mib": after["rss"],
                **({"body_chars": extra["body_chars"]} if extra else {}),
                **({"rows_differing_from_stored": differing} if differing is not None else {}),
            }
        )
    )
    return 1 if differing else 0


if __name__ == "__main__":
    raise SystemExit(main())
