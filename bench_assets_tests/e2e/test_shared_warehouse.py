"""The warehouse shared by machines that share no directory: object storage (moto's S3 server, a
real S3 API on 127.0.0.1) and PostgreSQL.

Each "machine" is a Warehouse with its own local directory; they share only the S3 bucket and the
Postgres database. What one writes, the others read; concurrent writers from several processes
lose nothing (they take turns); the custody journal lives in the bucket; the archive of a fetch
in progress reaches another machine; a lost version is refused and restored.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import shutil

import pandas as pd
import pytest
from dagster._core.instance.config import dagster_instance_config

from bench_assets.errors import WarehouseLostError
from bench_assets.runtime import ForkedJob, in_processes
from bench_assets.storage.archive import PartitionArchive
from bench_assets.storage.restore import restore_warehouse
from bench_assets.storage.warehouse import Warehouse
from bench_assets_tests.distributed_services import s3_server
from bench_assets_tests.helpers import REPO

SNAPSHOT = "web_search-2026-q3"


@pytest.fixture(scope="module")
def shared(tmp_path_factory, postgres):
    workdir = tmp_path_factory.mktemp("shared")
    with s3_server(workdir / "s3") as store, postgres.database() as database:
        yield store, postgres.url(database), workdir, store.env


def machine(shared, name: str) -> Warehouse:
    store, lock_url, workdir, env = shared
    os.environ.update(env)  # this process reaches the bucket as every machine does
    return Warehouse(
        workdir / name / "data" / "warehouse" / "bench.duckdb",
        lake_url=store.url("lake"),
        shared_url=store.url("warehouse"),
        lock_url=lock_url,
    )


def split_rows(snapshot: str, n: int, side: str = "public") -> pd.DataFrame:
    return pd.DataFrame(
        [{"snapshot_id": snapshot, "row_id": f"r{i:03d}", "stratum": "finance", "split": side} for i in range(n)]
    )


def test_what_one_machine_writes_every_other_reads(shared):
    a, b = machine(shared, "a"), machine(shared, "b")
    a.replace_rows("query_split", split_rows("s-one", 3), {"snapshot_id": "s-one"})
    assert b.split("s-one") == {"r000": "public", "r001": "public", "r002": "public"}
    b.replace_rows("query_split", split_rows("s-one", 2, "holdout"), {"snapshot_id": "s-one"})
    assert a.split("s-one") == {"r000": "holdout", "r001": "holdout"}
    # no filesystem shared: each machine has its own copy, the truth is in the bucket and Postgres
    assert a.path.parent != b.path.parent and a.path.exists() and b.path.exists()
    store = shared[0]
    fs = store.filesystem()
    assert fs.ls(f"{store.bucket}/warehouse/generations")  # versions of the central file
    assert len(fs.ls(f"{store.bucket}/warehouse/journal/entries")) >= 2  # the custody journal, in the bucket
    current = a.shared.current()
    assert current is not None and current.number >= 2


def test_the_runtimes_forked_children_read_a_shared_warehouse(shared):
    """Publication and rescore share work out to forked children (`bench_assets.runtime`); each reads
    the warehouse from the bucket with filesystems and a connection of its own (one opened from a
    fork hook waited forever on the parent's event loop: `bench rescore` hung on a Celery deployment)."""
    warehouse = machine(shared, "forking")
    warehouse.replace_rows("query_split", split_rows("s-fork", 4), {"snapshot_id": "s-fork"})
    read = list(in_processes(["s-fork", "s-fork", "s-fork"], lambda s: sorted(warehouse.split(s)), 2))
    assert read == [["r000", "r001", "r002", "r003"]] * 3
    assert ForkedJob(lambda: len(warehouse.split("s-fork"))).result() == 4


def _write_many(shared, name: str, count: int) -> None:
    warehouse = machine(shared, name)
    for i in range(count):
        snapshot = f"s-{name}-{i}"
        warehouse.replace_rows("query_split", split_rows(snapshot, 2), {"snapshot_id": snapshot})


def test_concurrent_writers_on_different_machines_lose_nothing(shared):
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_write_many, args=(shared, f"writer{i}", 8)) for i in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    assert all(p.exitcode == 0 for p in procs)
    reader = machine(shared, "reader")
    df = reader.query_df(
        "SELECT snapshot_id, count(*) AS n FROM query_split WHERE snapshot_id LIKE 's-writer%' GROUP BY 1"
    )
    assert len(df) == 3 * 8 and set(df["n"]) == {2}  # every machine's every write, none lost


def test_a_fetch_archived_on_one_machine_resumes_on_another(shared):
    a, b = machine(shared, "fetch-a"), machine(shared, "fetch-b")
    lake = a.lake
    assert lake is not None
    archive = PartitionArchive(
        a.partition_file(SNAPSHOT, "exa"),
        SNAPSHOT,
        "exa",
        also_to=lambda rows: lake.write_archive_segment(SNAPSHOT, "exa", rows),
    )
    try:
        for i in range(5):
            archive.append(
                {
                    "snapshot_id": SNAPSHOT,
                    "vendor": "exa",
                    "query_id": f"q{i}",
                    "role": "public",
                    "capability": "search",
                    "attempt": 1,
                    "http_status": 200,
                    "body": "{}",
                    "final": True,
                }
            )
    finally:
        archive.close()
    # machine a is gone; machine b has no local archive, and rebuilds it from the bucket
    resumed = PartitionArchive(b.partition_file(SNAPSHOT, "exa"), SNAPSHOT, "exa")
    try:
        assert resumed.settled() == {(f"q{i}", "search") for i in range(5)}
    finally:
        resumed.close()


def test_a_lost_version_is_refused_and_restored_from_the_journal(shared):
    store = shared[0]
    writer = machine(shared, "before-loss")
    writer.replace_rows("query_split", split_rows("s-kept", 4, "holdout"), {"snapshot_id": "s-kept"})
    before = writer.query_df("SELECT * FROM query_split ORDER BY ALL")
    fs = store.filesystem()
    for path in fs.ls(f"{store.bucket}/warehouse/generations"):
        fs.rm(path)  # the object store lost the warehouse
    newcomer = machine(shared, "after-loss")
    with pytest.raises(WarehouseLostError, match="is lost: its current version") as lost:
        newcomer.split("s-kept")
    assert store.bucket in str(lost.value) and "bench warehouse restore" in str(lost.value)
    report = restore_warehouse(newcomer)
    assert report.entries >= 1 and report.lake == store.url("lake")
    for m in (newcomer, machine(shared, "third")):
        pd.testing.assert_frame_equal(m.query_df("SELECT * FROM query_split ORDER BY ALL"), before)


def test_the_deploy_configuration_for_celery_validates(tmp_path, monkeypatch):
    for key, value in {"DAGSTER_PG_HOST": "h", "DAGSTER_PG_USER": "u", "DAGSTER_PG_PASSWORD": "p"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("DAGSTER_PG_DB", "bench")
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    shutil.copy(REPO / "deploy" / "dagster-celery.yaml", tmp_path / "dagster.yaml")
    config, _ = dagster_instance_config(str(tmp_path))
    assert "postgres" in config["storage"] and config["local_artifact_storage"]["config"]["base_dir"] == {
        "env": "DAGSTER_HOME"
    }
