"""The operator's path, driven for real: dagster-webserver and dagster-daemon as subprocesses.

The operator registers a snapshot with the CLI and works from the UI, which sends GraphQL to the
webserver; schedules, asset backfills and the run queue are executed only by the daemon. These
tests send the same GraphQL to a webserver on loopback and let the real daemon do the work:

- the sentinel probe schedule is running on the live daemon, which evaluates its tick and
  launches the probe run;
- a whole snapshot is one asset backfill of `snapshot_selection` over the snapshot partition
  (the UI's "Materialize all"), which Dagster fans out to every snapshot × vendor partition:
  three configured vendors fetch at once, in parallel runs that must not trip DuckDB's
  single-writer lock nor lose or duplicate a row;
- a backfill of one vendor partition with its downstream assets re-uses that vendor's archive
  (nothing paid), re-scores it, re-aggregates the snapshot and touches no other vendor.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import dagster as dg
import duckdb
import pandas as pd
import pytest
from dagster._core.scheduler.instigation import InstigatorType, ScheduleInstigatorData

from bench_assets.adapters import available_adapters, get_adapter
from bench_assets.defs.jobs import (
    SNAPSHOT_SELECTION_QUERY,
    VENDOR_RERUN_ASSETS,
    VENDOR_RERUN_QUERY,
    backfill_params,
    snapshot_selection,
)
from bench_assets.manifest import load_manifest
from bench_assets.sentinels import PROBE_CRON
from bench_assets.sentinels.pages import latest_tick
from bench_assets_tests.e2e.dagster_services import DagsterServices, services_env
from bench_assets_tests.helpers import CHROMIUM, CHROMIUM_ARGS, REPO, SNAPSHOT, assets, make_home, require, resources

pytestmark = pytest.mark.slow
# Three configured vendors (a search-only one and two that also extract): the backfill launches a run
# for each, side by side, and none for the adapters left out. More vendors would prove nothing more
# and each costs a run process loading the code location.
UI_VENDORS = ["brave", "exa", "tavily"]
PROBE_PAGES = 3
REPOSITORY = {"repositoryLocationName": "bench", "repositoryName": "__repository__"}
SCHEDULE_SELECTOR = {**REPOSITORY, "scheduleName": "sentinel_probe_schedule"}
RESET_SCHEDULE = """mutation($s: ScheduleSelector!) { resetSchedule(scheduleSelector: $s) {
  __typename ... on ScheduleStateResult { scheduleState { status } } ... on PythonError { message } } }"""
SCHEDULE = """query($s: ScheduleSelector!) { scheduleOrError(scheduleSelector: $s) { __typename
  ... on Schedule { cronSchedule executionTimezone futureTicks(limit: 1) { results { timestamp } }
    scheduleState { status typeSpecificData { ... on ScheduleData { startTimestamp } }
      ticks(limit: 10) { status timestamp runIds skipReason error { message } } } } } }"""
SCHEDULER_HEALTH = """{ instance { daemonHealth { daemonStatus(daemonType: "SCHEDULER") { healthy required } } } }"""
RUN_STATUS = """query($id: ID!) { runOrError(runId: $id) { __typename ... on Run { status tags { key value } } } }"""


# ##### FIXTURES


def paced(manifest: dict) -> None:
    """Two requests a second per vendor: each vendor run fetches for about 20 s, longer than the
    daemon takes to launch the next run, so the vendor runs overlap as they would against real
    vendors (at full simulator speed a run would be over before the next one started)."""
    for spec in manifest["vendors"].values():
        spec["rate_limit_per_second"] = 2
        spec.pop("capability_rate_limits", None)


@pytest.fixture(scope="module")
def dagster_ui(tmp_path_factory, simulator):
    root = tmp_path_factory.mktemp("ui")
    home = make_home(root / "home", UI_VENDORS, rows_per_stratum=6, edit=paced)
    dagster_home = root / "dagster_home"
    dagster_home.mkdir()
    shutil.copy(REPO / "dagster.yaml", dagster_home / "dagster.yaml")
    env = services_env(dagster_home, home, BENCH_SIMULATOR_URL=simulator.base_url)
    # the operator registers the snapshot with the CLI
    subprocess.run(
        [str(Path(sys.executable).parent / "bench"), "snapshot", "add", SNAPSHOT],
        env=env,
        check=True,
        cwd=REPO,
        timeout=120,
    )
    # Sentinel pages went online an hour before the latest probe tick.
    tick = latest_tick(datetime.now(UTC))
    with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
        planted = dg.materialize(
            assets("sentinel_pages"),
            instance=instance,
            partition_key=SNAPSHOT,
            resources=resources(home, simulator.base_url),
            run_config={
                "ops": {
                    "sentinel_pages": {
                        "config": {"published_at": (tick - timedelta(hours=1)).isoformat(), "count": PROBE_PAGES}
                    }
                }
            },
        )
        assert planted.success
    services = DagsterServices(root, env, REPO / "workspace.yaml", REPO)
    try:
        services.start_webserver()
        # "Reset schedule status" (the UI's button) stores the schedule's state as declared in code.
        # Moving its start before the latest tick stands for a daemon that has been up since then,
        # so the daemon's first iteration evaluates that tick instead of waiting for the next one.
        reset = services.graphql(RESET_SCHEDULE, {"s": SCHEDULE_SELECTOR})["resetSchedule"]
        assert reset["__typename"] == "ScheduleStateResult", reset
        with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
            state = next(
                s
                for s in instance.all_instigator_state(instigator_type=InstigatorType.SCHEDULE)
                if s.instigator_name == "sentinel_probe_schedule"
            )
            instance.update_instigator_state(
                state.with_data(
                    ScheduleInstigatorData(state.instigator_data.cron_schedule, start_timestamp=tick.timestamp() - 60)
                )
            )
        services.start_daemon()
        yield SimpleNamespace(
            services=services,
            graphql=services.graphql,
            url=services.url,
            home=home,
            dagster_home=dagster_home,
            tick=tick,
        )
    finally:
        services.stop()


def rows(home: Path, sql: str, params=()) -> list[tuple]:
    con = duckdb.connect(str(home / "data" / "warehouse" / "bench.duckdb"), read_only=True)
    try:
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


def frame(home: Path, sql: str, params=()) -> pd.DataFrame:
    con = duckdb.connect(str(home / "data" / "warehouse" / "bench.duckdb"), read_only=True)
    try:
        return con.execute(sql, list(params)).df()
    finally:
        con.close()


def backfill_runs(dagster_home: Path, backfill_id: str) -> list:
    with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
        return list(instance.get_run_records(filters=dg.RunsFilter(tags={"dagster/backfill": backfill_id})))


def run_events(dagster_home: Path, run_id: str) -> list:
    with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
        return list(instance.all_logs(run_id))


def materializations(events: list) -> list:
    return [
        e.dagster_event
        for e in events
        if e.dagster_event and e.dagster_event.event_type_value == "ASSET_MATERIALIZATION"
    ]


@pytest.fixture(scope="module")
def whole_snapshot(dagster_ui):
    """The whole snapshot, materialized as the UI does it: one asset backfill of the snapshot selection."""
    from bench_assets.definitions import defs

    keys = dg.AssetSelection.from_string(SNAPSHOT_SELECTION_QUERY).resolve(defs().resolve_asset_graph())
    backfill_id, status = dagster_ui.services.backfill(backfill_params(sorted(keys), [SNAPSHOT]), timeout=1300)
    return SimpleNamespace(
        backfill_id=backfill_id, status=status, keys=keys, runs=backfill_runs(dagster_ui.dagster_home, backfill_id)
    )


# ##### TESTS


def test_ui_shows_every_stage_and_the_snapshot_registered_by_the_cli(dagster_ui):
    nodes = dagster_ui.graphql("{ assetNodes { assetKey { path } groupName } }")["assetNodes"]
    assert {n["assetKey"]["path"][0] for n in nodes} >= {
        "snapshot_manifest",
        "golden_rows",
        "golden_verifications",
        "query_split",
        "vendor_responses",
        "vendor_scores",
        "vendor_leaderboard",
        "published_snapshot",
    }
    data = dagster_ui.graphql("""{ assetNodeOrError(assetKey: {path: ["vendor_responses"]}) {
        ... on AssetNode { partitionKeysByDimension { name partitionKeys } } } }""")
    dims = {d["name"]: d["partitionKeys"] for d in data["assetNodeOrError"]["partitionKeysByDimension"]}
    assert dims["snapshot"] == [SNAPSHOT]
    assert dims["vendor"] == sorted(UI_VENDORS)  # the vendors the manifest configures, registered with it


def test_sentinel_probe_schedule_runs_on_the_live_daemon(dagster_ui):
    """Not only the definition's default: the running daemon treats the schedule as running,
    evaluates its tick and launches the probe run, which probes every vendor for every page."""
    tick_ts = dagster_ui.tick.timestamp()
    deadline = time.monotonic() + 300
    while True:
        schedule = dagster_ui.graphql(SCHEDULE, {"s": SCHEDULE_SELECTOR})["scheduleOrError"]
        assert schedule["__typename"] == "Schedule", schedule
        ticks = [t for t in schedule["scheduleState"]["ticks"] if abs(t["timestamp"] - tick_ts) < 1]
        if ticks and ticks[0]["status"] != "STARTED":
            break
        assert time.monotonic() < deadline, f"the daemon did not evaluate the tick:\n{dagster_ui.services.log_tail()}"
        time.sleep(3)
    state = schedule["scheduleState"]
    assert state["status"] == "RUNNING"
    assert (schedule["cronSchedule"], schedule["executionTimezone"]) == (PROBE_CRON, "UTC")
    assert schedule["futureTicks"]["results"][0]["timestamp"] > time.time()
    health = dagster_ui.graphql(SCHEDULER_HEALTH)["instance"]["daemonHealth"]["daemonStatus"]
    assert health == {"healthy": True, "required": True}
    tick = ticks[0]
    assert tick["status"] == "SUCCESS" and len(tick["runIds"]) == 1, tick

    run_id = tick["runIds"][0]
    deadline = time.monotonic() + 600
    while True:
        run = dagster_ui.graphql(RUN_STATUS, {"id": run_id})["runOrError"]
        if run["status"] in ("SUCCESS", "FAILURE", "CANCELED"):
            break
        assert time.monotonic() < deadline, f"probe run {run_id} did not finish:\n{dagster_ui.services.log_tail()}"
        time.sleep(2)
    assert run["status"] == "SUCCESS"
    tags = {t["key"]: t["value"] for t in run["tags"]}
    assert tags["dagster/schedule_name"] == "sentinel_probe_schedule" and tags["dagster/partition"] == SNAPSHOT
    probes = rows(
        dagster_ui.home, "SELECT vendor, count(*) FROM sentinel_probes WHERE tick_at = ? GROUP BY 1", [dagster_ui.tick]
    )
    assert dict(probes) == dict.fromkeys(UI_VENDORS, PROBE_PAGES)


@pytest.mark.timeout(1500)
def test_a_whole_snapshot_is_one_backfill_from_the_ui(whole_snapshot, dagster_ui):
    """The UI's "Materialize all" over the snapshot selection: its one root is partitioned by
    snapshot, Dagster fans the snapshot out to every vendor partition and back to the aggregate."""
    from bench_assets.definitions import defs

    assert whole_snapshot.keys == snapshot_selection.resolve(defs().resolve_asset_graph())
    assert {k.to_user_string() for k in whole_snapshot.keys} >= {
        "snapshot_manifest",
        "golden_rows",
        "query_split",
        "vendor_responses",
        "vendor_scores",
        "agent_trials",
        "vendor_leaderboard",
        "published_snapshot",
    }
    assert whole_snapshot.status in ("COMPLETED", "COMPLETED_SUCCESS"), whole_snapshot.status
    runs = whole_snapshot.runs
    assert runs and all(r.dagster_run.status == dg.DagsterRunStatus.SUCCESS for r in runs)
    by_vendor = {r.dagster_run.tags.get("dagster/partition/vendor") for r in runs} - {None}
    assert by_vendor == set(UI_VENDORS)  # one run per configured vendor, none for the adapters left out
    # every selected asset was materialized for the snapshot (the vendor assets for each vendor)
    done: dict[str, set[str]] = {}
    for r in runs:
        for event in materializations(run_events(dagster_ui.dagster_home, r.dagster_run.run_id)):
            done.setdefault(event.asset_key.to_user_string(), set()).add(event.partition)
    for key in whole_snapshot.keys:
        name = key.to_user_string()
        expected = (
            {f"{SNAPSHOT}|{v}" for v in UI_VENDORS}
            if name.startswith("vendor_") and name != "vendor_leaderboard"
            else {SNAPSHOT}
        )
        assert done.get(name) == expected, name
    # and the warehouse holds the snapshot, published
    home = dagster_ui.home
    n_golden = rows(home, "SELECT count(*) FROM golden_rows WHERE snapshot_id = ?", [SNAPSHOT])[0][0]
    assert n_golden == 36
    assert dict(rows(home, "SELECT vendor, count(*) FROM row_scores GROUP BY 1")) == dict.fromkeys(UI_VENDORS, n_golden)
    assert {v for (v,) in rows(home, "SELECT DISTINCT vendor FROM vendor_metrics")} == set(UI_VENDORS)
    assert {v for (v,) in rows(home, "SELECT DISTINCT vendor FROM agent_trials")} == set(UI_VENDORS)
    assert rows(home, "SELECT count(*) FROM publications WHERE snapshot_id = ?", [SNAPSHOT])[0][0] > 10
    board = json.loads((home / "data" / "publish" / SNAPSHOT / "leaderboard.json").read_text())
    assert sorted(e["vendor"] for e in board["vendors"] if e["status"] == "scored") == sorted(UI_VENDORS)


@pytest.mark.timeout(1500)
def test_every_vendor_partition_at_once_without_lock_errors_lost_or_duplicated_rows(whole_snapshot, dagster_ui):
    home, runs = dagster_ui.home, whole_snapshot.runs
    vendor_runs = [r for r in runs if "dagster/partition/vendor" in r.dagster_run.tags]
    # the vendor partitions are the vendors the manifest configures (registered with the snapshot)
    assert {r.dagster_run.tags["dagster/partition/vendor"] for r in vendor_runs} == set(UI_VENDORS)
    # the vendor runs really ran side by side (the instance allows six runs, one per vendor)
    spans = sorted((r.start_time, r.end_time) for r in vendor_runs)
    overlap = max(sum(1 for s, e in spans if s <= start < e) for start, _ in spans)
    assert overlap >= 2, spans
    # no run met DuckDB's lock, or failed a step
    for r in runs:
        events = run_events(dagster_ui.dagster_home, r.dagster_run.run_id)
        text = "\n".join(
            str(e.user_message) + str(e.dagster_event.event_specific_data if e.dagster_event else "") for e in events
        )
        assert "Could not set lock" not in text and "Conflicting lock" not in text, r.dagster_run.run_id
        assert not [e for e in events if e.dagster_event and e.dagster_event.event_type_value == "STEP_FAILURE"]

    # exactly one final response per query each configured vendor supports, golden rows and decoys
    manifest = load_manifest(home / "data" / "snapshots" / SNAPSHOT / "manifest.yaml")
    golden = frame(home, "SELECT row_id, task_type FROM golden_rows WHERE snapshot_id = ?", [SNAPSHOT])
    decoys = frame(home, "SELECT row_id, task_type FROM decoy_queries WHERE snapshot_id = ?", [SNAPSHOT])
    assert len(decoys) > 0
    finals = frame(
        home,
        "SELECT vendor, query_id, capability, role, count(*) AS n FROM raw_responses "
        "WHERE snapshot_id = ? AND final GROUP BY ALL",
        [SNAPSHOT],
    )
    assert (finals["n"] == 1).all(), finals[finals["n"] > 1]
    for vendor in sorted(available_adapters()):
        got = finals[finals["vendor"] == vendor]
        if vendor not in UI_VENDORS:
            assert got.empty, vendor  # recorded as not configured, never called
            continue
        capabilities = get_adapter(manifest.vendors[vendor].adapter).capabilities

        def supported(df: pd.DataFrame, capabilities: frozenset[str] = capabilities) -> set[tuple[str, str]]:
            caps = df["task_type"].map(lambda t: "extract" if t == "extract" else "search")
            return {(q, c) for q, c in zip(df["row_id"], caps) if c in capabilities}

        assert set(
            zip(got.loc[got["role"] != "decoy", "query_id"], got.loc[got["role"] != "decoy", "capability"])
        ) == supported(golden), vendor
        assert set(
            zip(got.loc[got["role"] == "decoy", "query_id"], got.loc[got["role"] == "decoy", "capability"])
        ) == supported(decoys), vendor
        # every attempt in the vendor's own archive reached the warehouse, and nothing else
        archive = duckdb.connect(
            str(home / "data" / "warehouse" / "partitions" / SNAPSHOT / f"{vendor}.duckdb"), read_only=True
        )
        try:
            archived = archive.execute("SELECT count(*) FROM raw_responses").fetchone()[0]
        finally:
            archive.close()
        assert rows(home, "SELECT count(*) FROM raw_responses WHERE vendor = ?", [vendor])[0][0] == archived
    scores = frame(
        home, "SELECT vendor, row_id, count(*) AS n FROM row_scores WHERE snapshot_id = ? GROUP BY ALL", [SNAPSHOT]
    )
    assert (scores["n"] == 1).all()
    assert {v: set(g["row_id"]) for v, g in scores.groupby("vendor")} == {v: set(golden["row_id"]) for v in UI_VENDORS}


@pytest.mark.timeout(1500)
def test_backfill_of_one_vendor_with_downstream_reuses_its_archive_and_touches_no_other(
    whole_snapshot, dagster_ui, sim_logs
):
    home = dagster_ui.home
    tables = {
        t: f"SELECT * FROM {t} WHERE snapshot_id = ? ORDER BY ALL"
        for t in ("raw_responses", "response_results", "row_scores")
    }
    before = {t: frame(home, sql, [SNAPSHOT]) for t, sql in tables.items()}
    leaderboard_before = frame(home, "SELECT * FROM vendor_metrics WHERE snapshot_id = ?", [SNAPSHOT])
    assert not leaderboard_before.empty

    # what the UI sends for the selection VENDOR_RERUN_QUERY → Materialize all → one snapshot and one vendor
    from bench_assets.definitions import defs

    keys = dg.AssetSelection.from_string(VENDOR_RERUN_QUERY).resolve(defs().resolve_asset_graph())
    assert {k.to_user_string() for k in keys} == set(VENDOR_RERUN_ASSETS)
    backfill_id, status = dagster_ui.services.backfill(
        {**backfill_params(sorted(keys), [f"{SNAPSHOT}|exa"]), "title": "exa after a fix"}, timeout=900
    )
    assert status in ("COMPLETED", "COMPLETED_SUCCESS"), status

    # nothing was sent to a vendor, nothing billed
    assert sim_logs.billing() == []
    assert [r for r in sim_logs.requests() if r["vendor"] == "exa"] == []
    runs = backfill_runs(dagster_ui.dagster_home, backfill_id)
    assert all(r.dagster_run.status == dg.DagsterRunStatus.SUCCESS for r in runs)
    assert {r.dagster_run.tags.get("dagster/partition/vendor") for r in runs} == {"exa", None}
    done = {}
    for r in runs:
        for event in materializations(run_events(dagster_ui.dagster_home, r.dagster_run.run_id)):
            done[(event.asset_key.to_user_string(), event.partition)] = event.event_specific_data.materialization
    assert set(done) == {
        ("vendor_responses", f"{SNAPSHOT}|exa"),
        ("vendor_scores", f"{SNAPSHOT}|exa"),
        ("vendor_leaderboard", SNAPSHOT),
        ("published_snapshot", SNAPSHOT),
    }
    fetch = done[("vendor_responses", f"{SNAPSHOT}|exa")].metadata
    assert fetch["sent_this_run"].value == 0 and fetch["reused_from_archive"].value == fetch["queries"].value > 0

    # no other vendor's rows changed; exa's were re-derived from the same responses
    after = {t: frame(home, sql, [SNAPSHOT]) for t, sql in tables.items()}
    for table in tables:
        pd.testing.assert_frame_equal(before[table], after[table], obj=table)
    leaderboard_after = frame(home, "SELECT * FROM vendor_metrics WHERE snapshot_id = ?", [SNAPSHOT])
    key = ["vendor", "scope", "scope_value", "metric"]
    pd.testing.assert_frame_equal(
        leaderboard_before.sort_values(key).reset_index(drop=True),
        leaderboard_after.sort_values(key).reset_index(drop=True),
    )


def test_asset_graph_opens_in_a_real_browser(dagster_ui):
    require(CHROMIUM.exists(), "Debian's chromium (/usr/bin/chromium)")
    from playwright.sync_api import sync_playwright

    shots = REPO / "artifacts" / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            # The vendors group's lineage shows the fan-out stages and, as links, the stages around them.
            page.goto(
                f"{dagster_ui.url}/locations/bench/asset-groups/vendors", wait_until="domcontentloaded", timeout=60_000
            )
            for stage in (
                "golden_verifications",
                "query_split",
                "vendor_responses",
                "vendor_scores",
                "vendor_leaderboard",
            ):
                page.get_by_text(stage, exact=True).first.wait_for(timeout=60_000)
            skip = page.get_by_role("button", name="Skip")
            if skip.count():
                skip.first.click()  # the first-visit newsletter dialog
            page.screenshot(path=str(shots / "dagster-asset-graph.png"))
        finally:
            browser.close()
    print(f"screenshot: {shots / 'dagster-asset-graph.png'}")
