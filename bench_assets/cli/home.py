"""Where a `bench` command works: $BENCH_HOME, or the current directory; and its warehouse file."""

from __future__ import annotations

import os
from pathlib import Path


def bench_home() -> Path:
    return Path(os.environ.get("BENCH_HOME", os.getcwd())).resolve()


def warehouse_file() -> Path:
    """The central warehouse file: $BENCH_WAREHOUSE, or data/warehouse/bench.duckdb in the home (as
    `defs.resources.warehouse_from_env` binds it; this one is read without importing Dagster)."""
    return Path(os.environ.get("BENCH_WAREHOUSE") or bench_home() / "data" / "warehouse" / "bench.duckdb").resolve()
