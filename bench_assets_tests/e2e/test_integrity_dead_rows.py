"""Dead golden rows: marked dead with the date, replaced from the stratum's candidate pool on the
same side of the split, and a check that warns at day 5 and fails after day 7 without a replacement,
evaluated every day by a schedule for the snapshots not yet published. A replaced row leaves the
split table, but the exclusions ledger still names the public ones, and a dead holdout row is
still guarded: nothing of it may be published."""

from __future__ import annotations

import json
from datetime import date, datetime
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


# ##### ONE SNAPSHOT'S DEAD ROWS, FROM THE FIRST DAILY TICK TO THE PUBLICATION
# One scenario, one snapshot: two search rows whose pages are gone, one falling on each side of the
# split. The daily schedule runs the clock, the planted candidate pool replaces both, the fetch scores
# the replacements, and the publication names the public dead row and guards the holdout one.


def _home_with_two_dead_rows(tmp_path):
    """A snapshot whose first search row and another search row on the other side of the split have
    lost their pages, and whose only candidate (finance) has lost its page too."""
    rows = demo_golden_rows(rows_per_stratum=6)
    key = DEMO_SPLIT_KEY.encode()

    def broken(row):
        return row.model_copy(
            update={"task": row.task.model_copy(update={"golden_urls": [f"https://gone.nowhere.test/{row.id}"]})}
        )

    first = rows[0]  # a search row of the finance stratum
    for other in (r for r in rows[1:] if r.task_type == "search"):
        golden = [broken(r) if r.id in (first.id, other.id) else r for r in rows]
        split = assign_split(golden, key)
        if split[first.id] != split[other.id]:
            break
    stale = [
        broken(first).model_copy(
            update={"id": "finance-z001-s", "task": broken(first).task.model_copy(update={"query": "a gone candidate"})}
        )
    ]

    def file_golden(data):
        data["golden"] = {"source": "file", "path": "golden/two_dead.jsonl", "rows_per_stratum": 6}
        data["decoys"] = {"source": "planted_demo"}
        data["candidates"] = {"source": "file", "path": "golden/stale_candidates.jsonl"}

    home = make_home(tmp_path, ["brave"], edit=file_golden)
    dump_golden_rows(golden, home / "data" / "private" / "golden" / "two_dead.jsonl")
    dump_golden_rows(stale, home / "data" / "private" / "golden" / "stale_candidates.jsonl")
    public_dead, holdout_dead = sorted((first, other), key=lambda r: split[r.id] != "public")
    return home, first, public_dead, holdout_dead


def test_dead_rows_wait_under_a_daily_check_are_replaced_on_their_side_and_still_count_when_published(
    tmp_path, simulator
):
    from bench_assets.definitions import defs as code_location

    home, first, public_dead, holdout_dead = _home_with_two_dead_rows(tmp_path)
    dead_ids = {public_dead.id, holdout_dead.id}
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
            golden = materialize(instance, home, sim, GOLDEN, SNAPSHOT, raise_on_error=False)
        assert [c.passed for c in check_evaluations(golden, "golden_verifications")] == [False]
        sides = dict(warehouse_rows(home, "SELECT row_id, split FROM query_split"))
        assert (sides[public_dead.id], sides[holdout_dead.id]) == ("public", "holdout")

        # a failed verification: the rows are recorded dead today; the only candidate does not verify,
        # so they wait, and the clock runs
        requests, _, checks = tick("2026-07-01")
        assert [(r.partition_key, r.run_key) for r in requests] == [(SNAPSHOT, f"{SNAPSHOT}@2026-07-01")]
        assert [c.passed for c in checks] == [True]
        assert set(warehouse_rows(home, "SELECT row_id, dead_since, replacement_row_id, split FROM dead_rows")) == {
            (public_dead.id, date(2026, 7, 1), None, "public"),
            (holdout_dead.id, date(2026, 7, 1), None, "holdout"),
        }
        _, _, checks = tick("2026-07-06")
        assert [(c.passed, c.severity) for c in checks] == [(False, dg.AssetCheckSeverity.WARN)]
        _, _, checks = tick("2026-07-09")
        assert [(c.passed, c.severity) for c in checks] == [(False, dg.AssetCheckSeverity.ERROR)]
        assert "more than 7 days" in checks[0].description
        fetch = materialize(instance, home, sim, VENDOR_STAGES, vendor_key("brave"), raise_on_error=False)
        assert not fetch.success  # nothing is called while a row is dead and unreplaced

        # the strata's planted candidate pools have verified replacements: they take the dead rows' places,
        # and the next tick has nothing to do
        data = yaml.safe_load((home / "data" / "snapshots" / SNAPSHOT / "manifest.yaml").read_text())
        data["candidates"] = {"source": "planted_demo"}
        (home / "data" / "snapshots" / SNAPSHOT / "manifest.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
        _, _, checks = tick("2026-07-10")
        assert [c.passed for c in checks] == [True]
        requests, skip, _ = tick("2026-07-11")
        assert requests == [] and "no snapshot awaiting a dead-row replacement on 2026-07-11" in skip
        dead = {
            r[0]: r[1:] for r in warehouse_rows(home, "SELECT row_id, dead_since, replacement_row_id FROM dead_rows")
        }
        assert set(dead) == dead_ids and {since for since, _ in dead.values()} == {date(2026, 7, 1)}
        replacements = {row_id: replacement for row_id, (_, replacement) in dead.items()}
        for row_id, replacement in replacements.items():  # same stratum, same task type
            stratum = row_id.rsplit("-", 2)[0]
            assert replacement.startswith(f"{stratum}-c") and replacement.endswith("-s"), (row_id, replacement)
        assert replacements[first.id].startswith("finance-c")
        golden_ids = {r[0] for r in warehouse_rows(home, "SELECT row_id FROM golden_rows")}
        assert set(replacements.values()) <= golden_ids and not dead_ids & golden_ids
        split = dict(warehouse_rows(home, "SELECT row_id, split FROM query_split"))
        assert {r: split.get(replacements[r]) for r in dead_ids} == {
            public_dead.id: "public",
            holdout_dead.id: "holdout",
        }
        assert not dead_ids & set(split)  # a replaced row leaves the split table
        assert warehouse_rows(home, "SELECT count(*) FROM golden_verifications WHERE NOT passed") == [(0,)]
        public = {
            json.loads(line)["id"]
            for line in (home / "data" / "snapshots" / SNAPSHOT / "public_split.jsonl").read_text().splitlines()
        }
        holdout = {
            GoldenRow.model_validate_json(line).id
            for line in (home / "data" / "private" / "holdout" / f"{SNAPSHOT}.jsonl").read_text().splitlines()
        }
        assert replacements[public_dead.id] in public and replacements[holdout_dead.id] in holdout
        assert not dead_ids & (public | holdout)

        # reloading the golden file brings the dead rows back; the recorded replacements are re-applied, not redrawn
        materialize(instance, home, sim, GOLDEN, SNAPSHOT, raise_on_error=False)
        materialize(instance, home, sim, ("dead_golden_rows",), SNAPSHOT)
        assert dict(warehouse_rows(home, "SELECT row_id, replacement_row_id FROM dead_rows")) == replacements
        golden_ids = {r[0] for r in warehouse_rows(home, "SELECT row_id FROM golden_rows")}
        assert set(replacements.values()) <= golden_ids and not dead_ids & golden_ids

        # the fetch goes ahead and scores the replacements, not the dead rows (the holdout's decoys,
        # which the fetch reads, are drawn now that the split stands)
        materialize(instance, home, sim, ("decoy_queries",), SNAPSHOT)
        materialize(instance, home, sim, VENDOR_STAGES, vendor_key("brave"))
        scored = {r[0] for r in warehouse_rows(home, "SELECT row_id FROM row_scores")}
        assert set(replacements.values()) <= scored and not dead_ids & scored

        # the publication: the ledger names the public dead row (from dead_rows.split) and counts the holdout one
        published = materialize(instance, home, sim, RESULT_STAGES, SNAPSHOT)
        out = home / "data" / "publish" / SNAPSHOT
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
