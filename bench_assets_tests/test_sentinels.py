"""Sentinel probes end to end: planted pages, the 6-hourly schedule, the probe job, and the
time-to-retrievability a reader sees.

Everything runs against the real simulator over its socket with its clock under the test's
control: the simulated vendors index each sentinel after their own lag (one never does), the
schedule is evaluated at every 6-hourly tick of 30 days, and each run request is executed with
the real probe job. What is checked is what the operator and a reader rely on: every vendor's
first finding is the first tick after the simulator indexed the page, nothing is probed after it
is found or past 30 days, a missed tick is caught up and a re-run tick pays for nothing twice,
and the published snapshot carries the medians ("not reached" where due), their intervals (the
same as R's), and the curves.
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

import dagster as dg
import duckdb
import httpx
import jsonschema
import pandas as pd
import pytest

from bench_assets.definitions import defs as location_defs
from bench_assets.defs.resources import BenchPaths
from bench_assets.defs.sentinels import (drive_probe_schedule, probe_schedule, sentinel_pages, sentinel_probes,
                                        simulate_probe_cycle)
from bench_assets.rescore import rescore_snapshot
from bench_assets.sentinels import PROBE_CRON, make_batch, page_records, probe_ticks
from bench_assets.ttr import sentinel_durations
from bench_assets_tests.helpers import (GOLDEN_STAGES, RESULT_STAGES, SNAPSHOT, VENDOR_STAGES, make_home, materialize,
                                        resources, vendor_key)

VENDORS = ["exa", "jina", "serper"]  # simulated lags: exa ~1 day, jina never, serper ~6 h
T0 = datetime(2026, 7, 1, tzinfo=timezone.utc)
COUNT = 6
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def hours(h: float) -> datetime:
    return T0 + timedelta(hours=h)


def table(home, sql: str, params=()) -> pd.DataFrame:
    con = duckdb.connect(str(home / "data" / "warehouse" / "bench.duckdb"), read_only=True)
    try:
        return con.execute(sql, list(params)).df()
    finally:
        con.close()


def publish(instance, home, sim_url: str, published_at: datetime, count: int = COUNT, raise_on_error=True,
            **config):
    return dg.materialize([sentinel_pages], instance=instance, partition_key=SNAPSHOT, raise_on_error=raise_on_error,
                          resources=resources(home, sim_url), run_config={**QUIET, "ops": {"sentinel_pages": {
                              "config": {"published_at": published_at.isoformat(), "count": count, **config}}}})


def expected_first_find(truth: dict, vendor: str, ticks: list[datetime]) -> datetime | None:
    """The first tick at or after the simulator indexed the page at this vendor, within 30 days."""
    indexed = truth["indexed_at"][vendor]
    if indexed is None:
        return None
    published = datetime.fromisoformat(truth["published_at"])
    return next((t for t in ticks if t >= datetime.fromisoformat(indexed) and t <= published + timedelta(hours=720)),
                None)


# ##### FIXTURES


@pytest.fixture(scope="module")
def sim(simulator):
    """The session's simulator; its clock goes back to real time and its sentinels away afterwards."""
    yield simulator
    httpx.post(f"{simulator.base_url}/_sim/clock", json={"now": None}, timeout=5)
    httpx.delete(f"{simulator.base_url}/_sim/sentinels", timeout=5)


@pytest.fixture(scope="module")
def cycle(tmp_path_factory, sim):
    """A small snapshot (3 vendors) with a 30-day sentinel cycle, aggregated and published."""
    home = make_home(tmp_path_factory.mktemp("sentinels"), VENDORS, rows_per_stratum=6)
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("snapshots", [SNAPSHOT])
        materialize(instance, home, sim.base_url, GOLDEN_STAGES, SNAPSHOT)
        for vendor in VENDORS:
            materialize(instance, home, sim.base_url, VENDOR_STAGES, vendor_key(vendor))
        httpx.post(f"{sim.base_url}/_sim/reset", timeout=5)
        result = simulate_probe_cycle(SNAPSHOT, resources(home, sim.base_url), instance, T0, count=COUNT,
                                      run_config=QUIET)
        billing = httpx.get(f"{sim.base_url}/_sim/billing", timeout=5).json()
        requests = httpx.get(f"{sim.base_url}/_sim/requests", timeout=5).json()
        truth = {s["id"]: s for s in httpx.get(f"{sim.base_url}/_sim/sentinels", timeout=5).json()
                 if s["url"].split("/")[3] == SNAPSHOT}
        materialize(instance, home, sim.base_url, RESULT_STAGES, SNAPSHOT)
        yield SimpleNamespace(home=home, instance=instance, cycle=result, billing=billing, requests=requests,
                              truth=truth, out=home / "data" / "publish" / SNAPSHOT)


# ##### THE SCHEDULE


def test_the_schedule_runs_every_6_hours_by_default():
    schedule = location_defs().resolve_schedule_def("sentinel_probe_schedule")
    assert schedule.cron_schedule == PROBE_CRON == "0 */6 * * *"
    assert schedule.execution_timezone == "UTC"
    assert schedule.default_status == dg.DefaultScheduleStatus.RUNNING
    assert schedule.job_name == "sentinel_probe_job"


def test_a_tick_requests_one_run_keyed_by_snapshot_and_tick(tmp_path, sim):
    home = make_home(tmp_path, ["serper"])
    schedule = probe_schedule(BenchPaths(root=str(home)))
    repository = dg.Definitions(assets=[sentinel_pages, sentinel_probes], schedules=[schedule],
                                resources=resources(home, sim.base_url)).get_repository_def()
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("snapshots", [SNAPSHOT])

        def tick(at: datetime):
            context = dg.build_schedule_context(instance=instance, scheduled_execution_time=at,
                                                repository_def=repository)
            return schedule.evaluate_tick(context)

        assert tick(hours(6)).skip_message  # nothing published yet
        publish(instance, home, sim.base_url, T0)
        assert tick(hours(-6)).skip_message  # before the publish time
        [request] = tick(hours(6)).run_requests
        assert request.run_key == f"{SNAPSHOT}@2026-07-01T06:00:00Z"
        assert request.partition_key == SNAPSHOT
        assert request.run_config["ops"]["sentinel_probes"]["config"]["probe_at"] == [hours(6).isoformat()]
        assert request.tags["bench/probe_at"] == "2026-07-01T06:00:00Z"
        assert request.tags["dagster/partition"] == SNAPSHOT
        assert request.tags["dagster/schedule_name"] == "sentinel_probe_schedule"
        assert tick(hours(720)).run_requests  # the last day of the window
        assert tick(hours(726)).skip_message  # past 30 days: nothing due, no run


# ##### THIRTY DAYS OF TICKS


def test_thirty_days_of_ticks_ran_through_the_schedule_and_probe_job(cycle):
    ticks = cycle.cycle.ticks
    assert len(ticks) == 121 and ticks[0] == T0 and ticks[-1] == hours(720)
    # The schedule asked for every tick (jina never finds, so every tick has work); the ticks ran
    # as one catch-up run of the probe job, each with the clock at its own time.
    [run] = cycle.cycle.runs
    assert run.success and run.dagster_run.tags["bench/ticks"] == "121"
    assert run.dagster_run.tags["bench/probe_at"] == "2026-07-01T00:00:00Z..2026-07-31T00:00:00Z"
    assert run.dagster_run.tags["dagster/schedule_name"] == "sentinel_probe_schedule"
    metadata = run.asset_materializations_for_node("sentinel_probes")[0].metadata
    assert metadata["ticks"].value == 121 and metadata["sent_this_run"].value == metadata["dagster/row_count"].value
    probes = table(cycle.home, "SELECT * FROM sentinel_probes")
    assert set(pd.to_datetime(probes["tick_at"], utc=True)) <= set(ticks)
    assert not probes.duplicated(["vendor", "sentinel_id", "tick_at"]).any()
    assert (probes["probed_at"] == probes["tick_at"]).all()  # simulated: the vendors answered as of the tick
    assert probes["body"].str.len().min() > 0 and probes["request_json"].notna().all()  # the evidence is kept
    assert not probes["request_json"].str.contains("sim-exa-key").any()
    assert set(probes["response_class"]) == {"ok", "empty"}


def test_each_vendor_finds_each_page_at_the_first_tick_after_the_simulator_indexed_it(cycle):
    probes = table(cycle.home, "SELECT * FROM sentinel_probes")
    ticks = cycle.cycle.ticks
    assert len(cycle.truth) == COUNT
    outcomes = {}
    for vendor in VENDORS:
        for sentinel, truth in cycle.truth.items():
            mine = probes[(probes["vendor"] == vendor) & (probes["sentinel_id"] == sentinel)].sort_values("tick_at")
            found = mine[mine["found"]]
            first = expected_first_find(truth, vendor, ticks)
            outcomes[(vendor, sentinel)] = first
            if first is None:
                assert found.empty, (vendor, sentinel)
                assert len(mine) == 121  # probed at every tick of the 30 days, never after
            else:
                assert found["tick_at"].tolist() == [pd.Timestamp(first)], (vendor, sentinel)
                assert mine["tick_at"].max() == pd.Timestamp(first)  # never probed again once found
                assert len(mine) == ticks.index(first) + 1
                assert found["rank"].tolist() == [1]  # the unique phrase finds its page and nothing else
    assert all(outcomes[("jina", s)] is None for s in cycle.truth)
    assert all(outcomes[("serper", s)] is not None for s in cycle.truth)


def test_every_probe_is_billed_as_the_simulated_vendor_charged_it(cycle):
    probes = table(cycle.home, "SELECT vendor, count(*) AS n, sum(billed_usd) AS usd FROM sentinel_probes GROUP BY 1")
    calls = pd.DataFrame(cycle.requests).groupby("vendor").size()
    charged = pd.DataFrame(cycle.billing).groupby("vendor")["usd"].sum()
    for r in probes.itertuples():
        assert r.n == calls[r.vendor], r.vendor  # one call per probe, nothing re-sent
        assert r.usd == pytest.approx(charged.get(r.vendor, 0.0), rel=1e-9, abs=1e-12), r.vendor
    assert cycle.cycle.summary["spend_usd"] == pytest.approx(probes["usd"].sum())


# ##### WHAT A READER SEES


def test_published_leaderboard_has_ttr_medians_intervals_and_not_reached(cycle):
    board = json.loads((cycle.out / "leaderboard.json").read_text())
    jsonschema.validate(board, json.loads((cycle.out / "leaderboard.schema.json").read_text()))
    entries = {e["vendor"]: e for e in board["vendors"] if e["status"] == "scored"}
    fast = entries["serper"]["metrics"]["ttr_median_hours"]
    assert fast["n"] == COUNT and 0 < fast["value"] <= 12 and fast["low"] is not None
    never = entries["jina"]["metrics"]["ttr_median_hours"]
    assert never == {"value": None, "n": COUNT, "low": None, "high": None}
    assert entries["jina"]["metrics"]["ttr_probes"]["value"] == COUNT * 121
    assert entries["exa"]["metrics"]["ttr_median_hours"]["value"] > fast["value"]
    rows = {r["vendor"]: r for r in csv.DictReader((cycle.out / "leaderboard.csv").open())}
    assert rows["jina"]["ttr_median_hours_not_reached"] == "True" and rows["jina"]["ttr_median_hours"] == ""
    assert rows["serper"]["ttr_median_hours_not_reached"] == "False"
    index = (cycle.out / "index.html").read_text()
    assert "TTR median" in index and "not reached" in index and "charts/ttr_km.svg" in index
    svg = (cycle.out / "charts" / "ttr_km.svg").read_text()
    assert svg.startswith("<?xml") and all(v in svg for v in VENDORS)


def test_published_medians_and_intervals_agree_with_r(cycle):
    if shutil.which("Rscript") is None:
        pytest.skip("Rscript not on PATH (the KM functions are checked against a recorded R fixture elsewhere)")
    pages = table(cycle.home, "SELECT * FROM sentinel_pages")
    subjects = sentinel_durations(pages, table(cycle.home, "SELECT * FROM sentinel_probes"))
    board = json.loads((cycle.out / "leaderboard.json").read_text())
    figures = {e["vendor"]: e["metrics"]["ttr_median_hours"] for e in board["vendors"] if e["status"] == "scored"}
    script = ["suppressPackageStartupMessages(library(survival))"]
    for vendor, group in subjects.groupby("vendor"):
        t = ",".join(repr(float(x)) for x in group["duration_hours"])
        e = ",".join("1" if o else "0" for o in group["observed"])
        script.append(f'x <- summary(survfit(Surv(c({t}), c({e})) ~ 1))$table; '
                      f'cat("{vendor}", x["median"], x["0.95LCL"], x["0.95UCL"], "\\n")')
    run = subprocess.run(["Rscript", "-e", "\n".join(script)], capture_output=True, text=True, timeout=120)
    if run.returncode != 0 and "no package called" in run.stderr:
        pytest.skip("R is installed but not its survival package")
    assert run.returncode == 0, run.stderr
    for line in run.stdout.strip().splitlines():
        vendor, *values = line.split()
        r = [None if v == "NA" else float(v) for v in values]
        ours = figures[vendor]
        for mine, theirs in zip((ours["value"], ours["low"], ours["high"]), r):
            assert (mine is None and theirs is None) or mine == pytest.approx(theirs, abs=1e-6), (vendor, ours, r)


def test_rescore_re_derives_ttr_from_the_archived_probe_responses(cycle, monkeypatch):
    import socket

    def refuse(*args, **kwargs):
        raise AssertionError("rescore tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    report = rescore_snapshot(cycle.home, SNAPSHOT)
    assert report.differences == [], report.summary()
    path = cycle.out / "leaderboard.json"
    original = path.read_text()
    board = json.loads(original)
    next(e for e in board["vendors"] if e["vendor"] == "serper")["metrics"]["ttr_median_hours"]["value"] = 99.0
    path.write_text(json.dumps(board))
    try:
        report = rescore_snapshot(cycle.home, SNAPSHOT)
    finally:
        path.write_text(original)
    assert any("serper" in d and "ttr_median_hours" in d for d in report.differences), report.differences


# ##### MISSED AND REPEATED TICKS


@pytest.fixture()
def small(tmp_path, sim):
    home = make_home(tmp_path, ["exa", "serper"])
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("snapshots", [SNAPSHOT])
    publish(instance, home, sim.base_url, T0)
    truth = {s["id"]: s for s in httpx.get(f"{sim.base_url}/_sim/sentinels", timeout=5).json()
             if s["url"].split("/")[3] == SNAPSHOT}
    return SimpleNamespace(home=home, instance=instance, res=resources(home, sim.base_url), truth=truth)


def billed_calls(sim) -> int:
    return len(httpx.get(f"{sim.base_url}/_sim/billing", timeout=5).json())


def test_a_missed_tick_is_caught_up_by_the_next(small, sim):
    drive_probe_schedule([T0], small.res, small.instance, run_config=QUIET)
    # the daemon was down from 06:00 to 06:00 the next day: the 12:00 tick of day 2 catches up
    catch_up = hours(36)
    [run] = drive_probe_schedule([catch_up], small.res, small.instance, run_config=QUIET)
    assert run.success
    probes = table(small.home, "SELECT * FROM sentinel_probes")
    assert set(pd.to_datetime(probes["tick_at"], utc=True)) == {pd.Timestamp(T0), pd.Timestamp(catch_up)}
    at_catch_up = probes[pd.to_datetime(probes["tick_at"], utc=True) == catch_up]
    assert len(at_catch_up) == 2 * COUNT - int(probes["found"].sum() - at_catch_up["found"].sum())
    for r in at_catch_up.itertuples():
        indexed = small.truth[r.sentinel_id]["indexed_at"][r.vendor]
        assert r.found == (indexed is not None and datetime.fromisoformat(indexed) <= catch_up), r
    durations = sentinel_durations(table(small.home, "SELECT * FROM sentinel_pages"), probes)
    assert set(durations.loc[durations["observed"], "duration_hours"]) <= {0.0, 36.0}


def test_re_running_a_tick_replaces_its_rows_and_pays_nothing_twice(small, sim):
    ticks = [T0, hours(6), hours(12)]
    drive_probe_schedule(ticks, small.res, small.instance, run_config=QUIET)
    before = table(small.home, "SELECT * FROM sentinel_probes ORDER BY vendor, sentinel_id, tick_at")
    calls = billed_calls(sim)
    for tick in (hours(6), T0):  # the middle tick again, then the first one after later ticks
        [run] = drive_probe_schedule([tick], small.res, small.instance, run_config=QUIET)
        assert run.success
    assert billed_calls(sim) == calls  # every response came from the probe archive
    after = table(small.home, "SELECT * FROM sentinel_probes ORDER BY vendor, sentinel_id, tick_at")
    pd.testing.assert_frame_equal(before, after)


# ##### LIVE MODE


def test_live_pages_are_deployed_then_probed_from_the_confirmed_publish_time(tmp_path, sim):
    home = make_home(tmp_path, ["serper"], edit=lambda d: d.update(mode="live"))
    deploy = tmp_path / "deploy"
    config = {"batch_id": "b1", "base_url": "https://sentinels.example.org", "deploy_dir": str(deploy)}
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("snapshots", [SNAPSHOT])
    run = dg.materialize([sentinel_pages], instance=instance, partition_key=SNAPSHOT,
                         resources=resources(home, sim.base_url),
                         run_config={**QUIET, "ops": {"sentinel_pages": {"config": {**config, "count": 3}}}})
    expected = make_batch(SNAPSHOT, "b1", 3, config["base_url"], None)
    for page in expected:
        html = (deploy / page.url.split("://")[1] / "index.html").read_text()
        assert page.phrase in html and page.url in html
    assert table(home, "SELECT count(*) AS n FROM sentinel_pages WHERE published_at IS NULL")["n"][0] == 3
    assert "deploy it" in run.asset_materializations_for_node("sentinel_pages")[0].metadata["status"].value
    schedule = probe_schedule(BenchPaths(root=str(home)))
    now = datetime.now(timezone.utc).replace(microsecond=0)
    with dg.build_schedule_context(scheduled_execution_time=now + timedelta(hours=6)) as context:
        assert isinstance(schedule(context), dg.SkipReason)  # unconfirmed pages are never probed
    publish(instance, home, sim.base_url, now - timedelta(hours=1), 3, **config)
    assert table(home, "SELECT count(*) AS n FROM sentinel_pages WHERE published_at IS NULL")["n"][0] == 0
    with dg.build_schedule_context(scheduled_execution_time=now + timedelta(hours=6)) as context:
        assert len(schedule(context)) == 1
    moved = publish(instance, home, sim.base_url, now - timedelta(hours=2), 3, raise_on_error=False, **config)
    assert not moved.success  # a confirmed publish time is never moved under its probes


def test_a_live_catch_up_run_of_an_old_tick_leaves_the_probe_to_the_latest_tick(tmp_path, sim):
    home = make_home(tmp_path, ["serper"], edit=lambda d: d.update(mode="live"))
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("snapshots", [SNAPSHOT])
    old_tick = (datetime.now(timezone.utc) - timedelta(days=1)).replace(minute=0, second=0, microsecond=0)
    result = dg.materialize([sentinel_probes], instance=instance, partition_key=SNAPSHOT,
                            resources=resources(home, sim.base_url),
                            run_config={**QUIET, "ops": {"sentinel_probes": {"config": {"probe_at": [old_tick.isoformat()]}}}})
    metadata = result.asset_materializations_for_node("sentinel_probes")[0].metadata
    assert metadata["status"].value.startswith("superseded by the tick of")
    assert not (home / "data" / "warehouse").exists()  # nothing read, nothing written, no vendor called


# ##### THE SIMULATED WEB


def test_the_simulator_serves_and_indexes_a_sentinel_only_from_its_times(sim):
    base = sim.base_url
    published = datetime(2030, 1, 1, tzinfo=timezone.utc)
    [page] = make_batch("sim_check-2030-q1", "b1", 1, "https://sentinels.bench.test", published)
    assert httpx.post(f"{base}/_sim/sentinels", json=page_records([page]), timeout=5).status_code == 200
    truth = next(s for s in httpx.get(f"{base}/_sim/sentinels", timeout=5).json() if s["id"] == page.id)
    indexed = datetime.fromisoformat(truth["indexed_at"]["serper"])
    assert truth["indexed_at"]["jina"] is None

    def at(when: datetime) -> tuple[int, list[str]]:
        httpx.post(f"{base}/_sim/clock", json={"now": when.isoformat()}, timeout=5)
        served = httpx.get(f"{base}/h/{page.url.split('://')[1]}", timeout=5).status_code
        found = httpx.post(f"{base}/h/google.serper.dev/search", headers={"X-API-KEY": "sim-serper-key"},
                           json={"q": page.phrase}, timeout=5).json()
        return served, [r["link"] for r in found.get("organic", [])]

    try:
        assert at(published - timedelta(hours=1)) == (404, [])
        assert at(published) == (200, [])  # online, not yet indexed
        assert at(indexed - timedelta(minutes=1)) == (200, [])
        served, links = at(indexed + timedelta(seconds=1))  # the clock keeps whole seconds
        assert served == 200 and [link.rstrip("/") for link in links] == [page.url]  # that page and nothing else
        assert httpx.get(f"{base}/_sim/clock", timeout=5).json()["fixed"] is True
    finally:
        httpx.post(f"{base}/_sim/clock", json={"now": None}, timeout=5)
    assert httpx.get(f"{base}/_sim/clock", timeout=5).json()["fixed"] is False
    bad = httpx.post(f"{base}/_sim/sentinels", json=[{**page_records([page])[0], "published_at": None}], timeout=5)
    assert bad.status_code == 400
