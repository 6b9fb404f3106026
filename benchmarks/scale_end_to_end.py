"""The scale benchmark's end-to-end run alone: `bench demo --workers N` at one size, measured.

    python -m benchmarks.scale_end_to_end [--size 12600] [--workers N] [--keep DIR]

The same run as `run_all scale --end-to-end` makes first at each size (`scale_bench._whole_snapshot`:
a fresh home with the demo manifest scaled to SIZE golden rows, rate limits raised, the demo's own
simulator at zero latency), without the stage-by-stage runs after it (about 20 minutes at 12,600
rows). Writes `results/scale_end_to_end_<size>.json`: wall time, CPU, the simulator's CPU, and the
peak PSS of the command's process tree (and with the simulator's beside it). `--keep DIR` keeps the
home in DIR/<size> (for `benchmarks.rescore_repeats DIR/<size>`).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from benchmarks.common import machine, write_result
from benchmarks.scale_bench import TARGETS, _whole_snapshot


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=12600)
    parser.add_argument(
        "--workers", type=int, default=None, help="default: the demo's own (one per core memory allows)"
    )
    parser.add_argument("--keep", type=Path, default=None, help="keep the home in DIR/<size>")
    args = parser.parse_args()
    info = machine()
    sim_env = {"BENCH_SIM_LATENCY_SCALE": "0", "BENCH_SIM_PAGES_PER_STRATUM": str(max(1, args.size // 18))}
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"bench-scale-{args.size}-", dir=args.keep) as tmp:
        figures = _whole_snapshot(Path(tmp) / "whole", args.size, None, sim_env, args.workers)
        if args.keep is not None:  # moved, as `run_all scale --keep` leaves it: DIR/<size> is the home
            kept = args.keep / str(args.size)
            shutil.rmtree(kept, ignore_errors=True)
            (Path(tmp) / "whole" / "home").rename(kept)
    print(figures)
    write_result(
        f"scale_end_to_end_{args.size}",
        {
            "command": "python -m benchmarks.scale_end_to_end " + " ".join(sys.argv[1:]),
            "parameters": {"size": args.size, "workers": args.workers, "simulator": sim_env},
            "machine": info,
            "figures": figures,
            "passed": figures["returncode"] == 0
            and figures["peak_tree_pss_mib"] < TARGETS["peak_tree_mib"]
            and (args.size != 12600 or figures["wall_seconds"] < TARGETS["end_to_end_seconds_12600"]),
        },
    )


if __name__ == "__main__":
    main()
