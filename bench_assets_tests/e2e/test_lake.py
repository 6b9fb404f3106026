"""The Parquet data path: vendor partitions as Parquet objects instead of rows in one DuckDB file.

Beyond one machine, vendor runs cannot share a DuckDB file. With `lake_url` set, each vendor
partition's raw responses, results and scores are hive-partitioned Parquet objects on an fsspec
filesystem (a local directory stands in for s3:// here; fsspec's in-memory filesystem shows the
non-local path), replaced atomically, and read through DuckDB views. The test that matters most
materializes one snapshot both ways and compares what is published.
"""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

import dagster as dg
import duckdb
import pandas as pd
import pytest

from bench_assets.rescore.snapshot import rescore_snapshot
from bench_assets.storage.lake import LAKE_TABLES, LakeLayoutError, ParquetLake, table_columns
from bench_assets.storage.warehouse import SnapshotImmutableError, Warehouse
from bench_assets_tests.helpers import (
    GOLDEN_STAGES,
    RESULT_STAGES,
    SNAPSHOT,
    VENDOR_STAGES,
    assets,
    make_home,
    resources,
    run_whole_snapshot,
    vendor_key,
)

VENDORS = ["brave", "exa", "tavily"]


def score_row(vendor: str, row_id: str, snapshot: str = "s1", **extra) -> dict:
    return {
        "snapshot_id": snapshot,
        "vendor": vendor,
        "row_id": row_id,
        "split": "public",
        "stratum": "news",
        "task_type": "search",
        "response_class": "ok",
        "hit_at_1": True,
        "fidelity": 0.5,
        **extra,
    }


def lake_files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


# ##### UNIT: LAYOUT, ATOMIC REPLACEMENT, VIEWS


def test_partitions_are_hive_objects_read_back_through_views(tmp_path):
    warehouse = Warehouse(tmp_path / "wh" / "bench.duckdb", lake_url=str(tmp_path / "lake"))
    warehouse.replace_rows(
        "row_scores",
        pd.DataFrame([score_row("exa", "r1"), score_row("exa", "r2")]),
        {"snapshot_id": "s1", "vendor": "exa"},
    )
    warehouse.replace_rows(
        "row_scores", pd.DataFrame([score_row("brave", "r1", hit_at_1=False)]), {"snapshot_id": "s1", "vendor": "brave"}
    )
    assert lake_files(tmp_path / "lake") == [
        "row_scores/snapshot_id=s1/vendor=brave/part.parquet",
        "row_scores/snapshot_id=s1/vendor=exa/part.parquet",
    ]
    df = warehouse.query_df("SELECT * FROM row_scores ORDER BY vendor, row_id")
    assert list(df.columns) == table_columns("row_scores")  # the table's own columns, in order
    assert list(zip(df["vendor"], df["row_id"], df["hit_at_1"])) == [
        ("brave", "r1", False),
        ("exa", "r1", True),
        ("exa", "r2", True),
    ]
    # typed by the table definition, whatever the frame carried
    types = dict(warehouse.query_df("SELECT column_name, column_type FROM (DESCRIBE row_scores)").values)
    assert types["fidelity"] == "DOUBLE" and types["first_hit_rank"] == "INTEGER" and types["hit_at_1"] == "BOOLEAN"
    # the central file holds none of it
    con = duckdb.connect(str(warehouse.path), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM row_scores").fetchone()[0] == 0
    finally:
        con.close()
    # an empty table of the lake is an empty, typed table
    assert warehouse.query_df("SELECT count(*) AS n FROM raw_responses")["n"][0] == 0
    # the object itself leaves the partition columns to its path
    parquet = pd.read_parquet(tmp_path / "lake" / "row_scores" / "snapshot_id=s1" / "vendor=exa" / "part.parquet")
    assert "vendor" not in parquet.columns and len(parquet) == 2


def test_replacing_a_partition_is_atomic_and_touches_no_other(tmp_path):
    lake_dir = tmp_path / "lake"
    warehouse = Warehouse(tmp_path / "wh" / "bench.duckdb", lake_url=str(lake_dir))
    where = {"snapshot_id": "s1", "vendor": "exa"}
    warehouse.replace_rows("row_scores", pd.DataFrame([score_row("exa", "r1"), score_row("exa", "r2")]), where)
    warehouse.replace_rows(
        "row_scores", pd.DataFrame([score_row("brave", "r1")]), {"snapshot_id": "s1", "vendor": "brave"}
    )
    brave_before = (lake_dir / "row_scores" / "snapshot_id=s1" / "vendor=brave" / "part.parquet").read_bytes()
    warehouse.replace_rows("row_scores", pd.DataFrame([score_row("exa", "r3")]), where)
    assert list(warehouse.query_df("SELECT row_id FROM row_scores WHERE vendor = 'exa'")["row_id"]) == ["r3"]
    # a write that fails half-way (a duplicate primary key) leaves the old object whole, and no temporary file
    with pytest.raises(duckdb.ConstraintException):
        warehouse.replace_rows("row_scores", pd.DataFrame([score_row("exa", "r4"), score_row("exa", "r4")]), where)
    assert list(warehouse.query_df("SELECT row_id FROM row_scores WHERE vendor = 'exa'")["row_id"]) == ["r3"]
    assert all(not name.split("/")[-1].startswith(".") for name in lake_files(lake_dir)), lake_files(lake_dir)
    assert (lake_dir / "row_scores" / "snapshot_id=s1" / "vendor=brave" / "part.parquet").read_bytes() == brave_before
    # no rows: the partition is gone
    warehouse.replace_rows("row_scores", pd.DataFrame(), where)
    assert lake_files(lake_dir) == ["row_scores/snapshot_id=s1/vendor=brave/part.parquet"]


def test_writes_the_lake_cannot_store_are_refused(tmp_path):
    warehouse = Warehouse(tmp_path / "wh" / "bench.duckdb", lake_url=str(tmp_path / "lake"))
    with pytest.raises(LakeLayoutError, match="whole vendor partitions"):
        warehouse.replace_rows("row_scores", pd.DataFrame([score_row("exa", "r1")]), {"snapshot_id": "s1"})
    with pytest.raises(LakeLayoutError, match="other vendor values"):
        warehouse.replace_rows(
            "row_scores", pd.DataFrame([score_row("brave", "r1")]), {"snapshot_id": "s1", "vendor": "exa"}
        )
    with pytest.raises(LakeLayoutError, match="cannot name a hive partition"):
        warehouse.replace_rows("row_scores", pd.DataFrame(), {"snapshot_id": "s1", "vendor": "a/b"})
    # a published snapshot's partitions are as immutable in the lake as in the file
    warehouse.replace_rows(
        "snapshots", pd.DataFrame([{"snapshot_id": "s1", "status": "published"}]), {"snapshot_id": "s1"}
    )
    with pytest.raises(SnapshotImmutableError):
        warehouse.replace_rows(
            "row_scores", pd.DataFrame([score_row("exa", "r1")]), {"snapshot_id": "s1", "vendor": "exa"}
        )
    assert lake_files(tmp_path / "lake") == []


def test_a_non_local_fsspec_filesystem_works_the_same(tmp_path):
    """fsspec's in-memory filesystem stands for an object store: objects are uploaded, renamed,
    and read by DuckDB through the registered filesystem."""
    import fsspec

    url = f"memory://bench-lake-{uuid.uuid4().hex[:8]}"
    warehouse = Warehouse(tmp_path / "wh" / "bench.duckdb", lake_url=url)
    assert not warehouse.lake.local
    try:
        for vendor in ("brave", "exa"):
            warehouse.replace_rows(
                "row_scores",
                pd.DataFrame([score_row(vendor, "r1"), score_row(vendor, "r2")]),
                {"snapshot_id": "s1", "vendor": vendor},
            )
        fs = fsspec.filesystem("memory")
        assert sorted(p.split(url.removeprefix("memory://"))[1] for p in fs.find(url)) == [
            "/row_scores/snapshot_id=s1/vendor=brave/part.parquet",
            "/row_scores/snapshot_id=s1/vendor=exa/part.parquet",
        ]
        counts = warehouse.query_df("SELECT vendor, count(*) AS n FROM row_scores GROUP BY 1 ORDER BY 1")
        assert list(zip(counts["vendor"], counts["n"])) == [("brave", 2), ("exa", 2)]
        assert len(warehouse.lake.read_partition("row_scores", "s1", "exa")) == 2
    finally:
        fsspec.filesystem("memory").rm(url, recursive=True)


def test_a_missing_local_archive_is_restored_from_the_lake(tmp_path):
    lake = ParquetLake(str(tmp_path / "lake"))
    raw = pd.DataFrame(
        [
            {
                "snapshot_id": "s1",
                "vendor": "exa",
                "query_id": "q1",
                "role": "public",
                "capability": "search",
                "attempt": 1,
                "http_status": 200,
                "body": "{}",
                "final": True,
            }
        ]
    )
    lake.write_partition("raw_responses", raw, "s1", "exa")
    # another machine: its own central file and partitions directory, the same lake
    warehouse = Warehouse(tmp_path / "elsewhere" / "bench.duckdb", lake_url=str(tmp_path / "lake"))
    archive = warehouse.partition_file("s1", "exa")
    con = duckdb.connect(str(archive), read_only=True)
    try:
        assert con.execute("SELECT query_id, final FROM raw_responses").fetchall() == [("q1", True)]
    finally:
        con.close()
    assert not warehouse.partition_file("s1", "brave").exists()  # nothing in the lake, nothing restored


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
        instance.add_dynamic_partitions("snapshots", [SNAPSHOT])
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


@pytest.mark.slow
def test_a_vendor_partition_re_run_on_a_fresh_machine_reuses_the_lake(tmp_path, simulator, sim_logs):
    """A re-run on a machine without the partition's local archive restores it from the lake: nothing is paid twice."""
    home = make_home(tmp_path / "home", ["exa"], rows_per_stratum=6)
    resources = lake_resources(home, simulator.base_url, str(tmp_path / "lake"))
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("snapshots", [SNAPSHOT])
        assert dg.materialize(
            assets(*GOLDEN_STAGES), instance=instance, partition_key=SNAPSHOT, resources=resources
        ).success
        assert dg.materialize(
            assets(*VENDOR_STAGES), instance=instance, partition_key=vendor_key("exa"), resources=resources
        ).success
        paid = len(sim_logs.billing())
        assert paid > 0
        before = resources["duckdb"].warehouse().query_df("SELECT * FROM row_scores ORDER BY row_id")
        shutil.rmtree(home / "data" / "warehouse" / "partitions")  # the new machine has no local archive
        assert dg.materialize(
            assets(*VENDOR_STAGES), instance=instance, partition_key=vendor_key("exa"), resources=resources
        ).success
        meta = instance.get_latest_materialization_event(dg.AssetKey("vendor_responses")).asset_materialization.metadata
        assert meta["sent_this_run"].value == 0 and meta["reused_from_archive"].value > 0
    assert len(sim_logs.billing()) == paid
    after = resources["duckdb"].warehouse().query_df("SELECT * FROM row_scores ORDER BY row_id")
    pd.testing.assert_frame_equal(before, after)
