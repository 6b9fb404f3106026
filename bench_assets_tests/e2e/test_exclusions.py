"""Exclusions: a vendor listed in the manifest's `excluded` is never called, never scored, never
estimated, and every surface lists it with its reason.

What makes "never called" hold is the manifest: an excluded vendor cannot also be configured in
`vendors` (the manifest is refused, naming the field), so it has no endpoint, key or price to be
called with. The tests check that rule, and then what the pipeline does with such a manifest:
Kagi, a vendor with a working adapter and simulator, is excluded (and so not configured), its
vendor partition is materialized anyway (as a backfill of every vendor partition would), and the
simulator's own request and billing logs show that nothing reached it, nothing of it was
archived, scored or estimated, and the published leaderboard, CSV and exclusions ledger list it
with its reason.
"""

from __future__ import annotations

import csv
import json

import dagster as dg
import duckdb
import pytest
import yaml
from selectolax.lexbor import LexborHTMLParser as HTMLParser

from bench_assets.errors import BenchInputError
from bench_assets.fetch.estimate import estimate_spend
from bench_assets.golden.planted import demo_golden_rows
from bench_assets.manifest import load_manifest
from bench_assets_tests.helpers import DEMO_MANIFEST, SNAPSHOT, make_home, run_whole_snapshot

REASON = "The plan's terms forbid publishing benchmark results (clause 7.3)."
ROWS_PER_STRATUM = 5


def exclude_kagi(data: dict) -> None:
    data["excluded"].append(
        {
            "vendor": "kagi",
            "reason_code": "terms_prohibit_evaluation",
            "reason": REASON,
            "evidence": "data/pricing/kagi.md, archived 2026-11-22",
            "decided_by": "test",
        }
    )


def test_a_vendor_both_configured_and_excluded_is_refused_naming_the_field(tmp_path):
    def configure_and_exclude_kagi(data: dict) -> None:
        exclude_kagi(data)
        data["vendors"]["kagi"] = yaml.safe_load(DEMO_MANIFEST.read_text())["vendors"]["kagi"]

    home = make_home(tmp_path, ["brave"], rows_per_stratum=ROWS_PER_STRATUM, edit=configure_and_exclude_kagi)
    path = home / "data" / "snapshots" / SNAPSHOT / "manifest.yaml"
    with pytest.raises(BenchInputError) as refused:
        load_manifest(path)
    [(line, field, message)] = refused.value.problems
    n = len(yaml.safe_load(DEMO_MANIFEST.read_text())["excluded"])  # the demo's own are excluded.0 … n-1
    assert field == f"excluded.{n}.vendor" and "kagi" in message
    assert path.read_text().splitlines()[line - 1].strip() == "- vendor: kagi"
    assert f"{path}:{line}: field 'excluded.{n}.vendor'" in str(refused.value)


@pytest.fixture(scope="module")
def excluded_run(tmp_path_factory, simulator):
    import httpx

    home = make_home(
        tmp_path_factory.mktemp("excluded"), ["brave"], rows_per_stratum=ROWS_PER_STRATUM, edit=exclude_kagi
    )
    httpx.post(f"{simulator.base_url}/_sim/reset", timeout=5)
    with dg.instance_for_test() as instance:
        run_whole_snapshot(instance, home, simulator.base_url, ["brave", "kagi"])  # kagi's partition runs too
    requests = httpx.get(f"{simulator.base_url}/_sim/requests", timeout=5).json()
    billing = httpx.get(f"{simulator.base_url}/_sim/billing", timeout=5).json()
    return home, requests, billing


def test_an_excluded_vendor_is_never_called(excluded_run):
    _, requests, billing = excluded_run
    assert {r["vendor"] for r in requests if r.get("vendor")} >= {"brave"}  # the run did call vendors
    assert not [r for r in requests if r.get("vendor") == "kagi" or "kagi.com" in (r.get("host") or "")]
    assert not [b for b in billing if b["vendor"] == "kagi"]


def test_an_excluded_vendor_is_never_scored_nor_estimated(excluded_run):
    home, _, _ = excluded_run
    con = duckdb.connect(str(home / "data" / "warehouse" / "bench.duckdb"), read_only=True)
    try:
        counts = {
            table: con.execute(f"SELECT count(*) FROM {table} WHERE vendor = 'kagi'").fetchone()[0]
            for table in ("raw_responses", "row_scores", "vendor_metrics")
        }
        brave = con.execute("SELECT count(*) FROM row_scores WHERE vendor = 'brave'").fetchone()[0]
    finally:
        con.close()
    assert counts == {"raw_responses": 0, "row_scores": 0, "vendor_metrics": 0}
    assert brave > 0
    manifest = load_manifest(home / "data" / "snapshots" / SNAPSHOT / "manifest.yaml")
    estimated = {e.vendor for e in estimate_spend(manifest, demo_golden_rows(rows_per_stratum=ROWS_PER_STRATUM))}
    assert "kagi" not in estimated


def test_every_surface_lists_the_exclusion_with_its_reason(excluded_run):
    home, _, _ = excluded_run
    out = home / "data" / "publish" / SNAPSHOT
    board = json.loads((out / "leaderboard.json").read_text())
    [kagi] = [e for e in board["vendors"] if e["vendor"] == "kagi"]
    assert kagi["status"] == "excluded" and kagi["reason"] == REASON
    assert not kagi.get("metrics")
    rows = {r["vendor"]: r for r in csv.DictReader((out / "leaderboard.csv").open())}
    assert rows["kagi"]["status"] == "excluded"
    ledger = json.loads((out / "exclusions.json").read_text())["exclusions"]
    [entry] = [e for e in ledger if e.get("vendor") == "kagi" or e.get("item") == "kagi"]
    assert entry["reason_code"] == "terms_prohibit_evaluation"
    row = HTMLParser((out / "exclusions.html").read_text()).css_first("tr#kagi")
    assert row is not None and REASON in row.text()
    assert not (out / "vendors" / "kagi.html").exists()  # no vendor page: there is nothing scored to show
