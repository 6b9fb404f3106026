"""Agent-ready trials through Dagster: the agent_trials asset, the leaderboard showing agent-ready
with its method, date and evidence, rescore, and a live snapshot's hand-entered trials."""

from __future__ import annotations

import csv
import io
import json
import re
import time

import dagster as dg
import duckdb
import pytest
import yaml

from bench_assets.rescore.snapshot import rescore_snapshot
from bench_assets_tests.helpers import (
    DEMO_MANIFEST,
    GOLDEN_STAGES,
    GOOD_TRIAL,
    SNAPSHOT,
    VENDOR_STAGES,
    make_home,
    materialize,
    register_partitions,
    vendor_key,
    write_trials,
)

DEMO_TRIALS = DEMO_MANIFEST.parent / "agent_trials.yaml"


def test_a_bad_hand_entered_file_fails_the_asset_naming_file_and_field(tmp_path, simulator):
    home = make_home(tmp_path, ["exa"], rows_per_stratum=5)
    bad = write_trials(home / "data" / "snapshots" / SNAPSHOT, [{**GOOD_TRIAL, "vendor": "exa", "outcome": "maybe"}])
    with dg.instance_for_test() as instance:
        register_partitions(instance, [SNAPSHOT])
        result = materialize(
            instance, home, simulator.base_url, ("snapshot_manifest", "agent_trials"), SNAPSHOT, raise_on_error=False
        )
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    text = str(failure.event_specific_data.error)
    assert str(bad) in text and "trials.0.outcome" in text


VENDORS = ["exa", "firecrawl"]


@pytest.fixture(scope="module")
def published(tmp_path_factory, simulator):
    home = make_home(tmp_path_factory.mktemp("agent-home"), VENDORS, rows_per_stratum=5)
    # The demo's own hand-entered routes of these vendors.
    demo = yaml.safe_load(DEMO_TRIALS.read_text())["trials"]
    write_trials(home / "data" / "snapshots" / SNAPSHOT, [t for t in demo if t["vendor"] in VENDORS])
    with dg.instance_for_test() as instance:
        register_partitions(instance, [SNAPSHOT])
        materialize(instance, home, simulator.base_url, GOLDEN_STAGES, SNAPSHOT)
        # Only exa is fetched and scored (fast); serper's agent-ready record is on the leaderboard all the same.
        materialize(instance, home, simulator.base_url, VENDOR_STAGES, vendor_key("exa"))
        materialize(
            instance, home, simulator.base_url, ("agent_trials", "vendor_leaderboard", "published_snapshot"), SNAPSHOT
        )
    return home


def test_agent_trials_table_holds_one_row_per_vendor_per_trial(published):
    con = duckdb.connect(str(published / "data" / "warehouse" / "bench.duckdb"), read_only=True)
    try:
        rows = con.execute(
            "SELECT vendor, method, recorded_by, mode, agent_ready, outcome, steps_json "
            "FROM agent_trials WHERE snapshot_id = ? ORDER BY vendor, method",
            [SNAPSHOT],
        ).fetchall()
    finally:
        con.close()
    assert [r[:6] for r in rows] == [
        ("exa", "device_code", "harness", "simulated", True, "key_works"),
        ("exa", "x402", "hand", "live", False, "route_documented"),
        ("firecrawl", "device_code", "harness", "simulated", False, "login_required"),
        ("firecrawl", "keyless", "hand", "live", False, "route_documented"),
    ]
    assert len(json.loads(rows[0][6])) >= 5  # the device-code trial's steps, as evidence


def test_leaderboard_shows_agent_ready_with_method_date_and_evidence(published):
    out = published / "data" / "publish" / SNAPSHOT
    board = json.loads((out / "leaderboard.json").read_text())
    by_vendor = {e["vendor"]: e["agent_ready"] for e in board["vendors"] if e["status"] != "excluded"}
    today = time.strftime("%Y-%m-%d", time.gmtime())
    exa, firecrawl = by_vendor["exa"], by_vendor["firecrawl"]
    assert (exa["ready"], exa["method"], exa["trial_date"], exa["mode"]) == (True, "device_code", today, "simulated")
    assert exa["evidence"]["steps"][-1]["action"] == "search with the issued key"
    assert exa["other_routes"][0]["method"] == "x402" and exa["other_routes"][0]["link"].startswith("https://exa.ai/")
    assert (firecrawl["ready"], firecrawl["method"], firecrawl["outcome"]) == (False, "device_code", "login_required")
    assert "sign in in a browser" in firecrawl["reason"]
    assert [r["method"] for r in firecrawl["other_routes"]] == ["keyless"]
    rows = {r["vendor"]: r for r in csv.DictReader(io.StringIO((out / "leaderboard.csv").read_text()))}
    assert (rows["exa"]["agent_ready"], rows["exa"]["agent_ready_method"], rows["exa"]["agent_ready_date"]) == (
        "True",
        "device_code",
        today,
    )
    index = (out / "index.html").read_text()
    every_column = index[index.index('<table id="leaderboard"') :]  # the table with the agent-ready column
    exa_row = re.search(r'<tr data-vendor="exa".*?</tr>', every_column, re.S).group(0)
    assert "device code" in exa_row and today in exa_row
    # A trial against the simulator says so wherever its verdict is shown.
    assert exa["label"] == f"yes: device code (simulated), {today}" and "device code (simulated)" in exa_row
    page = (out / "vendors" / "exa.html").read_text()
    assert "search with the issued key" in page and "x402" in page


def test_rescore_reproduces_the_agent_ready_column(published):
    report = rescore_snapshot(published, SNAPSHOT)
    assert report.differences == []


def test_a_live_snapshot_loads_hand_entered_trials_and_runs_no_harness(tmp_path, simulator):
    home = make_home(tmp_path, ["exa", "brave"], edit=lambda data: data.update(mode="live"))
    write_trials(home / "data" / "snapshots" / SNAPSHOT, [GOOD_TRIAL])
    with dg.instance_for_test() as instance:
        register_partitions(instance, [SNAPSHOT])
        materialize(instance, home, simulator.base_url, ("snapshot_manifest", "agent_trials"), SNAPSHOT)
    con = duckdb.connect(str(home / "data" / "warehouse" / "bench.duckdb"), read_only=True)
    try:
        rows = con.execute(
            "SELECT vendor, method, recorded_by, mode, agent_ready, trial_date, evidence_url FROM agent_trials"
        ).fetchall()
    finally:
        con.close()
    assert [r[:5] for r in rows] == [("brave", "manual", "hand", "live", False)]
    assert str(rows[0][5]) == GOOD_TRIAL["date"] and rows[0][6] == GOOD_TRIAL["evidence"]  # and no harness trial
