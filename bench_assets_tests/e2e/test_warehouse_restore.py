"""A lost or corrupt central warehouse: detected, never replaced by an empty one, and restored.

One small snapshot goes through its custody chain once, through the stages that fill the tables a
restore must rebuild, each at its smallest (golden truth, two vendors, a sentinel cycle of one page
over two ticks, agent-ready trials, a vendor's reply during the review period, review packets,
publication after the review period, and an erratum as a new version). Then
`data/warehouse/bench.duckdb` is lost as a user would lose it (moved away, overwritten, replaced by
an empty file), and the operator's commands are run as the operator runs them (`bench …`):

- `bench rescore` refuses, naming the missing warehouse, the journal that says it held data, and
  the restore command, and creates nothing;
- `bench warehouse restore` rebuilds every table, row for row, from the custody journal and the
  partition archives, without calling any vendor;
- afterwards `bench rescore` finds 0 differences (the snapshot after one restore, its erratum
  version after the other), and the published snapshot still refuses every write.

That an intact warehouse's rescore finds 0 differences is test_rescore.py's and
test_snapshot_e2e.py's claim (on the session's site), not re-run here; a reply filed after
publication makes its version by the erratum's path (`errata.start_version`, `copy_rows`), whose
rows the erratum here already leaves.
"""

from __future__ import annotations

import os
import shutil
from datetime import UTC, date, datetime
from pathlib import Path
from types import SimpleNamespace

import dagster as dg
import duckdb
import httpx
import pytest
import yaml

from bench_assets.cli.main import main
from bench_assets.cli.sentinel_cycle import simulate_probe_cycle
from bench_assets.defs.resources import BenchPaths
from bench_assets.defs.review import FREEZE_CONFIG
from bench_assets.publish.errata import apply_erratum
from bench_assets.publish.replies import file_reply
from bench_assets.review.business_days import fixed_today
from bench_assets.storage.tables import TABLES
from bench_assets_tests.helpers import (
    GOLDEN_STAGES,
    RESULT_STAGES,
    SNAPSHOT,
    VENDOR_STAGES,
    make_home,
    materialize,
    register_partitions,
    resources,
    unwrapped,
    vendor_key,
    warehouse_of,
)

VENDORS = ["brave", "serper"]
# Two pages a stratum (36 rows): the keyed split holds one out and publishes the other, so every
# kind of record exists on both sides of the split (decoys and commitments go with the holdout).
ROWS_PER_STRATUM = 6
SENT, OPENS = "2026-06-26", "2026-07-13"
E1 = f"{SNAPSHOT}-e1"


def every_table(path: Path) -> dict[str, list[tuple]]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return {t: con.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall() for t in TABLES}
    finally:
        con.close()


def bench(home: Path, capsys, *argv: str) -> tuple[int, str]:
    """`bench ARGV…` in this home, as a user types it (the CLI's own entry point); exit code and output."""
    before = os.environ.get("BENCH_HOME")
    os.environ["BENCH_HOME"] = str(home)
    try:
        code = main(list(argv))
    finally:
        if before is None:
            del os.environ["BENCH_HOME"]
        else:
            os.environ["BENCH_HOME"] = before
    out = capsys.readouterr()
    return code, unwrapped(out.out + out.err)


@pytest.fixture(scope="module")
def custody(tmp_path_factory, simulator):
    """The snapshot through its whole custody chain; returns the home and every table as it stood."""
    home = make_home(tmp_path_factory.mktemp("restore"), VENDORS, rows_per_stratum=ROWS_PER_STRATUM)
    sim = simulator.base_url
    with dg.instance_for_test() as instance:
        register_partitions(instance, [SNAPSHOT], VENDORS)
        materialize(instance, home, sim, GOLDEN_STAGES, SNAPSHOT)
        for vendor in VENDORS:
            materialize(instance, home, sim, VENDOR_STAGES, vendor_key(vendor))
        # one sentinel page probed at two 6-hourly ticks (its publication and 6 h on): sentinel_pages and
        # sentinel_probes hold rows
        cycle = simulate_probe_cycle(
            SNAPSHOT, resources(home, sim), instance, published_at=datetime(2026, 6, 20, tzinfo=UTC), days=0.25, count=1
        )
        assert cycle.summary["failed_runs"] == 0 and cycle.summary["probes"] > 0, cycle.summary
        materialize(instance, home, sim, ("agent_trials", "vendor_leaderboard"), SNAPSHOT)
        paths = BenchPaths(root=str(home))

        def run(names, key):
            materialize(instance, home, sim, names, key)

        def register(snapshot):
            register_partitions(instance, [snapshot])

        # filed before publication, a reply goes with the snapshot (vendor_replies) and is published with it
        reply = home / "incoming-reply.txt"
        reply.write_text("Our plan was misread.\n")
        filed = file_reply(
            paths, warehouse_of(home), SNAPSHOT, "serper", reply, date(2026, 6, 24), lambda: (run, register)
        )
        assert not filed["new_version"]
        with fixed_today(SENT):
            materialize(instance, home, sim, ("review_packets",), SNAPSHOT, run_config=FREEZE_CONFIG)
        with fixed_today(OPENS):
            materialize(instance, home, sim, RESULT_STAGES[1:], SNAPSHOT)
        erratum = {
            "id": "E1",
            "date": "2026-07-20",
            "vendor": "brave",
            "action": "rescore",
            "what": "the price per search request was read from an outdated pricing page",
            "why": "brave's invoice",
            "who": "bench maintainers",
            "changes": {"prices_usd": {"request.search": 0.009}},
        }
        (home / "data" / "snapshots" / SNAPSHOT / "errata.yaml").write_text(yaml.safe_dump([erratum]))
        apply_erratum(paths, warehouse_of(home), SNAPSHOT, "E1", run, lambda s, v: vendor_key(v, s), register)
        yield SimpleNamespace(
            home=home,
            instance=instance,
            sim=sim,
            warehouse=home / "data" / "warehouse" / "bench.duckdb",
            tables=every_table(home / "data" / "warehouse" / "bench.duckdb"),
        )


def test_the_custody_chain_filled_every_kind_of_record(custody):
    counts = {t: len(rows) for t, rows in custody.tables.items()}
    assert counts["dead_rows"] == 0 and counts["decoy_queries"] > 0  # the demo's rows all verify
    # registry_responses fill only for a registry-sourced snapshot (the demo plants its rows)
    assert [t for t, n in counts.items() if n == 0 and t not in ("dead_rows", "registry_responses")] == []
    statuses = {r[0]: r[5] for r in custody.tables["snapshots"]}
    assert statuses[SNAPSHOT] == "published" and statuses[E1] == "published"


@pytest.mark.slow
def test_a_lost_warehouse_is_refused_then_restored_without_calling_a_vendor(custody, capsys, tmp_path):
    home, path = custody.home, custody.warehouse
    # lost as a user loses it: moved away
    shutil.move(path, tmp_path / "moved-away.duckdb")
    httpx.post(f"{custody.sim}/_sim/reset", timeout=5)
    code, out = bench(home, capsys, "rescore", SNAPSHOT)
    assert code == 1 and not path.exists()  # refused, and nothing created in its place
    assert f"the warehouse {path} is missing" in out and "custody journal" in out
    assert "bench warehouse restore" in out and "not re-created empty" in out
    # the pipeline refuses too: a published snapshot's step does not run against an empty warehouse
    result = materialize(
        custody.instance, home, custody.sim, ("vendor_responses",), vendor_key("brave"), raise_on_error=False
    )
    assert not result.success and not path.exists()

    code, out = bench(home, capsys, "warehouse", "restore")
    assert code == 0, out
    assert "changes replayed" in out and "partition archives" in out and "no vendor was called" in out
    restored = every_table(path)
    for table, rows in custody.tables.items():
        assert restored[table] == rows, table  # row for row, every column, every table

    code, out = bench(home, capsys, "rescore", SNAPSHOT)  # its erratum version: after the other restore
    assert code == 0 and "no differences" in out, out
    assert bench(home, capsys, "warehouse", "check")[0] == 0
    # a published snapshot is still immutable: refused before anything is paid
    result = materialize(
        custody.instance, home, custody.sim, ("vendor_responses",), vendor_key("brave"), raise_on_error=False
    )
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    assert "published and immutable" in failure.event_specific_data.error.message
    assert httpx.get(f"{custody.sim}/_sim/requests", timeout=5).json() == []  # no vendor called at any point

    # a healthy warehouse is never replaced
    code, out = bench(home, capsys, "warehouse", "restore")
    assert code == 1 and "nothing to restore" in out


@pytest.mark.slow
def test_a_corrupt_or_rolled_back_warehouse_is_refused_and_restored(custody, capsys):
    home, path = custody.home, custody.warehouse
    # overwritten: not a DuckDB file any more
    path.write_bytes(b"\0" * 4096 + b"not a database")
    code, out = bench(home, capsys, "rescore", SNAPSHOT)
    assert code == 1 and "cannot be read as a DuckDB database" in out and "bench warehouse restore" in out
    code, out = bench(home, capsys, "warehouse", "restore")
    assert code == 0 and "moved aside" in out, out
    aside = [p for p in path.parent.iterdir() if p.name.startswith("bench.duckdb.lost-")]
    assert aside and aside[0].read_bytes().endswith(b"not a database")  # kept, never deleted
    assert every_table(path) == custody.tables

    # replaced by an empty warehouse (what `bench rescore` used to create): behind its journal
    for name in aside:
        name.unlink()
    path.unlink()
    duckdb.connect(str(path)).close()
    code, out = bench(home, capsys, "rescore", SNAPSHOT)
    assert code == 1 and "behind its custody journal" in out
    assert bench(home, capsys, "warehouse", "restore")[0] == 0
    assert every_table(path) == custody.tables
    code, out = bench(home, capsys, "rescore", E1)  # the snapshot itself: after the other restore
    assert code == 0 and "no differences" in out, out
