"""The quarterly cycle as an operator runs it: `bench quarter next` draws the next quarter from the
last (its manifest for review, its golden set with the replacements' content, its partition),
the next quarter's golden stages run as any snapshot's, and custody holds across quarters:

- the sides the plan gives the new cohort are the sides the split stage applies (the same key);
- rows carried over keep their side; a row once held out is held out in every later quarter and
  never in a later public split file; a retired row never comes back through the pool;
- decoys are drawn for the new quarter's holdout, none of them a golden row;
- a pool that cannot replace what the plan retires is refused, naming the stratum and the
  shortfall, and nothing of the next quarter is written.

Cheap on purpose: three quarters of a 90-row manifest, golden stages only (no vendor is called;
the saturation bias of the planner is tested in test_integrity_rotation.py).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import dagster as dg
import pytest
import yaml

from bench_assets.cli import main as cli
from bench_assets.golden.planted import reserve_rows, reserve_size
from bench_assets.golden.rows import dump_golden_rows, load_golden_file
from bench_assets.manifest import load_manifest
from bench_assets.publish.inputs import private_terms
from bench_assets_tests.helpers import (
    GOLDEN_STAGES,
    SNAPSHOT,
    make_home,
    materialize,
    unwrapped,
    warehouse_of,
    warehouse_rows,
)

Q4 = "web_search-2026-q4"
Q5 = "web_search-2027-q1"
ROWS_PER_STRATUM = 15
SHIPPED_TRIALS = Path(__file__).parents[2] / "data" / "snapshots" / SNAPSHOT / "agent_trials.yaml"


def split_of(home, snapshot) -> dict[str, str]:
    return dict(warehouse_rows(home, "SELECT row_id, split FROM query_split WHERE snapshot_id = ?", [snapshot]))


def public_file_ids(home, snapshot) -> set[str]:
    path = home / "data" / "snapshots" / snapshot / "public_split.jsonl"
    return {json.loads(line)["id"] for line in path.read_text().splitlines() if line.strip()}


@pytest.fixture(scope="module")
def cycle(tmp_path_factory, simulator):
    """Q3's golden stages, then `bench quarter next` and Q4's golden stages, on a persistent
    Dagster home (the CLI's)."""
    tmp = tmp_path_factory.mktemp("quarters")
    home = make_home(tmp / "home", ["serper"], rows_per_stratum=ROWS_PER_STRATUM)
    (tmp / "dagster").mkdir()
    mp = pytest.MonkeyPatch()
    mp.setenv("BENCH_HOME", str(home))
    mp.setenv("BENCH_SIMULATOR_URL", simulator.base_url)
    try:
        with dg.instance_for_test(temp_dir=str(tmp / "dagster")) as instance:  # sets $DAGSTER_HOME for the CLI
            assert cli.main(["snapshot", "add", SNAPSHOT]) == 0
            materialize(instance, home, simulator.base_url, GOLDEN_STAGES, SNAPSHOT)
            # the shipped quarter's hand-entered agent trials (dated evidence of that quarter)
            shutil.copyfile(SHIPPED_TRIALS, home / "data" / "snapshots" / SNAPSHOT / "agent_trials.yaml")
            assert cli.main(["quarter", "next", SNAPSHOT]) == 0
            assert instance.has_dynamic_partition("snapshots", Q4)
            materialize(instance, home, simulator.base_url, GOLDEN_STAGES, Q4)
            yield home, instance
    finally:
        mp.undo()


def test_the_next_quarter_is_drawn_in_one_step_and_its_split_is_the_planned_one(cycle):
    home, _ = cycle
    private = home / "data" / "private"
    q3_manifest = load_manifest(home / "data" / "snapshots" / SNAPSHOT / "manifest.yaml")
    q4_manifest = load_manifest(home / "data" / "snapshots" / Q4 / "manifest.yaml")
    # vendors, plans and prices carried over for review; the golden set is the drawn file
    assert q4_manifest.vendors == q3_manifest.vendors and q4_manifest.excluded == q3_manifest.excluded
    assert q4_manifest.golden.source == "file" and q4_manifest.golden.path == f"golden/{Q4}.jsonl"
    assert q4_manifest.supersedes is None
    # agent trials are dated evidence of their quarter: left behind, to be run again (before, they
    # were copied into the next quarter, where a vendor's old trial read as the new quarter's)
    assert (home / "data" / "snapshots" / SNAPSHOT / "agent_trials.yaml").exists()
    assert not (home / "data" / "snapshots" / Q4 / "agent_trials.yaml").exists()

    q3_rows = {r.id: r for r in load_golden_file(private / "golden" / f"{SNAPSHOT}.jsonl")}
    q4_rows = {r.id: r for r in load_golden_file(private / "golden" / f"{Q4}.jsonl")}
    plan = yaml.safe_load((private / "rotation" / f"{SNAPSHOT}.yaml").read_text())
    retired = {r["row_id"] for r in plan["retire"]}
    assert retired and retired <= set(q3_rows) and not retired & set(q4_rows)
    # about 25 % of the cohort, in whole groups of 3 (to within half a group), per stratum as planned
    assert abs(len(retired) - 0.25 * len(q3_rows)) <= 1.5
    # the carried rows as they were; the new rows the pool's, with their content, as cohort 2026-q4
    assert all(q4_rows[i] == q3_rows[i] for i in set(q3_rows) - retired)
    pool = {r.id: r for r in reserve_rows("candidate", reserve_size(ROWS_PER_STRATUM // 3))}
    new = [r for r in q4_rows.values() if r.id not in q3_rows]
    assert len(new) == len(plan["replacements"]) and len(new) >= len(retired)
    for row in new:
        assert row.cohort == "2026-q4"
        assert row.model_copy(update={"cohort": pool[row.id].cohort}) == pool[row.id]
    # the split stage applied what the plan said, with the same key
    q3_split, q4_split = split_of(home, SNAPSHOT), split_of(home, Q4)
    planned = {rep["row_id"]: rep["takes_split"] for rep in plan["replacements"]}
    assert {r: q4_split[r] for r in planned} == planned
    assert 0 < sum(side == "holdout" for side in planned.values()) < len(planned)
    # carried-over rows keep their side
    assert all(q4_split[r] == q3_split[r] for r in set(q3_rows) - retired)
    # the planted reserve grows by a quarter's worth; its first pages are the ones Q3's pool had
    assert q4_manifest.candidates.reserve_pages == 2 * reserve_size(ROWS_PER_STRATUM // 3)
    grown = reserve_rows("candidate", 2 * reserve_size(5), base=reserve_size(5))
    assert set(pool) <= {r.id for r in grown} and all(pool[r.id] == r for r in grown if r.id in pool)


def test_custody_holds_across_quarters(cycle):
    home, _ = cycle
    private = home / "data" / "private"
    q3_split, q4_split = split_of(home, SNAPSHOT), split_of(home, Q4)
    held_q3 = {r for r, s in q3_split.items() if s == "holdout"}
    # a row held out stays held out; no Q3 holdout row, retired or not, is in Q4's public file
    assert all(q4_split[r] == "holdout" for r in held_q3 if r in q4_split)
    assert not public_file_ids(home, Q4) & held_q3
    assert public_file_ids(home, Q4) == {r for r, s in q4_split.items() if s == "public"}
    # decoys were drawn for Q4: its new cohort's holdout has decoys of its own, none a golden row
    q4_decoys = load_golden_file(private / "decoys" / f"{Q4}.jsonl")
    q3_decoys = load_golden_file(private / "decoys" / f"{SNAPSHOT}.jsonl")
    golden_ids = set(q3_split) | set(q4_split)
    assert q4_decoys and not {d.id for d in q4_decoys} & golden_ids
    assert {d.id for d in q4_decoys} - {d.id for d in q3_decoys}  # the new cohort's, drawn afresh
    assert not public_file_ids(home, Q4) & {d.id for d in q4_decoys}
    # publication's leak guard of Q4 holds every Q3 holdout row, the retired ones whole
    q4_rows = load_golden_file(private / "golden" / f"{Q4}.jsonl")
    manifest = load_manifest(home / "data" / "snapshots" / Q4 / "manifest.yaml")
    terms, counts = private_terms(private, manifest, warehouse_of(home), q4_rows, q4_split)
    guarded = {t["row_id"]: t for t in terms}
    assert held_q3 <= set(guarded)
    retired_held = held_q3 - set(q4_split)
    assert retired_held and counts["earlier_quarters_holdout_rows"] == len(retired_held)
    assert all(guarded[r]["request_text"] and guarded[r]["golden_urls"] for r in retired_held)


def test_a_retired_row_never_returns_and_a_short_pool_is_refused_naming_the_stratum(cycle, capsys):
    home, _ = cycle
    private = home / "data" / "private"
    manifest_path = home / "data" / "snapshots" / Q4 / "manifest.yaml"
    original = manifest_path.read_text()
    plan = yaml.safe_load((private / "rotation" / f"{SNAPSHOT}.yaml").read_text())
    retired_rows = [
        r
        for r in load_golden_file(private / "golden" / f"{SNAPSHOT}.jsonl")
        if r.id in {x["row_id"] for x in plan["retire"]}
    ]
    try:
        # the operator points Q4's candidates at a file holding only Q3's retired rows: none may return
        dump_golden_rows(retired_rows, private / "pools" / "retired.jsonl")
        data = yaml.safe_load(original)
        data["candidates"] = {"source": "file", "path": "pools/retired.jsonl"}
        manifest_path.write_text(yaml.safe_dump(data, sort_keys=False))
        assert cli.main(["quarter", "next", Q4]) == 1
        out = unwrapped(capsys.readouterr().out)
        assert f"nothing of {Q5} was written" in out, out
        supplied = {
            m.group(1): int(m.group(2)) for m in re.finditer(r"stratum (\w+): .*? supplies only (\d+) unused", out)
        }
        # every stratum the retired rows could have refilled is refused with nothing supplied
        assert supplied and {r.stratum for r in retired_rows} & set(supplied), out
        assert all(n == 0 for n in supplied.values()), supplied
        assert all(f"candidates ({s})" in out for s in supplied)
        assert not (home / "data" / "snapshots" / Q5).exists()
        assert not (private / "golden" / f"{Q5}.jsonl").exists()
    finally:
        manifest_path.write_text(original)
    # the planted reserve as Q3 had it (3 pages a stratum for a 15-row manifest) is spent by Q4 in
    # some stratum: refused as well, naming it
    data = yaml.safe_load(original)
    assert data["candidates"] == {"source": "planted_demo", "reserve_pages": 6}  # as drawn: grown
    data["candidates"] = {"source": "planted_demo"}
    manifest_path.write_text(yaml.safe_dump(data, sort_keys=False))
    assert cli.main(["quarter", "next", Q4]) == 1
    assert "short by" in capsys.readouterr().out
    # as drawn, Q4's planted reserve grew by a quarter's worth (`bench demo --quarters` relies on it):
    # Q5 draws from its new pages, none of them a retired row, and grows it again
    manifest_path.write_text(original)
    assert cli.main(["quarter", "next", Q4]) == 0
    grown = {r.id: r for r in reserve_rows("candidate", 6, base=reserve_size(ROWS_PER_STRATUM // 3))}
    q4 = {r.id for r in load_golden_file(private / "golden" / f"{Q4}.jsonl")}
    from_reserve = {r.id for r in load_golden_file(private / "golden" / f"{Q5}.jsonl")} - q4
    assert from_reserve and from_reserve <= set(grown) and not from_reserve & {r.id for r in retired_rows}
    assert any(int(i.split("-c")[1][:3]) > 3 for i in from_reserve)  # the pages added for Q4 are used
    q5_manifest = load_manifest(home / "data" / "snapshots" / Q5 / "manifest.yaml")
    assert q5_manifest.candidates.reserve_pages == 9
    assert cli.main(["snapshot", "remove", Q5]) == 0
    capsys.readouterr()
    # a larger pool (the reserve pages a 14-page simulator serves, as a file) draws; the rows
    # Q3 retired and the rows Q4 took from the pool are left out of it
    data = yaml.safe_load(original)
    dump_golden_rows(reserve_rows("candidate", 7), private / "pools" / "larger.jsonl")
    data["candidates"] = {"source": "file", "path": "pools/larger.jsonl"}
    manifest_path.write_text(yaml.safe_dump(data, sort_keys=False))
    assert cli.main(["quarter", "next", Q4]) == 0
    q4 = {r.id for r in load_golden_file(private / "golden" / f"{Q4}.jsonl")}
    q5 = {r.id for r in load_golden_file(private / "golden" / f"{Q5}.jsonl")}
    new_in_q5 = q5 - q4
    assert new_in_q5 and not new_in_q5 & {r.id for r in retired_rows}
    # what is left of the pool is carried forward as Q5's own file, without what Q5 took
    q5_manifest = load_manifest(home / "data" / "snapshots" / Q5 / "manifest.yaml")
    assert q5_manifest.candidates.source == "file"
    left = {r.id for r in load_golden_file(private / q5_manifest.candidates.path)}
    assert left and not left & (q5 | q4 | {r.id for r in retired_rows})
    assert cli.main(["quarter", "next", Q4]) == 1
    assert "was drawn already" in capsys.readouterr().out
