"""The holdout never reaches Dagster's event storage: it lives in the private store and DuckDB
only. A failed verification and a dead row show public rows by id with their failures, and
holdout rows only as counts per stratum; before the split exists, no row is named at all."""

from __future__ import annotations

from itertools import combinations

import dagster as dg

from bench_assets.golden.planted import demo_golden_rows
from bench_assets.golden.rows import dump_golden_rows
from bench_assets.review.business_days import fixed_today
from bench_assets.split.assign import DEMO_SPLIT_KEY, assign_split
from bench_assets_tests.helpers import (
    SNAPSHOT,
    check_evaluations,
    make_home,
    materialize,
    register_partitions,
    warehouse_rows,
)


def _broken(row):
    return row.model_copy(
        update={
            "task": row.task.model_copy(update={"golden_urls": [f"https://gone.nowhere.test/reports/{row.id}-page"]})
        }
    )


def _event_log_text(instance, run_id: str) -> str:
    """Everything one run wrote to event storage: every event, its metadata and messages, serialized."""
    return "\n".join(dg.serialize_value(entry) for entry in instance.all_logs(run_id))


def test_failed_and_dead_holdout_rows_are_only_counted_in_dagsters_event_log(tmp_path, simulator):
    rows = demo_golden_rows(rows_per_stratum=6)
    key = DEMO_SPLIT_KEY.encode()
    searches = [r for r in rows if r.task_type == "search"]
    for a, b in combinations(searches, 2):  # two broken rows that fall on different sides of the split
        golden = [_broken(r) if r.id in (a.id, b.id) else r for r in rows]
        split = assign_split(golden, key)
        if {split[a.id], split[b.id]} == {"public", "holdout"}:
            break
    public_row, holdout_row = (_broken(r) for r in sorted((a, b), key=lambda r: split[r.id] != "public"))
    stale = [_broken(rows[0]).model_copy(update={"id": "finance-z001-s"})]  # a candidate whose page is gone too

    def file_golden(data):
        data["golden"] = {"source": "file", "path": "golden/two_dead.jsonl", "rows_per_stratum": 6}
        data["decoys"] = {"source": "planted_demo"}
        data["candidates"] = {"source": "file", "path": "golden/stale.jsonl"}

    home = make_home(tmp_path, ["brave"], edit=file_golden)
    dump_golden_rows(golden, home / "data" / "private" / "golden" / "two_dead.jsonl")
    dump_golden_rows(stale, home / "data" / "private" / "golden" / "stale.jsonl")
    sim = simulator.base_url
    secrets = {
        "holdout id": holdout_row.id,
        "holdout url": holdout_row.task.golden_urls[0],
        "holdout query": holdout_row.request_text,
    }
    with dg.instance_for_test() as instance:
        register_partitions(instance, [SNAPSHOT])
        # verification runs before the split: nothing can be named yet, only counted
        with fixed_today("2026-07-01"):
            first = materialize(
                instance,
                home,
                sim,
                ("snapshot_manifest", "golden_rows", "golden_verifications"),
                SNAPSHOT,
                raise_on_error=False,
            )
        (check,) = check_evaluations(first, "golden_verifications")
        assert not check.passed and check.description == f"2 of {len(golden)} golden rows failed verification"
        text = _event_log_text(instance, first.run_id)
        assert public_row.id not in text and public_row.task.golden_urls[0] not in text
        assert "page_unreachable" in text and "golden_verifications" in check.metadata["details"].value

        # once split, verification names the public row (with its URL), never the holdout one
        with fixed_today("2026-07-01"):
            materialize(instance, home, sim, ("query_split",), SNAPSHOT)
            again = materialize(instance, home, sim, ("golden_verifications",), SNAPSHOT, raise_on_error=False)
        (check,) = again.get_asset_check_evaluations()
        shown = check.metadata["failed_public_rows"].value
        assert public_row.id in shown and public_row.task.golden_urls[0] in shown
        counts = check.metadata["failed_by_stratum"].value
        assert "holdout" in counts and "page_unreachable" in counts

        # dead rows that wait past day 7: the public one by id and days, the holdout one by stratum
        with fixed_today("2026-07-01"):
            materialize(instance, home, sim, ("dead_golden_rows",), SNAPSHOT)
        with fixed_today("2026-07-09"):
            late = materialize(instance, home, sim, ("dead_golden_rows",), SNAPSHOT)
        (check,) = late.get_asset_check_evaluations()
        assert not check.passed
        assert check.metadata["days_without_replacement"].value == {public_row.id: 8}
        assert check.metadata["holdout_days_without_replacement_by_stratum"].value == {holdout_row.stratum: [8]}
        assert sorted(warehouse_rows(home, "SELECT row_id, split FROM dead_rows")) == sorted(
            [(public_row.id, "public"), (holdout_row.id, "holdout")]
        )  # DuckDB keeps the whole record

        runs = instance.get_runs()
        assert len(runs) == 5
        logged = "\n".join(_event_log_text(instance, run.run_id) for run in runs)
        assert public_row.id in logged  # the scan reads what was shown
        for what, secret in secrets.items():
            assert secret not in logged, f"the {what} reached Dagster's event storage"
