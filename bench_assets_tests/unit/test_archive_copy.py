"""A partition's archive is copied into the warehouse under a memory limit of its own
(`archive_copy_memory_limit`), so the fetch stage's peak does not grow with the warehouse; a copy
that does not fit under it is rolled back and done again under the connection's limit, so a large
warehouse is slower to fill, never left without its attempts."""

from __future__ import annotations

import duckdb
import pytest

from bench_assets.storage import warehouse as warehouse_module
from bench_assets.storage.archive import PartitionArchive
from bench_assets.storage.warehouse import Warehouse

SNAPSHOT = "web_search-2026-q3"


def _archive(tmp_path, n: int):
    archive = PartitionArchive(tmp_path / "exa.duckdb", SNAPSHOT, "exa")
    try:
        for i in range(n):
            archive.append(
                {
                    "snapshot_id": SNAPSHOT,
                    "vendor": "exa",
                    "query_id": f"q{i}",
                    "role": "public",
                    "capability": "search",
                    "attempt": 1,
                    "http_status": 200,
                    "body": '{"results": []}',
                    "final": True,
                }
            )
    finally:
        archive.close()
    return tmp_path / "exa.duckdb"


def test_the_copy_runs_under_its_own_memory_limit(tmp_path, monkeypatch):
    limits = []
    copy = Warehouse._copy_partition_archive

    def spied(self, snapshot_id, vendor, archive, memory_limit):
        limits.append(memory_limit)
        return copy(self, snapshot_id, vendor, archive, memory_limit)

    monkeypatch.setattr(Warehouse, "_copy_partition_archive", spied)
    monkeypatch.setenv("BENCH_DUCKDB_COPY_MEMORY_LIMIT", "96MB")
    wh = Warehouse(tmp_path / "wh" / "bench.duckdb")
    assert wh.load_partition_archive(SNAPSHOT, "exa", _archive(tmp_path, 7)) == 7
    assert limits == ["96MB"]
    monkeypatch.delenv("BENCH_DUCKDB_COPY_MEMORY_LIMIT")
    assert warehouse_module.archive_copy_memory_limit() == "128MB"


def test_a_copy_that_does_not_fit_is_done_again_under_the_connections_limit(tmp_path, monkeypatch):
    limits = []
    copy = Warehouse._copy_partition_archive

    def short_of_memory(self, snapshot_id, vendor, archive, memory_limit):
        limits.append(memory_limit)
        if memory_limit == "1MB":  # as DuckDB says when the key index does not fit
            with self.transaction(changes=[("raw_responses", {"snapshot_id": snapshot_id, "vendor": vendor})]) as con:
                con.execute("DELETE FROM raw_responses WHERE vendor = ?", [vendor])
                raise duckdb.OutOfMemoryException("could not allocate block")
        return copy(self, snapshot_id, vendor, archive, memory_limit)

    monkeypatch.setattr(Warehouse, "_copy_partition_archive", short_of_memory)
    monkeypatch.setenv("BENCH_DUCKDB_COPY_MEMORY_LIMIT", "1MB")
    wh = Warehouse(tmp_path / "wh" / "bench.duckdb")
    assert wh.load_partition_archive(SNAPSHOT, "exa", _archive(tmp_path, 5)) == 5
    assert limits == ["1MB", warehouse_module.duckdb_memory_limit()]
    assert wh.query_df("SELECT count(*) AS n FROM raw_responses")["n"][0] == 5


@pytest.mark.parametrize("limit", ["128MB", "512MB"])
def test_a_copy_again_of_the_same_archive_adds_nothing(tmp_path, monkeypatch, limit):
    monkeypatch.setenv("BENCH_DUCKDB_COPY_MEMORY_LIMIT", limit)
    wh = Warehouse(tmp_path / "wh" / "bench.duckdb")
    archive = _archive(tmp_path, 3)
    assert wh.load_partition_archive(SNAPSHOT, "exa", archive) == 3
    assert wh.load_partition_archive(SNAPSHOT, "exa", archive) == 3
