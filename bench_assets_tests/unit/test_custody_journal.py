"""The custody journal, on a local directory: what it records, how a crash between an entry and its
commit resolves, and what a restore gives back (the end-to-end path is e2e/test_warehouse_restore.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import duckdb
import pandas as pd
import pytest

from bench_assets.errors import WarehouseLostError
from bench_assets.storage.restore import WarehouseHealthy, check_warehouse, restore_warehouse
from bench_assets.storage.tables import TABLES
from bench_assets.storage.warehouse import Warehouse, committed_seq


def split_rows(snapshot: str, n: int, side: str = "public") -> pd.DataFrame:
    return pd.DataFrame(
        [{"snapshot_id": snapshot, "row_id": f"r{i}", "stratum": "docs", "split": side} for i in range(n)]
    )


def probe(tick: datetime, vendor: str = "exa", found: bool = True) -> dict:
    return {
        "snapshot_id": "s",
        "vendor": vendor,
        "sentinel_id": "p1",
        "tick_at": tick,
        "found": found,
        "billed_usd": float("nan"),
    }


def tables(path) -> dict[str, list[tuple]]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return {t: con.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall() for t in TABLES}
    finally:
        con.close()


def test_each_commit_is_one_numbered_entry_of_the_rows_it_left(tmp_path):
    w = Warehouse(tmp_path / "wh" / "bench.duckdb")
    w.replace_rows("query_split", split_rows("a", 3), {"snapshot_id": "a"})
    w.replace_rows("query_split", split_rows("b", 2, "holdout"), {"snapshot_id": "b"})
    w.replace_rows("query_split", split_rows("a", 1), {"snapshot_id": "a"})
    assert w.journal.entries() == [1, 2, 3] and w.journal.head() == 3
    last = w.journal.info(3)
    assert [(c["table"], c["where"], c["rows"]) for c in last.changes] == [("query_split", {"snapshot_id": "a"}, 1)]
    with w.connect() as con:
        assert committed_seq(con) == 3
    # raw responses have their own durable copy (the partition archives): not journaled
    w.replace_rows(
        "raw_responses",
        pd.DataFrame([{"snapshot_id": "a", "vendor": "exa", "query_id": "q", "capability": "search", "attempt": 1}]),
        {"snapshot_id": "a", "vendor": "exa"},
    )
    assert w.journal.head() == 3


def test_a_rolled_back_write_leaves_no_entry(tmp_path):
    w = Warehouse(tmp_path / "bench.duckdb")
    w.replace_rows("query_split", split_rows("a", 3), {"snapshot_id": "a"})
    with pytest.raises(RuntimeError), w.transaction(changes=[("query_split", {"snapshot_id": "a"})]) as con:
        con.execute("DELETE FROM query_split")
        raise RuntimeError("interrupted")
    assert w.journal.entries() == [1] and w.journal.pending() is None and len(w.split("a")) == 3


def test_an_entry_whose_commit_never_happened_is_written_over(tmp_path):
    w = Warehouse(tmp_path / "bench.duckdb")
    w.replace_rows("query_split", split_rows("a", 3), {"snapshot_id": "a"})
    # a crash after the entry was written and before the commit: the entry is left pending
    with w.connect() as con:
        con.execute("BEGIN TRANSACTION")
        con.execute("DELETE FROM query_split")
        w.journal.write_pending(con, 2, [("query_split", {"snapshot_id": "a"})])
        con.execute("ROLLBACK")
    assert w.journal.pending() is not None and w.journal.pending().seq == 2
    w.replace_rows("query_split", split_rows("b", 1), {"snapshot_id": "b"})  # the next write takes number 2
    assert w.journal.entries() == [1, 2] and w.journal.pending() is None
    assert [c["table"] for c in w.journal.info(2).changes] == ["query_split"]
    assert w.journal.info(2).changes[0]["where"] == {"snapshot_id": "b"}


@pytest.mark.parametrize("kept", [0, 100])  # nothing written; the zip's first bytes only (no directory)
def test_an_entry_cut_short_by_a_full_disk_is_cleared_by_the_next_write_and_restore_reads_on(tmp_path, kept):
    """Its write failed, so its transaction never committed: the leftover is no entry at all."""
    w = Warehouse(tmp_path / "bench.duckdb")
    w.replace_rows("query_split", split_rows("a", 3), {"snapshot_id": "a"})
    with w.connect() as con:
        con.execute("BEGIN TRANSACTION")
        w.journal.write_pending(con, 2, [("query_split", {"snapshot_id": "a"})])
        con.execute("ROLLBACK")
    pending = tmp_path / "journal" / "pending.zip"
    pending.write_bytes(pending.read_bytes()[:kept])
    assert w.journal.pending() is None
    report = check_warehouse(w)  # reads the journal, pending included, without a traceback
    assert report.differences == []
    w.replace_rows("query_split", split_rows("b", 1), {"snapshot_id": "b"})
    assert not pending.exists() and w.journal.entries() == [1, 2] and len(w.split("a")) == 3


def test_a_committed_entry_left_pending_by_a_crash_is_finalized_by_the_next_write(tmp_path):
    w = Warehouse(tmp_path / "bench.duckdb")
    w.replace_rows("query_split", split_rows("a", 3), {"snapshot_id": "a"})
    with w.connect() as con:  # committed, then the process died before the entry was renamed
        con.execute("BEGIN TRANSACTION")
        con.execute("DELETE FROM query_split WHERE row_id = 'r0'")
        con.execute("UPDATE bench_journal_position SET last_seq = 2")
        w.journal.write_pending(con, 2, [("query_split", {"snapshot_id": "a"})])
        con.execute("COMMIT")
    w.replace_rows("query_split", split_rows("b", 1), {"snapshot_id": "b"})
    assert w.journal.entries() == [1, 2, 3]
    assert w.journal.info(2).changes[0]["rows"] == 2


def test_restore_gives_back_every_value_nulls_nans_and_times_included(tmp_path):
    w = Warehouse(tmp_path / "bench.duckdb")
    ticks = [datetime(2026, 7, 1, h, tzinfo=UTC) for h in (0, 6)]
    w.replace_rows("query_split", split_rows("s", 4, "holdout"), {"snapshot_id": "s"})
    with w.transaction(changes=[("sentinel_probes", {"snapshot_id": "s", "tick_at": ticks})]) as con:
        con.register("incoming", pd.DataFrame([probe(ticks[0]), probe(ticks[1], found=False)]))
        con.execute(
            "INSERT INTO sentinel_probes (snapshot_id, vendor, sentinel_id, tick_at, found, billed_usd) "
            "SELECT snapshot_id, vendor, sentinel_id, tick_at, found, billed_usd FROM incoming"
        )
    w.replace_rows("query_split", split_rows("t", 2), {"snapshot_id": "t"})
    before = tables(w.path)
    with pytest.raises(WarehouseHealthy):
        restore_warehouse(w)
    w.path.unlink()
    with pytest.raises(WarehouseLostError, match="is missing, but the custody journal"):
        w.split("s")
    assert not w.path.exists()
    report = restore_warehouse(w)
    assert report.entries == 3 and tables(w.path) == before
    assert check_warehouse(w).differences == []


def test_a_warehouse_from_before_the_journal_gets_a_whole_copy_first(tmp_path):
    path = tmp_path / "bench.duckdb"
    con = duckdb.connect(str(path))  # written by an older bench: no journal
    con.execute(TABLES["query_split"].create_sql())
    con.execute("INSERT INTO query_split VALUES ('old', 'r1', 'docs', 'holdout')")
    con.close()
    w = Warehouse(path)
    assert w.split("old") == {"r1": "holdout"}
    assert w.journal.entries() == [1] and {c["table"] for c in w.journal.info(1).changes} >= {"query_split"}
    path.unlink()
    restore_warehouse(w)
    assert w.split("old") == {"r1": "holdout"}


def test_a_warehouse_behind_its_journal_is_refused_and_a_fresh_home_is_not(tmp_path):
    fresh = Warehouse(tmp_path / "fresh" / "bench.duckdb")
    assert fresh.split("s") == {}  # a new home: the warehouse is created, nothing to refuse
    w = Warehouse(tmp_path / "used" / "bench.duckdb")
    w.replace_rows("query_split", split_rows("s", 2), {"snapshot_id": "s"})
    copy = tmp_path / "old.duckdb"
    copy.write_bytes(w.path.read_bytes())
    w.replace_rows("query_split", split_rows("s", 3), {"snapshot_id": "s"})
    w.path.write_bytes(copy.read_bytes())  # an old backup put back
    with pytest.raises(WarehouseLostError, match=r"behind its custody journal: it records changes up to #1.*up to #2"):
        w.split("s")
    restore_warehouse(w)
    assert len(w.split("s")) == 3
