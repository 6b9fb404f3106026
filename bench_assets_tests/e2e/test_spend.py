"""Spend: what `bench estimate` promises before a run is what the vendors then bill, and a
per-vendor ceiling stops a fetch (recorded, not crashed) instead of overspending.

A live run costs real money; an operator must know the bill before pressing the button, and a
bug or a runaway retry must never spend past the ceiling pinned in the manifest. So the real
command (`bench estimate SNAPSHOT --json`) runs first, before anything is called, and its figures
are held to the simulated vendors' own billing log after the run: to the cent for every vendor
billed per request, credit or result. Jina bills the tokens of the pages it returns, which no one
knows before the call: its estimate figures every page at the adapter's stated size and says so
(its caveat), so there the bill must lie between Jina's documented minimum and the estimate, and
every call must bill no more than the estimate figured for it.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections import defaultdict

import dagster as dg
import duckdb
import httpx
import pytest

from bench_assets.adapters import available_adapters, get_adapter
from bench_assets.adapters.base import VendorTask
from bench_assets.cli import main as cli
from bench_assets.manifest import load_manifest
from bench_assets_tests.helpers import (
    GOLDEN_STAGES,
    SNAPSHOT,
    VENDOR_STAGES,
    make_home,
    materialize,
    register_partitions,
    run_whole_snapshot,
    vendor_key,
)

# What the estimate-against-bill claim needs: every adapter (each bills its own unit: requests,
# credits, results, tokens), one configuration each (a mode changes the price, not how the bill is
# counted: test_configurations bills two modes of one provider); and two pages a stratum, the
# fewest at which the keyed split holds rows out, so the holdout's and the decoys' calls are
# estimated and billed too (at one page a stratum there is no holdout and no decoy).
VENDORS = sorted(available_adapters())  # every vendor there is
ROWS_PER_STRATUM = 6
USAGE_BILLED = {"jina"}  # bills usage (tokens) no one knows before the call
RESULT_BILLED = {"valyu"}  # bills each result returned: the estimate (a full page) is the most it bills
# Bills whole credits for every fifth successful URL of a key (Tavily extract): the estimate is the
# per-URL average, so the bill is within one block of it, wherever the key's count stood.
AMORTISED = {"tavily": 1 * 0.008}


def decoy_calls_and_spend(home, vendor: str) -> tuple[dict[str, int], float]:
    """Decoy queries are sent and billed like any other, but never scored: read them from the archive."""
    from bench_assets.fetch.spend import archived_spend

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


def bench_estimate(home) -> dict:
    """`bench estimate SNAPSHOT --json`, the real command, run against the bench home."""
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as env, contextlib.redirect_stdout(out):
        env.setenv("BENCH_HOME", str(home))
        env.delenv("BENCH_PRIVATE_DIR", raising=False)
        assert cli.main(["estimate", SNAPSHOT, "--json"]) == 0
    return json.loads(out.getvalue())


@pytest.fixture(scope="module")
def billed_run(tmp_path_factory, simulator):
    home = make_home(tmp_path_factory.mktemp("spend"), VENDORS, rows_per_stratum=ROWS_PER_STRATUM)
    httpx.post(f"{simulator.base_url}/_sim/reset", timeout=5)
    estimate = bench_estimate(home)
    assert httpx.get(f"{simulator.base_url}/_sim/billing", timeout=5).json() == []  # nothing was called
    with dg.instance_for_test() as instance:
        run_whole_snapshot(instance, home, simulator.base_url, VENDORS)
    billing = httpx.get(f"{simulator.base_url}/_sim/billing", timeout=5).json()
    billed = defaultdict(float)
    for entry in billing:
        billed[entry["vendor"]] += entry["usd"]
    return home, dict(billed), estimate, billing


def test_the_estimate_made_before_the_run_is_what_the_simulated_vendors_bill(billed_run):
    home, billed, estimate, _billing = billed_run
    by_vendor = {e["vendor"]: e for e in estimate["vendors"]}
    assert set(by_vendor) == set(VENDORS) and estimate["decoy_calls"]  # decoys are estimated too
    con = duckdb.connect(str(home / "data" / "warehouse" / "bench.duckdb"), read_only=True)
    try:
        sent = con.execute(
            "SELECT vendor, capability, count(*) FROM raw_responses WHERE final GROUP BY 1, 2"
        ).fetchall()
    finally:
        con.close()
    calls = defaultdict(dict)
    for vendor, capability, n in sent:
        calls[vendor][capability] = n
    for vendor in VENDORS:
        est = by_vendor[vendor]
        assert est["calls"] == calls[vendor], vendor  # every query, holdout and decoy the run sent
        assert not est["unpriced_units"] and est["within_ceiling"], vendor
        if vendor in USAGE_BILLED:
            continue
        if vendor in AMORTISED:
            assert est["caveat"] and "fifth" in est["caveat"]
            assert abs(billed[vendor] - est["usd"]) <= AMORTISED[vendor] + 1e-9, (vendor, billed[vendor], est["usd"])
            continue
        if vendor in RESULT_BILLED:
            assert est["caveat"] and "result" in est["caveat"]
            assert 0 < billed[vendor] <= est["usd"] + 1e-9, (vendor, billed[vendor], est["usd"])
            continue
        assert est["caveat"] is None
        assert billed[vendor] == pytest.approx(est["usd"], rel=1e-9, abs=1e-9), (vendor, billed[vendor], est["usd"])
    assert estimate["total_usd"] == pytest.approx(sum(e["usd"] for e in estimate["vendors"]))


def test_jinas_bill_lies_between_its_documented_minimum_and_the_estimate(billed_run):
    home, billed, estimate, billing = billed_run
    jina = next(e for e in estimate["vendors"] if e["vendor"] == "jina")
    price = load_manifest(home / "data" / "snapshots" / SNAPSHOT / "manifest.yaml").vendors["jina"].prices_usd["token"]
    assert "tokens" in jina["caveat"]  # the estimate says what it assumes
    adapter = get_adapter("jina")
    minimum = jina["calls"]["search"] * adapter.SEARCH_MIN_TOKENS_PER_10 * price  # a search bills at least this
    assert minimum <= billed["jina"] <= jina["usd"]
    # The estimate's assumption holds call by call: no call billed more tokens than it figured.
    figured = {cap: adapter.expected_units(VendorTask(cap, "", 10), {})["token"] for cap in ("search", "extract")}
    calls = [b for b in billing if b["vendor"] == "jina"]
    assert len(calls) == sum(jina["calls"].values())
    assert all(0 < b["units"]["token"] <= figured[b["endpoint"]] for b in calls)


def test_published_spend_equals_the_billing_log(billed_run):
    home, billed, _, _ = billed_run
    board = json.loads((home / "data" / "publish" / SNAPSHOT / "leaderboard.json").read_text())
    for e in board["vendors"]:
        if e["status"] == "scored":
            _, decoy_spend = decoy_calls_and_spend(home, e["vendor"])
            published = e["metrics"]["spend_usd"]["value"]
            assert published + decoy_spend == pytest.approx(billed[e["vendor"]], abs=1e-6), e["vendor"]


def test_spend_ceiling_stops_the_fetch_and_records_it(tmp_path, simulator, sim_logs):
    ceiling = 0.05  # Exa: $0.007 a search (text included), so the ceiling is reached after a few calls

    def tighten(data):
        data["vendors"]["exa"].update(spend_ceiling_usd=ceiling, concurrency=1)

    home = make_home(tmp_path, ["exa"], rows_per_stratum=ROWS_PER_STRATUM, edit=tighten)
    with dg.instance_for_test() as instance:
        register_partitions(instance, [SNAPSHOT])
        materialize(instance, home, simulator.base_url, GOLDEN_STAGES, SNAPSHOT)
        result = materialize(instance, home, simulator.base_url, VENDOR_STAGES, vendor_key("exa"))
        assert result.success
    spent = sum(e["usd"] for e in sim_logs.billing())
    assert ceiling <= spent < ceiling + 0.02  # at most the one call that crossed it
    con = duckdb.connect(str(home / "data" / "warehouse" / "bench.duckdb"), read_only=True)
    try:
        stopped = con.execute(
            "SELECT count(*) FROM raw_responses WHERE transport_error = 'spend_ceiling_reached' AND role <> 'decoy'"
        ).fetchone()[0]
        classes = dict(con.execute("SELECT response_class, count(*) FROM row_scores GROUP BY 1").fetchall())
        total = con.execute("SELECT count(*) FROM golden_rows").fetchone()[0]
    finally:
        con.close()
    assert stopped > 0
    assert classes["quota"] == stopped  # recorded as evidence and counted as failures, not dropped
    assert sum(classes.values()) == total
