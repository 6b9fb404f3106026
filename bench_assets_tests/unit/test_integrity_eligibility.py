"""Headline eligibility of every published figure: live mode only, an operator declaration, n ≥ 10
for an aggregate and ≥ 20 for a per-stratum chart (each figure by its own n), adapter and plan
pinned, the first full run complete; charts that are not eligible say "Illustrative"."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

from bench_assets.aggregate.declaration import declaration_reasons, disclosures_markdown
from bench_assets.aggregate.eligibility import snapshot_reasons
from bench_assets.aggregate.figures import vendor_metrics
from bench_assets.aggregate.leaderboard import build_leaderboard, leaderboard_rows
from bench_assets.manifest import parse_manifest
from bench_assets.publish import charts
from bench_assets.storage.warehouse import Warehouse
from bench_assets_tests.helpers import DEMO_MANIFEST

SNAP = "web_search-2026-q3"


def manifest(mode: str = "live", edit=None):
    data = yaml.safe_load(DEMO_MANIFEST.read_text())
    data["mode"] = mode
    data["vendors"] = {"exa": data["vendors"]["exa"]}
    if edit:
        edit(data)
    return parse_manifest(yaml.safe_dump(data), "manifest.yaml")


def scores(per_stratum: dict[str, int]) -> pd.DataFrame:
    rows = []
    for stratum, n in per_stratum.items():
        for i in range(n):
            rows.append(
                {
                    "snapshot_id": SNAP,
                    "vendor": "exa",
                    "row_id": f"{stratum}-{i}",
                    "split": "public",
                    "stratum": stratum,
                    "cohort": "2026-q3",
                    "task_type": "search",
                    "response_class": "ok",
                    "correct": i % 2 == 0,
                    "hit_at_1": True,
                    "hit_at_3": True,
                    "hit_at_5": True,
                    "hit_at_10": True,
                    "fidelity": None,
                    "billed_usd": 0.01,
                    "latency_ms": 100.0,
                }
            )
    return pd.DataFrame(rows)


def entry(m, per_stratum, complete=True):
    board = build_leaderboard(m, vendor_metrics(SNAP, scores(per_stratum)), {"exa"} if complete else set())
    return board, next(e for e in board["vendors"] if e["vendor"] == "exa")


def test_a_live_pinned_complete_vendor_with_enough_rows_is_headline():
    board, e = entry(manifest(), {"finance": 25, "docs": 12})
    assert e["headline_eligible"] and e["reasons"] == [] and board["headline_eligible"]
    strata = e["breakdown_eligibility"]["stratum"]
    assert strata["finance"]["headline_eligible"] and strata["finance"]["reasons"] == []
    assert strata["finance"]["metrics"]["hit_at_1"] == {"headline_eligible": True, "reasons": []}
    assert not strata["docs"]["headline_eligible"]  # 12 rows: enough for an aggregate, not for a stratum chart
    assert strata["docs"]["reasons"] == ["n = 12 < 20 rows behind a per-stratum chart"]
    assert e["breakdown_eligibility"]["task_type"]["search"]["headline_eligible"]
    assert leaderboard_rows(board)[0]["headline_eligible"] is True


def test_every_failing_rule_is_a_reason():
    for mode in ("simulated", "replay"):
        _, e = entry(manifest(mode), {"finance": 25})
        assert not e["headline_eligible"] and any(f"{mode} mode" in r for r in e["reasons"])
    _, e = entry(manifest(), {"finance": 9})
    assert e["reasons"] == ["n = 9 < 10 rows behind the aggregate"]
    _, e = entry(manifest(), {"finance": 25}, complete=False)
    assert e["reasons"] == ["the snapshot's first full run is not complete for this vendor"]
    assert not e["breakdown_eligibility"]["stratum"]["finance"]["headline_eligible"]


def test_adapter_and_plan_must_be_pinned():
    def unpinned_adapter(d):
        d["vendors"]["exa"]["adapter_version"] = "7"

    def no_pricing_page(d):
        d["vendors"]["exa"].pop("pricing_source", None)

    _, e = entry(manifest(edit=unpinned_adapter), {"finance": 25})
    assert e["reasons"] == ["adapter not pinned: the manifest pins exa version 7, the code is version 2"]
    # a live manifest must name its pricing page (the manifest refuses it otherwise); a replay may not
    _, e = entry(manifest("replay", edit=no_pricing_page), {"finance": 25})
    assert e["reasons"][1:] == ["plan not pinned: no archived pricing page (pricing_source) for its prices"]
    board, _ = entry(manifest("replay", edit=no_pricing_page), {"finance": 25})
    assert board["headline_eligible"] is False
    assert "plan not pinned" in leaderboard_rows(board)[0]["reasons"]


# ##### EACH FIGURE BY ITS OWN n


def mixed_scores(per_stratum: dict[str, dict[str, int]], holdout_every: int = 0) -> pd.DataFrame:
    """Rows of several task types per stratum; every `holdout_every`-th row is holdout."""
    rows = []
    for stratum, tasks in per_stratum.items():
        for task, n in tasks.items():
            for i in range(n):
                rows.append(
                    {
                        "snapshot_id": SNAP,
                        "vendor": "exa",
                        "row_id": f"{stratum}-{task}-{i}",
                        "split": "holdout" if holdout_every and i % holdout_every == 0 else "public",
                        "stratum": stratum,
                        "cohort": "2026-q3",
                        "task_type": task,
                        "response_class": "ok",
                        "correct": i % 3 != 0,
                        "hit_at_1": task == "search",
                        "hit_at_3": task == "search",
                        "hit_at_5": task == "search",
                        "hit_at_10": task == "search",
                        "fidelity": 0.9 if task == "extract" else None,
                        "billed_usd": 0.01,
                        "latency_ms": 80.0,
                    }
                )
    return pd.DataFrame(rows)


def board_of(m, scores: pd.DataFrame, extra: pd.DataFrame | None = None, **kw):
    metrics = vendor_metrics(SNAP, scores)
    if extra is not None:
        metrics = pd.concat([metrics, extra], ignore_index=True)
    board = build_leaderboard(m, metrics, {"exa"}, **kw)
    return board, next(e for e in board["vendors"] if e["vendor"] == "exa")


def test_a_per_stratum_hit_at_k_chart_rests_on_the_strata_search_rows_only():
    # 30 rows in each stratum (enough for a chart by correct rate), of which only 12 are search rows
    board, e = board_of(
        manifest(), mixed_scores({s: {"search": 12, "extract": 9, "answer": 9} for s in ("finance", "docs")})
    )
    finance = e["breakdown_eligibility"]["stratum"]["finance"]
    assert finance["headline_eligible"]  # the stratum's correct rate rests on 30 rows
    assert finance["metrics"]["correct_rate"]["headline_eligible"]
    for metric in ("hit_at_1", "hit_at_10"):
        assert finance["metrics"][metric] == {
            "headline_eligible": False,
            "reasons": [f"n = 12 < 20 rows behind {metric} (a per-stratum chart)"],
        }
    ok, reasons = charts.hit_at_k_eligibility(board)
    assert not ok and "n = 12 < 20 rows behind hit_at_1 (a per-stratum chart)" in reasons
    # with 20 search rows per stratum the same chart is headline-eligible
    board, _ = board_of(manifest(), mixed_scores({s: {"search": 20, "extract": 5} for s in ("finance", "docs")}))
    assert charts.hit_at_k_eligibility(board) == (True, [])


def test_every_published_figure_carries_its_own_eligibility():
    ttr = pd.DataFrame(
        [
            [SNAP, "exa", "overall", "all", "ttr_median_hours", 12.0, 4, 6.0, 30.0],
            [SNAP, "exa", "overall", "all", "ttr_probes", 40.0, 4, None, None],
        ],
        columns=["snapshot_id", "vendor", "scope", "scope_value", "metric", "value", "n", "low", "high"],
    )
    # 40 search, 6 extract rows; 1 row in 8 is holdout (5 holdout rows of search, 1 of extract)
    _, e = board_of(manifest(), mixed_scores({"finance": {"search": 40, "extract": 6}}, holdout_every=8), ttr)
    verdicts = e["metric_eligibility"]
    assert set(verdicts) == set(e["metrics"])
    assert verdicts["correct_rate"]["headline_eligible"] and verdicts["hit_at_1"]["headline_eligible"]
    assert verdicts["fidelity_mean"]["reasons"] == ["n = 6 < 10 rows behind fidelity_mean (the aggregate)"]
    assert verdicts["overfit_gap"]["reasons"] == ["n = 6 < 10 holdout rows behind the overfit gap (the aggregate)"]
    assert verdicts["ttr_median_hours"]["reasons"] == [
        "n = 4 < 10 sentinel pages behind ttr_median_hours (the aggregate)"
    ]
    assert verdicts["latency_p50_ms"]["headline_eligible"]  # 46 timed responses
    assert verdicts["spend_usd"]["headline_eligible"] and verdicts["ttr_probes"]["headline_eligible"]  # totals
    assert verdicts["cost_per_correct_usd"]["headline_eligible"]
    _, few = board_of(manifest(), mixed_scores({"finance": {"search": 8}}))
    assert few["metric_eligibility"]["cost_per_correct_usd"]["reasons"] == [
        "n = 8 < 10 rows behind cost_per_correct_usd (the aggregate)"
    ]
    # a simulated run: every figure illustrative, whatever its n
    _, sim = board_of(manifest("simulated"), mixed_scores({"finance": {"search": 40}}))
    assert not any(v["headline_eligible"] for v in sim["metric_eligibility"].values())


def test_charts_that_are_not_headline_eligible_say_illustrative():
    eligible, _ = board_of(manifest(), mixed_scores({s: {"search": 25} for s in ("finance", "docs")}, holdout_every=2))
    simulated, _ = board_of(
        manifest("simulated"), mixed_scores({s: {"search": 25} for s in ("finance", "docs")}, holdout_every=2)
    )
    for build in (charts.cost_accuracy_figure, charts.overfit_gap_figure, charts.hit_at_k_by_stratum_figure):
        assert b"Illustrative" not in charts.render(build(eligible)), build.__name__
        svg = charts.render(build(simulated)).decode()
        assert "Illustrative, not headline-eligible: simulated mode" in svg, build.__name__
    by_name = {c.name: c for c in charts.site_charts(simulated)}
    assert not by_name["overfit_gap"].headline_eligible
    assert by_name["overfit_gap"].caption.startswith("Illustrative, not headline-eligible: simulated mode")
    assert all(c.headline_eligible for c in charts.site_charts(eligible) if c.name not in ("ttr_km", "pairwise"))
    assert not {c.name: c for c in charts.site_charts(eligible)}["ttr_km"].headline_eligible  # no curves at all
    assert not {c.name: c for c in charts.site_charts(eligible)}["pairwise"].headline_eligible  # one vendor, no pair


# ##### THE OPERATOR DECLARATION


DECLARATION = """---
operator: bench maintainers (Jane Doe)
declared_on: 2026-09-28
relationships:
  - vendor: exa
    relationship: USD 50 of free API credits
---
We bought every plan at its published price.
"""


@pytest.mark.parametrize(
    "text, reason",
    [
        (None, "no operator declaration filed (disclosures.md with its front matter beside the manifest)"),
        ("We have no conflicts.\n", "disclosures.md has no front matter (operator, declared_on, relationships)"),
        (DECLARATION.replace("2026-09-28", "last autumn"), "disclosures.md:3: field 'declared_on'"),
        (
            DECLARATION.replace("relationships:\n  - vendor: exa\n    relationship: USD 50 of free API credits\n", ""),
            "field 'relationships': Field required",
        ),
        (DECLARATION.replace("operator:", "operatr:"), "field 'operatr': Extra inputs are not permitted"),
    ],
)
def test_a_live_snapshot_needs_a_valid_operator_declaration(tmp_path, text, reason):
    if text is not None:
        (tmp_path / "disclosures.md").write_text(text)
    reasons = declaration_reasons(tmp_path, "live")
    assert len(reasons) == 1 and reason in reasons[0], reasons
    assert declaration_reasons(tmp_path, "simulated") == []  # never headline anyway: its own reason says so
    board, e = board_of(manifest(), mixed_scores({"finance": {"search": 25}}), snapshot_reasons=reasons)
    assert not board["headline_eligible"] and reasons[0] in e["reasons"]
    assert not any(v["headline_eligible"] for v in e["metric_eligibility"].values())


def test_a_valid_declaration_is_read_beside_the_registered_manifest_and_shown(tmp_path):
    snapshot_dir = tmp_path / "snapshots" / SNAP
    snapshot_dir.mkdir(parents=True)
    warehouse = Warehouse(tmp_path / "bench.duckdb")
    warehouse.replace_rows(
        "snapshots",
        pd.DataFrame(
            [
                {
                    "snapshot_id": SNAP,
                    "mode": "live",
                    "manifest_path": str(snapshot_dir / "manifest.yaml"),
                    "status": "draft",
                }
            ]
        ),
        {"snapshot_id": SNAP},
    )
    live = manifest()
    assert "no operator declaration filed" in snapshot_reasons(warehouse, live)[0]
    (snapshot_dir / "disclosures.md").write_text(DECLARATION)
    assert snapshot_reasons(warehouse, live) == []
    _board, e = board_of(live, mixed_scores({"finance": {"search": 25}}), snapshot_reasons=[])
    assert e["headline_eligible"]
    shown = disclosures_markdown(snapshot_dir / "disclosures.md")
    assert shown.startswith(
        "**Operator declaration.** bench maintainers (Jane Doe) declared on 2026-09-28 these "
        "financial relationships with vendors: **exa**: USD 50 of free API credits."
    )
    assert "We bought every plan at its published price." in shown and "declared_on:" not in shown
