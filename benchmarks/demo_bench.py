"""The whole demo snapshot (`bench demo`) in a fresh home: wall time and peak memory (PSS and RSS) of its process tree."""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench_assets.manifest import load_manifest
from benchmarks.common import REPO, run_measured


def demo() -> dict[str, Any]:
    bench = str(Path(sys.executable).with_name("bench"))
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        # the repository's inputs (manifests, pricing pages), none of its outputs
        shutil.copytree(
            REPO / "data",
            home / "data",
            ignore=lambda d, names: [
                n for n in names if Path(d) == REPO / "data" and n in ("private", "publish", "warehouse")
            ],
        )
        if (REPO / "dagster.yaml").exists():
            shutil.copy(REPO / "dagster.yaml", home / "dagster.yaml")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCH_", "DAGSTER_"))}
        env.update(BENCH_HOME=str(home), DAGSTER_HOME=str(home / ".dagster_home"))
        measured = run_measured(["/usr/bin/time", "-v", bench, "demo"], env=env, cwd=home)
    largest = re.search(r"Maximum resident set size \(kbytes\): (\d+)", measured["output_tail"])
    workers = os.environ.get("BENCH_WORKERS", "4")
    return {
        "parameters": {
            "command": "bench demo",
            "snapshot": "web_search-2026-q3",
            "configurations": len(
                load_manifest(REPO / "data" / "snapshots" / "web_search-2026-q3" / "manifest.yaml").vendors
            ),
            "golden_rows": 252,
            "workers": workers,
            "home": "a fresh temporary BENCH_HOME and DAGSTER_HOME",
        },
        "figures": {
            "wall_seconds": measured["wall_seconds"],
            "peak_tree_pss_mib": measured["peak_tree_pss_mib"],
            "peak_tree_rss_mib": measured["peak_tree_rss_mib"],
            "peak_breakdown": measured["peak_breakdown"],
            "peak_process_rss_mib": measured["peak_process_rss_mib"],
            "largest_process_max_rss_mib_by_time": round(int(largest.group(1)) / 1024, 1) if largest else None,
            "peak_processes": measured["peak_processes"],
            "returncode": measured["returncode"],
        },
        "output_tail": measured["output_tail"][-1500:],
        "target": "peak PSS of the process tree under 2 GiB (issue 17; the design brief: memory targets are PSS)",
        "passed": measured["returncode"] == 0 and measured["peak_tree_pss_mib"] < 2048.0,
    }
