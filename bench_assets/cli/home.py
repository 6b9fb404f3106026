"""Where a `bench` command works: $BENCH_HOME, or the current directory."""

from __future__ import annotations

import os
from pathlib import Path


def bench_home() -> Path:
    return Path(os.environ.get("BENCH_HOME", os.getcwd())).resolve()
