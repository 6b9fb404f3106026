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
from collections.abc import Callable
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import IO, Any

RESULTS = Path(__file__).resolve().parent / "results"
REPO = Path(__file__).resolve().parent.parent


def machine() -> dict[str, Any]:
    """The machine and load a figure was measured under (a shared machine's load changes figures),
    and how fast it is this hour (`yardstick.measure_in_child`: a fixed piece of work's CPU seconds;
    the machine's speed changes figures too)."""
    from benchmarks.yardstick import measure_in_child

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
        "yardstick": measure_in_child(),
    }


def best_of(work: Callable[[], Any], repeats: int, clock: Callable[[], float] = time.perf_counter) -> tuple[float, Any]:
    """The shortest of `repeats` runs of `work` by `clock` (wall time by default, `time.process_time`
    for CPU), and what the last run returned."""
    best, answer = float("inf"), None
    for _ in range(repeats):
        started = clock()
        answer = work()
        best = min(best, clock() - started)
    return best, answer


def write_result(name: str, result: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    payload = {
        "benchmark": name,
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": f"python -m {_main_module()} " + " ".join(sys.argv[1:]),
        **result,
    }
    path.write_text(json.dumps(payload, indent=2, sort_keys=False) + "\n")
    return path


def _main_module() -> str:
    """The module run with `python -m` (the benchmark that wrote the result)."""
    spec = getattr(sys.modules["__main__"], "__spec__", None)
    return spec.name if spec is not None else "benchmarks.run_all"


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


def process_label(cmdline: list[str], parent_cmdline: list[str] | None, parent_label: str, pool_worker: int) -> str:
    """A short name for one process of a measured tree, from its command line and its parent's: the
    command itself, the simulator, a spawned pool's worker (numbered in the order they started:
    `bench demo`'s run the sentinel cycle and the vendor partitions), a forked child (same command line as its
    parent: a vendor's part being built, a half of the site), multiprocessing's resource tracker,
    the `tail` and watcher Dagster starts to capture a run's compute logs.
    DuckDB's and Dagster's threads are in their process and counted there."""
    line = " ".join(cmdline)
    if not cmdline:  # a process that has exited but not been reaped (a zombie) shows no command line
        return "ended"
    if parent_cmdline is None:
        return ("command: " + " ".join(Path(cmdline[0]).name if i == 0 else a for i, a in enumerate(cmdline[:3])))[:80]
    if "bench_assets.simulator.server" in line:
        return "simulator"
    if "resource_tracker" in line:
        return "multiprocessing resource tracker"
    if "watch_orphans" in line or Path(cmdline[0]).name == "tail":
        return f"Dagster compute-log capture of {parent_label}"
    if cmdline == parent_cmdline:
        return f"forked child of {parent_label}"
    if "spawn_main" in line:
        return f"pool worker {pool_worker}"
    return " ".join(cmdline[:3])[:80]


class TreeMemory:
    """Samples the memory of a process and all its descendants; keeps the peaks. The targets are
    on the summed PSS (the design brief's memory targets: summed RSS counts every shared library
    once per process); the summed RSS is kept beside it. At the sample where the summed PSS peaks
    it keeps who held it (`peak_breakdown`: each process's label, PSS and RSS) and the stage the
    command was in then (`stage`, a callable: the command's last progress line)."""

    # every half second: reading each process's smaps_rollup costs the reader CPU (a fifth of a
    # core at 0.2 s over a dozen processes), taken from the two cores being measured
    def __init__(
        self,
        pid: int,
        interval: float = 0.5,
        also: tuple[int, ...] = (),
        stage: Callable[[], str] = lambda: "",
    ):
        """`also`: processes outside the tree that work for it (a simulator the benchmark started
        beside the command): their memory is added in a peak of its own (`peak_with_also_pss_mib`)."""
        import psutil

        self.root = psutil.Process(pid)
        self.also = [psutil.Process(p) for p in also]
        self.interval = interval
        self.stage = stage
        self.peak_tree_mib = 0.0
        self.peak_tree_pss_mib = 0.0
        self.peak_with_also_pss_mib = 0.0
        self.peak_single_mib = 0.0
        self.peak_processes = 0
        self.peak_breakdown: dict[str, Any] = {}
        self.peak_by_stage: dict[str, float] = {}  # the tree's summed PSS
        self.peak_by_label: dict[str, float] = {}  # the largest one process of that label held
        self._labels: dict[int, str] = {}
        self._pool_workers: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _label(self, process: Any) -> str:
        """The process's label, worked out once (a pid is not reused within a run this short)."""
        import psutil

        if process.pid not in self._labels:
            try:
                cmdline = process.cmdline()
                parent = None if process.pid == self.root.pid else process.parent()
                parent_cmdline = parent.cmdline() if parent is not None else None
            except psutil.Error:
                return "ended"
            if "spawn_main" in " ".join(cmdline):
                self._pool_workers.append(process.pid)
            self._labels[process.pid] = process_label(
                cmdline,
                parent_cmdline,
                self._label(parent) if parent is not None else "",
                len(self._pool_workers),
            )
        return self._labels[process.pid]

    def _run(self) -> None:
        import psutil

        while not self._stop.is_set():
            try:
                tree = [self.root, *self.root.children(recursive=True)]
            except psutil.NoSuchProcess:
                return
            rows: list[dict[str, Any]] = []
            for p in tree:
                try:
                    rss = p.memory_info().rss / 2**20
                except psutil.NoSuchProcess:
                    continue
                share = pss_mib(p.pid)
                rows.append(
                    {"pid": p.pid, "label": self._label(p), "pss_mib": rss if share is None else share, "rss_mib": rss}
                )
            beside = 0.0
            for p in self.also:
                share = pss_mib(p.pid)
                beside += share or 0.0
            if rows:
                pss = sum(r["pss_mib"] for r in rows)
                self.peak_tree_mib = max(self.peak_tree_mib, sum(r["rss_mib"] for r in rows))
                stage = self.stage()
                if pss > self.peak_tree_pss_mib:
                    self.peak_tree_pss_mib = pss
                    self.peak_breakdown = peak_breakdown(rows, stage)
                self.peak_by_stage[stage] = round(max(self.peak_by_stage.get(stage, 0.0), pss), 1)
                for r in rows:
                    self.peak_by_label[r["label"]] = round(
                        max(self.peak_by_label.get(r["label"], 0.0), r["pss_mib"]), 1
                    )
                self.peak_with_also_pss_mib = max(self.peak_with_also_pss_mib, pss + beside)
                self.peak_single_mib = max(self.peak_single_mib, max(r["rss_mib"] for r in rows))
                self.peak_processes = max(self.peak_processes, len(rows))
            self._stop.wait(self.interval)

    def __enter__(self) -> TreeMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def peak_breakdown(rows: list[dict[str, Any]], stage: str) -> dict[str, Any]:
    """Who held the memory at one sample: each process (label, pid, PSS, RSS; largest PSS first)
    and the stage the command was in."""
    ordered = sorted(rows, key=lambda r: -r["pss_mib"])
    return {
        "stage": stage,
        "total_pss_mib": round(sum(r["pss_mib"] for r in rows), 1),
        "processes": [
            {"label": r["label"], "pid": r["pid"], "pss_mib": round(r["pss_mib"], 1), "rss_mib": round(r["rss_mib"], 1)}
            for r in ordered
        ],
    }


class LastLine:
    """Reads a command's output as it comes, keeping all of it and its last non-empty line (the
    step `bench` reports it is in)."""

    def __init__(self, stream: IO[bytes]):
        self.stream = stream
        self.lines: list[str] = []
        self.last = ""
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        for raw in self.stream:
            line = raw.decode("utf-8", "replace")
            self.lines.append(line)
            if line.strip():
                self.last = line.strip()[:160]

    def text(self) -> str:
        self._thread.join()
        return "".join(self.lines)


def run_measured(cmd: list[str], env: dict[str, str], cwd: Path, also: tuple[int, ...] = ()) -> dict[str, Any]:
    """Run a command; its wall time and the peak memory of its process tree (and with `also`), with
    who held it at the peak and in which of the command's stages (`peak_breakdown`)."""
    started = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    output_lines = LastLine(proc.stdout)
    with TreeMemory(proc.pid, also=also, stage=lambda: output_lines.last) as memory:
        output = output_lines.text()
        proc.wait()
    return {
        "returncode": proc.returncode,
        "wall_seconds": round(time.monotonic() - started, 2),
        "peak_tree_pss_mib": round(memory.peak_tree_pss_mib, 1),
        "peak_with_also_pss_mib": round(memory.peak_with_also_pss_mib, 1),
        "peak_tree_rss_mib": round(memory.peak_tree_mib, 1),
        "peak_process_rss_mib": round(memory.peak_single_mib, 1),
        "peak_processes": memory.peak_processes,
        "peak_breakdown": {
            **memory.peak_breakdown,
            "peak_pss_mib_by_stage": memory.peak_by_stage,
            "peak_process_pss_mib_by_label": memory.peak_by_label,
        },
        "output_tail": output[-3000:],
    }
