"""Rotation planning: 25 % of every cohort retires, biased toward strata where vendors saturate,
each retired group replaced from its stratum's candidate pool on the same side of the split."""

from __future__ import annotations

import pandas as pd

from bench_assets.golden import GoldenRow
from bench_assets.integrity.rotation import plan_rotation, saturation_by_stratum
from bench_assets.simulator.corpus import demo_golden_rows, reserve_rows
from bench_assets.split import assign_split

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
            out.append({"vendor": v, "stratum": r.stratum, "response_class": "ok",
                        "correct": r.stratum in SATURATED or i % 3 == 0})
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
        # each retired group is replaced from its own stratum, on the same side of the split
        by_id = {c.id: c for c in candidates}
        for r in plan.retire:
            assert r["replaced_by"], r
            assert {by_id[c].stratum for c in r["replaced_by"]} == {r["stratum"]}
        sides = {r["group"]: r["split"] for r in plan.retire}
        for rep in plan.replacements:
            assert rep["takes_split"] == sides[rep["replaces_group"]]
        assert len({c for r in plan.retire for c in r["replaced_by"]}) == len(plan.replacements)


def test_without_saturation_differences_the_draw_is_proportional_and_keyed():
    rows = demo_golden_rows(rows_per_stratum=42)
    split = assign_split(rows, b"k1")
    flat = {s: 0.5 for s in {r.stratum for r in rows}}
    candidates = reserve_rows("candidate", 14)
    a = plan_rotation(rows, split, flat, candidates, b"k1", SNAP)
    assert plan_rotation(rows, split, flat, candidates, b"k1", SNAP) == a  # reproducible by the operator
    assert plan_rotation(rows, split, flat, candidates, b"k2", SNAP).retire != a.retire  # keyed by the secret
    assert len(a.retire) == 63
    assert max(a.cohorts["2026-q3"]["retired_by_stratum"].values()) <= 24


def test_a_short_candidate_pool_is_reported_not_hidden():
    rows = demo_golden_rows(rows_per_stratum=42)
    split = assign_split(rows, b"k1")
    saturation = saturation_by_stratum(scores_for(rows))
    plan = plan_rotation(rows, split, saturation, reserve_rows("candidate", 1), b"k1", SNAP)
    assert plan.cohorts["2026-q3"]["unreplaced_groups"] > 0
    assert any(r["replaced_by"] is None for r in plan.retire)
