"""A damaged warehouse: `bench warehouse check` and `bench warehouse restore` agree, nothing crashes.

One small snapshot is run and published, then its warehouse is damaged the ways an adversarial
run damaged it, and the operator's commands are run as the operator types them:

- 64 KiB of noise written mid-file, over a block that holds row scores: the file still opens, so
  `restore` used to call it healthy while `check` and `rescore` crashed with DuckDB's checksum
  traceback. Now `check` reports the damage (exit 1) and `rescore` refuses with the restore
  command, both without a traceback; `restore` moves the file aside and rebuilds it, after which
  `check` finds no difference and `rescore` reproduces the published snapshot.
- The warehouse and its custody journal both lost, the partition archives left: `check` said
  "restore it" and `restore` said there were no partition archives. Now both count the archives,
  and `restore` rebuilds the raw responses from them.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from bench_assets.cli.main import main
from bench_assets.storage.file_health import damage_in
from bench_assets.storage.tables import TABLES
from bench_assets_tests.helpers import SNAPSHOT, make_home, run_whole_snapshot, unwrapped

VENDORS = ["brave"]


@pytest.fixture(scope="module")
def published_home(tmp_path_factory, simulator) -> Path:
    home = make_home(tmp_path_factory.mktemp("damage"), VENDORS, rows_per_stratum=6)
    with dg.instance_for_test() as instance:
        run_whole_snapshot(instance, home, simulator.base_url, VENDORS)
    return home


@pytest.fixture()
def home(published_home, tmp_path) -> Path:
    copy = tmp_path / "home"
    shutil.copytree(published_home, copy)
    return copy


def bench(home: Path, capsys, *argv: str) -> tuple[int, str]:
    """`bench ARGV…` in this home, as a user types it; its exit code and everything it printed."""
    os.environ["BENCH_HOME"] = str(home)
    try:
        code = main(list(argv))
    finally:
        del os.environ["BENCH_HOME"]
    out = capsys.readouterr()
    return code, unwrapped(out.out + out.err)


def warehouse_file(home: Path) -> Path:
    return home / "data" / "warehouse" / "bench.duckdb"


def tables(path: Path) -> dict[str, list[tuple]]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return {t: con.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall() for t in TABLES}
    finally:
        con.close()


def noise_over_row_scores(path: Path) -> None:
    """64 KiB of noise written into a block that holds row_scores (its place read from DuckDB's own
    storage map), the rest of the file untouched."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        block_size = con.execute("SELECT block_size FROM pragma_database_size()").fetchone()[0]
        block = con.execute(
            "SELECT max(block_id) FROM pragma_storage_info('row_scores') WHERE persistent AND block_id >= 0"
        ).fetchone()[0]
    finally:
        con.close()
    with open(path, "r+b") as f:
        f.seek(3 * 4096 + block * block_size + 4096)  # past the file's three headers, inside the block
        f.write(os.urandom(64 * 1024))


def test_noise_mid_file_is_found_by_check_refused_by_rescore_and_restored(home, capsys):
    path = warehouse_file(home)
    intact = tables(path)
    noise_over_row_scores(path)
    con = duckdb.connect(str(path), read_only=True)
    try:
        assert damage_in(con, ["row_scores"]) is not None  # the noise did land on the table's data
    finally:
        con.close()

    code, out = bench(home, capsys, "warehouse", "check")
    assert code == 1 and "Traceback" not in out
    assert "is damaged" in out and "bench warehouse restore" in out
    code, out = bench(home, capsys, "rescore", SNAPSHOT)
    assert code == 1 and "Traceback" not in out
    # after the steps it began (stderr), the refusal, said once
    assert (
        ("\n" + out).count("\nbench: the warehouse") == 1 and "is damaged" in out and "bench warehouse restore" in out
    )

    code, out = bench(home, capsys, "warehouse", "restore")
    assert code == 0, out
    assert "moved aside" in out and "nothing was fetched" in out
    assert tables(path) == intact  # every table back, row for row
    assert list(path.parent.glob("bench.duckdb.lost-*"))  # the damaged file kept
    assert bench(home, capsys, "warehouse", "check")[0] == 0
    code, out = bench(home, capsys, "rescore", SNAPSHOT)
    assert code == 0, out


def test_with_warehouse_and_journal_lost_check_and_restore_both_find_the_archives(home, capsys):
    path = warehouse_file(home)
    raw = tables(path)["raw_responses"]
    path.unlink()
    shutil.rmtree(path.parent / "journal")
    archives = sorted((path.parent / "partitions").glob("*/*.duckdb"))
    assert archives

    code, out = bench(home, capsys, "warehouse", "check")
    assert code == 1 and "partition archives" in out and "bench warehouse restore" in out
    code, out = bench(home, capsys, "warehouse", "restore")
    assert code == 0, out
    assert f"raw responses: {len(raw)} from 1 partition archives" in out
    assert tables(path)["raw_responses"] == raw
    assert bench(home, capsys, "warehouse", "check")[0] == 0
