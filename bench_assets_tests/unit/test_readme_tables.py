"""The warehouse's table reference (docs/warehouse.md) is generated from the table declarations, so
it cannot drift from the DDL the warehouse runs: a declaration changed without regenerating it fails here."""

from __future__ import annotations

import subprocess
import sys

from bench_assets.storage.tables import TABLES, table_docs
from bench_assets_tests.helpers import REPO


def test_the_docs_document_every_table_as_declared():
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "readme_tables.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    docs = table_docs()
    for name, table in TABLES.items():
        assert f"`{name}`" in docs and table.grain in docs
        assert all(column.name in docs for column in table.columns)


def test_the_ddl_comes_from_the_declaration():
    table = TABLES["row_scores"]
    assert table.create_sql().startswith("CREATE TABLE IF NOT EXISTS row_scores (snapshot_id VARCHAR")
    assert "PRIMARY KEY (snapshot_id, vendor, row_id)" in table.ddl()
