"""Registering snapshots: the sensor turns each new valid manifest into a `snapshots` partition, and
each vendor a manifest configures into a `vendors` partition."""

from __future__ import annotations

import shutil

import dagster as dg
import yaml

from bench_assets.definitions import defs as location_defs
from bench_assets.defs.resources import BenchPaths
from bench_assets.defs.snapshots import snapshot_sensor
from bench_assets_tests.helpers import REPO, SNAPSHOT, make_home

NEXT = "web_search-2026-q4"


def tick(sensor: dg.SensorDefinition, instance: dg.DagsterInstance):
    data = sensor.evaluate_tick(dg.build_sensor_context(instance=instance))
    for request in data.dynamic_partitions_requests or []:  # what the daemon does with the result
        instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
    return data


def test_the_sensor_runs_by_default_and_launches_nothing():
    sensor = location_defs().resolve_sensor_def("snapshot_manifests_sensor")
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING
    assert not sensor.targets  # registering a snapshot runs nothing


def test_a_new_valid_manifest_is_registered_once_and_a_bad_one_when_fixed(tmp_path):
    home = make_home(tmp_path, ["exa"])
    make_home(home, ["exa"], snapshot=NEXT)
    bad = home / "data" / "snapshots" / NEXT / "manifest.yaml"
    good_text = bad.read_text()
    data = yaml.safe_load(good_text)
    data["vendors"]["exa"]["adapter"] = "exaa"
    bad.write_text(yaml.safe_dump(data, sort_keys=False))
    sensor = snapshot_sensor(BenchPaths(root=str(home)))
    with dg.instance_for_test() as instance:
        first = tick(sensor, instance)
        requests = {r.partitions_def_name: list(r.partition_keys) for r in first.dynamic_partitions_requests}
        assert requests == {"snapshots": [SNAPSHOT], "vendors": ["exa"]}  # the vendors its manifest configures
        assert not first.run_requests
        assert instance.get_dynamic_partitions("snapshots") == [SNAPSHOT]

        # nothing new: the tick skips, and says which manifest it could not register and why
        second = tick(sensor, instance)
        assert not second.dynamic_partitions_requests
        assert f"{bad}:" in second.skip_message and "vendors.exa.adapter" in second.skip_message
        assert "no adapter named 'exaa'" in second.skip_message

        bad.write_text(good_text)  # fixed: registered at the next tick
        third = tick(sensor, instance)
        assert [list(r.partition_keys) for r in third.dynamic_partitions_requests] == [[NEXT]]
        assert sorted(instance.get_dynamic_partitions("snapshots")) == [SNAPSHOT, NEXT]
        assert tick(sensor, instance).skip_message == "no new snapshot manifest or vendor"

        # a vendor added to a registered snapshot's manifest becomes a partition at the next tick
        make_home(home, ["exa", "brave"])
        fourth = tick(sensor, instance)
        assert [(r.partitions_def_name, list(r.partition_keys)) for r in fourth.dynamic_partitions_requests] == [
            ("vendors", ["brave"])
        ]
        assert sorted(instance.get_dynamic_partitions("vendors")) == ["brave", "exa"]


def test_a_live_manifest_is_left_to_bench_snapshot_add(tmp_path):
    """The repository ships a live manifest beside the demo's: the sensor registering it put a
    second partition on every asset after the demo ("1 of 2 partitions"), and any backfill of all
    partitions would try to pay for it. Only the operator registers a live snapshot."""
    home = make_home(tmp_path, ["exa"])
    live = "registry_search-2026-q4"
    shutil.copytree(REPO / "data" / "snapshots" / live, home / "data" / "snapshots" / live)
    sensor = snapshot_sensor(BenchPaths(root=str(home)))
    with dg.instance_for_test() as instance:
        first = tick(sensor, instance)
        requests = {r.partitions_def_name: list(r.partition_keys) for r in first.dynamic_partitions_requests}
        assert requests == {"snapshots": [SNAPSHOT], "vendors": ["exa"]}  # not the live manifest's vendors
        second = tick(sensor, instance)
        assert (
            second.skip_message
            == f"no new snapshot manifest or vendor; live, registered by `bench snapshot add` only: {live}"
        )
        assert instance.get_dynamic_partitions("snapshots") == [SNAPSHOT]
