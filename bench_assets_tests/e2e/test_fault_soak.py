"""Fault soak: a whole snapshot through Dagster with every simulator fault enabled at once.

A simulator started with `$BENCH_SIM_FAULTS` gives every vendor request a 4 % chance of each
fault kind (40 % of requests fault). The snapshot is materialized twice, the simulator reset in
between so both runs meet the same faults. The run must not crash, every query must end archived
with one final attempt and a class, the spend we publish must equal what the vendors billed (the
simulator's billing log), and the scores must be the same in both runs.

The vendors chosen price a call the same way for every query of a capability (Brave per request,
Exa in USD in its body, Firecrawl in credits in its body), so a billed response whose body never
arrived readable is priced exactly; see `fetch.archived_spend` for how it is estimated otherwise.
"""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import duckdb
import httpx
import pandas as pd
import pytest

from bench_assets.adapters import get_adapter
from bench_assets.fetch.classify import RESPONSE_CLASSES
from bench_assets.fetch.spend import archived_spend
from bench_assets.manifest import load_manifest
from bench_assets.simulator.faults import FAULT_KINDS
from bench_assets.simulator.server import start_simulator
from bench_assets_tests.helpers import (
    GOLDEN_STAGES,
    SNAPSHOT,
    VENDOR_STAGES,
    make_home,
    materialize,
    register_partitions,
    vendor_key,
)

VENDORS = ["brave", "exa", "firecrawl"]
# A slow body (0.2 s) finishes well inside the deadline (2.5 s) and a hang (3.5 s) well outside
# it, so the outcome of each fault does not depend on how busy the machine is. Retry-After is 0
# ("retry now") to keep the test fast; honouring a real wait is tested in test_fetch_faults.
PLAN = {
    "seed": "soak-1",
    "retry_after_seconds": 0,
    "hang_seconds": 3.5,
    "slow_body_seconds": 0.2,
    "vendors": {"*": dict.fromkeys(FAULT_KINDS, 0.04)},
}
# Ignored when comparing two runs: wall-clock latency, and ids the simulator numbers per process.
NOT_DETERMINISTIC = ["latency_ms", "request_id"]


def fast_retries(data: dict) -> None:
    for spec in data["vendors"].values():
        spec.pop("capability_rate_limits", None)
        spec.update(
            timeout_seconds=2.5,
            max_attempts=4,
            backoff_initial_seconds=0.05,
            backoff_max_seconds=0.4,
            retry_after_max_seconds=5,
        )


def table(home: Path, sql: str) -> pd.DataFrame:
    con = duckdb.connect(str(home / "data" / "warehouse" / "bench.duckdb"), read_only=True)
    try:
        return con.execute(sql).df()
    finally:
        con.close()


@pytest.fixture(scope="module")
def soak(tmp_path_factory):
    """Two runs of the same snapshot against one faulty simulator, reset in between."""
    sim = start_simulator(env={"BENCH_SIM_LATENCY_SCALE": "0.05", "BENCH_SIM_FAULTS": json.dumps(PLAN)})
    runs = []
    try:
        for n in (1, 2):
            httpx.post(f"{sim.base_url}/_sim/reset", timeout=5)
            home = make_home(tmp_path_factory.mktemp(f"soak{n}"), VENDORS, rows_per_stratum=6, edit=fast_retries)
            with dg.instance_for_test() as instance:  # every stage up to the aggregates (publishing is not at stake)
                register_partitions(instance, [SNAPSHOT])
                materialize(instance, home, sim.base_url, GOLDEN_STAGES, SNAPSHOT)
                for vendor in VENDORS:
                    materialize(instance, home, sim.base_url, VENDOR_STAGES, vendor_key(vendor))
                materialize(instance, home, sim.base_url, ("vendor_leaderboard",), SNAPSHOT)
            runs.append(
                {
                    "home": home,
                    "billing": httpx.get(f"{sim.base_url}/_sim/billing", timeout=5).json(),
                    "faults": httpx.get(f"{sim.base_url}/_sim/faults", timeout=5).json()["injected"],
                }
            )
    finally:
        sim.stop()
    return runs


def test_every_fault_kind_was_injected(soak):
    for run in soak:
        kinds = {f["fault"] for f in run["faults"]}
        assert kinds == set(FAULT_KINDS), set(FAULT_KINDS) - kinds
        assert {f["vendor"] for f in run["faults"]} == set(VENDORS)


def test_every_query_is_archived_once_as_final_and_classified(soak):
    home = soak[0]["home"]
    golden = table(home, f"SELECT count(*) n FROM golden_rows WHERE snapshot_id = '{SNAPSHOT}'")["n"][0]
    scores = table(home, "SELECT vendor, row_id, response_class FROM row_scores")
    assert len(scores) == golden * len(VENDORS)
    assert scores["response_class"].isin(RESPONSE_CLASSES).all()
    raw = table(home, "SELECT vendor, query_id, capability, attempt, final FROM raw_responses")
    finals = raw[raw["final"]]
    assert not finals.duplicated(["vendor", "query_id", "capability"]).any()
    assert not raw.duplicated(["vendor", "query_id", "capability", "attempt"]).any()
    supported = scores[scores["response_class"] != "unsupported"]
    decoys = table(home, "SELECT count(*) n FROM raw_responses WHERE final AND role = 'decoy'")["n"][0]
    assert len(finals) == len(supported) + decoys
    # the last attempt of every query is its final one
    last = raw.groupby(["vendor", "query_id", "capability"])["attempt"].transform("max")
    assert (raw["final"] == (raw["attempt"] == last)).all()
    # faults were retried, and some outlasted every attempt: those rows carry a failure class
    assert (raw["attempt"] > 1).any()
    assert set(scores["response_class"]) - {"ok", "empty", "unsupported"}, scores["response_class"].value_counts()


def test_spend_equals_the_vendors_billing_log(soak):
    for run in soak:
        manifest = load_manifest(run["home"] / "data" / "snapshots" / SNAPSHOT / "manifest.yaml")
        billed = pd.DataFrame(run["billing"]).groupby("vendor")["usd"].sum().to_dict()
        assert set(billed) == set(VENDORS)
        scores = table(run["home"], "SELECT vendor, sum(billed_usd) usd FROM row_scores GROUP BY vendor")
        scored = dict(zip(scores["vendor"], scores["usd"]))
        for vendor in VENDORS:
            raw = table(run["home"], f"SELECT * FROM raw_responses WHERE vendor = '{vendor}'")
            spend = archived_spend(get_adapter(vendor), manifest.vendors[vendor].prices_usd, raw)
            # every call the vendor billed, golden rows and the decoys sent among them
            assert spend.sum() == pytest.approx(billed[vendor], abs=1e-9), vendor
            # the published cost per correct counts the golden rows' calls, retries included
            assert scored[vendor] == pytest.approx(spend[raw["role"] != "decoy"].sum(), abs=1e-9), vendor


def test_billed_retries_are_counted(soak):
    # A truncated or malformed 200 is billed by the vendor and then retried: the vendor billed more
    # calls than there are queries, and the spend above included them.
    run = soak[0]
    raw = table(run["home"], "SELECT count(*) n FROM raw_responses WHERE final AND http_status = 200")
    assert len(run["billing"]) > raw["n"][0]


def test_scores_are_the_same_in_both_runs(soak):
    first, second = (
        table(r["home"], "SELECT * FROM row_scores ORDER BY vendor, row_id").drop(columns=NOT_DETERMINISTIC)
        for r in soak
    )
    pd.testing.assert_frame_equal(first, second)
    metrics = [
        table(r["home"], "SELECT * FROM vendor_metrics WHERE metric NOT LIKE '%latency%' ORDER BY ALL") for r in soak
    ]
    pd.testing.assert_frame_equal(*metrics)
    assert [f["fault"] for f in soak[0]["faults"]].count("timeout") == [f["fault"] for f in soak[1]["faults"]].count(
        "timeout"
    )
