"""Dead golden rows: marked dead with the date, replaced from the stratum's candidate pool on the
same side of the split, and a check that warns at day 5 and fails after day 7 without a replacement."""

from __future__ import annotations

import json
from datetime import date

import dagster as dg
import duckdb
import pandas as pd
import yaml

from bench_assets.golden import GoldenRow, dump_golden_rows
from bench_assets.integrity.dead_rows import dead_row_check
from bench_assets.simulator.corpus import demo_golden_rows
from bench_assets_tests.helpers import SNAPSHOT, VENDOR_STAGES, make_home, materialize, vendor_key

GOLDEN = ("snapshot_manifest", "golden_rows", "golden_verifications", "query_split")


def test_the_check_warns_from_day_5_and_fails_after_day_7():
    dead = pd.DataFrame([{"row_id": "finance-001-s", "dead_since": date(2026, 7, 1), "replacement_row_id": None}])
    day = {n: date(2026, 7, 1 + n) for n in range(10)}
    assert dead_row_check(dead, day[4]).passed
    five = dead_row_check(dead, day[5])
    assert not five.passed and five.severity == "WARN" and five.overdue == [("finance-001-s", 5)]
    assert dead_row_check(dead, day[7]).severity == "WARN"
    eight = dead_row_check(dead, day[8])
    assert not eight.passed and eight.severity == "ERROR"
    replaced = dead.assign(replacement_row_id=["finance-c001-s"])
    assert dead_row_check(replaced, day[9]).passed
    assert dead_row_check(dead.iloc[0:0], day[9]).passed


def _query(home, sql, params=()):
    con = duckdb.connect(str(home / "data" / "warehouse" / "bench.duckdb"), read_only=True)
    try:
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


def _check(result):
    (evaluation,) = result.get_asset_check_evaluations()
    return evaluation


def test_a_dead_row_is_replaced_on_its_side_of_the_split_and_the_fetch_goes_ahead(tmp_path, simulator, monkeypatch):
    rows = demo_golden_rows(rows_per_stratum=6)
    dead_id = rows[0].id  # a search row
    broken = rows[0].model_copy(update={"task": rows[0].task.model_copy(
        update={"golden_urls": ["https://investors.nowhere.test/reports/q2-2026-results"]})})
    stale = [r.model_copy(update={"id": "finance-z001-s", "task": broken.task.model_copy(
        update={"query": "a candidate whose page is gone"})}) for r in rows[:1]]

    def file_golden(data):
        data["golden"] = {"source": "file", "path": "golden/with_dead.jsonl", "rows_per_stratum": 6}
        data["decoys"] = {"source": "planted_demo"}
        data["candidates"] = {"source": "file", "path": "golden/stale_candidates.jsonl"}

    home = make_home(tmp_path, ["brave"], edit=file_golden)
    private = home / "data" / "private" / "golden"
    dump_golden_rows([broken, *rows[1:]], private / "with_dead.jsonl")
    dump_golden_rows(stale, private / "stale_candidates.jsonl")
    sim = simulator.base_url
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("snapshots", [SNAPSHOT])
        monkeypatch.setenv("BENCH_TODAY", "2026-07-01")
        golden = materialize(instance, home, sim, GOLDEN, SNAPSHOT, raise_on_error=False)
        assert [c.passed for c in golden.get_asset_check_evaluations()] == [False]
        side = dict(_query(home, "SELECT row_id, split FROM query_split"))[dead_id]

        # the only candidate does not verify: the row waits, and the clock runs
        day0 = materialize(instance, home, sim, ("dead_golden_rows",), SNAPSHOT)
        assert _check(day0).passed
        assert _query(home, "SELECT row_id, dead_since, replacement_row_id FROM dead_rows") == \
            [(dead_id, date(2026, 7, 1), None)]
        monkeypatch.setenv("BENCH_TODAY", "2026-07-06")
        day5 = _check(materialize(instance, home, sim, ("dead_golden_rows",), SNAPSHOT))
        assert not day5.passed and day5.severity == dg.AssetCheckSeverity.WARN
        monkeypatch.setenv("BENCH_TODAY", "2026-07-09")
        day8 = _check(materialize(instance, home, sim, ("dead_golden_rows",), SNAPSHOT))
        assert not day8.passed and day8.severity == dg.AssetCheckSeverity.ERROR
        fetch = materialize(instance, home, sim, VENDOR_STAGES, vendor_key("brave"), raise_on_error=False)
        assert not fetch.success  # nothing is called while a row is dead and unreplaced

        # the stratum's planted candidate pool has a verified replacement: it takes the dead row's place
        data = yaml.safe_load((home / "data" / "snapshots" / SNAPSHOT / "manifest.yaml").read_text())
        data["candidates"] = {"source": "planted_demo"}
        (home / "data" / "snapshots" / SNAPSHOT / "manifest.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
        replaced = materialize(instance, home, sim, ("dead_golden_rows",), SNAPSHOT)
        assert _check(replaced).passed
        ((row_id, since, replacement),) = _query(home, "SELECT row_id, dead_since, replacement_row_id FROM dead_rows")
        assert (row_id, since) == (dead_id, date(2026, 7, 1))
        assert replacement.startswith("finance-c") and replacement.endswith("-s")  # same stratum, same task type
        golden_ids = {r[0] for r in _query(home, "SELECT row_id FROM golden_rows")}
        assert replacement in golden_ids and dead_id not in golden_ids
        assert dict(_query(home, "SELECT row_id, split FROM query_split"))[replacement] == side
        assert _query(home, "SELECT count(*) FROM golden_verifications WHERE NOT passed") == [(0,)]
        public = {json.loads(line)["id"] for line in
                  (home / "data" / "snapshots" / SNAPSHOT / "public_split.jsonl").read_text().splitlines()}
        holdout = {GoldenRow.model_validate_json(line).id for line in
                   (home / "data" / "private" / "holdout" / f"{SNAPSHOT}.jsonl").read_text().splitlines()}
        assert replacement in (public if side == "public" else holdout) and dead_id not in public | holdout

        # the fetch goes ahead and scores the replacement, not the dead row
        materialize(instance, home, sim, VENDOR_STAGES, vendor_key("brave"))
        scored = {r[0] for r in _query(home, "SELECT row_id FROM row_scores")}
        assert replacement in scored and dead_id not in scored

        # reloading the golden file brings the dead row back; the recorded replacement is re-applied, not redrawn
        materialize(instance, home, sim, GOLDEN, SNAPSHOT, raise_on_error=False)
        materialize(instance, home, sim, ("dead_golden_rows",), SNAPSHOT)
        assert _query(home, "SELECT replacement_row_id FROM dead_rows") == [(replacement,)]
        golden_ids = {r[0] for r in _query(home, "SELECT row_id FROM golden_rows")}
        assert replacement in golden_ids and dead_id not in golden_ids
