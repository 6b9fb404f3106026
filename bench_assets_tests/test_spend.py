"""Spend: what `bench estimate` promises before a run is what the vendors then bill, and a
per-vendor ceiling stops a fetch (recorded, not crashed) instead of overspending.

A live run costs real money; an operator must know the bill before pressing the button, and a
bug or a runaway retry must never spend past the ceiling pinned in the manifest.
"""

from __future__ import annotations

import json
from collections import defaultdict

import dagster as dg
import duckdb
import pytest

from bench_assets.defs.partitions import VENDORS
from bench_assets.estimate import estimate_spend
from bench_assets.manifest import load_manifest
from bench_assets.simulator.corpus import demo_golden_rows
from bench_assets_tests.helpers import (GOLDEN_STAGES, SNAPSHOT, VENDOR_STAGES, make_home, materialize,
                                        run_whole_snapshot, vendor_key)

ROWS_PER_STRATUM = 6


def decoy_calls_and_spend(home, vendor: str) -> tuple[dict[str, int], float]:
    """Decoy queries are sent and billed like any other, but never scored: read them from the archive."""
    from bench_assets.adapters import get_adapter
    from bench_assets.fetch import archived_spend

    manifest = load_manifest(home / "data" / "snapshots" / SNAPSHOT / "manifest.yaml")
    con = duckdb.connect(str(home / "data" / "warehouse" / "bench.duckdb"), read_only=True)
    try:
        raw = con.execute("SELECT * FROM raw_responses WHERE vendor = ? AND role = 'decoy'", [vendor]).df()
    finally:
        con.close()
    if raw.empty:
        return {}, 0.0
    spec = manifest.vendors[vendor]
    spend = float(archived_spend(get_adapter(spec.adapter), spec.prices_usd, raw).sum())
    calls = raw[raw["final"]].groupby("capability").size().to_dict()
    return {k: int(v) for k, v in calls.items()}, spend
# Jina's Reader bills the tokens of the page it returns, which no one knows before the call.
USAGE_BILLED = {"jina"}


@pytest.fixture(scope="module")
def billed_run(tmp_path_factory, simulator):
    import httpx

    home = make_home(tmp_path_factory.mktemp("spend"), VENDORS, rows_per_stratum=ROWS_PER_STRATUM)
    httpx.post(f"{simulator.base_url}/_sim/reset", timeout=5)
    with dg.instance_for_test() as instance:
        run_whole_snapshot(instance, home, simulator.base_url, VENDORS)
    billing = httpx.get(f"{simulator.base_url}/_sim/billing", timeout=5).json()
    billed = defaultdict(float)
    for entry in billing:
        billed[entry["vendor"]] += entry["usd"]
    return home, dict(billed)


def test_estimate_matches_what_the_simulated_vendors_bill(billed_run):
    home, billed = billed_run
    manifest = load_manifest(home / "data" / "snapshots" / SNAPSHOT / "manifest.yaml")
    rows = demo_golden_rows(rows_per_stratum=ROWS_PER_STRATUM)
    assert {e.vendor for e in estimate_spend(manifest, rows)} == set(VENDORS)
    for vendor in VENDORS:
        decoys, _ = decoy_calls_and_spend(home, vendor)
        est = next(e for e in estimate_spend(manifest, rows, extra_calls=decoys) if e.vendor == vendor)
        assert not est.unpriced_units, (vendor, est.unpriced_units)
        if vendor in USAGE_BILLED:
            assert billed[vendor] == pytest.approx(est.usd, rel=0.25), vendor
        else:
            assert billed[vendor] == pytest.approx(est.usd, rel=1e-9, abs=1e-9), (vendor, billed[vendor], est.usd)


def test_published_spend_equals_the_billing_log(billed_run):
    home, billed = billed_run
    board = json.loads((home / "data" / "publish" / SNAPSHOT / "leaderboard.json").read_text())
    for e in board["vendors"]:
        if e["status"] == "scored":
            _, decoy_spend = decoy_calls_and_spend(home, e["vendor"])
            published = e["metrics"]["spend_usd"]["value"]
            assert published + decoy_spend == pytest.approx(billed[e["vendor"]], abs=1e-6), e["vendor"]


def test_spend_ceiling_stops_the_fetch_and_records_it(tmp_path, simulator, sim_logs):
    ceiling = 0.05  # Exa: $0.017 a search with text, so the ceiling is reached after a few calls

    def tighten(data):
        data["vendors"]["exa"].update(spend_ceiling_usd=ceiling, concurrency=1)

    home = make_home(tmp_path, ["exa"], rows_per_stratum=ROWS_PER_STRATUM, edit=tighten)
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("snapshots", [SNAPSHOT])
        materialize(instance, home, simulator.base_url, GOLDEN_STAGES, SNAPSHOT)
        result = materialize(instance, home, simulator.base_url, VENDOR_STAGES, vendor_key("exa"))
        assert result.success
    spent = sum(e["usd"] for e in sim_logs.billing())
    assert ceiling <= spent < ceiling + 0.02  # at most the one call that crossed it
    con = duckdb.connect(str(home / "data" / "warehouse" / "bench.duckdb"), read_only=True)
    try:
        stopped = con.execute("SELECT count(*) FROM raw_responses WHERE transport_error = 'spend_ceiling_reached' "
                              "AND role <> 'decoy'").fetchone()[0]
        classes = dict(con.execute("SELECT response_class, count(*) FROM row_scores GROUP BY 1").fetchall())
        total = con.execute("SELECT count(*) FROM golden_rows").fetchone()[0]
    finally:
        con.close()
    assert stopped > 0
    assert classes["quota"] == stopped  # recorded as evidence and counted as failures, not dropped
    assert sum(classes.values()) == total
