"""The split, once recorded, never moves a row: a public row may already be exported in the repo,
a holdout row may already have been sent to vendors as holdout. Re-materializing `query_split`
keeps every recorded side; only rows never assigned get one, and a dead row's replacement takes
the side of the row it replaces. A fresh snapshot is split from the key alone."""

from __future__ import annotations

import json

import dagster as dg

from bench_assets.golden.planted import demo_golden_rows, reserve_rows
from bench_assets.golden.rows import GoldenRow, dump_golden_rows, split_groups
from bench_assets.split.assign import DEMO_SPLIT_KEY, assign_split
from bench_assets_tests.helpers import SNAPSHOT, make_home, materialize, register_partitions, warehouse_rows

GOLDEN = ("snapshot_manifest", "golden_rows", "golden_verifications", "query_split")


# ##### THE PURE FUNCTION


def test_with_nothing_recorded_the_split_is_the_keyed_split():
    rows = demo_golden_rows(rows_per_stratum=42)
    assert assign_split(rows, b"k1", recorded={}) == assign_split(rows, b"k1")
    assert assign_split(rows, b"k1", recorded=None) == assign_split(rows, b"k1")


def test_recorded_sides_are_kept_and_only_new_groups_are_assigned():
    rows = demo_golden_rows(rows_per_stratum=12)
    before = assign_split(rows, b"k1")
    # a dead row's replacement comes in as a new group: a fresh split over the new set would
    # shuffle the stratum; the recorded one keeps every side and gives the newcomer the dead row's
    dead = next(r for r in rows if r.stratum == "finance" and r.task_type == "extract" and before[r.id] == "public")
    replacement = next(c for c in reserve_rows("candidate", 4) if c.stratum == "finance" and c.task_type == "extract")
    now = [r for r in rows if r.id != dead.id] + [replacement]
    recorded = {**before, replacement.id: before[dead.id]}
    split = assign_split(now, b"k1", recorded=recorded)
    assert {r: split[r] for r in split if r != replacement.id} == {r: s for r, s in before.items() if r != dead.id}
    assert split[replacement.id] == before[dead.id]

    # a new page without any record fills its stratum toward 30 % holdout, whole group on one side
    newcomers = [
        r.model_copy(update={"stratum": "finance"}) for r in reserve_rows("candidate", 12) if r.stratum == "docs"
    ]
    grown = rows + newcomers
    split = assign_split(grown, b"k1", recorded=before)
    assert all(split[r] == s for r, s in before.items())
    groups = split_groups(grown)
    finance_groups = {groups[r.id] for r in grown if r.stratum == "finance"}
    held = {groups[r.id] for r in grown if r.stratum == "finance" and split[r.id] == "holdout"}
    assert len(held) == round(0.3 * len(finance_groups))
    for gid in {groups[r.id] for r in newcomers}:
        assert len({split[r.id] for r in grown if groups[r.id] == gid}) == 1


def test_a_new_row_sharing_a_page_with_a_recorded_row_joins_its_side():
    rows = demo_golden_rows(rows_per_stratum=12)
    before = assign_split(rows, b"k1")
    for side in ("public", "holdout"):
        row = next(r for r in rows if r.task_type == "search" and before[r.id] == side)
        twin = row.model_copy(
            update={
                "id": row.id.replace("-s", "-t"),
                "task": row.task.model_copy(update={"query": "the same page, asked again"}),
            }
        )
        split = assign_split([*rows, twin], b"k1", recorded=before)
        assert split[twin.id] == side
        assert all(split[r] == s for r, s in before.items())


# ##### THROUGH DAGSTER: A DEAD ROW REPLACED, THEN THE SPLIT RE-MATERIALIZED


def _broken_title(row: GoldenRow) -> GoldenRow:
    """The row's page is still there (its group is unchanged) but no longer carries its title."""
    return row.model_copy(update={"task": row.task.model_copy(update={"title": "A title no page carries"})})


def test_rematerializing_the_split_after_a_replacement_moves_no_row(tmp_path, simulator):
    rows = demo_golden_rows(rows_per_stratum=12)
    dead_id = "finance-001-x"
    golden = [_broken_title(r) if r.id == dead_id else r for r in rows]

    def file_golden(data):
        data["golden"] = {"source": "file", "path": "golden/one_dead.jsonl", "rows_per_stratum": 12}
        data["decoys"] = {"source": "planted_demo"}
        data["candidates"] = {"source": "planted_demo"}

    home = make_home(tmp_path, ["brave"], edit=file_golden)
    dump_golden_rows(golden, home / "data" / "private" / "golden" / "one_dead.jsonl")
    sim = simulator.base_url
    public_file = home / "data" / "snapshots" / SNAPSHOT / "public_split.jsonl"
    holdout_file = home / "data" / "private" / "holdout" / f"{SNAPSHOT}.jsonl"
    with dg.instance_for_test() as instance:
        register_partitions(instance, [SNAPSHOT])
        materialize(instance, home, sim, GOLDEN, SNAPSHOT, raise_on_error=False)  # the dead row fails verification
        first = dict(warehouse_rows(home, "SELECT row_id, split FROM query_split"))
        assert first == assign_split(golden, DEMO_SPLIT_KEY.encode())  # a fresh snapshot: the keyed split
        materialize(instance, home, sim, ("dead_golden_rows",), SNAPSHOT)
        ((replacement,),) = warehouse_rows(home, "SELECT replacement_row_id FROM dead_rows")
        assert replacement.startswith("finance-c") and replacement.endswith("-x")
        adopted = dict(warehouse_rows(home, "SELECT row_id, split FROM query_split"))
        assert adopted[replacement] == first[dead_id]
        public_before, holdout_before = public_file.read_bytes(), holdout_file.read_bytes()

        # the scenario the audit found: a split recomputed over today's golden rows would move rows
        now = [GoldenRow.model_validate_json(x) for x in holdout_file.read_text().splitlines()] + [
            GoldenRow.model_validate(x) for x in map(json.loads, public_file.read_text().splitlines())
        ]
        moved = {r for r, s in assign_split(now, DEMO_SPLIT_KEY.encode()).items() if adopted[r] != s}
        assert moved, "the scenario no longer exercises a moving split"

        # re-materializing the split alone, again and again, moves nothing
        for _ in range(2):
            result = materialize(instance, home, sim, ("query_split",), SNAPSHOT)
            assert dict(warehouse_rows(home, "SELECT row_id, split FROM query_split")) == adopted
            assert public_file.read_bytes() == public_before and holdout_file.read_bytes() == holdout_before
        meta = result.asset_materializations_for_node("query_split")[0].metadata
        assert meta["newly_assigned"].value == 0

        # reloading the golden file brings the dead row back on its recorded side; the replacement
        # is re-applied on the same side, and every other row stays where it was
        materialize(instance, home, sim, GOLDEN, SNAPSHOT, raise_on_error=False)
        reloaded = dict(warehouse_rows(home, "SELECT row_id, split FROM query_split"))
        assert reloaded[dead_id] == first[dead_id]
        assert all(reloaded[r] == s for r, s in adopted.items() if r != replacement)
        materialize(instance, home, sim, ("dead_golden_rows", "query_split"), SNAPSHOT)
        assert dict(warehouse_rows(home, "SELECT row_id, split FROM query_split")) == adopted
        assert public_file.read_bytes() == public_before and holdout_file.read_bytes() == holdout_before


# ##### NEXT QUARTER: THE SAME BENCHMARK, MORE ROWS


def test_next_quarters_split_keeps_every_side_this_quarter_gave_out(tmp_path, simulator):
    # q4 keeps q3's pages and adds new ones. Split afresh, the larger strata would move some of
    # q3's holdout pages into q4's public split, publishing what vendors were sent as holdout.
    next_quarter = "web_search-2026-q4"
    home = make_home(tmp_path, ["brave"], rows_per_stratum=12)
    make_home(home, ["brave"], rows_per_stratum=18, snapshot=next_quarter)
    with dg.instance_for_test() as instance:
        register_partitions(instance, [SNAPSHOT, next_quarter])
        materialize(instance, home, simulator.base_url, GOLDEN, SNAPSHOT)
        this_quarter = dict(
            warehouse_rows(home, "SELECT row_id, split FROM query_split WHERE snapshot_id = ?", [SNAPSHOT])
        )
        grown = demo_golden_rows(rows_per_stratum=18)
        assert set(this_quarter) < {r.id for r in grown}
        fresh = assign_split(grown, DEMO_SPLIT_KEY.encode())
        assert any(fresh[r] == "public" for r, s in this_quarter.items() if s == "holdout"), (
            "the scenario no longer exercises a split that would reveal a holdout row"
        )

        materialize(instance, home, simulator.base_url, GOLDEN, next_quarter)
        q4 = dict(warehouse_rows(home, "SELECT row_id, split FROM query_split WHERE snapshot_id = ?", [next_quarter]))
    assert {r: q4[r] for r in this_quarter} == this_quarter
    public_q4 = (home / "data" / "snapshots" / next_quarter / "public_split.jsonl").read_text()
    assert not any(f'"id": "{r}"' in public_q4 for r, s in this_quarter.items() if s == "holdout")
    # the new pages fill each stratum toward its 30 % holdout, whole pages on one side
    groups = split_groups(grown)
    for stratum in {r.stratum for r in grown}:
        pages = {groups[r.id] for r in grown if r.stratum == stratum}
        held = {groups[r.id] for r in grown if r.stratum == stratum and q4[r.id] == "holdout"}
        assert abs(len(held) - round(0.3 * len(pages))) <= 1


# ##### A GOLDEN FILE THAT ASKS ONE QUESTION TWICE


def test_a_golden_file_asking_one_question_twice_keeps_both_rows_on_one_side(tmp_path, simulator):
    # Two rows about different pages asking the same question (spelled with other case and
    # spacing): split by page alone, one would be published and the other held out, and the
    # public split would carry the holdout row's question.
    rows = demo_golden_rows(rows_per_stratum=12)
    by_page = assign_split(rows, DEMO_SPLIT_KEY.encode())
    public = next(r for r in rows if r.task_type == "search" and by_page[r.id] == "public")
    holdout = next(
        r for r in rows if r.task_type == "search" and r.stratum == public.stratum and by_page[r.id] == "holdout"
    )
    asked_again = holdout.model_copy(
        update={"task": holdout.task.model_copy(update={"query": "  " + public.task.query.upper() + "\n"})}
    )
    golden = [asked_again if r.id == holdout.id else r for r in rows]

    def file_golden(data):
        data["golden"] = {"source": "file", "path": "golden/asked_twice.jsonl", "rows_per_stratum": 12}

    home = make_home(tmp_path, ["brave"], edit=file_golden)
    dump_golden_rows(golden, home / "data" / "private" / "golden" / "asked_twice.jsonl")
    with dg.instance_for_test() as instance:
        register_partitions(instance, [SNAPSHOT])
        materialize(instance, home, simulator.base_url, GOLDEN, SNAPSHOT)
    split = dict(warehouse_rows(home, "SELECT row_id, split FROM query_split"))
    assert split[public.id] == split[holdout.id]
    public_ids = {
        json.loads(line)["id"]
        for line in (home / "data" / "snapshots" / SNAPSHOT / "public_split.jsonl").read_text().splitlines()
    }
    assert (public.id in public_ids) == (holdout.id in public_ids)
