"""The Parquet lake on its own: hive-partitioned objects, atomic replacement, views, refused writes
and restores (no Dagster run; the pipeline both ways is e2e/test_lake.py)."""

from __future__ import annotations

import uuid
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from bench_assets.storage.lake import LakeLayoutError, ParquetLake, table_columns
from bench_assets.storage.warehouse import SnapshotImmutableError, Warehouse


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
