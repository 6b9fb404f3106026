"""The benchmarks' memory sampling (`benchmarks.common`): at the sample where a command's process
tree peaks, who held the memory (each process labelled) and which step the command was in."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from benchmarks.common import process_label, run_measured

# prints its steps, then holds 120 MiB in a forked child and 60 MiB in a spawned one at once
TREE = """
import os, subprocess, sys, time
print("loading", flush=True)
time.sleep(0.6)
print("holding", flush=True)
other = subprocess.Popen([sys.executable, "-c", "x = bytearray(60 * 2**20); x[::4096] = b'y' * len(x[::4096]); import time; time.sleep(3)"])
child = os.fork()
if child == 0:
    y = bytearray(120 * 2**20)
    y[::4096] = b"z" * len(y[::4096])
    time.sleep(3)
    os._exit(0)
os.waitpid(child, 0)
other.wait()
print("done", flush=True)
"""


def test_the_peak_says_which_processes_held_it_and_in_which_step(tmp_path):
    measured = run_measured([sys.executable, "-c", TREE], env=dict(os.environ), cwd=tmp_path)
    assert measured["returncode"] == 0, measured["output_tail"]
    peak = measured["peak_breakdown"]
    assert peak["stage"] == "holding"  # the last line printed before the peak
    assert peak["total_pss_mib"] == measured["peak_tree_pss_mib"]
    held = {p["label"].split(":")[0]: p["pss_mib"] for p in peak["processes"]}
    forked = next(p for p in peak["processes"] if p["label"].startswith("forked child of command: python"))
    assert 110 < forked["pss_mib"] < 140, peak
    spawned = next(p for p in peak["processes"] if "bytearray(60" in p["label"])
    assert 55 < spawned["pss_mib"] < 80, peak
    assert "command" in held and peak["processes"][0] == forked  # largest first
    assert peak["peak_pss_mib_by_stage"]["holding"] == peak["total_pss_mib"]


def test_a_process_is_named_by_what_it_is():
    bench = ["/v/bin/python3", "/v/bin/bench", "demo"]
    spawned = ["/v/bin/python3", "-B", "-c", "from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=10)"]
    assert process_label(bench, None, "", 0) == "command: python3 /v/bin/bench demo"
    assert process_label(["/v/bin/python3", "-m", "bench_assets.simulator.server"], bench, "x", 0) == "simulator"
    assert process_label(spawned, bench, "command: bench", 2) == "pool worker 2"
    assert process_label(spawned, spawned, "pool worker 2", 2) == "forked child of pool worker 2"
    assert process_label(["tail", "-F", "x"], spawned, "pool worker 1", 1) == (
        "Dagster compute-log capture of pool worker 1"
    )
    assert Path(process_label(["/usr/bin/time", "-v"], None, "", 0).split()[1]).name == "time"
    # an exited process not yet reaped (a zombie) has no command line: the sampler must not fail on it
    assert process_label([], bench, "command: bench", 1) == "ended"
