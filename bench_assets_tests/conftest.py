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

import os
from pathlib import Path

import httpx
import pytest
from _pytest.nodeid import NodeId  # see suffix_node_id

from bench_assets.simulator.server import SimulatorProcess, start_simulator
from bench_assets_tests.distributed_services import Postgres, postgres_server

TESTS = Path(__file__).parent

# Dagster's code servers answer the webserver, the daemon and the run workers within 60 s by
# default; on a 2-core machine under other work a test's fresh code server can take longer, and the
# backfill fails though nothing is wrong. The tests' Dagster processes inherit a longer limit
# (Dagster's own setting; a value set outside the tests is kept).
os.environ.setdefault("DAGSTER_GRPC_TIMEOUT_SECONDS", "300")

LEVELS = ("unit", "simulator", "e2e")


# Session fixtures every xdist worker builds for itself: cheap, and used by most tests (the
# simulator) or by long tests that must not all wait for one worker (PostgreSQL).
PER_WORKER = {"simulator", "postgres"}
# The order work is handed to xdist workers: the longest first, so none is left running alone at
# the end (end-to-end tests marked slow, the other end-to-end tests, then the faster levels).
ORDER = ("e2e-slow", "e2e", "simulator", "unit")


# Tests that drive Dagster's daemon, each starting a run process per partition (a dozen or more at
# once): two groups of them, so that at most two run side by side on the two cores, not four.
DAEMON_GROUPS = {
    "e2e/test_celery_workers.py": "daemon-a",
    "e2e/test_run_monitoring.py": "daemon-a",
    "e2e/test_dagster_ui.py": "daemon-b",
    "e2e/test_deploy.py": "daemon-b",
}


def shared_fixture_group(item: pytest.Item) -> str | None:
    """The xdist group of a test that shares an expensive fixture broader than itself: a session
    fixture of ours (published_site) groups its tests by the fixture, a module fixture by module.
    Under `--dist loadgroup` a group runs on one worker, so the fixture is built once, not once per
    worker that happens to run one of its tests."""
    daemon = DAEMON_GROUPS.get(item.path.relative_to(TESTS).as_posix())
    if daemon is not None:
        return daemon
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    by_module = None
    for name in info.names_closure:
        fixturedefs = info.name2fixturedefs.get(name)
        if not fixturedefs or not fixturedefs[-1].func.__module__.startswith("bench_assets_tests"):
            continue  # pytest's and plugins' own (tmp_path_factory, ...) are per worker anyway
        scope = fixturedefs[-1].scope
        if scope == "session" and name not in PER_WORKER:
            return name
        if scope in ("package", "module", "class"):
            by_module = item.path.relative_to(TESTS).as_posix()
    return by_module


def suffix_node_id(item: pytest.Item, group: str) -> None:
    """Gives a grouped test the node id `<id>@<group>` by which xdist's loadgroup scheduler keeps a
    group on one worker. pytest-xdist 3.8.0 writes that id to `item._nodeid`, which pytest 9.2 no
    longer reads (node ids became structured), so grouping silently stops: pytest-dev/pytest-xdist
    issue #1386, fix proposed in pull request #1388. Until a release has it, the id is set here."""
    if "@" not in item.nodeid.rsplit("]", 1)[-1]:
        item._id = NodeId.parse(f"{item.nodeid}@{group}")


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which turns the xdist_group marks into work units
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Marks every test with the level of the folder it lives in (a test outside them is an
    error) and with the xdist group of the expensive fixture it shares; under xdist, hands out the
    longest first."""
    rank = {}
    for item in items:
        level = item.path.relative_to(TESTS).parts[0]
        if level not in LEVELS:
            raise pytest.UsageError(f"{item.nodeid}: a test lives in one of {', '.join(LEVELS)}/ (bench_assets_tests/)")
        item.add_marker(getattr(pytest.mark, level))
        group = shared_fixture_group(item)
        if group:
            item.add_marker(pytest.mark.xdist_group(group))
            if getattr(config.option, "loadgroup", False):  # an xdist worker under --dist loadgroup
                suffix_node_id(item, group)
        slow = level == "e2e" and item.get_closest_marker("slow") is not None
        rank[item.nodeid] = ORDER.index("e2e-slow" if slow else level)
    if hasattr(config, "workerinput"):  # an xdist worker: its collection order is the order work is handed out
        items.sort(key=lambda item: rank[item.nodeid])  # stable: the collection order within a level


@pytest.fixture(scope="session")
def simulator() -> SimulatorProcess:
    proc = start_simulator(env={"BENCH_SIM_LATENCY_SCALE": "0.05"})
    yield proc
    proc.stop()


@pytest.fixture(scope="session")
def postgres() -> Postgres:
    """A PostgreSQL server of the session's own (the worker's, under xdist), started on first use;
    each test takes a database of its own on it (`postgres.database()`)."""
    with postgres_server() as server:
        yield server


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
