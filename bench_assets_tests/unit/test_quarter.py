"""The next quarter's split: the sides the rotation plan gives the new cohort are the sides the
split stage applies, carried-over rows keep theirs, and a row once held out stays held out."""

from __future__ import annotations

import pytest

from bench_assets.errors import BenchInputError
from bench_assets.golden.planted import demo_golden_rows, reserve_rows
from bench_assets.review.quarter import next_snapshot_id, shortfalls
from bench_assets.review.rotation import plan_rotation, saturation_by_stratum
from bench_assets.split.assign import assign_split
from bench_assets_tests.e2e.test_integrity_rotation import SNAP, scores_for


def next_quarter_rows(rows, plan, candidates, cohort="2026-q4"):
    retired = {r["row_id"] for r in plan.retire}
    by_id = {c.id: c for c in candidates}
    incoming = [by_id[rep["row_id"]].model_copy(update={"cohort": cohort}) for rep in plan.replacements]
    return [r for r in rows if r.id not in retired] + incoming


def test_the_planned_sides_are_the_applied_sides():
    """Before, the split stage topped each stratum up to 30 % over old and new rows together while
    the plan split the new cohort on its own: 6 of 63 new rows of the demo landed elsewhere."""
    rows = demo_golden_rows(rows_per_stratum=42)
    candidates = reserve_rows("candidate", 7)
    saturation = saturation_by_stratum(scores_for(rows))
    for key in (b"k1", b"k2", b"k3", b"bench-demo-split-key-not-secret"):
        split = assign_split(rows, key)
        plan = plan_rotation(rows, split, saturation, candidates, key, SNAP)
        nxt = next_quarter_rows(rows, plan, candidates)
        applied = assign_split(nxt, key, recorded=split)
        planned = {rep["row_id"]: rep["takes_split"] for rep in plan.replacements}
        differ = sorted(r for r, side in planned.items() if applied[r] != side)
        assert not differ, (key, len(differ), len(planned))
        # carried-over rows keep their side
        assert all(applied[r.id] == split[r.id] for r in nxt if r.id in split)
        # the new cohort is 30 % holdout within every stratum (to a page)
        for stratum in {r.stratum for r in nxt}:
            new = [r for r in nxt if r.stratum == stratum and r.cohort == "2026-q4"]
            if new:
                held = sum(applied[r.id] == "holdout" for r in new)
                assert abs(held - 0.3 * len(new)) <= 3, (stratum, held, len(new))


def test_a_row_once_held_out_stays_held_out_whatever_its_group_becomes():
    rows = demo_golden_rows(rows_per_stratum=15)
    split = assign_split(rows, b"k1")
    flipped = {r: ("public" if s == "holdout" else s) for r, s in split.items()}
    # a holdout row recorded by an earlier quarter wins over anything else
    recorded = {**flipped, **{r: s for r, s in split.items() if s == "holdout"}}
    again = assign_split(rows, b"other-key", recorded=recorded)
    assert all(again[r] == "holdout" for r, s in split.items() if s == "holdout")


def test_the_next_snapshot_is_the_quarter_after():
    assert next_snapshot_id("web_search-2026-q3") == "web_search-2026-q4"
    assert next_snapshot_id("web_search-2026-q4") == "web_search-2027-q1"
    assert next_snapshot_id("registry_search-2026-q4-e2") == "registry_search-2027-q1"
    with pytest.raises(BenchInputError, match="no quarter"):
        next_snapshot_id("web_search-latest")


def test_a_pool_shortfall_names_the_stratum_and_how_short_it_is():
    rows = demo_golden_rows(rows_per_stratum=42)
    split = assign_split(rows, b"k1")
    saturation = saturation_by_stratum(scores_for(rows))
    plan = plan_rotation(rows, split, saturation, reserve_rows("candidate", 1), b"k1", SNAP)
    short = dict(shortfalls(plan, {}))
    assert short  # one candidate page a stratum cannot replace a quarter of 14
    for stratum, message in short.items():
        retired = {r["group"] for r in plan.retire if r["stratum"] == stratum}
        missing = {r["group"] for r in plan.retire if r["stratum"] == stratum and not r["replaced_by"]}
        assert message.startswith(f"stratum {stratum}: the plan retires {len(retired)} groups")
        assert f"short by {len(missing)}" in message
    full = plan_rotation(rows, split, saturation, reserve_rows("candidate", 14), b"k1", SNAP)
    assert shortfalls(full, {}) == []
