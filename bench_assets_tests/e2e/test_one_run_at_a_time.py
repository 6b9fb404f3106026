"""One run of a snapshot at a time, said plainly, as an operator meets it: two `bench demo` of the
same snapshot in one home. The second stops at once with one line naming the first (its pid and
start time) and exits 1, with no traceback; the first finishes as if alone. A demo of another
snapshot in the same home runs beside it and finishes too."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench_assets_tests.helpers import REPO, SNAPSHOT, make_home, unwrapped, warehouse_rows

OTHER = "web_search-2026-q4"
BENCH = str(Path(sys.executable).parent / "bench")


def demo(home: Path, *args: str) -> list[str]:
    return [BENCH, "demo", "--workers", "2", *args]


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_a_second_demo_of_the_same_snapshot_stops_at_once_and_another_snapshot_runs_beside(tmp_path):
    home = tmp_path / "home"
    for snapshot in (SNAPSHOT, OTHER):
        make_home(home, ["brave", "exa"], rows_per_stratum=5, snapshot=snapshot)
    shutil.copy(REPO / "dagster.yaml", home / "dagster.yaml")
    env = {k: v for k, v in os.environ.items() if k not in ("BENCH_SIMULATOR_URL", "DAGSTER_HOME")}
    env.update(BENCH_HOME=str(home), BENCH_SIM_LATENCY_SCALE="0.05")
    holder = home / "data" / "warehouse" / "runs" / f"{SNAPSHOT}.json"
    # each demo's output to a file: a pipe left unread stalls a process that writes while holding a lock
    logs = {name: tmp_path / f"{name}.log" for name in ("first", "other")}

    def start(name: str, *args: str) -> subprocess.Popen:
        with logs[name].open("w") as out:
            return subprocess.Popen(demo(home, *args), cwd=home, env=env, stdout=out, stderr=subprocess.STDOUT)

    first = start("first")
    other = None
    try:
        deadline = time.monotonic() + 120
        while not holder.exists():
            assert first.poll() is None, logs["first"].read_text()[-3000:]
            assert time.monotonic() < deadline, "the first demo never took its snapshot"
            time.sleep(0.2)
        started = time.monotonic()
        second = subprocess.run(demo(home), cwd=home, env=env, capture_output=True, text=True, timeout=120)
        assert time.monotonic() - started < 60  # at once: the time to start Python and read the lock
        assert second.returncode == 1, second.stdout + second.stderr
        lines = unwrapped(second.stderr).strip().splitlines()  # one message, wrapped at 100 columns
        assert len(lines) == 1, second.stderr
        assert f"by pid {first.pid} (bench demo, started 20" in lines[0] and SNAPSHOT in lines[0], lines[0]
        assert "Traceback" not in second.stdout + second.stderr and "simulator on" not in second.stdout

        other = start("other", "--snapshot", OTHER)
        first.wait(timeout=2400)
        other.wait(timeout=2400)
    finally:
        for proc in (first, other):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
    for name, proc in (("first", first), ("other", other)):
        out = logs[name].read_text()
        assert proc is not None and proc.returncode == 0, out[-4000:]
        assert "Traceback" not in out and "Conflicting lock" not in out, out[-4000:]
    shows_its_steps_within_100_columns(logs["first"].read_text())
    for snapshot in (SNAPSHOT, OTHER):
        assert (home / "data" / "publish" / snapshot / "leaderboard.json").exists()
        rows = warehouse_rows(home, "SELECT count(*) FROM golden_rows WHERE snapshot_id = ?", [snapshot])[0][0]
        scored = warehouse_rows(home, "SELECT count(*) FROM row_scores WHERE snapshot_id = ?", [snapshot])[0][0]
        assert rows > 0 and scored == 2 * rows  # both vendors scored every row, once
    assert not holder.exists()  # released when the run ended


def shows_its_steps_within_100_columns(out: str) -> None:
    """What the demo printed (stdout and stderr, not a terminal): a line as each step starts and
    ends, from the first moment (before Dagster is imported), each vendor partition as it finishes
    counted in finishing order, no progress bar (no terminal), and no line past 100 columns."""
    lines = out.splitlines()
    assert lines[0] == "bench demo: loading the pipeline …", lines[:3]
    started = [line.removesuffix(" …") for line in lines if line.endswith(" …")]
    assert [s.split(" (")[0].split(",")[0] for s in started] == [
        "bench demo: loading the pipeline",
        "starting the simulator",
        "Dagster instance and snapshot partition",
        "golden stages",
        "2 vendor partitions",
        "agent trials",
        "leaderboard and site",
    ], started
    for step in started:
        assert any(line.startswith(f"{step}: done in ") for line in lines), step
    finished = [line.split() for line in lines if re.match(r"  \w+ +ok in [\d.]+s \(\d+ of 3\)", line)]
    assert sorted(f[0] for f in finished) == ["brave", "exa", "sentinels"], lines
    assert [f[4] for f in finished] == ["(1", "(2", "(3"]  # counted as they finish, whatever the vendor
    assert "\r" not in out and "it/s" not in out  # no bar without a terminal
    assert [line for line in lines if len(line) > 100] == []
    assert "Leaderboard web_search-2026-q3" in out and "site: data/publish/web_search-2026-q3/index.html" in out
