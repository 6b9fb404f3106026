"""Shared fixtures: a real simulator process, and temporary warehouse and Dagster homes.

The simulator is a real HTTP server on 127.0.0.1 started once per test session and stopped by
its process id, so every test that talks to a "vendor" goes over a real socket.
"""

from __future__ import annotations

import httpx
import pytest

from bench_assets.simulator.server import SimulatorProcess, start_simulator


@pytest.fixture(scope="session")
def simulator() -> SimulatorProcess:
    proc = start_simulator(env={"BENCH_SIM_LATENCY_SCALE": "0.05"})
    yield proc
    proc.stop()


@pytest.fixture()
def sim_logs(simulator: SimulatorProcess):
    """Clears the simulator's request and billing logs before the test and reads them after."""
    httpx.post(f"{simulator.base_url}/_sim/reset", timeout=5)

    class Logs:
        def requests(self) -> list[dict]:
            return httpx.get(f"{simulator.base_url}/_sim/requests", timeout=5).json()

        def billing(self) -> list[dict]:
            return httpx.get(f"{simulator.base_url}/_sim/billing", timeout=5).json()

    return Logs()
