"""What every benchmark shares: the machine it ran on, where results go, peak memory of a process tree."""

from __future__ import annotations

import json
import os
import platform
import resource
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
REPO = Path(__file__).resolve().parent.parent


def machine() -> dict[str, Any]:
    """The machine and load a figure was measured under (a shared machine's load changes figures)."""
    versions = {}
    for name in ("duckdb", "dagster", "httpx", "ranx", "numba", "lifelines", "pandas", "numpy"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "versions": versions,
    }


def write_result(name: str, result: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    payload = {
        "benchmark": name,
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": "python -m benchmarks.run_all " + " ".join(sys.argv[1:]),
        **result,
    }
    path.write_text(json.dumps(payload, indent=2, sort_keys=False) + "\n")
    return path


def peak_rss_mib() -> float:
    """This process's peak resident memory (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def pss_mib(pid: int) -> float | None:
    """A process's proportional set size (each shared page divided among the processes mapping
    it), from /proc/<pid>/smaps_rollup; None when it cannot be read."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) / 1024.0
    except (OSError, ValueError):
        return None
    return None


class TreeMemory:
    """Samples the memory of a process and all its descendants; keeps the peaks. The targets are
    on the summed PSS (the design brief's memory targets: summed RSS counts every shared library
    once per process); the summed RSS is kept beside it."""

    # every half second: reading each process's smaps_rollup costs the reader CPU (a fifth of a
    # core at 0.2 s over a dozen processes), taken from the two cores being measured
    def __init__(self, pid: int, interval: float = 0.5, also: tuple[int, ...] = ()):
        """`also`: processes outside the tree that work for it (a simulator the benchmark started
        beside the command): their memory is added in a peak of its own (`peak_with_also_pss_mib`)."""
        import psutil

        self.root = psutil.Process(pid)
        self.also = [psutil.Process(p) for p in also]
        self.interval = interval
        self.peak_tree_mib = 0.0
        self.peak_tree_pss_mib = 0.0
        self.peak_with_also_pss_mib = 0.0
        self.peak_single_mib = 0.0
        self.peak_processes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import psutil

        while not self._stop.is_set():
            try:
                tree = [self.root, *self.root.children(recursive=True)]
            except psutil.NoSuchProcess:
                return
            rss, pss, beside = [], [], 0.0
            for p in tree:
                try:
                    rss.append(p.memory_info().rss / 2**20)
                except psutil.NoSuchProcess:
                    continue
                share = pss_mib(p.pid)
                pss.append(rss[-1] if share is None else share)
            for p in self.also:
                share = pss_mib(p.pid)
                beside += share or 0.0
            if rss:
                self.peak_tree_mib = max(self.peak_tree_mib, sum(rss))
                self.peak_tree_pss_mib = max(self.peak_tree_pss_mib, sum(pss))
                self.peak_with_also_pss_mib = max(self.peak_with_also_pss_mib, sum(pss) + beside)
                self.peak_single_mib = max(self.peak_single_mib, max(rss))
                self.peak_processes = max(self.peak_processes, len(rss))
            self._stop.wait(self.interval)

    def __enter__(self) -> TreeMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def run_measured(cmd: list[str], env: dict[str, str], cwd: Path, also: tuple[int, ...] = ()) -> dict[str, Any]:
    """Run a command; its wall time and the peak memory of its process tree (and with `also`)."""
    started = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    with TreeMemory(proc.pid, also=also) as memory:
        output = proc.communicate()[0].decode("utf-8", "replace")
    return {
        "returncode": proc.returncode,
        "wall_seconds": round(time.monotonic() - started, 2),
        "peak_tree_pss_mib": round(memory.peak_tree_pss_mib, 1),
        "peak_with_also_pss_mib": round(memory.peak_with_also_pss_mib, 1),
        "peak_tree_rss_mib": round(memory.peak_tree_mib, 1),
        "peak_process_rss_mib": round(memory.peak_single_mib, 1),
        "peak_processes": memory.peak_processes,
        "output_tail": output[-3000:],
    }
