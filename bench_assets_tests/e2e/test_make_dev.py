"""`make dev` as an operator runs it: quiet to start, and stopped by a signal within seconds.

`make dev` ends in `python -m bench_assets.cli.dev`, which becomes `dagster dev`. Started in the
background of a shell without job control (`make dev &`, a script, a supervisor), a program
inherits SIGINT ignored, and `dagster dev` copied that onto SIGTERM: nothing but SIGKILL stopped
it, and its webserver, daemon and code server lived on. And it printed two warnings that misled:
that the `dagster.yaml` beside it was not used (`make dev` copies it into $DAGSTER_HOME), and
that it is superseded by `dg dev` (a tool this project does not install).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from bench_assets.simulator.server import free_port
from bench_assets_tests.helpers import REPO, make_home

STOP_WITHIN = 30.0  # seconds; a few on an idle machine, more on two loaded cores


def session_processes(session: int) -> list[int]:
    """The processes still alive in the session `dagster dev` was started in (zombies aside)."""
    alive = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == session and fields[0] != "Z":  # state, ppid, pgrp, session
            alive.append(int(stat.parent.name))
    return alive


def test_make_dev_starts_quietly_and_stops_on_sigint_even_started_in_the_background(tmp_path):
    home = make_home(tmp_path / "home", ["exa"])
    shutil.copy(REPO / "dagster.yaml", home / "dagster.yaml")  # as in the repository: beside the command
    dagster_home = tmp_path / "dagster_home"
    dagster_home.mkdir()
    shutil.copy(REPO / "dagster.yaml", dagster_home / "dagster.yaml")  # what `make dev` copies
    port = free_port()
    env = {**os.environ, "BENCH_HOME": str(home), "DAGSTER_HOME": str(dagster_home)}
    env.pop("PYTHONWARNINGS", None)
    log = tmp_path / "dev.log"
    with open(log, "wb") as out:
        dev = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bench_assets.cli.dev",
                "--port",
                str(port),
                "--workspace",
                str(REPO / "workspace.yaml"),
            ],
            cwd=home,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            # as `make dev &` leaves it: SIGINT ignored, inherited
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
        )
    try:
        deadline = time.monotonic() + 240
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/server_info", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert dev.poll() is None, log.read_text()
            assert time.monotonic() < deadline, f"not up in 240 s:\n{log.read_text()}"
            time.sleep(1)
        started = log.read_text()
        assert "WARNING" not in started and "Warning" not in started, started
        assert "superseded" not in started and "dagster.yaml" not in started, started

        asked = time.monotonic()
        dev.send_signal(signal.SIGINT)
        dev.wait(timeout=STOP_WITHIN)
        while session_processes(dev.pid) and time.monotonic() - asked < STOP_WITHIN:
            time.sleep(0.25)
        took = time.monotonic() - asked
        assert not session_processes(dev.pid), f"left running after {took:.0f} s:\n{log.read_text()}"
        assert "Dagster services shut down." in log.read_text()
    finally:
        for pid in session_processes(dev.pid):  # only what this test started
            os.kill(pid, signal.SIGKILL)
        if dev.poll() is None:
            dev.kill()
