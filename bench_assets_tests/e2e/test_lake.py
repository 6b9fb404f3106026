"""The Parquet data path: vendor partitions as Parquet objects instead of rows in one DuckDB file.

Beyond one machine, vendor runs cannot share a DuckDB file. With `lake_url` set, each vendor
partition's raw responses, results and scores are hive-partitioned Parquet objects on an fsspec
filesystem (a local directory stands in for s3:// here; fsspec's in-memory filesystem shows the
non-local path), replaced atomically, and read through DuckDB views (unit/test_lake_storage.py
tests the lake on its own). The test that matters most materializes one snapshot both ways and
compares what is published.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import dagster as dg
import duckdb
import pandas as pd
import pytest

from bench_assets.rescore.snapshot import rescore_snapshot
from bench_assets.storage.lake import LAKE_TABLES
from bench_assets_tests.helpers import (
    GOLDEN_STAGES,
    RESULT_STAGES,
    SNAPSHOT,
    VENDOR_STAGES,
    assets,
    make_home,
    register_partitions,
    resources,
    run_whole_snapshot,
    vendor_key,
)

# The claim is about where a vendor partition is stored, not about a vendor: one of each shape of
# partition a vendor makes is enough (a search-only vendor and one that also extracts; a third
# vendor of either shape adds no new kind of object, row or view, only another partition to fetch).
VENDORS = ["brave", "exa"]


# ##### A SNAPSHOT BOTH WAYS


def lake_resources(home: Path, sim_url: str, lake_url: str) -> dict:
    return resources(home, sim_url, lake_url=lake_url)


@pytest.mark.slow
def test_a_snapshot_on_the_parquet_data_path_publishes_the_same_leaderboard(tmp_path, simulator, sim_logs):
    single = make_home(tmp_path / "single", VENDORS, rows_per_stratum=6)
    with dg.instance_for_test() as instance:
        run_whole_snapshot(instance, single, simulator.base_url, VENDORS)
    paid_once = len(sim_logs.billing())

    # The same snapshot on the Parquet data path. Its vendor archives are the first run's (as after a
    # move to new storage), so every figure, latency included, comes from the same responses.
    lake_home = make_home(tmp_path / "lake_home", VENDORS, rows_per_stratum=6)
    lake_url = str(tmp_path / "object-store" / "bench")
    shutil.copytree(single / "data" / "warehouse" / "partitions", lake_home / "data" / "warehouse" / "partitions")
    resources = lake_resources(lake_home, simulator.base_url, lake_url)
    with dg.instance_for_test() as instance:
        register_partitions(instance, [SNAPSHOT])
        for names, key in [
            (GOLDEN_STAGES, SNAPSHOT),
            *((VENDOR_STAGES, vendor_key(v)) for v in VENDORS),
            (RESULT_STAGES, SNAPSHOT),
        ]:
            assert dg.materialize(assets(*names), instance=instance, partition_key=key, resources=resources).success
    assert len(sim_logs.billing()) == paid_once  # nothing paid again

    published = {
        name: [json.loads((home / "data" / "publish" / SNAPSHOT / name).read_text()) for home in (single, lake_home)]
        for name in ("leaderboard.json",)
    }
    for v in VENDORS:
        published[f"vendors/{v}.json"] = [
            json.loads((home / "data" / "publish" / SNAPSHOT / "vendors" / f"{v}.json").read_text())
            for home in (single, lake_home)
        ]
    # the versions differ (two runs, published at different times); the lake home's fetches only re-read
    # the first run's archives, so each recorded its versions with nothing sent
    lake_versions = published["leaderboard.json"][1].pop("versions")
    published["leaderboard.json"][0].pop("versions")
    for board in published["leaderboard.json"]:  # provenance of each publication: its time and files
        board.pop("generated_at")
        board.pop("content_hash")
    assert {v: [r["responses_sent"] for r in runs] for v, runs in lake_versions["fetch"].items()} == {
        v: [0] for v in VENDORS
    }
    for name, (a, b) in published.items():
        assert a == b, name
    for name in ("leaderboard.csv", "pairwise.csv", "public_row_scores.csv"):
        assert (single / "data" / "publish" / SNAPSHOT / name).read_bytes() == (
            lake_home / "data" / "publish" / SNAPSHOT / name
        ).read_bytes(), name
    assert len([e for e in published["leaderboard.json"][0]["vendors"] if e["status"] == "scored"]) == len(VENDORS)
    # `bench rescore` re-derives every figure from the lake's objects and finds what was published
    assert rescore_snapshot(lake_home, SNAPSHOT, lake_url=lake_url).differences == []

    # every vendor partition of every fan-out table is one object; the central file holds none of them
    objects = sorted(
        str(p.relative_to(tmp_path / "object-store" / "bench"))
        for p in (tmp_path / "object-store" / "bench").rglob("*.parquet")
    )
    assert objects == sorted(
        f"{t}/snapshot_id={SNAPSHOT}/vendor={v}/part.parquet" for t in LAKE_TABLES for v in VENDORS
    )

    def counts(home: Path) -> dict[str, int]:
        con = duckdb.connect(str(home / "data" / "warehouse" / "bench.duckdb"), read_only=True)
        try:
            return {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in LAKE_TABLES}
        finally:
            con.close()

    assert counts(lake_home) == dict.fromkeys(LAKE_TABLES, 0)
    lake_view = resources["duckdb"].warehouse()
    assert {t: lake_view.query_df(f"SELECT count(*) AS n FROM {t}")["n"][0] for t in LAKE_TABLES} == counts(single)
    assert min(counts(single).values()) > 0

    # A re-run on a machine without the partition's local archive restores it from the lake: nothing is
    # paid twice, and it scores the same rows the same way. (The snapshot is a simulated draft preview,
    # so its partitions may still be re-run after the publication above.)
    scores = "SELECT * FROM row_scores ORDER BY vendor, row_id"
    before = lake_view.query_df(scores)
    shutil.rmtree(lake_home / "data" / "warehouse" / "partitions")  # the new machine has no local archive
    with dg.instance_for_test() as instance:
        register_partitions(instance, [SNAPSHOT])
        assert dg.materialize(
            assets(*VENDOR_STAGES), instance=instance, partition_key=vendor_key("exa"), resources=resources
        ).success
        meta = instance.get_latest_materialization_event(dg.AssetKey("vendor_responses")).asset_materialization.metadata
        assert meta["sent_this_run"].value == 0 and meta["reused_from_archive"].value > 0
    assert paid_once > 0 and len(sim_logs.billing()) == paid_once
    pd.testing.assert_frame_equal(before, resources["duckdb"].warehouse().query_df(scores))
