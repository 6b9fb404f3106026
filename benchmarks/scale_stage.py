"""One stage of a snapshot, in a process of its own, so `scale_bench` can measure it alone.

    python -m benchmarks.scale_stage assets SNAPSHOT ASSET [ASSET ...]   # snapshot-partitioned assets
    python -m benchmarks.scale_stage vendor SNAPSHOT VENDOR ASSET        # one vendor partition's asset
    python -m benchmarks.scale_stage noop SNAPSHOT                       # the imports alone (start-up)

With $SCALE_BENCH_PROFILE set to a file, the stage runs under cProfile and its statistics go there.
Runs on the Dagster instance and bench home of the environment ($DAGSTER_HOME, $BENCH_HOME), as
`bench demo` does for the same assets; exits 1 when the run fails.
"""

from __future__ import annotations

import cProfile
import os
import sys
from pathlib import Path

import dagster as dg

from bench_assets.cli.runs import ensure_dagster_home, materialize, register_snapshot


def main(argv: list[str]) -> int:
    kind, snapshot, *rest = argv
    if kind == "noop":  # start-up alone: the imports every stage's process pays
        return 0
    ensure_dagster_home()
    register_snapshot(snapshot)
    if kind == "assets":
        result = materialize(tuple(rest), snapshot, "scale benchmark")
    elif kind == "vendor":
        vendor, asset = rest
        result = materialize(
            (asset,), dg.MultiPartitionKey({"snapshot": snapshot, "vendor": vendor}), "scale benchmark"
        )
    else:
        raise SystemExit(f"unknown stage kind {kind!r}")
    if not result.success:
        for event in result.all_events:
            if event.is_failure:
                print(event.message, file=sys.stderr)
    return 0 if result.success else 1


if __name__ == "__main__":
    # $SCALE_BENCH_PROFILE: write this stage's cProfile statistics to that file
    profile_to = os.environ.get("SCALE_BENCH_PROFILE")
    if not profile_to:
        sys.exit(main(sys.argv[1:]))
    profiler = cProfile.Profile()
    code = profiler.runcall(main, sys.argv[1:])
    Path(profile_to).parent.mkdir(parents=True, exist_ok=True)
    profiler.dump_stats(profile_to)
    sys.exit(code)
