"""The code location's asset graph, held to a committed snapshot (unit/snapshots/asset_graph.json).

Every asset of `bench_assets.definitions.defs()` with its group, partitions, upstream assets (and
how their partitions map), kinds, tags, whether it has a code version, and checks; every job with its assets and partitions;
every schedule and sensor. A change to any of them fails this test with a line diff of the
snapshot, so a change to the graph is a decision that shows in review, never a side effect.

After an intended change, rewrite the snapshot and commit it with the change:

    BENCH_UPDATE_GRAPH_SNAPSHOT=1 pytest bench_assets_tests/unit/test_asset_graph.py
"""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path

import dagster as dg
import pytest

from bench_assets.definitions import defs

SNAPSHOT = Path(__file__).parent / "snapshots" / "asset_graph.json"
UPDATE = "BENCH_UPDATE_GRAPH_SNAPSHOT"


def partitions(definition: dg.PartitionsDefinition | None) -> object:
    if definition is None:
        return None
    if isinstance(definition, dg.DynamicPartitionsDefinition):
        return {"dynamic": definition.name}
    if isinstance(definition, dg.StaticPartitionsDefinition):
        return {"static": definition.get_partition_keys()}
    if isinstance(definition, dg.MultiPartitionsDefinition):
        return {"multi": {d.name: partitions(d.partitions_def) for d in definition.partitions_defs}}
    return {type(definition).__name__: str(definition)}


def partition_mapping(mapping: dg.PartitionMapping) -> str:
    dimension = getattr(mapping, "partition_dimension_name", None)
    return type(mapping).__name__ + (f"({dimension})" if dimension else "")


def graph_of(location: dg.Definitions) -> dict:
    """What the code location declares, as plain JSON (sorted, so the snapshot diffs line by line)."""
    graph = location.resolve_asset_graph()
    assets = {}
    for spec in location.resolve_all_asset_specs():
        node = graph.get(spec.key)
        assets[spec.key.to_user_string()] = {
            "group": spec.group_name,
            "partitions": partitions(spec.partitions_def),
            "deps": {
                parent.to_user_string(): partition_mapping(graph.get_partition_mapping(spec.key, parent))
                for parent in sorted(node.parent_keys)
            },
            "kinds": sorted(spec.kinds),
            "tags": {k: v for k, v in sorted(spec.tags.items()) if not k.startswith("dagster/kind/")},
            # a digest of the code behind the figures (defs/code_versions.py): whether there is one, not its value
            "code_version": "logic digest" if spec.code_version else None,
            "checks": {
                check.name: {"blocking": graph.get_check_spec(check).blocking}
                for check in sorted(graph.get_check_keys_for_assets({spec.key}), key=lambda c: c.name)
            },
        }
    repository = location.get_repository_def()
    jobs = {
        job.name: {
            "assets": sorted(k.to_user_string() for k in job.asset_layer.selected_asset_keys),
            "partitions": partitions(job.partitions_def),
        }
        for job in location.resolve_all_job_defs()
        if not job.name.startswith("__")  # Dagster's implicit job of every asset
    }
    schedules = {
        s.name: {
            "cron": s.cron_schedule,
            "timezone": s.execution_timezone,
            "job": s.job_name,
            "default_status": s.default_status.value,
        }
        for s in repository.schedule_defs
    }
    sensors = {
        s.name: {
            "jobs": sorted(t.job_name for t in s.targets),
            "default_status": s.default_status.value,
            "minimum_interval_seconds": s.minimum_interval_seconds,
        }
        for s in repository.sensor_defs
    }
    return {
        "assets": dict(sorted(assets.items())),
        "jobs": dict(sorted(jobs.items())),
        "schedules": dict(sorted(schedules.items())),
        "sensors": dict(sorted(sensors.items())),
    }


def as_text(graph: dict) -> str:
    return json.dumps(graph, indent=2, sort_keys=False) + "\n"


def snapshot_diff(committed: str, current: str) -> str:
    return "".join(
        difflib.unified_diff(
            committed.splitlines(keepends=True),
            current.splitlines(keepends=True),
            fromfile=f"{SNAPSHOT.name} (committed)",
            tofile=f"{SNAPSHOT.name} (defs() now)",
        )
    )


def test_the_asset_graph_matches_its_committed_snapshot():
    current = as_text(graph_of(defs()))
    if os.environ.get(UPDATE):
        SNAPSHOT.parent.mkdir(exist_ok=True)
        SNAPSHOT.write_text(current)
    diff = snapshot_diff(SNAPSHOT.read_text() if SNAPSHOT.exists() else "", current)
    if diff:
        pytest.fail(
            f"the asset graph differs from {SNAPSHOT}; if the change is intended, rewrite the snapshot "
            f"with {UPDATE}=1 and commit it:\n{diff}",
            pytrace=False,
        )


@dg.asset(group_name="results", deps=["vendor_leaderboard"], kinds={"json"}, tags={"bench/stage": "publish"})
def extra_chart() -> None:
    """An asset the location does not have."""


def test_a_changed_graph_fails_with_a_diff_that_names_what_changed():
    """The comparison is not vacuous: an added asset, with its group, upstream and kind, shows in the diff."""
    before = as_text(graph_of(defs()))
    after = as_text(graph_of(dg.Definitions.merge(defs(), dg.Definitions(assets=[extra_chart]))))
    added = [line[1:].strip() for line in snapshot_diff(before, after).splitlines() if line.startswith("+ ")]
    assert '"extra_chart": {' in added and '"group": "results",' in added and '"partitions": null,' in added
    assert any(line.startswith('"vendor_leaderboard": "') for line in added)  # its upstream, with the mapping
    assert '"json"' in added and '"bench/stage": "publish"' in added
    assert not [
        line for line in snapshot_diff(before, after).splitlines() if line.startswith("- ")
    ]  # nothing else moved
