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


SITE_VENDORS = ["brave", "exa", "tavily"]


@pytest.fixture(scope="session")
def published_site(tmp_path_factory, simulator):
    """A small snapshot (3 vendors, 90 rows) materialized through Dagster and published once per
    session, with a vendor's reply and an erratum filed: the site, its data files, and the Dagster
    instance that holds the materializations (for test_site.py and test_site_browser.py)."""
    import json
    from types import SimpleNamespace

    import dagster as dg

    from bench_assets_tests.helpers import SNAPSHOT, make_home, run_whole_snapshot

    home = make_home(tmp_path_factory.mktemp("site"), SITE_VENDORS)
    snapshot_dir = home / "data" / "snapshots" / SNAPSHOT
    (snapshot_dir / "replies").mkdir()
    (snapshot_dir / "replies" / "tavily.md").write_text("We believe the extraction rubric penalises our markdown.\n"
                                                        "  <b>kept verbatim</b>\n")
    (snapshot_dir / "errata.json").write_text(json.dumps([{"date": "2026-07-02", "vendor": "exa",
                                                           "summary": "price table corrected", "action": "rescored"}]))
    with dg.instance_for_test() as instance:
        run_whole_snapshot(instance, home, simulator.base_url, SITE_VENDORS)
        yield SimpleNamespace(home=home, instance=instance, out=home / "data" / "publish" / SNAPSHOT,
                              vendors=SITE_VENDORS, snapshot=SNAPSHOT)
