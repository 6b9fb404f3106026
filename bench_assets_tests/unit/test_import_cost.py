"""What a process pays to load the code location or a light `bench` command: every Dagster code
server, daemon, webserver and run worker imports `bench_assets.definitions`, and every `bench`
command its module, so a heavy library imported at the top of a module that is only registered
there is paid by all of them. Each asset imports its stage's code when it runs."""

from __future__ import annotations

import json
import subprocess
import sys

# Libraries and stages no process needs merely to define the assets or to register a snapshot.
HEAVY = (
    "pandas",
    "numpy",
    "scipy",
    "matplotlib",
    "jinja2",
    "aiohttp",
    "httpx",
    "pyarrow",
    "bench_assets.metrics",
    "bench_assets.simulator.app",
    "bench_assets.fetch.engine",
    "bench_assets.score.partition",
    "bench_assets.aggregate.leaderboard",
    "bench_assets.publish.snapshot",
    "bench_assets.storage.warehouse",
)


def heavy_modules_after(statement: str) -> list[str]:
    """The HEAVY modules a fresh interpreter holds after running `statement`."""
    probe = f"import json, sys\n{statement}\nprint(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_loading_the_code_location_imports_no_stage_code():
    assert heavy_modules_after("from bench_assets.definitions import defs\ndefs()") == []


def test_bench_snapshot_add_imports_no_stage_code():
    assert heavy_modules_after("import bench_assets.cli.snapshot, bench_assets.cli.main") == []
