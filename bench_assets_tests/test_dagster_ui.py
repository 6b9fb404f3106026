"""The operator's path, driven for real: dagster-webserver and dagster-daemon as subprocesses.

The operator registers a snapshot with the CLI and backfills vendor partitions from the UI. The
UI sends GraphQL `launchPartitionBackfill`; asset backfills run only while the daemon runs. These
tests send the same mutation to a webserver on loopback, let the real daemon execute it, and
check the DuckDB rows, including a backfill of every vendor partition at once (parallel runs
that must not trip DuckDB's single-writer lock or lose or duplicate rows).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import duckdb
import httpx
import pytest

from bench_assets.defs.partitions import VENDORS
from bench_assets.simulator.server import free_port
from bench_assets_tests.helpers import GOLDEN_STAGES, REPO, SNAPSHOT, make_home, materialize

pytestmark = pytest.mark.slow
UI_VENDORS = ["brave", "exa", "kagi"]
LAUNCH = """mutation($p: LaunchBackfillParams!) { launchPartitionBackfill(backfillParams: $p) {
  __typename ... on LaunchBackfillSuccess { backfillId } ... on PythonError { message } } }"""
STATUS = """query($id: String!) { partitionBackfillOrError(backfillId: $id) {
  __typename ... on PartitionBackfill { status } ... on PythonError { message } } }"""
TERMINAL = {"COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED", "CANCELING"}


# ##### FIXTURES


class Dagster:
    def __init__(self, port: int, home: Path, dagster_home: Path, procs: list[subprocess.Popen]):
        self.url = f"http://127.0.0.1:{port}"
        self.home, self.dagster_home, self.procs = home, dagster_home, procs

    def graphql(self, query: str, variables: dict | None = None) -> dict:
        response = httpx.post(f"{self.url}/graphql", json={"query": query, "variables": variables or {}}, timeout=60)
        response.raise_for_status()
        body = response.json()
        assert "errors" not in body, body["errors"]
        return body["data"]

    def backfill(self, assets: list[str], partitions: list[str], timeout: float = 420.0) -> str:
        data = self.graphql(LAUNCH, {"p": {"assetSelection": [{"path": [a]} for a in assets],
                                           "partitionNames": partitions, "title": "test backfill"}})
        launched = data["launchPartitionBackfill"]
        assert launched["__typename"] == "LaunchBackfillSuccess", launched
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status = self.graphql(STATUS, {"id": launched["backfillId"]})["partitionBackfillOrError"]["status"]
            if status in TERMINAL:
                return status
            time.sleep(2)
        raise AssertionError(f"backfill {launched['backfillId']} did not finish in {timeout}s")


@pytest.fixture(scope="module")
def dagster_ui(tmp_path_factory, simulator):
    root = tmp_path_factory.mktemp("ui")
    home = make_home(root / "home", UI_VENDORS, rows_per_stratum=6)
    dagster_home = root / "dagster_home"
    dagster_home.mkdir()
    shutil.copy(REPO / "dagster.yaml", dagster_home / "dagster.yaml")
    env = {**os.environ, "DAGSTER_HOME": str(dagster_home), "BENCH_HOME": str(home),
           "BENCH_SIMULATOR_URL": simulator.base_url, "DAGSTER_DISABLE_TELEMETRY": "yes"}
    # the operator registers the snapshot with the CLI
    bench = Path(sys.executable).parent / "bench"
    subprocess.run([str(bench), "snapshot", "add", SNAPSHOT], env=env, check=True, cwd=REPO, timeout=120)
    port = free_port()
    log = open(root / "dagster.log", "wb")
    procs = [
        subprocess.Popen([str(Path(sys.executable).parent / "dagster-webserver"), "-h", "127.0.0.1", "-p", str(port),
                          "-w", str(REPO / "workspace.yaml")], env=env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT),
        subprocess.Popen([str(Path(sys.executable).parent / "dagster-daemon"), "run", "-w", str(REPO / "workspace.yaml")],
                         env=env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT),
    ]
    ui = Dagster(port, home, dagster_home, procs)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{ui.url}/server_info", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, (root / "dagster.log").read_text()[-3000:]
            time.sleep(1)
        yield ui
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        log.close()


def rows(home: Path, sql: str, params=()) -> list[tuple]:
    con = duckdb.connect(str(home / "data" / "warehouse" / "bench.duckdb"), read_only=True)
    try:
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


# ##### TESTS


def test_ui_shows_every_stage_and_the_snapshot_registered_by_the_cli(dagster_ui):
    nodes = dagster_ui.graphql("{ assetNodes { assetKey { path } groupName } }")["assetNodes"]
    assert {n["assetKey"]["path"][0] for n in nodes} >= {
        "snapshot_manifest", "golden_rows", "golden_verifications", "query_split", "vendor_responses",
        "vendor_scores", "vendor_leaderboard", "published_snapshot"}
    data = dagster_ui.graphql("""{ assetNodeOrError(assetKey: {path: ["vendor_responses"]}) {
        ... on AssetNode { partitionKeysByDimension { name partitionKeys } } } }""")
    dims = {d["name"]: d["partitionKeys"] for d in data["assetNodeOrError"]["partitionKeysByDimension"]}
    assert dims["snapshot"] == [SNAPSHOT]
    assert dims["vendor"] == VENDORS


def test_backfill_of_one_vendor_partition_through_graphql(dagster_ui, simulator):
    with dg.DagsterInstance.from_config(str(dagster_ui.dagster_home)) as instance:
        materialize(instance, dagster_ui.home, simulator.base_url, GOLDEN_STAGES, SNAPSHOT)
    status = dagster_ui.backfill(["vendor_responses", "vendor_scores"], [f"{SNAPSHOT}|exa"])
    assert status in ("COMPLETED", "COMPLETED_SUCCESS"), status
    n_golden = rows(dagster_ui.home, "SELECT count(*) FROM golden_rows")[0][0]
    assert rows(dagster_ui.home, "SELECT vendor, count(*) FROM row_scores GROUP BY 1") == [("exa", n_golden)]
    assert rows(dagster_ui.home, "SELECT count(*) FROM raw_responses WHERE vendor = 'exa' AND final "
                                 "AND role <> 'decoy'")[0][0] == n_golden


@pytest.mark.timeout(1200)
def test_backfill_of_every_vendor_partition_at_once(dagster_ui):
    status = dagster_ui.backfill(["vendor_responses", "vendor_scores"], [f"{SNAPSHOT}|{v}" for v in VENDORS],
                                 timeout=1100)
    assert status in ("COMPLETED", "COMPLETED_SUCCESS"), status
    n_golden = rows(dagster_ui.home, "SELECT count(*) FROM golden_rows")[0][0]
    scored = dict(rows(dagster_ui.home, "SELECT vendor, count(*) FROM row_scores GROUP BY 1"))
    assert scored == {v: n_golden for v in UI_VENDORS}  # vendors outside the manifest are recorded, not called
    duplicates = rows(dagster_ui.home, "SELECT vendor, query_id, capability, count(*) FROM raw_responses "
                                       "WHERE final GROUP BY ALL HAVING count(*) > 1")
    assert duplicates == []
    with dg.DagsterInstance.from_config(str(dagster_ui.dagster_home)) as instance:
        runs = instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.FAILURE]))
        assert runs == []


CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed at /usr/bin/chromium")
def test_asset_graph_opens_in_a_real_browser(dagster_ui):
    from playwright.sync_api import sync_playwright

    shots = REPO / "artifacts" / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            # The vendors group's lineage shows the fan-out stages and, as links, the stages around them.
            page.goto(f"{dagster_ui.url}/locations/bench/asset-groups/vendors", wait_until="domcontentloaded",
                      timeout=60_000)
            for stage in ("golden_verifications", "query_split", "vendor_responses", "vendor_scores",
                          "vendor_leaderboard"):
                page.get_by_text(stage, exact=True).first.wait_for(timeout=60_000)
            skip = page.get_by_role("button", name="Skip")
            if skip.count():
                skip.first.click()  # the first-visit newsletter dialog
            page.screenshot(path=str(shots / "dagster-asset-graph.png"))
        finally:
            browser.close()
    print(f"screenshot: {shots / 'dagster-asset-graph.png'}")
