"""The schedules and the sensor, each evaluated on its own as the daemon evaluates it.

Each test writes a tiny warehouse directly (Warehouse.replace_rows: a few sentinel pages, probes,
dead rows, snapshot states) and evaluates one tick with `dg.build_schedule_context` /
`dg.build_sensor_context` on a persistent test instance (`dg.instance_for_test()`: the builders
refuse an ephemeral one), then reads what the tick decided: its skip reason, or its run requests
with their run keys, tags and config, or its dynamic-partition requests. No run is launched and no
server started; e2e/test_sentinels.py and e2e/test_integrity_dead_rows.py run what they request.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest
import yaml

from bench_assets.defs.golden import dead_rows_schedule
from bench_assets.defs.resources import BenchPaths, WarehouseResource
from bench_assets.defs.sentinels import probe_schedule
from bench_assets.defs.snapshots import snapshot_sensor
from bench_assets.storage.warehouse import Warehouse
from bench_assets_tests.helpers import SNAPSHOT, assets, make_home, register_partitions, resources

OTHER = "web_search-2026-q4"
T0 = datetime(2026, 7, 1, tzinfo=UTC)  # the sentinel pages' publish time


def hours(h: float) -> datetime:
    return T0 + timedelta(hours=h)


@pytest.fixture()
def instance() -> Iterator[dg.DagsterInstance]:
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("snapshots", [SNAPSHOT, OTHER])
        yield instance


def warehouse_resource(home: Path) -> WarehouseResource:
    return resources(home, "")["duckdb"]


def warehouse(home: Path) -> Warehouse:
    return warehouse_resource(home).warehouse()


# The asset each schedule's job materializes (the job resolves against them; nothing runs).
SCHEDULED_ASSETS = {
    "sentinel_probe_schedule": ("sentinel_pages", "sentinel_probes"),
    "dead_rows_schedule": ("dead_golden_rows",),
}


def evaluate(schedule: dg.ScheduleDefinition, instance: dg.DagsterInstance, at: datetime, home: Path):
    """One tick of `schedule` at `at`, as the daemon evaluates it in the code location."""
    repository = dg.Definitions(
        assets=assets(*SCHEDULED_ASSETS[schedule.name]), schedules=[schedule], resources=resources(home, "")
    ).get_repository_def()
    with dg.build_schedule_context(
        instance=instance, scheduled_execution_time=at, repository_def=repository
    ) as context:
        return schedule.evaluate_tick(context)


# ##### sentinel_probe_schedule: one run per snapshot with a probe due, every 6 hours


def publish_pages(home: Path, snapshot_id: str, published_at: datetime | None, n: int = 2) -> list[str]:
    ids = [f"s{i}" for i in range(n)]
    pages = pd.DataFrame(
        {
            "snapshot_id": snapshot_id,
            "batch_id": "b1",
            "sentinel_id": ids,
            "url": [f"https://sentinels.bench.test/{i}" for i in ids],
            "phrase": [f"phrase of {i}" for i in ids],
            "published_at": pd.Series([published_at] * n, dtype="datetime64[ns, UTC]"),
            "mode": "simulated",
        }
    )
    warehouse(home).replace_rows("sentinel_pages", pages, {"snapshot_id": snapshot_id})
    return ids


def record_probes(home: Path, snapshot_id: str, tick: datetime, found: dict[tuple[str, str], bool]) -> None:
    """Probe rows of one tick: (vendor, sentinel) -> found."""
    probes = pd.DataFrame(
        [
            {
                "snapshot_id": snapshot_id,
                "vendor": vendor,
                "sentinel_id": sentinel,
                "tick_at": tick,
                "response_class": "ok",
                "found": hit,
            }
            for (vendor, sentinel), hit in found.items()
        ]
    )
    warehouse(home).replace_rows("sentinel_probes", probes, {"snapshot_id": snapshot_id})


@pytest.fixture()
def probe_home(tmp_path) -> Path:
    """Two registered snapshots, each with two search vendors in its manifest."""
    home = make_home(tmp_path, ["exa", "serper"])
    make_home(home, ["exa", "serper"], snapshot=OTHER)
    return home


def sentinel_schedule(home: Path) -> dg.ScheduleDefinition:
    return probe_schedule(BenchPaths(root=str(home)), warehouse_resource(home))


def test_no_warehouse_yet_skips_the_tick_and_creates_nothing(probe_home, instance):
    data = evaluate(sentinel_schedule(probe_home), instance, hours(6), probe_home)
    assert data.skip_message == "no sentinel page due for a probe at 2026-07-01T06:00:00Z"
    assert not data.run_requests
    assert not (probe_home / "data" / "warehouse").exists()  # a schedule only ever reads


def test_a_tick_requests_one_run_per_due_snapshot_with_its_tick_as_key_tags_and_config(probe_home, instance):
    publish_pages(probe_home, SNAPSHOT, T0)
    publish_pages(probe_home, OTHER, None)  # written to the deploy directory, not yet online: not due
    [request] = evaluate(sentinel_schedule(probe_home), instance, hours(6), probe_home).run_requests
    assert request.run_key == f"{SNAPSHOT}@2026-07-01T06:00:00Z"
    assert request.partition_key == SNAPSHOT
    assert request.run_config["ops"]["sentinel_probes"]["config"]["probe_at"] == [hours(6).isoformat()]
    assert request.tags["bench/probe_at"] == "2026-07-01T06:00:00Z"
    assert request.tags["bench/sentinel_probe"] == SNAPSHOT
    assert request.tags["dagster/partition"] == SNAPSHOT
    assert request.tags["dagster/schedule_name"] == "sentinel_probe_schedule"


def test_each_due_snapshot_gets_its_own_run_in_snapshot_order(probe_home, instance):
    publish_pages(probe_home, OTHER, T0)
    publish_pages(probe_home, SNAPSHOT, hours(-12))
    requests = evaluate(sentinel_schedule(probe_home), instance, hours(12), probe_home).run_requests
    assert [(r.partition_key, r.run_key) for r in requests] == [
        (SNAPSHOT, f"{SNAPSHOT}@2026-07-01T12:00:00Z"),
        (OTHER, f"{OTHER}@2026-07-01T12:00:00Z"),
    ]


def test_a_page_is_probed_from_its_publish_time_for_thirty_days(probe_home, instance):
    publish_pages(probe_home, SNAPSHOT, T0)
    schedule = sentinel_schedule(probe_home)
    assert evaluate(schedule, instance, hours(-6), probe_home).skip_message  # before its publish time
    assert evaluate(schedule, instance, hours(0), probe_home).run_requests  # the tick of its publish time
    assert evaluate(schedule, instance, hours(720), probe_home).run_requests  # the last tick of its 30 days
    late = evaluate(schedule, instance, hours(726), probe_home)
    assert not late.run_requests and late.skip_message == "no sentinel page due for a probe at 2026-07-31T06:00:00Z"


def test_the_schedule_skips_once_every_vendor_found_every_page(probe_home, instance):
    ids = publish_pages(probe_home, SNAPSHOT, T0)
    schedule = sentinel_schedule(probe_home)
    # at 06:00 exa found both pages and serper one of them: serper is still due for the other
    record_probes(
        probe_home, SNAPSHOT, hours(6), {("exa", ids[0]): True, ("exa", ids[1]): True, ("serper", ids[0]): True}
    )
    assert [r.partition_key for r in evaluate(schedule, instance, hours(12), probe_home).run_requests] == [SNAPSHOT]
    # a probe that did not find the page does not count either
    record_probes(
        probe_home,
        SNAPSHOT,
        hours(6),
        {("exa", ids[0]): True, ("exa", ids[1]): True, ("serper", ids[0]): True, ("serper", ids[1]): False},
    )
    assert evaluate(schedule, instance, hours(12), probe_home).run_requests
    record_probes(probe_home, SNAPSHOT, hours(6), {(v, s): True for v in ("exa", "serper") for s in ids})
    assert evaluate(schedule, instance, hours(12), probe_home).skip_message == (
        "no sentinel page due for a probe at 2026-07-01T12:00:00Z"
    )


def test_re_evaluating_a_tick_asks_again_for_what_only_that_tick_found(probe_home, instance):
    """Probes of the tick itself do not count, so a re-run of a tick requests the same run (and its
    fetch archive answers without calling the vendor again)."""
    ids = publish_pages(probe_home, SNAPSHOT, T0)
    record_probes(probe_home, SNAPSHOT, hours(6), {(v, s): True for v in ("exa", "serper") for s in ids})
    schedule = sentinel_schedule(probe_home)
    [again] = evaluate(schedule, instance, hours(6), probe_home).run_requests
    assert again.run_key == f"{SNAPSHOT}@2026-07-01T06:00:00Z"
    assert evaluate(schedule, instance, hours(12), probe_home).skip_message


def test_a_snapshot_whose_vendors_have_no_search_endpoint_is_never_probed(tmp_path, instance):
    def extract_only(data: dict) -> None:
        data["vendors"]["exa"]["endpoints"].pop("search")

    home = make_home(tmp_path, ["exa"], edit=extract_only)
    publish_pages(home, SNAPSHOT, T0)
    assert evaluate(sentinel_schedule(home), instance, hours(6), home).skip_message


# ##### dead_rows_schedule: the daily dead-row check of every unpublished snapshot that needs it


def register(home: Path, snapshot_id: str, status: str = "draft") -> None:
    row = pd.DataFrame([{"snapshot_id": snapshot_id, "mode": "simulated", "status": status}])
    warehouse(home).replace_rows("snapshots", row, {"snapshot_id": snapshot_id})


def dead_row(home: Path, snapshot_id: str, replacement: str | None = None) -> None:
    row = pd.DataFrame(
        [
            {
                "snapshot_id": snapshot_id,
                "row_id": "finance-001-s",
                "split": "public",
                "dead_since": datetime(2026, 7, 1).date(),
                "replacement_row_id": replacement,
            }
        ]
    )
    warehouse(home).replace_rows("dead_rows", row, {"snapshot_id": snapshot_id})


def failed_verification(home: Path, snapshot_id: str) -> None:
    row = pd.DataFrame([{"snapshot_id": snapshot_id, "row_id": "news-003-s", "passed": False}])
    warehouse(home).replace_rows("golden_verifications", row, {"snapshot_id": snapshot_id})


DAY = datetime(2026, 7, 3, 6, tzinfo=UTC)  # the daily tick: 06:00 UTC


def test_the_dead_row_schedule_runs_daily_at_six_and_skips_without_a_warehouse(tmp_path, instance):
    schedule = dead_rows_schedule(warehouse_resource(tmp_path))
    assert (schedule.cron_schedule, schedule.execution_timezone) == ("0 6 * * *", "UTC")
    assert schedule.default_status == dg.DefaultScheduleStatus.RUNNING
    data = evaluate(schedule, instance, DAY, tmp_path)
    assert data.skip_message == "no snapshot awaiting a dead-row replacement on 2026-07-03"
    assert not (tmp_path / "data" / "warehouse").exists()


def test_a_dead_row_awaiting_its_replacement_requests_one_run_keyed_by_snapshot_and_day(tmp_path, instance):
    register(tmp_path, SNAPSHOT)
    dead_row(tmp_path, SNAPSHOT)
    [request] = evaluate(dead_rows_schedule(warehouse_resource(tmp_path)), instance, DAY, tmp_path).run_requests
    assert (request.run_key, request.partition_key) == (f"{SNAPSHOT}@2026-07-03", SNAPSHOT)
    assert request.tags["bench/dead_rows_check"] == "2026-07-03"
    assert request.tags["dagster/schedule_name"] == "dead_rows_schedule"
    assert request.tags["dagster/partition"] == SNAPSHOT
    assert not request.run_config  # the asset reads the day from the clock, not from config


def test_a_failed_verification_not_yet_recorded_dead_requests_a_run_too(tmp_path, instance):
    register(tmp_path, SNAPSHOT)
    failed_verification(tmp_path, SNAPSHOT)
    [request] = evaluate(dead_rows_schedule(warehouse_resource(tmp_path)), instance, DAY, tmp_path).run_requests
    assert request.partition_key == SNAPSHOT


@pytest.mark.parametrize(
    "status, replacement, why",
    [
        ("draft", "finance-007-s", "its dead row has a replacement"),
        ("published", None, "a published snapshot is immutable: errata, not replacements"),
    ],
)
def test_nothing_to_replace_or_a_published_snapshot_skips(tmp_path, instance, status, replacement, why):
    register(tmp_path, SNAPSHOT)
    dead_row(tmp_path, SNAPSHOT, replacement)
    register(tmp_path, SNAPSHOT, status)  # published after the row died (its rows are frozen then)
    data = evaluate(dead_rows_schedule(warehouse_resource(tmp_path)), instance, DAY, tmp_path)
    assert not data.run_requests, why
    assert data.skip_message == "no snapshot awaiting a dead-row replacement on 2026-07-03"


def test_only_registered_snapshot_partitions_are_launched(tmp_path):
    for snapshot_id in (SNAPSHOT, OTHER):
        register(tmp_path, snapshot_id)
        dead_row(tmp_path, snapshot_id)
    schedule = dead_rows_schedule(warehouse_resource(tmp_path))
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("snapshots", [OTHER])  # SNAPSHOT is in the warehouse only
        assert [r.partition_key for r in evaluate(schedule, instance, DAY, tmp_path).run_requests] == [OTHER]
        instance.add_dynamic_partitions("snapshots", [SNAPSHOT])
        assert [r.partition_key for r in evaluate(schedule, instance, DAY, tmp_path).run_requests] == [SNAPSHOT, OTHER]


# ##### snapshot_manifests_sensor: each new valid manifest becomes a `snapshots` partition


def sensor_tick(home: Path, instance: dg.DagsterInstance):
    return snapshot_sensor(BenchPaths(root=str(home))).evaluate_tick(dg.build_sensor_context(instance=instance))


def test_with_no_manifest_the_sensor_skips(tmp_path):
    with dg.instance_for_test() as instance:
        data = sensor_tick(tmp_path, instance)
    assert data.skip_message == "no new snapshot manifest or vendor"
    assert not data.run_requests and not data.dynamic_partitions_requests


def test_new_manifests_are_requested_together_and_registered_ones_left_alone(tmp_path):
    home = make_home(tmp_path, ["exa"])
    make_home(home, ["exa"], snapshot=OTHER)
    make_home(home, ["exa"], snapshot="web_search-2027-q1")
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("snapshots", [SNAPSHOT])
        data = sensor_tick(home, instance)
    requests = {r.partitions_def_name: list(r.partition_keys) for r in data.dynamic_partitions_requests}
    # one request per dimension; the snapshots in folder order, and the vendors the manifests configure
    assert requests == {"snapshots": [OTHER, "web_search-2027-q1"], "vendors": ["exa"]}
    assert not data.run_requests  # registering runs nothing


def test_a_manifest_whose_id_is_not_its_folder_is_reported_not_registered(tmp_path):
    home = make_home(tmp_path, ["exa"])
    path = home / "data" / "snapshots" / SNAPSHOT / "manifest.yaml"
    data = yaml.safe_load(path.read_text())
    moved = home / "data" / "snapshots" / "copied-here" / "manifest.yaml"
    moved.parent.mkdir()
    moved.write_text(yaml.safe_dump(data, sort_keys=False))  # still says snapshot_id: web_search-2026-q3
    with dg.instance_for_test() as instance:
        register_partitions(instance, [SNAPSHOT], ["exa"])
        tick = sensor_tick(home, instance)
    assert not tick.dynamic_partitions_requests
    assert tick.skip_message.startswith("no new valid snapshot manifest; not registered: ")
    assert str(moved) in tick.skip_message and "snapshot_id" in tick.skip_message
