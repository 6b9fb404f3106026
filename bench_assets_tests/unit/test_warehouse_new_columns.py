"""A warehouse made before a column was declared gains it, empty, and its rows read as before:
`golden_rows.published_on` came after snapshots were already stored."""

from __future__ import annotations

from datetime import date

import duckdb

from bench_assets.golden.planted import demo_golden_rows
from bench_assets.golden.store import golden_frame, load_golden_rows
from bench_assets.storage.tables import TABLES
from bench_assets.storage.warehouse import Warehouse


def test_a_golden_rows_table_without_published_on_gains_it_and_its_rows_load(tmp_path):
    path = tmp_path / "wh" / "bench.duckdb"
    path.parent.mkdir()
    rows = demo_golden_rows(rows_per_stratum=3)[:3]
    old = [c for c in TABLES["golden_rows"].columns if c.name != "published_on"]
    frame = golden_frame("web_search-2026-q3", enumerate(rows, start=1), "golden.jsonl").drop(columns="published_on")
    with duckdb.connect(str(path)) as con:  # the table as an earlier version made it
        con.execute(f"CREATE TABLE golden_rows ({', '.join(f'{c.name} {c.type}' for c in old)})")
        con.register("incoming", frame)
        con.execute(f"INSERT INTO golden_rows ({', '.join(frame.columns)}) SELECT * FROM incoming")
    warehouse = Warehouse(path, lake_url=str(tmp_path / "lake"))
    loaded = load_golden_rows(warehouse, "web_search-2026-q3")
    assert [r.id for r in loaded] == [r.id for r in rows]
    assert all(r.published_on is None for r in loaded)  # not known to the old table
    # written again now, each row keeps its date
    warehouse.replace_rows(
        "golden_rows",
        golden_frame("web_search-2026-q3", enumerate(rows, start=1), "golden.jsonl"),
        {"snapshot_id": "web_search-2026-q3"},
    )
    again = load_golden_rows(warehouse, "web_search-2026-q3")
    assert again == rows and isinstance(again[0].published_on, date)
