"""`bench reproduce` on a published folder: the evidence bundle's size and the time to re-derive it.

The folder (default `data/publish/web_search-2026-q3`, the demo's; give the scale snapshot's to
measure that one) is copied alone into a fresh temporary directory and `bench reproduce` runs on
the copy as a reader would run it: from an empty directory, with none of the operator's settings,
under `/usr/bin/time -v`, its process tree sampled for peak memory. Sizes are read from the
folder itself: the bundle's bytes per table and per vendor level, per 1,000 public golden rows
and per 1,000 vendor responses (a public row sent to one vendor).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.common import REPO, run_measured

DEFAULT_FOLDER = REPO / "data" / "publish" / "web_search-2026-q3"


def _bytes(paths: list[Path]) -> int:
    return sum(p.stat().st_size for p in paths if p.is_file())


def bundle_sizes(folder: Path) -> dict[str, Any]:
    """The bundle's size, whole and per table, and the rows it covers (from its own index)."""
    evidence = folder / "evidence"
    index = json.loads((evidence / "bundle.json").read_text())
    public_rows = sum(1 for line in (folder / "public_split.jsonl").open() if line.strip())
    files = index["files"]
    responses = sum(r["rows"] for rel, r in files.items() if rel.startswith("evidence/attempts/"))
    results = sum(r["rows"] for rel, r in files.items() if rel.startswith("evidence/results/"))
    finals = 0
    try:
        import duckdb

        (finals,) = duckdb.sql(f"SELECT count(*) FROM '{evidence}/attempts/*.parquet' WHERE final").fetchall()[0]
    except Exception:  # a folder without attempts: no finals
        finals = 0
    total = _bytes(list(evidence.rglob("*")))
    attempts_bytes = _bytes(list((evidence / "attempts").glob("*.parquet")))
    results_bytes = _bytes(list((evidence / "results").glob("*.parquet")))
    levels: dict[str, int] = {}
    for vendor in index["vendors"].values():
        levels[vendor["evidence_level"]] = levels.get(vendor["evidence_level"], 0) + 1
    return {
        "public_rows": public_rows,
        "vendor_responses": finals,
        "attempts": responses,
        "results": results,
        "vendors_by_level": levels,
        "bundle_bytes": total,
        "attempts_bytes": attempts_bytes,
        "results_bytes": results_bytes,
        "bundle_mib": round(total / 2**20, 2),
        "bundle_mib_per_1000_public_rows": round(total / 2**20 / public_rows * 1000, 2) if public_rows else None,
        "bundle_kib_per_1000_vendor_responses": round(total / 2**10 / finals * 1000, 1) if finals else None,
        "folder_mib": round(_bytes(list(folder.rglob("*"))) / 2**20, 2),
    }


def reproduce(folder: Path | None = None) -> dict[str, Any]:
    folder = Path(folder or DEFAULT_FOLDER).resolve()
    if not (folder / "evidence" / "bundle.json").is_file():
        return {
            "parameters": {"folder": str(folder)},
            "figures": {"error": "no evidence bundle: publish the snapshot first (bench demo)"},
            "passed": False,
        }
    bench = str(Path(sys.executable).with_name("bench"))
    sizes = bundle_sizes(folder)
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "download" / folder.name
        shutil.copytree(folder, copy)
        elsewhere = Path(tmp) / "elsewhere"
        elsewhere.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCH_", "DAGSTER_"))}
        env["BENCH_HOME"] = str(elsewhere)
        measured = run_measured(
            ["/usr/bin/time", "-v", bench, "reproduce", str(copy), "--no-progress"], env=env, cwd=elsewhere
        )
    output = measured["output_tail"]
    differences = re.search(r"^(\d+) differences?$", output, re.M)
    verdicts = re.search(r"alone: (\d+) verdicts of (\d+) vendors on (\d+) public rows", output)
    unreproducible = len(re.findall(r"^not reproducible from public data: ", output, re.M))
    placed = re.search(
        r"^figures of leaderboard.json: (\d+), of which (\d+) re-derived.*?, (\d+) checked.*?, (\d+) unverifiable.*?, "
        r"(\d+) different$",
        output,
        re.M,
    )
    return {
        "parameters": {
            "command": "bench reproduce DIR --no-progress (a copy of the folder, alone, from an empty directory)",
            "folder": str(folder),
        },
        "figures": {
            "reproduce_wall_seconds": measured["wall_seconds"],
            "peak_tree_pss_mib": measured["peak_tree_pss_mib"],
            "peak_tree_rss_mib": measured["peak_tree_rss_mib"],
            "verdicts_rederived": int(verdicts.group(1)) if verdicts else None,
            "vendors": int(verdicts.group(2)) if verdicts else None,
            "differences": int(differences.group(1)) if differences else None,
            "not_reproducible_lines": unreproducible,
            **dict(
                zip(
                    ("board_figures", "board_rederived", "board_checked", "board_unverifiable", "board_different"),
                    map(int, placed.groups()) if placed else (None,) * 5,
                )
            ),
            "seconds_per_1000_vendor_responses": round(measured["wall_seconds"] / sizes["vendor_responses"] * 1000, 2)
            if sizes["vendor_responses"]
            else None,
            **sizes,
            "returncode": measured["returncode"],
        },
        "output_tail": output[-1500:],
        "passed": measured["returncode"] == 0 and differences is not None and differences.group(1) == "0",
    }
