"""Rotation planning: 25 % of every cohort retires, biased toward strata where vendors saturate,
each retired group replaced from its stratum's candidate pool. The holdout keeps its share: each
side of a cohort retires its own quarter, and the replacements (next quarter's new cohort) are
split 70/30 within every stratum by the key, whatever sides the biased draw retired."""

from __future__ import annotations

from collections import defaultdict

import pandas as pd

from bench_assets.golden.planted import demo_golden_rows, reserve_rows
from bench_assets.golden.rows import GoldenRow, split_groups
from bench_assets.review.rotation import plan_rotation, saturation_by_stratum
from bench_assets.split.assign import assign_split

SNAP = "web_search-2026-q3"
SATURATED = {"finance", "docs"}


def two_cohorts() -> list[GoldenRow]:
    """The demo rows (6 strata × 14 pages × 3 tasks), every other page in an older cohort."""
    rows = demo_golden_rows(rows_per_stratum=42)
    return [r.model_copy(update={"cohort": "2026-q2" if int(r.id.split("-")[1]) % 2 else "2026-q3"}) for r in rows]


def scores_for(rows: list[GoldenRow], vendors=("exa", "brave", "tavily")) -> pd.DataFrame:
    """Vendors answer every row of the saturated strata and about a third of the others."""
    out = []
    for v in vendors:
        for i, r in enumerate(rows):
            out.append(
                {
                    "vendor": v,
                    "stratum": r.stratum,
                    "response_class": "ok",
                    "correct": r.stratum in SATURATED or i % 3 == 0,
                }
            )
    return pd.DataFrame(out)


def test_a_quarter_of_each_cohort_retires_biased_toward_saturated_strata():
    rows = two_cohorts()
    saturation = saturation_by_stratum(scores_for(rows))
    assert saturation["finance"] == 1.0 and saturation["news"] < 0.4
    candidates = reserve_rows("candidate", 14)
    saturated_share_of_rows = sum(r.stratum in SATURATED for r in rows) / len(rows)  # 1/3
    for key in (b"k1", b"k2", b"k3", b"k4", b"k5"):
        split = assign_split(rows, key)
        plan = plan_rotation(rows, split, saturation, candidates, key, SNAP)
        for cohort in ("2026-q2", "2026-q3"):
            n = sum(r.cohort == cohort for r in rows)
            retired = [r for r in plan.retire if r["cohort"] == cohort]
            assert abs(len(retired) - 0.25 * n) <= 1.5, (cohort, len(retired), n)  # to within half a group of 3
            assert plan.cohorts[cohort]["retire_rows"] == len(retired)
            share = sum(r["stratum"] in SATURATED for r in retired) / len(retired)
            assert share > saturated_share_of_rows + 0.2, (key, cohort, share)
        # each retired group is replaced from its own stratum
        by_id = {c.id: c for c in candidates}
        for r in plan.retire:
            assert r["replaced_by"], r
            assert {by_id[c].stratum for c in r["replaced_by"]} == {r["stratum"]}
        assert len({c for r in plan.retire for c in r["replaced_by"]}) == len(plan.replacements)
        assert_the_holdout_keeps_its_share(rows, split, plan, by_id)


def assert_the_holdout_keeps_its_share(rows, split, plan, candidates_by_id):
    # each cohort's holdout retires its own quarter (to within a group of 3), so the cohort keeps its share
    for cohort, summary in plan.cohorts.items():
        held = sum(1 for r in rows if r.cohort == cohort and split[r.id] == "holdout")
        retired_held = sum(1 for r in plan.retire if r["cohort"] == cohort and r["split"] == "holdout")
        assert summary["holdout_rows"] == held and summary["retire_holdout_rows"] == retired_held
        assert abs(retired_held - 0.25 * held) <= 3, (cohort, retired_held, held)
    # the new cohort is 70/30 within every stratum (in whole pages, to rounding), a page on one side
    incoming = [candidates_by_id[rep["row_id"]] for rep in plan.replacements]
    side = {rep["row_id"]: rep["takes_split"] for rep in plan.replacements}
    groups = split_groups(incoming)
    pages: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for row in incoming:
        pages[row.stratum][groups[row.id]].add(side[row.id])
    for stratum, sides in pages.items():
        assert all(len(s) == 1 for s in sides.values()), stratum
        held = sum(1 for s in sides.values() if s == {"holdout"})
        assert held == round(0.3 * len(sides)), (stratum, held, len(sides))
    # over the whole cohort, the share is 30 % to the per-stratum rounding (half a page a stratum):
    # a stratum the bias barely touched brings one or two pages, rounded to 0 or 1 held out
    held_pages = sum(1 for sides in pages.values() for s in sides.values() if s == {"holdout"})
    all_pages = sum(len(sides) for sides in pages.values())
    assert abs(held_pages - 0.3 * all_pages) <= 0.5 * len(pages), (held_pages, all_pages)


def test_without_saturation_differences_the_draw_is_proportional_and_keyed():
    rows = demo_golden_rows(rows_per_stratum=42)
    split = assign_split(rows, b"k1")
    flat = dict.fromkeys({r.stratum for r in rows}, 0.5)
    candidates = reserve_rows("candidate", 14)
    a = plan_rotation(rows, split, flat, candidates, b"k1", SNAP)
    assert plan_rotation(rows, split, flat, candidates, b"k1", SNAP) == a  # reproducible by the operator
    assert plan_rotation(rows, split, flat, candidates, b"k2", SNAP).retire != a.retire  # keyed by the secret
    assert len(a.retire) == 63
    assert max(a.cohorts["2026-q3"]["retired_by_stratum"].values()) <= 24
    assert_the_holdout_keeps_its_share(rows, split, a, {c.id: c for c in candidates})


def test_a_short_candidate_pool_is_reported_not_hidden():
    rows = demo_golden_rows(rows_per_stratum=42)
    split = assign_split(rows, b"k1")
    saturation = saturation_by_stratum(scores_for(rows))
    plan = plan_rotation(rows, split, saturation, reserve_rows("candidate", 1), b"k1", SNAP)
    assert plan.cohorts["2026-q3"]["unreplaced_groups"] > 0
    assert any(r["replaced_by"] is None for r in plan.retire)


def test_the_rotation_plan_asset_writes_a_private_plan_and_shows_dagster_only_counts(tmp_path, simulator):
    """Through Dagster: the plan is a file in the private store (it names holdout rows); the
    materialization shows counts (per cohort, stratum and side), never a holdout row."""
    import json

    import dagster as dg
    import yaml

    from bench_assets.golden.planted import reserve_size
    from bench_assets_tests.helpers import (
        GOLDEN_STAGES,
        SNAPSHOT,
        VENDOR_STAGES,
        make_home,
        materialize,
        register_partitions,
        vendor_key,
    )

    home = make_home(tmp_path, ["brave"], rows_per_stratum=30)
    sim = simulator.base_url
    with dg.instance_for_test() as instance:
        register_partitions(instance, [SNAPSHOT])
        materialize(instance, home, sim, GOLDEN_STAGES, SNAPSHOT)
        materialize(instance, home, sim, VENDOR_STAGES, vendor_key("brave"))
        result = materialize(instance, home, sim, ("vendor_leaderboard", "rotation_plan"), SNAPSHOT)
        private = home / "data" / "private"
        plan = yaml.safe_load((private / "rotation" / f"{SNAPSHOT}.yaml").read_text())
        n_rows = sum(c["rows"] for c in plan["cohorts"].values())
        assert abs(len(plan["retire"]) - 0.25 * n_rows) <= 1.5
        by_id = {r.id: r for r in reserve_rows("candidate", reserve_size(30 // 3))}  # the planted pool
        incoming = [by_id[rep["row_id"]] for rep in plan["replacements"]]
        groups = split_groups(incoming)
        for stratum in {r.stratum for r in incoming}:
            pages = {groups[r.id] for r in incoming if r.stratum == stratum}
            held = {
                groups[rep["row_id"]]
                for rep in plan["replacements"]
                if rep["stratum"] == stratum and rep["takes_split"] == "holdout"
            }
            assert len(held) == round(0.3 * len(pages)), (stratum, len(held), len(pages))
        meta = result.asset_materializations_for_node("rotation_plan")[0].metadata
        assert meta["replacements"].value == len(plan["replacements"])
        logged = "\n".join(dg.serialize_value(e) for run in instance.get_runs() for e in instance.all_logs(run.run_id))
        holdout = [
            json.loads(line)["id"] for line in (private / "holdout" / f"{SNAPSHOT}.jsonl").read_text().splitlines()
        ]
        assert holdout and not [h for h in holdout if h in logged]
        assert not [
            rep["row_id"] for rep in plan["replacements"] if rep["takes_split"] == "holdout" and rep["row_id"] in logged
        ]
