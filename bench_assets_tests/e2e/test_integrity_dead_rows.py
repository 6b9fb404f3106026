"""Dead golden rows: marked dead with the date, replaced from the stratum's candidate pool on the
same side of the split, and a check that warns at day 5 and fails after day 7 without a replacement,
evaluated every day by a schedule for the snapshots not yet published. A replaced row leaves the
split table, but the exclusions ledger still names the public ones, and a dead holdout row is
still guarded: nothing of it may be published."""

from __future__ import annotations

import json
from datetime import date, datetime
from itertools import combinations
from pathlib import Path

import dagster as dg
import pandas as pd
import yaml

from bench_assets.defs.golden import dead_rows_job, dead_rows_schedule
from bench_assets.golden.dead_rows import dead_row_check
from bench_assets.golden.planted import demo_golden_rows
from bench_assets.golden.rows import GoldenRow, dump_golden_rows
from bench_assets.review.business_days import fixed_today
from bench_assets.split.assign import DEMO_SPLIT_KEY, assign_split
from bench_assets_tests.helpers import (
    RESULT_STAGES,
    SNAPSHOT,
    VENDOR_STAGES,
    assets,
    check_evaluations,
    make_home,
    materialize,
    register_partitions,
    resources,
    vendor_key,
    warehouse_rows,
)

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


def _check(result):
    (evaluation,) = result.get_asset_check_evaluations()
    return evaluation


def test_a_dead_row_is_replaced_on_its_side_of_the_split_and_the_fetch_goes_ahead(tmp_path, simulator):
    rows = demo_golden_rows(rows_per_stratum=6)
    dead_id = rows[0].id  # a search row
    broken = rows[0].model_copy(
        update={
            "task": rows[0].task.model_copy(
                update={"golden_urls": ["https://investors.nowhere.test/reports/q2-2026-results"]}
            )
        }
    )
    stale = [
        r.model_copy(
            update={
                "id": "finance-z001-s",
                "task": broken.task.model_copy(update={"query": "a candidate whose page is gone"}),
            }
        )
        for r in rows[:1]
    ]

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
        register_partitions(instance, [SNAPSHOT])
        with fixed_today("2026-07-01"):
            golden = materialize(instance, home, sim, GOLDEN, SNAPSHOT, raise_on_error=False)
        assert [c.passed for c in check_evaluations(golden, "golden_verifications")] == [False]
        side = dict(warehouse_rows(home, "SELECT row_id, split FROM query_split"))[dead_id]

        # the only candidate does not verify: the row waits, and the clock runs
        with fixed_today("2026-07-01"):
            day0 = materialize(instance, home, sim, ("dead_golden_rows",), SNAPSHOT)
        assert _check(day0).passed
        assert warehouse_rows(home, "SELECT row_id, dead_since, replacement_row_id FROM dead_rows") == [
            (dead_id, date(2026, 7, 1), None)
        ]
        with fixed_today("2026-07-06"):
            day5 = _check(materialize(instance, home, sim, ("dead_golden_rows",), SNAPSHOT))
        assert not day5.passed and day5.severity == dg.AssetCheckSeverity.WARN
        with fixed_today("2026-07-09"):
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
        ((row_id, since, replacement),) = warehouse_rows(
            home, "SELECT row_id, dead_since, replacement_row_id FROM dead_rows"
        )
        assert (row_id, since) == (dead_id, date(2026, 7, 1))
        assert replacement.startswith("finance-c") and replacement.endswith("-s")  # same stratum, same task type
        golden_ids = {r[0] for r in warehouse_rows(home, "SELECT row_id FROM golden_rows")}
        assert replacement in golden_ids and dead_id not in golden_ids
        assert dict(warehouse_rows(home, "SELECT row_id, split FROM query_split"))[replacement] == side
        assert warehouse_rows(home, "SELECT count(*) FROM golden_verifications WHERE NOT passed") == [(0,)]
        public = {
            json.loads(line)["id"]
            for line in (home / "data" / "snapshots" / SNAPSHOT / "public_split.jsonl").read_text().splitlines()
        }
        holdout = {
            GoldenRow.model_validate_json(line).id
            for line in (home / "data" / "private" / "holdout" / f"{SNAPSHOT}.jsonl").read_text().splitlines()
        }
        assert replacement in (public if side == "public" else holdout) and dead_id not in public | holdout

        # the fetch goes ahead and scores the replacement, not the dead row (the holdout's decoys,
        # which the fetch reads, are drawn now that the split stands)
        materialize(instance, home, sim, ("decoy_queries",), SNAPSHOT)
        materialize(instance, home, sim, VENDOR_STAGES, vendor_key("brave"))
        scored = {r[0] for r in warehouse_rows(home, "SELECT row_id FROM row_scores")}
        assert replacement in scored and dead_id not in scored

        # reloading the golden file brings the dead row back; the recorded replacement is re-applied, not redrawn
        materialize(instance, home, sim, GOLDEN, SNAPSHOT, raise_on_error=False)
        materialize(instance, home, sim, ("dead_golden_rows",), SNAPSHOT)
        assert warehouse_rows(home, "SELECT replacement_row_id FROM dead_rows") == [(replacement,)]
        golden_ids = {r[0] for r in warehouse_rows(home, "SELECT row_id FROM golden_rows")}
        assert replacement in golden_ids and dead_id not in golden_ids


# ##### THE DAILY SCHEDULE


def _home_with_a_dead_row(tmp_path, simulator):
    """A snapshot whose first search row's page is gone and whose only candidate is gone too."""
    rows = demo_golden_rows(rows_per_stratum=6)
    broken = rows[0].model_copy(
        update={
            "task": rows[0].task.model_copy(
                update={"golden_urls": ["https://investors.nowhere.test/reports/q2-2026-results"]}
            )
        }
    )
    stale = [
        broken.model_copy(
            update={
                "id": "finance-z001-s",
                "task": broken.task.model_copy(update={"query": "a candidate whose page is gone"}),
            }
        )
    ]

    def file_golden(data):
        data["golden"] = {"source": "file", "path": "golden/with_dead.jsonl", "rows_per_stratum": 6}
        data["decoys"] = {"source": "planted_demo"}
        data["candidates"] = {"source": "file", "path": "golden/stale_candidates.jsonl"}

    home = make_home(tmp_path, ["brave"], edit=file_golden)
    dump_golden_rows([broken, *rows[1:]], home / "data" / "private" / "golden" / "with_dead.jsonl")
    dump_golden_rows(stale, home / "data" / "private" / "golden" / "stale_candidates.jsonl")
    return home, broken.id


def test_a_daily_schedule_evaluates_the_dead_row_check_of_unpublished_snapshots(tmp_path, simulator):
    from bench_assets.definitions import defs as code_location

    home, dead_id = _home_with_a_dead_row(tmp_path, simulator)
    sim = simulator.base_url
    located = code_location()  # the schedule is part of the code location, running by default
    assert located.resolve_schedule_def("dead_rows_schedule").default_status == dg.DefaultScheduleStatus.RUNNING
    schedule = dead_rows_schedule(resources(home, sim)["duckdb"])
    definitions = dg.Definitions(
        assets=assets(*GOLDEN, "dead_golden_rows"),
        jobs=[dead_rows_job],
        schedules=[schedule],
        resources=resources(home, sim),
    )
    job = definitions.resolve_job_def("dead_rows_job")
    repository = definitions.get_repository_def()
    with dg.instance_for_test() as instance:
        register_partitions(instance, [SNAPSHOT])

        def tick(day: str):
            """Evaluate the schedule at 06:00 UTC on `day`, as the daemon does, and run what it requests."""
            at = datetime.fromisoformat(f"{day}T06:00:00+00:00")
            with dg.build_schedule_context(
                instance=instance, scheduled_execution_time=at, repository_def=repository
            ) as context:
                data = schedule.evaluate_tick(context)
            requests = list(data.run_requests or [])
            checks = []
            with fixed_today(day):
                for request in requests:
                    result = job.execute_in_process(
                        partition_key=request.partition_key, instance=instance, tags=request.tags
                    )
                    checks += check_evaluations(result, "dead_golden_rows")
            return requests, data.skip_message, checks

        # nothing registered in the warehouse yet: the tick skips
        assert tick("2026-06-30")[0] == []
        with fixed_today("2026-07-01"):
            materialize(instance, home, sim, GOLDEN, SNAPSHOT, raise_on_error=False)  # verification fails
        requests, _, checks = tick("2026-07-01")  # a failed verification: the row is recorded dead today
        assert [(r.partition_key, r.run_key) for r in requests] == [(SNAPSHOT, f"{SNAPSHOT}@2026-07-01")]
        assert [c.passed for c in checks] == [True]
        assert warehouse_rows(home, "SELECT row_id, dead_since FROM dead_rows") == [(dead_id, date(2026, 7, 1))]
        _, _, checks = tick("2026-07-06")
        assert [(c.passed, c.severity) for c in checks] == [(False, dg.AssetCheckSeverity.WARN)]
        _, _, checks = tick("2026-07-09")
        assert [(c.passed, c.severity) for c in checks] == [(False, dg.AssetCheckSeverity.ERROR)]
        assert "more than 7 days" in checks[0].description

        # a replacement is found (the planted candidate pool): the next tick has nothing to do
        data = yaml.safe_load((home / "data" / "snapshots" / SNAPSHOT / "manifest.yaml").read_text())
        data["candidates"] = {"source": "planted_demo"}
        (home / "data" / "snapshots" / SNAPSHOT / "manifest.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
        _, _, checks = tick("2026-07-10")
        assert [c.passed for c in checks] == [True]
        requests, skip, _ = tick("2026-07-11")
        assert requests == [] and "no snapshot awaiting a dead-row replacement on 2026-07-11" in skip


# ##### A REPLACED ROW STILL COUNTS: LEDGER AND LEAK GUARD


def test_replaced_dead_rows_are_named_if_public_and_guarded_if_holdout(tmp_path, simulator):
    rows = demo_golden_rows(rows_per_stratum=6)
    key = DEMO_SPLIT_KEY.encode()

    def broken(row):
        return row.model_copy(
            update={"task": row.task.model_copy(update={"golden_urls": [f"https://gone.nowhere.test/{row.id}"]})}
        )

    searches = [r for r in rows if r.task_type == "search"]
    for a, b in combinations(searches, 2):  # two rows whose broken pages fall on different sides of the split
        golden = [broken(r) if r.id in (a.id, b.id) else r for r in rows]
        split = assign_split(golden, key)
        if {split[a.id], split[b.id]} == {"public", "holdout"}:
            break
    public_dead, holdout_dead = sorted((a, b), key=lambda r: split[r.id] != "public")

    def file_golden(data):
        data["golden"] = {"source": "file", "path": "golden/two_dead.jsonl", "rows_per_stratum": 6}
        data["decoys"] = {"source": "planted_demo"}
        data["candidates"] = {"source": "planted_demo"}

    home = make_home(tmp_path, ["brave"], edit=file_golden)
    dump_golden_rows(golden, home / "data" / "private" / "golden" / "two_dead.jsonl")
    sim = simulator.base_url
    with dg.instance_for_test() as instance:
        register_partitions(instance, [SNAPSHOT])
        materialize(instance, home, sim, GOLDEN, SNAPSHOT, raise_on_error=False)
        materialize(instance, home, sim, ("dead_golden_rows",), SNAPSHOT)
        assert dict(warehouse_rows(home, "SELECT row_id, split FROM dead_rows")) == {
            public_dead.id: "public",
            holdout_dead.id: "holdout",
        }
        assert not {public_dead.id, holdout_dead.id} & {
            r[0] for r in warehouse_rows(home, "SELECT row_id FROM query_split")
        }
        materialize(instance, home, sim, ("decoy_queries",), SNAPSHOT)
        materialize(instance, home, sim, VENDOR_STAGES, vendor_key("brave"))
        published = materialize(instance, home, sim, RESULT_STAGES, SNAPSHOT)
        out = home / "data" / "publish" / SNAPSHOT
        # the ledger names the public dead row (from dead_rows.split) and counts the holdout one
        ledger = json.loads((out / "exclusions.json").read_text())
        dead = [e for e in ledger["exclusions"] if e["reason_code"] == "dead_golden_row"]
        evidence = " ".join(e["evidence"] for e in dead)
        assert public_dead.id in evidence and holdout_dead.id not in evidence
        assert sum(e["rows_affected"] for e in dead) == 2
        meta = published.asset_materializations_for_node("published_snapshot")[0].metadata
        assert meta["leak_guard"].value["dead_holdout_rows"] == 1
        assert meta["leak_guard"].value["dead_holdout_rows_unreadable"] == 0
        # the dead holdout row is no longer golden, but its query still may not be published
        reply = home / "data" / "snapshots" / SNAPSHOT / "replies" / "brave.txt"
        reply.parent.mkdir(exist_ok=True)
        reply.write_text(f"About your query {holdout_dead.request_text.upper()!r}: we disagree.\n")
        result = materialize(instance, home, sim, ("published_snapshot",), SNAPSHOT, raise_on_error=False)
        assert not result.success
        failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
        assert "holdout leak" in failure.event_specific_data.error.message
        metadata = failure.event_specific_data.user_failure_data.metadata
        # Dagster shows where and what kind; which row only the private store says
        assert "| replies/brave.txt | text | 1 |" in metadata["leaks"].value, metadata["leaks"].value
        assert holdout_dead.request_text[:20].lower() not in str(failure).lower()
        which_rows = Path(metadata["which_rows"].value)
        assert which_rows.is_relative_to(home / "data" / "private")
        assert f"replies/brave.txt: holdout text {holdout_dead.request_text[:60]!r}" in which_rows.read_text()
