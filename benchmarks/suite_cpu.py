"""The CPU of a test run's whole process tree: the suite as `make test` runs it, or any command.

    python -m benchmarks.suite_cpu                       # .venv/bin/pytest -q -n 4 (make test)
    python -m benchmarks.suite_cpu --label e2e-ui -- .venv/bin/pytest -q -n 0 bench_assets_tests/e2e/test_dagster_ui.py

`/usr/bin/time` counts only the descendants that their parents waited for: a Dagster daemon's code
servers, a run's step processes or a worker killed by a test are orphans whose CPU it never sees.
Here the runner is a child subreaper (Linux's PR_SET_CHILD_SUBREAPER): every orphan of the tree is
re-parented to it and reaped by it, so the tree's CPU (RUSAGE_CHILDREN) is all of it. Wall time, the
tree's user and system CPU, the exit code and the load average at the start are printed and written
to `results/suite_cpu_<label>.json`. On a shared 2-core machine compare two versions as pairs run
back to back, in both orders; a single figure moves with the machine's speed.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import resource
import subprocess
import sys
import time

from benchmarks.common import machine, write_result
from benchmarks.yardstick import measure_in_child

PR_SET_CHILD_SUBREAPER = 36
MAKE_TEST = [".venv/bin/pytest", "-q", "-n", "4"]  # run from a checkout's root, as make test


def reap_all(grace: float) -> bool:
    """Reap every remaining descendant (orphans re-parented here); False if some outlive `grace`."""
    deadline = time.monotonic() + grace
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return True
        if pid == 0:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.5)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="make_test", help="names the results file")
    parser.add_argument("--grace", type=float, default=120.0, help="seconds to wait for orphans to end")
    parser.add_argument("command", nargs="*", help="the command (after --); default: make test's pytest")
    args = parser.parse_args(argv)
    command = args.command or MAKE_TEST
    if ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise SystemExit("suite_cpu: could not become a child subreaper (Linux only)")
    at_start = machine()  # its yardstick runs in a child: counted from here, not in the tree's CPU
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    returncode = subprocess.call(command)
    wall = time.monotonic() - started
    all_reaped = reap_all(args.grace)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    user, system = usage.ru_utime - before.ru_utime, usage.ru_stime - before.ru_stime
    at_end = measure_in_child()  # after the tree's CPU is read; the machine's speed may move during a long run
    result = {
        "run": " ".join(command),
        "returncode": returncode,
        "wall_s": round(wall, 1),
        "tree_cpu_user_s": round(user, 1),
        "tree_cpu_system_s": round(system, 1),
        "tree_cpu_s": round(user + system, 1),
        "every_descendant_reaped": all_reaped,
        "machine": at_start,
        "yardstick_at_end": at_end,
    }
    path = write_result(f"suite_cpu_{args.label}", result)
    print(
        f"{result['run']}: exit {returncode}, wall {result['wall_s']} s, tree CPU {result['tree_cpu_user_s']} user + "
        f"{result['tree_cpu_system_s']} sys = {result['tree_cpu_s']} s"
        + ("" if all_reaped else f" (some descendants outlived {args.grace:.0f} s: not counted)")
        + f"; yardstick {_seconds(at_start['yardstick'])} s at the start, {_seconds(at_end)} s at the end"
        + f"\n  -> {path}",
        file=sys.stderr,
    )
    return returncode


def _seconds(yardstick: dict | None) -> str:
    return str(yardstick["seconds"]) if yardstick else "—"


if __name__ == "__main__":
    raise SystemExit(main())
