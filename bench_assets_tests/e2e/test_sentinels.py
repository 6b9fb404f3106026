"""Sentinel probes end to end: planted pages, the 6-hourly schedule, the probe job, and the
time-to-retrievability a reader sees.

Everything runs against the real simulator over its socket with its clock under the test's
control: the simulated vendors index each sentinel after their own lag (one never does). Thirty
days of 6-hourly ticks, for two snapshots at once, go through the real schedule and probe job:
where anything changes (the first two days, in which every page a vendor finds is found, and the
last) through the daemon's path one tick at a time, the schedule evaluated with `evaluate_tick` on
a persistent instance and each run request executed before the next tick is evaluated; the days
between as one catch-up run. What is checked is
what the operator and a reader rely on: the schedule asks for a run exactly while some vendor
has a page to find (and skips otherwise), one run key per snapshot and tick, every vendor's first
finding is the first tick after the simulator indexed the page, nothing is probed after it is
found or past 30 days, the batched catch-up `bench demo` uses gives the same probes, a missed
tick is caught up and a re-run tick pays for nothing twice, and the published snapshot carries
the medians ("not reached" where due), their intervals (the same as R's), and the curves.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import dagster as dg
import duckdb
import httpx
import jsonschema
import pandas as pd
import pytest

from bench_assets.cli.sentinel_cycle import ProbeDaemon, simulate_probe_cycle
from bench_assets.definitions import defs as location_defs
from bench_assets.defs.resources import BenchPaths
from bench_assets.defs.sentinels import probe_schedule, sentinel_pages, sentinel_probes
from bench_assets.rescore.snapshot import rescore_snapshot
from bench_assets.sentinels import PROBE_CRON
from bench_assets.sentinels.pages import make_batch, page_records, probe_ticks, tick_key
from bench_assets.sentinels.ttr import sentinel_durations
from bench_assets_tests.helpers import (
    GOLDEN_STAGES,
    RESULT_STAGES,
    SNAPSHOT,
    VENDOR_STAGES,
    make_home,
    materialize,
    register_partitions,
    resources,
    vendor_key,
)

# The module's 30-day cycle (in `cycle`) is set up in its first test's time, more on a busy
# machine; a hang is still caught.
pytestmark = pytest.mark.timeout(900)

VENDORS = ["exa", "jina", "serper"]  # simulated lags: exa ~1 day, jina never, serper ~6 h
OTHER = "web_search-2026-q4"  # a second snapshot whose vendors find every page within two days
OTHER_VENDORS = ["exa", "serper"]
SNAPSHOT_VENDORS = {SNAPSHOT: VENDORS, OTHER: OTHER_VENDORS}
T0 = datetime(2026, 7, 1, tzinfo=UTC)
COUNT = 6
# The cycle's ticks run tick by tick through the daemon's path up to this hour (every page any
# vendor finds is found by then: the slowest, exa, indexes within 36 hours) and from this one on
# (the end of the 30-day window); the ticks between run as one catch-up run (see `cycle`).
FIRST_TICKS_HOURS = 48
LAST_TICKS_FROM_HOURS = 708
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def hours(h: float) -> datetime:
    return T0 + timedelta(hours=h)


def unpaced(manifest: dict) -> None:
    """Test pacing for every capability: the simulator has no rate limit to respect, and jina's
    16 searches a second would otherwise cost a quarter of a second per tick."""
    for spec in manifest["vendors"].values():
        spec.pop("capability_rate_limits", None)


@contextmanager
def synced_writes_dir(fallback: Path):
    """A directory for a test that commits thousands of small transactions (a Dagster run's
    events to SQLite, probes to DuckDB): memory-backed when the machine has /dev/shm, where a
    commit's sync to disk costs nothing, so the test's time does not depend on how busy the disk
    is (under load, syncs were a quarter of a probe run); `fallback` otherwise."""
    if os.access("/dev/shm", os.W_OK):
        with tempfile.TemporaryDirectory(dir="/dev/shm", prefix="bench-sentinels-") as name:
            yield Path(name)
    else:
        yield fallback


@contextmanager
def probe_instance(tmp_path):
    """A persistent Dagster instance for many short runs: one SQLite event log for all runs (as
    Postgres keeps it) rather than a file per run, and no captured compute logs. Profiled on the
    2-core machine, a probe run cost ~1.1 s on the default test instance, ~0.35 s of it creating
    and migrating each run's event-log file and ~0.25 s the `tail` processes that capture its
    logs; the probes themselves are ~0.25 s."""
    (tmp_path / "dagster_home").mkdir()
    with dg.instance_for_test(
        temp_dir=str(tmp_path / "dagster_home"),
        overrides={
            "event_log_storage": {
                "module": "dagster._core.storage.event_log",
                "class": "ConsolidatedSqliteEventLogStorage",
                "config": {"base_dir": str(tmp_path / "event_log")},
            },
            "compute_logs": {
                "module": "dagster._core.storage.noop_compute_log_manager",
                "class": "NoOpComputeLogManager",
            },
        },
    ) as instance:
        yield instance


def table(home, sql: str, params=()) -> pd.DataFrame:
    con = duckdb.connect(str(home / "data" / "warehouse" / "bench.duckdb"), read_only=True)
    try:
        return con.execute(sql, list(params)).df()
    finally:
        con.close()


def publish(
    instance,
    home,
    sim_url: str,
    published_at: datetime,
    count: int = COUNT,
    raise_on_error=True,
    snapshot: str = SNAPSHOT,
    **config,
):
    return dg.materialize(
        [sentinel_pages],
        instance=instance,
        partition_key=snapshot,
        raise_on_error=raise_on_error,
        resources=resources(home, sim_url),
        run_config={
            **QUIET,
            "ops": {"sentinel_pages": {"config": {"published_at": published_at.isoformat(), "count": count, **config}}},
        },
    )


def sim_truth(sim) -> dict[tuple[str, str], dict]:
    """The simulator's sentinels by (snapshot, sentinel id), with when each vendor indexes each."""
    return {(s["url"].split("/")[3], s["id"]): s for s in httpx.get(f"{sim.base_url}/_sim/sentinels", timeout=5).json()}


def expected_first_find(truth: dict, vendor: str, ticks: list[datetime]) -> datetime | None:
    """The first tick at or after the simulator indexed the page at this vendor, within 30 days."""
    indexed = truth["indexed_at"][vendor]
    if indexed is None:
        return None
    published = datetime.fromisoformat(truth["published_at"])
    return next(
        (t for t in ticks if t >= datetime.fromisoformat(indexed) and t <= published + timedelta(hours=720)), None
    )


def due_snapshots(truth: dict, at: datetime, ticks: list[datetime]) -> list[str]:
    """The snapshots the schedule must ask a run for at `at`: some vendor has a page published at
    most 30 days before that no tick before `at` found."""
    due = set()
    for (snapshot, _), page in truth.items():
        published = datetime.fromisoformat(page["published_at"])
        if not published <= at <= published + timedelta(hours=720):
            continue
        for vendor in SNAPSHOT_VENDORS.get(snapshot, []):
            first = expected_first_find(page, vendor, ticks)
            if first is None or first >= at:
                due.add(snapshot)
    return sorted(due)


def comparable(probes: pd.DataFrame) -> pd.DataFrame:
    """Probe rows without what differs between two runs of the same probes: the measured latency,
    the wall-clock Date header, and the simulator's request ids (a counter over all its requests)."""
    out = probes.drop(columns=["latency_ms"]).sort_values(["snapshot_id", "vendor", "sentinel_id", "tick_at"])
    out["body"] = [
        re.sub(r"[a-z]+-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<request id>", v)
        if isinstance(v, str)
        else v
        for v in out["body"]
    ]
    out["response_headers_json"] = [
        {k: v for k, v in json.loads(h).items() if k != "date"} if isinstance(h, str) else h
        for h in out["response_headers_json"]
    ]
    out["request_id"] = out["request_id"].notna()
    out["body_sha256"] = out["body_sha256"].notna()
    return out.reset_index(drop=True)


# ##### FIXTURES


@pytest.fixture(scope="module")
def sim(simulator):
    """The session's simulator with no sentinels left by other modules; its clock goes back to real
    time and its sentinels away afterwards."""
    httpx.delete(f"{simulator.base_url}/_sim/sentinels", timeout=5)
    yield simulator
    httpx.post(f"{simulator.base_url}/_sim/clock", json={"now": None}, timeout=5)
    httpx.delete(f"{simulator.base_url}/_sim/sentinels", timeout=5)


@pytest.fixture(scope="module")
def cycle(tmp_path_factory, sim):
    """A small snapshot (3 vendors) and a second one (2 vendors) with a 30-day sentinel cycle
    driven through the schedule and the probe job; the first is aggregated and published.

    The daemon's path, tick by tick (each evaluation sees what the runs before it wrote), covers
    the ticks where something changes: the first two days, in which every page any vendor finds
    is found and the second snapshot's probing stops, and the last day of the window, where the
    first snapshot's probing ends. The 26 days between, where the only thing due is the vendor
    that never finds (jina) at every tick, are the schedule's requests executed as one catch-up
    run (`bench demo`'s path, which gives the same probes: a test below checks it over all 121
    ticks), not 100-odd Dagster runs that would prove nothing the first and last ticks do not."""
    with synced_writes_dir(tmp_path_factory.mktemp("sentinels")) as tmp, probe_instance(tmp) as instance:
        home = make_home(tmp / "home", VENDORS, rows_per_stratum=6, edit=unpaced)
        make_home(home, OTHER_VENDORS, snapshot=OTHER, edit=unpaced)
        register_partitions(instance, [SNAPSHOT, OTHER])
        materialize(instance, home, sim.base_url, GOLDEN_STAGES, SNAPSHOT)
        for vendor in VENDORS:
            materialize(instance, home, sim.base_url, VENDOR_STAGES, vendor_key(vendor))
        httpx.post(f"{sim.base_url}/_sim/reset", timeout=5)
        publish(instance, home, sim.base_url, T0, snapshot=OTHER)
        started = time.perf_counter()
        first = simulate_probe_cycle(
            SNAPSHOT,
            resources(home, sim.base_url),
            instance,
            T0,
            days=FIRST_TICKS_HOURS / 24,
            count=COUNT,
            run_config=QUIET,
            per_tick=True,
        )
        ticks = probe_ticks(T0, hours(720))
        middle = [t for t in ticks if hours(FIRST_TICKS_HOURS) < t < hours(LAST_TICKS_FROM_HOURS)]
        daemon = ProbeDaemon(resources(home, sim.base_url), instance, QUIET)
        caught_up = daemon.catch_up(middle)  # every snapshot's requests, so a due second snapshot would show
        last = [daemon.tick(t) for t in ticks if t >= hours(LAST_TICKS_FROM_HOURS)]
        seconds = time.perf_counter() - started
        past_window = daemon.tick(hours(726))
        billing = httpx.get(f"{sim.base_url}/_sim/billing", timeout=5).json()
        requests = httpx.get(f"{sim.base_url}/_sim/requests", timeout=5).json()
        truth = {key: page for key, page in sim_truth(sim).items() if key[0] in SNAPSHOT_VENDORS}
        materialize(instance, home, sim.base_url, RESULT_STAGES, SNAPSHOT)
        evaluations = [*first.evaluations, *last]
        print(
            f"\n30 days of ticks: {len(evaluations)} tick by tick ({sum(len(e.runs) for e in evaluations)} probe runs),"
            f" {len(middle)} in one catch-up run, in {seconds:.1f} s"
        )
        yield SimpleNamespace(
            home=home,
            instance=instance,
            cycle=SimpleNamespace(
                ticks=ticks,
                evaluations=evaluations,
                runs=[r for e in evaluations for r in e.runs],
                summary=first.summary,
            ),
            middle=middle,
            caught_up=caught_up,
            daemon=daemon,
            past_window=past_window,
            billing=billing,
            requests=requests,
            truth=truth,
            seconds=seconds,
            out=home / "data" / "publish" / SNAPSHOT,
        )


# ##### THE SCHEDULE


def test_the_schedule_runs_every_6_hours_by_default():
    schedule = location_defs().resolve_schedule_def("sentinel_probe_schedule")
    assert schedule.cron_schedule == PROBE_CRON == "0 */6 * * *"
    assert schedule.execution_timezone == "UTC"
    assert schedule.default_status == dg.DefaultScheduleStatus.RUNNING
    assert schedule.job_name == "sentinel_probe_job"


def test_a_tick_requests_one_run_keyed_by_snapshot_and_tick(tmp_path, sim):
    home = make_home(tmp_path, ["serper"])
    schedule = probe_schedule(BenchPaths(root=str(home)), resources(home, "")["duckdb"])
    repository = dg.Definitions(
        assets=[sentinel_pages, sentinel_probes], schedules=[schedule], resources=resources(home, sim.base_url)
    ).get_repository_def()
    with dg.instance_for_test() as instance:
        register_partitions(instance, [SNAPSHOT])

        def tick(at: datetime):
            context = dg.build_schedule_context(
                instance=instance, scheduled_execution_time=at, repository_def=repository
            )
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
    evaluations = cycle.cycle.evaluations
    assert [e.tick for e in evaluations] == [t for t in ticks if t not in cycle.middle]
    assert cycle.middle == ticks[9:-3]  # tick by tick: the first two days and the last one
    # At each tick the schedule saw what the runs of the earlier ticks wrote: it asked for a run
    # of a snapshot exactly while one of its vendors had a page left to find, and skipped a tick
    # with nothing due for any snapshot.
    for e in evaluations:
        due = due_snapshots(cycle.truth, e.tick, ticks)
        assert e.run_keys == [f"{s}@{tick_key(e.tick)}" for s in due], e.tick
        assert (e.skip_message is None) == bool(due), e.tick
        assert len(e.runs) == len(due) and all(r.success for r in e.runs), e.tick
    # The second snapshot's vendors found all its pages within two days: no run of it after that,
    # while the first (where jina never finds) kept being probed to the end of its 30 days: at
    # every tick between (the schedule requested the first snapshot alone, run as one catch-up)
    # and at every tick of the last day.
    last_other = max(
        expected_first_find(page, v, ticks) for (s, _), page in cycle.truth.items() if s == OTHER for v in OTHER_VENDORS
    )
    assert last_other <= hours(48)
    other_keys = [k for e in evaluations for k in e.run_keys if k.startswith(OTHER)]
    assert other_keys[-1] == f"{OTHER}@{tick_key(last_other)}"
    assert all(due_snapshots(cycle.truth, t, ticks) == [SNAPSHOT] for t in cycle.middle)
    [caught_up] = cycle.caught_up
    assert caught_up.success and caught_up.dagster_run.tags["bench/sentinel_probe"] == SNAPSHOT
    assert caught_up.dagster_run.tags["bench/ticks"] == str(len(cycle.middle))
    assert all(e.run_keys == [f"{SNAPSHOT}@{tick_key(e.tick)}"] for e in evaluations if e.tick > last_other)
    # Past the 30 days nothing is due anywhere: the schedule skips and nothing runs.
    assert cycle.past_window.skip_message and not cycle.past_window.run_keys and not cycle.past_window.runs


def test_each_run_is_one_tick_of_one_snapshot_under_its_own_run_key(cycle):
    keys = [k for e in cycle.cycle.evaluations for k in e.run_keys]
    assert len(keys) == len(set(keys)) == len(cycle.cycle.runs)
    runs = [
        r
        for r in cycle.instance.get_runs(dg.RunsFilter(job_name="sentinel_probe_job"))
        if r.run_id != cycle.caught_up[0].run_id  # the catch-up run of the ticks between has no run key
    ]
    assert sorted(r.tags["dagster/run_key"] for r in runs) == sorted(keys)
    for run in runs:
        snapshot, key = run.tags["dagster/run_key"].split("@")
        assert run.tags["dagster/partition"] == run.tags["bench/sentinel_probe"] == snapshot
        assert run.tags["bench/probe_at"] == key and run.tags["dagster/schedule_name"] == "sentinel_probe_schedule"
        assert tick_key(datetime.fromisoformat(run.tags["dagster/scheduled_execution_time"])) == key
        assert [
            tick_key(datetime.fromisoformat(t)) for t in run.run_config["ops"]["sentinel_probes"]["config"]["probe_at"]
        ] == [key]
    for result in cycle.cycle.runs:
        metadata = result.asset_materializations_for_node("sentinel_probes")[0].metadata
        assert metadata["ticks"].value == 1 and metadata["sent_this_run"].value == metadata["dagster/row_count"].value
    # The daemon evaluating a tick again (say after a restart mid-tick) launches nothing twice.
    last = cycle.cycle.ticks[-1]
    before = table(cycle.home, "SELECT count(*) AS n FROM sentinel_probes")["n"][0]
    again = cycle.daemon.tick(last)
    assert again.run_keys == [f"{SNAPSHOT}@{tick_key(last)}"] and again.runs == []
    assert table(cycle.home, "SELECT count(*) AS n FROM sentinel_probes")["n"][0] == before


def test_probe_rows_keep_their_evidence(cycle):
    probes = table(cycle.home, "SELECT * FROM sentinel_probes")
    assert set(pd.to_datetime(probes["tick_at"], utc=True)) <= set(cycle.cycle.ticks)
    assert not probes.duplicated(["snapshot_id", "vendor", "sentinel_id", "tick_at"]).any()
    assert (probes["probed_at"] == probes["tick_at"]).all()  # simulated: the vendors answered as of the tick
    assert probes["body"].str.len().min() > 0 and probes["request_json"].notna().all()  # the evidence is kept
    assert not probes["request_json"].str.contains("sim-exa-key").any()
    assert set(probes["response_class"]) == {"ok", "empty"}


def test_each_vendor_finds_each_page_at_the_first_tick_after_the_simulator_indexed_it(cycle):
    probes = table(cycle.home, "SELECT * FROM sentinel_probes")
    ticks = cycle.cycle.ticks
    assert len(cycle.truth) == 2 * COUNT
    outcomes = {}
    for (snapshot, sentinel), truth in cycle.truth.items():
        for vendor in SNAPSHOT_VENDORS[snapshot]:
            mine = probes[
                (probes["snapshot_id"] == snapshot) & (probes["vendor"] == vendor) & (probes["sentinel_id"] == sentinel)
            ].sort_values("tick_at")
            found = mine[mine["found"]]
            first = expected_first_find(truth, vendor, ticks)
            outcomes[(snapshot, vendor, sentinel)] = first
            if first is None:
                assert found.empty, (vendor, sentinel)
                assert len(mine) == 121  # probed at every tick of the 30 days, never after
            else:
                assert found["tick_at"].tolist() == [pd.Timestamp(first)], (vendor, sentinel)
                assert mine["tick_at"].max() == pd.Timestamp(first)  # never probed again once found
                assert len(mine) == ticks.index(first) + 1
                assert found["rank"].tolist() == [1]  # the unique phrase finds its page and nothing else
    assert all(first is None for (s, v, _), first in outcomes.items() if v == "jina")
    assert all(first is not None for (s, v, _), first in outcomes.items() if v == "serper")


def test_every_probe_is_billed_as_the_simulated_vendor_charged_it(cycle):
    probes = table(cycle.home, "SELECT vendor, count(*) AS n, sum(billed_usd) AS usd FROM sentinel_probes GROUP BY 1")
    calls = pd.DataFrame(cycle.requests).groupby("vendor").size()
    charged = pd.DataFrame(cycle.billing).groupby("vendor")["usd"].sum()
    for r in probes.itertuples():
        assert r.n == calls[r.vendor], r.vendor  # one call per probe, nothing re-sent
        assert r.usd == pytest.approx(charged.get(r.vendor, 0.0), rel=1e-9, abs=1e-12), r.vendor
    # the cycle's summary (of its first two days, simulated tick by tick) reports what they spent
    mine = table(cycle.home, "SELECT tick_at, billed_usd FROM sentinel_probes WHERE snapshot_id = ?", [SNAPSHOT])
    spent = mine.loc[pd.to_datetime(mine["tick_at"], utc=True) <= pd.Timestamp(hours(FIRST_TICKS_HOURS)), "billed_usd"]
    assert cycle.cycle.summary["spend_usd"] == pytest.approx(spent.sum())


def test_the_batched_catch_up_of_bench_demo_gives_the_same_probes(cycle, tmp_path, sim):
    # `bench demo` evaluates the schedule at every tick first and probes each snapshot's ticks in
    # one run; the job decides what is due at each tick from the ticks before it, so the probe
    # rows must be those of the cycle (tick by tick where anything changes), to the byte of every
    # archived response.
    with synced_writes_dir(tmp_path) as tmp, probe_instance(tmp) as instance:
        home = make_home(tmp / "home", VENDORS, rows_per_stratum=6, edit=unpaced)
        make_home(home, OTHER_VENDORS, snapshot=OTHER, edit=unpaced)
        register_partitions(instance, [SNAPSHOT, OTHER])
        for snapshot in (SNAPSHOT, OTHER):
            publish(instance, home, sim.base_url, T0, snapshot=snapshot)
        runs = ProbeDaemon(resources(home, sim.base_url), instance, QUIET).catch_up(cycle.cycle.ticks)
        batched = table(home, "SELECT * FROM sentinel_probes")
    assert [r.success for r in runs] == [True, True]
    assert sorted(r.dagster_run.tags["bench/sentinel_probe"] for r in runs) == sorted([SNAPSHOT, OTHER])
    assert all(r.dagster_run.tags["bench/ticks"] == "121" for r in runs)  # evaluated before any probe ran
    tick_by_tick = table(cycle.home, "SELECT * FROM sentinel_probes")
    assert len(batched) == len(tick_by_tick) > 121 * COUNT
    pd.testing.assert_frame_equal(comparable(batched), comparable(tick_by_tick))


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
    figures = {
        e["vendor"]: e["metrics"]["ttr_median_hours"]
        for e in board["vendors"]
        if e["status"] == "scored" and "ttr_median_hours" in e["metrics"]
    }
    # Every published vendor with sentinels must be compared, not just those R happened to print.
    assert set(figures) == set(VENDORS) == set(subjects["vendor"]), (sorted(figures), sorted(set(subjects["vendor"])))
    script = ["suppressPackageStartupMessages(library(survival))"]
    for vendor, group in subjects.groupby("vendor"):
        t = ",".join(repr(float(x)) for x in group["duration_hours"])
        e = ",".join("1" if o else "0" for o in group["observed"])
        script.append(
            f"x <- summary(survfit(Surv(c({t}), c({e})) ~ 1))$table; "
            f'cat("{vendor}", x["median"], x["0.95LCL"], x["0.95UCL"], "\\n")'
        )
    run = subprocess.run(["Rscript", "-e", "\n".join(script)], capture_output=True, text=True, timeout=120)
    if run.returncode != 0 and "no package called" in run.stderr:
        pytest.skip("R is installed but not its survival package")
    assert run.returncode == 0, run.stderr
    from_r: dict[str, list[float | None]] = {}
    for line in run.stdout.strip().splitlines():
        vendor, *values = line.split()
        assert len(values) == 3 and vendor not in from_r, line  # median, lower and upper bound, once each
        from_r[vendor] = [None if v == "NA" else float(v) for v in values]
    assert set(from_r) == set(figures), (sorted(from_r), sorted(figures))
    for vendor, ours in figures.items():
        for name, mine, theirs in zip(
            ("median", "low", "high"), (ours["value"], ours["low"], ours["high"]), from_r[vendor], strict=True
        ):
            if theirs is None:
                assert mine is None, (vendor, name, ours, from_r[vendor])
            else:
                assert mine is not None and mine == pytest.approx(theirs, abs=1e-6), (
                    vendor,
                    name,
                    ours,
                    from_r[vendor],
                )


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
    assert any(d.vendor == "serper" and "ttr_median_hours" in str(d) for d in report.differences), report.differences


# ##### MISSED AND REPEATED TICKS


@pytest.fixture()
def small(tmp_path, sim):
    with synced_writes_dir(tmp_path) as tmp, probe_instance(tmp) as instance:
        home = make_home(tmp / "home", ["exa", "serper"], edit=unpaced)
        register_partitions(instance, [SNAPSHOT])
        httpx.delete(f"{sim.base_url}/_sim/sentinels", timeout=5)  # the 30-day cycle's pages share these ids
        publish(instance, home, sim.base_url, T0)
        truth = {sentinel: page for (snapshot, sentinel), page in sim_truth(sim).items() if snapshot == SNAPSHOT}
        res = resources(home, sim.base_url)
        yield SimpleNamespace(
            home=home, instance=instance, res=res, truth=truth, daemon=ProbeDaemon(res, instance, QUIET)
        )


def billed_calls(sim) -> int:
    return len(httpx.get(f"{sim.base_url}/_sim/billing", timeout=5).json())


def probe_table(home) -> pd.DataFrame:
    return table(home, "SELECT * FROM sentinel_probes ORDER BY vendor, sentinel_id, tick_at")


def test_the_schedule_skips_once_every_vendor_found_every_page(small):
    ticks = probe_ticks(T0, hours(60))
    last = max(expected_first_find(page, v, ticks) for page in small.truth.values() for v in ("exa", "serper"))
    assert last < ticks[-1]
    for at in ticks:
        tick = small.daemon.tick(at)
        if at <= last:
            assert tick.run_keys == [f"{SNAPSHOT}@{tick_key(at)}"] and [r.success for r in tick.runs] == [True], at
        else:  # everything found: no run, although the pages are well within their 30 days
            assert tick.skip_message and not tick.run_keys and not tick.runs, at
    probes = probe_table(small.home)
    assert probes.groupby(["vendor", "sentinel_id"])["found"].sum().eq(1).all()


def test_a_missed_tick_is_caught_up_by_the_next(small, sim):
    # The daemon is down from 06:00 until 12:00 the next day. Dagster's scheduler then evaluates
    # only the latest of the missed ticks for a schedule without a partition set, like this one
    # ("has no partition set, so not trying to catch up"): the 12:00 tick of day 2 probes
    # everything still pending since 00:00 of day 1.
    from dagster._core.remote_representation.external_data import ScheduleSnap

    assert ScheduleSnap.from_def(small.daemon.schedule, small.daemon.repository).partition_set_name is None
    [run] = small.daemon.tick(T0).runs
    assert run.success
    before = probe_table(small.home)
    catch_up = hours(36)
    tick = small.daemon.tick(catch_up)
    assert tick.run_keys == [f"{SNAPSHOT}@{tick_key(catch_up)}"] and [r.success for r in tick.runs] == [True]
    probes = probe_table(small.home)
    assert set(pd.to_datetime(probes["tick_at"], utc=True)) == {pd.Timestamp(T0), pd.Timestamp(catch_up)}
    assert not probes.duplicated(["vendor", "sentinel_id", "tick_at"]).any()
    kept = probes[pd.to_datetime(probes["tick_at"], utc=True) == T0].reset_index(drop=True)
    pd.testing.assert_frame_equal(kept, before)  # the first tick's evidence is untouched
    at_catch_up = probes[pd.to_datetime(probes["tick_at"], utc=True) == catch_up]
    assert len(before) == 2 * COUNT  # every pair was probed at the first tick
    pending = {(r.vendor, r.sentinel_id) for r in before.itertuples() if not r.found}
    assert set(zip(at_catch_up["vendor"], at_catch_up["sentinel_id"])) == pending
    for r in at_catch_up.itertuples():
        indexed = small.truth[r.sentinel_id]["indexed_at"][r.vendor]
        assert r.found == (indexed is not None and datetime.fromisoformat(indexed) <= catch_up), r
    durations = sentinel_durations(table(small.home, "SELECT * FROM sentinel_pages"), probes)
    assert set(durations.loc[durations["observed"], "duration_hours"]) <= {0.0, 36.0}
    # The next tick goes on from there: only what the catch-up did not find is probed.
    following = hours(42)
    small.daemon.tick(following)
    at_following = probe_table(small.home).loc[lambda d: pd.to_datetime(d["tick_at"], utc=True) == following]
    assert set(zip(at_following["vendor"], at_following["sentinel_id"])) == {
        (r.vendor, r.sentinel_id) for r in at_catch_up.itertuples() if not r.found
    }


def test_re_running_a_tick_replaces_its_rows_and_pays_nothing_twice(small, sim):
    ticks = [T0, hours(6), hours(12)]
    for at in ticks:
        small.daemon.tick(at)
    before = probe_table(small.home)
    calls = billed_calls(sim)
    assert all(small.daemon.tick(at).runs == [] for at in ticks)  # the daemon never launches a run key twice
    for at in (hours(6), T0):  # an operator re-runs the middle tick, then the first one after later ticks
        run = dg.materialize(
            [sentinel_probes],
            instance=small.instance,
            partition_key=SNAPSHOT,
            resources=small.res,
            run_config={**QUIET, "ops": {"sentinel_probes": {"config": {"probe_at": [at.isoformat()]}}}},
        )
        assert run.success
    assert billed_calls(sim) == calls  # every response came from the probe archive
    pd.testing.assert_frame_equal(before, probe_table(small.home))


# ##### LIVE MODE


def test_live_pages_are_deployed_then_probed_from_the_confirmed_publish_time(tmp_path, sim):
    home = make_home(tmp_path, ["serper"], edit=lambda d: d.update(mode="live"))
    deploy = tmp_path / "deploy"
    config = {"batch_id": "b1", "base_url": "https://sentinels.example.org", "deploy_dir": str(deploy)}
    instance = dg.DagsterInstance.ephemeral()
    register_partitions(instance, [SNAPSHOT])
    run = dg.materialize(
        [sentinel_pages],
        instance=instance,
        partition_key=SNAPSHOT,
        resources=resources(home, sim.base_url),
        run_config={**QUIET, "ops": {"sentinel_pages": {"config": {**config, "count": 3}}}},
    )
    expected = make_batch(SNAPSHOT, "b1", 3, config["base_url"], None)
    for page in expected:
        html = (deploy / page.url.split("://")[1] / "index.html").read_text()
        assert page.phrase in html and page.url in html
    assert table(home, "SELECT count(*) AS n FROM sentinel_pages WHERE published_at IS NULL")["n"][0] == 3
    assert "deploy it" in run.asset_materializations_for_node("sentinel_pages")[0].metadata["status"].value
    schedule = probe_schedule(BenchPaths(root=str(home)), resources(home, "")["duckdb"])
    now = datetime.now(UTC).replace(microsecond=0)
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
    register_partitions(instance, [SNAPSHOT])
    old_tick = (datetime.now(UTC) - timedelta(days=1)).replace(minute=0, second=0, microsecond=0)
    result = dg.materialize(
        [sentinel_probes],
        instance=instance,
        partition_key=SNAPSHOT,
        resources=resources(home, sim.base_url),
        run_config={**QUIET, "ops": {"sentinel_probes": {"config": {"probe_at": [old_tick.isoformat()]}}}},
    )
    metadata = result.asset_materializations_for_node("sentinel_probes")[0].metadata
    assert metadata["status"].value.startswith("superseded by the tick of")
    assert not (home / "data" / "warehouse").exists()  # nothing read, nothing written, no vendor called


# ##### THE SIMULATED WEB


def test_the_simulator_serves_and_indexes_a_sentinel_only_from_its_times(sim):
    base = sim.base_url
    published = datetime(2030, 1, 1, tzinfo=UTC)
    [page] = make_batch("sim_check-2030-q1", "b1", 1, "https://sentinels.bench.test", published)
    assert httpx.post(f"{base}/_sim/sentinels", json=page_records([page]), timeout=5).status_code == 200
    truth = next(s for s in httpx.get(f"{base}/_sim/sentinels", timeout=5).json() if s["id"] == page.id)
    indexed = datetime.fromisoformat(truth["indexed_at"]["serper"])
    assert truth["indexed_at"]["jina"] is None

    def at(when: datetime) -> tuple[int, list[str]]:
        httpx.post(f"{base}/_sim/clock", json={"now": when.isoformat()}, timeout=5)
        served = httpx.get(f"{base}/h/{page.url.split('://')[1]}", timeout=5).status_code
        found = httpx.post(
            f"{base}/h/google.serper.dev/search",
            headers={"X-API-KEY": "sim-serper-key"},
            json={"q": page.phrase},
            timeout=5,
        ).json()
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
