"""What a file on disk is, before DuckDB is asked to open it (`storage.file_health`)."""

from __future__ import annotations

import time

import duckdb
import pytest

from bench_assets.defs.resources import WarehouseResource
from bench_assets.errors import WarehouseLostError
from bench_assets.storage.file_health import is_foreign


def test_a_file_that_is_no_duckdb_database_is_foreign(tmp_path):
    database = tmp_path / "bench.duckdb"
    duckdb.connect(str(database)).close()
    zeros = tmp_path / "zeros.duckdb"
    zeros.write_bytes(b"\0" * 4096 + b"not a database")
    empty = tmp_path / "empty.duckdb"
    empty.touch()
    assert is_foreign(zeros)
    assert not is_foreign(database) and not is_foreign(empty) and not is_foreign(tmp_path / "missing.duckdb")


def test_the_warehouse_resource_says_at_once_that_a_file_is_no_database(tmp_path, monkeypatch):
    """DuckDBResource backs off on every IOError (about 100 s); a foreign file is opened directly."""
    path = tmp_path / "bench.duckdb"
    path.write_bytes(b"\0" * 4096 + b"not a database")
    monkeypatch.setattr(time, "sleep", lambda s: pytest.fail("backed off on a file that is no database"))
    with pytest.raises(WarehouseLostError, match="cannot be read as a DuckDB database"):
        WarehouseResource(database=str(path)).warehouse().rows("golden_rows", "s")
