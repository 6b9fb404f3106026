"""Shared fixtures: a real simulator process and its logs and controls; the test levels.

The simulator is a real HTTP server on 127.0.0.1 started once per test session (once per xdist
worker) and stopped by its process id, so every test that talks to a "vendor" goes over a real
socket.

The tests are laid out by level, and each test is marked with its folder's level, so `-m unit`,
`-m simulator` or `-m e2e` selects one:
- `unit/`: pure functions and core modules, no server and no Dagster run;
- `simulator/`: talks to the real local simulator over HTTP, without materializing through Dagster;
- `e2e/`: materializations through Dagster, the published site, the Dagster UI, deployment.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from bench_assets.simulator.server import SimulatorProcess, start_simulator

TESTS = Path(__file__).parent
LEVELS = ("unit", "simulator", "e2e")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Marks every test with the level of the folder it lives in; a test outside them is an error."""
    for item in items:
        level = item.path.relative_to(TESTS).parts[0]
        if level not in LEVELS:
            raise pytest.UsageError(f"{item.nodeid}: a test lives in one of {', '.join(LEVELS)}/ (bench_assets_tests/)")
        item.add_marker(getattr(pytest.mark, level))


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


@pytest.fixture()
def sim_control(simulator):
    """The session simulator with clean logs, unlimited balances and no faults before and after."""
    base = simulator.base_url

    class Control:
        url = base

        def credits(self, balances: dict) -> httpx.Response:
            return httpx.post(f"{base}/_sim/credits", json=balances, timeout=5)

        def accounts(self) -> dict:
            return httpx.get(f"{base}/_sim/credits", timeout=5).json()

        def billing(self) -> list[dict]:
            return httpx.get(f"{base}/_sim/billing", timeout=5).json()

        def faults(self, plan: dict) -> None:
            assert httpx.post(f"{base}/_sim/faults", json=plan, timeout=5).status_code == 200

    httpx.post(f"{base}/_sim/reset", timeout=5)
    yield Control()
    httpx.post(f"{base}/_sim/faults", json={}, timeout=5)
    httpx.post(f"{base}/_sim/reset", timeout=5)
