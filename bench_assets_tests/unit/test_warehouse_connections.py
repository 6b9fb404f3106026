"""What a query costs: the schema checked once per file state, and a session's reads and writes on
one connection, with every check the custody journal relies on still made (the end-to-end paths
are e2e/test_warehouse_damage.py, test_warehouse_restore.py and test_shared_warehouse.py)."""

from __future__ import annotations

import os
import threading
import time

import duckdb
import pandas as pd
import pytest

import bench_assets.storage.warehouse as warehouse_module
from bench_assets.errors import WarehouseLostError
from bench_assets.storage.warehouse import Warehouse


def split_rows(snapshot: str, n: int) -> pd.DataFrame:
    return pd.DataFrame(
        [{"snapshot_id": snapshot, "row_id": f"r{i}", "stratum": "docs", "split": "public"} for i in range(n)]
    )


@pytest.fixture()
def counted(monkeypatch):
    """How many database connections were opened and schemas checked in this process."""
    counts = {"connect": 0, "schema": 0}
    real_connect, real_schema = duckdb.connect, warehouse_module.ensure_schema

    def connect(*args, **kwargs):
        counts["connect"] += 1
        return real_connect(*args, **kwargs)

    def schema(*args, **kwargs):
        counts["schema"] += 1
        return real_schema(*args, **kwargs)

    monkeypatch.setattr(duckdb, "connect", connect)
    monkeypatch.setattr(warehouse_module, "ensure_schema", schema)
    return counts


def test_the_schema_is_checked_once_for_a_file_this_process_left_unchanged(tmp_path, counted):
    w = Warehouse(tmp_path / "wh" / "bench.duckdb")
    w.replace_rows("query_split", split_rows("s", 3), {"snapshot_id": "s"})
    before = counted["schema"]
    for _ in range(5):
        assert len(w.split("s")) == 3
    assert Warehouse(w.path).status("s") is None  # another object of the same file knows it too
    assert counted["schema"] == before


def test_a_file_another_process_changed_is_checked_again(tmp_path, counted):
    w = Warehouse(tmp_path / "wh" / "bench.duckdb")
    w.replace_rows("query_split", split_rows("s", 3), {"snapshot_id": "s"})
    con = duckdb.connect(str(w.path))  # another writer: an older bench dropped a table
    con.execute("DROP TABLE snapshots")
    con.close()
    before = counted["schema"]
    assert w.status("s") is None  # the table is made again, not "does not exist"
    assert counted["schema"] == before + 1


def test_an_old_backup_put_back_with_its_size_and_times_is_still_refused(tmp_path):
    w = Warehouse(tmp_path / "wh" / "bench.duckdb")
    for rows in (2, 2):  # the file reaches the size it keeps
        w.replace_rows("query_split", split_rows("s", rows), {"snapshot_id": "s"})
    backup = w.path.read_bytes()
    w.replace_rows("query_split", split_rows("s", 3), {"snapshot_id": "s"})
    assert len(w.split("s")) == 3  # this process now knows the file at #3
    stat = w.path.stat()
    w.path.write_bytes(backup)  # written in place: the same inode
    os.utime(w.path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert w.path.stat().st_size == stat.st_size  # only the headers (and the ctime) tell
    with pytest.raises(WarehouseLostError, match=r"behind its custody journal: it records changes up to #2.*up to #3"):
        w.split("s")


def test_a_session_reads_and_writes_on_one_connection_and_journals_each_commit(tmp_path, counted):
    w = Warehouse(tmp_path / "wh" / "bench.duckdb")
    w.replace_rows("query_split", split_rows("s", 1), {"snapshot_id": "s"})
    before = counted["connect"]
    with w.session():
        with w.session():  # re-entrant
            assert len(w.split("s")) == 1
        w.replace_rows("query_split", split_rows("s", 2), {"snapshot_id": "s"})
        assert w.journal.head() == 2  # final as soon as committed, not when the session ends
        assert Warehouse(w.path).split("s") == w.split("s")  # another object of the file: the same connection
        assert Warehouse(w.path).exists()  # not left waiting on the lock this thread holds
        with w.reading() as con:
            assert con is not None and con.execute("SELECT count(*) FROM query_split").fetchone() == (2,)
        with pytest.raises(RuntimeError), w.transaction(changes=[("query_split", {"snapshot_id": "s"})]) as con:
            con.execute("DELETE FROM query_split")
            raise RuntimeError("cut short")
        assert len(w.split("s")) == 2 and w.journal.head() == 2  # rolled back, nothing journaled
    assert counted["connect"] == before + 1
    assert w.journal.entries() == [1, 2]
    assert len(w.split("s")) == 2


def test_another_thread_waits_for_the_session_to_end(tmp_path):
    w = Warehouse(tmp_path / "wh" / "bench.duckdb")
    w.replace_rows("query_split", split_rows("s", 1), {"snapshot_id": "s"})
    seen: list[int] = []
    reader = threading.Thread(target=lambda: seen.append(len(Warehouse(w.path).split("s"))))
    with w.session():
        reader.start()
        time.sleep(0.3)
        assert seen == []  # the file is the session's
        w.replace_rows("query_split", split_rows("s", 4), {"snapshot_id": "s"})
    reader.join(timeout=30)
    assert seen == [4]


def test_a_damaged_file_is_reported_inside_a_session_as_outside(tmp_path, monkeypatch):
    w = Warehouse(tmp_path / "wh" / "bench.duckdb")
    w.replace_rows("query_split", split_rows("s", 1), {"snapshot_id": "s"})
    monkeypatch.setattr(warehouse_module, "is_damage", lambda exc: "no_such_table" in str(exc))
    with w.session(), pytest.raises(WarehouseLostError, match="is damaged"):
        w.query_df("SELECT * FROM no_such_table")


def test_work_forked_inside_a_session_is_refused_at_once_not_left_waiting(tmp_path):
    from bench_assets.runtime import WorkerFailed, in_processes

    w = Warehouse(tmp_path / "wh" / "bench.duckdb")
    w.replace_rows("query_split", split_rows("s", 1), {"snapshot_id": "s"})
    with w.session(), pytest.raises((RuntimeError, WorkerFailed), match="held by a session"):
        list(in_processes(["a", "b"], lambda _: len(w.split("s")), 2))
    assert list(in_processes(["a", "b"], lambda _: len(w.split("s")), 2)) == [1, 1]  # outside one: as before
