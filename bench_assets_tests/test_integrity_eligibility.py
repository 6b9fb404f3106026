"""Headline eligibility of every published aggregate: live mode only, n ≥ 10 for an aggregate and
≥ 20 for a per-stratum chart, adapter and plan pinned, the first full run complete."""

from __future__ import annotations

import pandas as pd
import yaml

from bench_assets.aggregate import vendor_metrics
from bench_assets.leaderboard import build_leaderboard, leaderboard_rows
from bench_assets.manifest import parse_manifest
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
            rows.append({"snapshot_id": SNAP, "vendor": "exa", "row_id": f"{stratum}-{i}", "split": "public",
                         "stratum": stratum, "cohort": "2026-q3", "task_type": "search", "response_class": "ok",
                         "correct": i % 2 == 0, "hit_at_1": True, "hit_at_3": True, "hit_at_5": True,
                         "hit_at_10": True, "fidelity": None, "billed_usd": 0.01, "latency_ms": 100.0})
    return pd.DataFrame(rows)


def entry(m, per_stratum, complete=True):
    board = build_leaderboard(m, vendor_metrics(SNAP, scores(per_stratum)), {"exa"} if complete else set())
    return board, next(e for e in board["vendors"] if e["vendor"] == "exa")


def test_a_live_pinned_complete_vendor_with_enough_rows_is_headline():
    board, e = entry(manifest(), {"finance": 25, "docs": 12})
    assert e["headline_eligible"] and e["reasons"] == [] and board["headline_eligible"]
    strata = e["breakdown_eligibility"]["stratum"]
    assert strata["finance"] == {"headline_eligible": True, "reasons": []}
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
    assert e["reasons"] == ["adapter not pinned: the manifest pins exa version 7, the code is version 1"]
    _, e = entry(manifest(edit=no_pricing_page), {"finance": 25})
    assert e["reasons"] == ["plan not pinned: no archived pricing page (pricing_source) for its prices"]
    board, _ = entry(manifest(edit=no_pricing_page), {"finance": 25})
    assert board["headline_eligible"] is False
    assert "plan not pinned" in leaderboard_rows(board)[0]["reasons"]
