"""The snapshot lifecycle through Dagster: draft → frozen (review packets) → published, the
business-day review gate around a US holiday, immutability of a published snapshot, and errata
that re-run one vendor partition into a new version while keeping the old one.

One small snapshot (two search vendors) goes through the whole lifecycle once; the tests read
what each step left. The clock is `$BENCH_TODAY`: packets go out on Friday 26 June 2026; ten
business days later is Monday 13 July, not Friday 10 July, because Friday 3 July 2026 is the
observed Independence Day.
"""

from __future__ import annotations

import json
import os
from contextlib import contextmanager
from types import SimpleNamespace

import dagster as dg
import duckdb
import httpx
import pytest
import yaml

from bench_assets.defs.resources import BenchPaths
from bench_assets.integrity.commitments import commitment_key, verify_commitments
from bench_assets.integrity.errata import apply_erratum
from bench_assets.split import DEMO_SPLIT_KEY
from bench_assets_tests.helpers import RESULT_STAGES, SNAPSHOT, make_home, materialize, run_whole_snapshot, vendor_key

VENDORS = ["brave", "serper"]
SENT, BEFORE_HOLIDAY_GAP, OPENS = "2026-06-26", "2026-07-10", "2026-07-13"
E1, E2 = f"{SNAPSHOT}-e1", f"{SNAPSHOT}-e2"


@contextmanager
def bench_today(day: str):
    old = os.environ.get("BENCH_TODAY")
    os.environ["BENCH_TODAY"] = day
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("BENCH_TODAY", None)
        else:
            os.environ["BENCH_TODAY"] = old


def failure_message(result) -> str:
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    return failure.event_specific_data.error.message


def tree_bytes(directory) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def query(home, sql, params=()):
    con = duckdb.connect(str(home / "data" / "warehouse" / "bench.duckdb"), read_only=True)
    try:
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


def status(home, snapshot=SNAPSHOT) -> str:
    return query(home, "SELECT status FROM snapshots WHERE snapshot_id = ?", [snapshot])[0][0]


@pytest.fixture(scope="module")
def lifecycle(tmp_path_factory, simulator):
    home = make_home(tmp_path_factory.mktemp("lifecycle"), VENDORS)
    sim = simulator.base_url
    out = home / "data" / "publish" / SNAPSHOT
    seen = SimpleNamespace(home=home, out=out)
    with dg.instance_for_test() as instance:
        run_whole_snapshot(instance, home, sim, VENDORS)
        seen.draft_status = status(home)
        seen.draft_republished = materialize(instance, home, sim, RESULT_STAGES[1:], SNAPSHOT).success

        with bench_today(SENT):
            materialize(instance, home, sim, ("review_packets",), SNAPSHOT)
        seen.frozen_status = status(home)
        with bench_today(BEFORE_HOLIDAY_GAP):
            early = materialize(instance, home, sim, RESULT_STAGES[1:], SNAPSHOT, raise_on_error=False)
        seen.early_success, seen.early_message = early.success, failure_message(early) if not early.success else ""
        seen.after_early = tree_bytes(out)
        with bench_today(OPENS):
            seen.on_time_success = materialize(instance, home, sim, RESULT_STAGES[1:], SNAPSHOT).success
        seen.published_status = status(home)
        seen.published_files = tree_bytes(out)

        # every writing step of the published snapshot refuses, and pays nothing
        httpx.post(f"{sim}/_sim/reset", timeout=5)
        seen.refusals = {}
        for names, key in [(("published_snapshot",), SNAPSHOT), (("vendor_leaderboard",), SNAPSHOT),
                           (("snapshot_manifest",), SNAPSHOT), (("query_split",), SNAPSHOT),
                           (("vendor_responses",), vendor_key("brave")), (("vendor_scores",), vendor_key("serper"))]:
            result = materialize(instance, home, sim, names, key, raise_on_error=False)
            seen.refusals[names[0]] = None if result.success else failure_message(result)
        seen.vendor_calls_after_publication = len(httpx.get(f"{sim}/_sim/requests", timeout=5).json())
        seen.files_after_refusals = tree_bytes(out)

        # two errata: a corrected price table (rescore), then a re-fetch of the other vendor
        errata = [{"id": "E1", "date": "2026-07-20", "vendor": "brave", "action": "rescore",
                   "what": "the price per search request was read from an outdated pricing page",
                   "why": "brave's review reply with its invoice", "who": "bench maintainers",
                   "changes": {"prices_usd": {"request.search": 0.009}}},
                  {"id": "E2", "date": "2026-07-22", "vendor": "serper", "action": "refetch",
                   "what": "responses fetched during a vendor outage", "why": "serper's status page incident",
                   "who": "bench maintainers"}]
        (home / "data" / "snapshots" / SNAPSHOT / "errata.yaml").write_text(yaml.safe_dump(errata, sort_keys=False))
        paths = BenchPaths(root=str(home))

        def run(names, key):
            materialize(instance, home, sim, names, key)

        def register(snapshot):
            instance.add_dynamic_partitions("snapshots", [snapshot])

        httpx.post(f"{sim}/_sim/reset", timeout=5)
        seen.e1 = apply_erratum(paths, SNAPSHOT, "E1", run, lambda s, v: vendor_key(v, s), register)
        seen.calls_for_rescore = len(httpx.get(f"{sim}/_sim/requests", timeout=5).json())
        seen.e2 = apply_erratum(paths, SNAPSHOT, "E2", run, lambda s, v: vendor_key(v, s), register)
        seen.calls_for_refetch = {e["vendor"] for e in httpx.get(f"{sim}/_sim/requests", timeout=5).json()}
        seen.files_after_errata = tree_bytes(out)
        with pytest.raises(Exception, match="already applied"):
            apply_erratum(paths, SNAPSHOT, "E1", run, lambda s, v: vendor_key(v, s), register)
        yield seen


def test_a_simulated_snapshot_publishes_as_a_redoable_draft_preview(lifecycle):
    assert lifecycle.draft_status == "draft"
    assert lifecycle.draft_republished


def test_review_packets_freeze_the_snapshot_and_hold_only_holdout_aggregates(lifecycle):
    home = lifecycle.home
    assert lifecycle.frozen_status == "frozen"
    holdout = [json.loads(line) for line in (home / "data" / "private" / "holdout" / f"{SNAPSHOT}.jsonl")
               .read_text().splitlines()]
    for vendor in VENDORS:
        packet_path = home / "data" / "private" / "review" / SNAPSHOT / f"{vendor}.json"
        packet = json.loads(packet_path.read_text())
        text = packet_path.read_text()
        assert packet["vendor"] == vendor and packet["public_rows"] and packet["raw_responses"] and packet["scores"]
        assert all(r["query_id"] not in {h["id"] for h in holdout} for r in packet["raw_responses"])
        for h in holdout:
            assert h["id"] not in text
        assert packet["holdout_aggregates"]["metrics"]["correct_rate"]["n"] > 0
    rows = query(home, "SELECT vendor, sent_on, opens_on FROM review_packets WHERE snapshot_id = ? ORDER BY vendor",
                 [SNAPSHOT])
    assert [(v, str(s), str(o)) for v, s, o in rows] == [(v, SENT, OPENS) for v in VENDORS]


def test_publication_waits_ten_business_days_skipping_the_independence_day_holiday(lifecycle):
    assert not lifecycle.early_success
    assert "9 of 10 business days" in lifecycle.early_message and OPENS in lifecycle.early_message
    assert lifecycle.on_time_success and lifecycle.published_status == "published"
    review = json.loads((lifecycle.out / "review.json").read_text())
    assert review["status"] == "published" and review["published_on"] == OPENS
    assert {v["packet_sent_on"] for v in review["vendors"].values()} == {SENT}


def test_a_published_snapshot_refuses_every_rematerialization(lifecycle):
    for asset, message in lifecycle.refusals.items():
        assert message is not None, f"{asset} re-materialized a published snapshot"
        assert "published and immutable" in message and "bench errata apply" in message, (asset, message)
    assert lifecycle.vendor_calls_after_publication == 0
    assert lifecycle.files_after_refusals == lifecycle.published_files
    assert lifecycle.files_after_errata == lifecycle.published_files  # errata never touch it either


def test_an_erratum_rescore_makes_a_new_version_and_keeps_both(lifecycle):
    home, e1 = lifecycle.home, lifecycle.e1
    assert e1["version"] == E1 and e1["corrects"] == SNAPSHOT and e1["action"] == "rescore"
    assert lifecycle.calls_for_rescore == 0  # re-scored from the archive, nothing called
    before, after = e1["before"]["metrics"], e1["after"]["metrics"]
    assert after["spend_usd"]["value"] == pytest.approx(before["spend_usd"]["value"] * 0.009 / 0.005)
    assert after["correct_rate"] == before["correct_rate"]
    assert "spend_usd" in e1["changed"] and "correct_rate" not in e1["changed"]
    # both versions' figures stay in the warehouse and on disk
    spends = dict(query(home, "SELECT snapshot_id, sum(billed_usd) FROM row_scores WHERE vendor = 'brave' "
                              "GROUP BY 1"))
    assert spends[SNAPSHOT] == pytest.approx(before["spend_usd"]["value"])
    assert spends[E1] == pytest.approx(after["spend_usd"]["value"])
    published = json.loads((home / "data" / "publish" / E1 / "errata.json").read_text())
    assert [e["id"] for e in published] == ["E1"] and published[0]["before"]["snapshot_id"] == SNAPSHOT
    old = json.loads((home / "data" / "publish" / SNAPSHOT / "leaderboard.json").read_text())
    brave_old = next(e for e in old["vendors"] if e["vendor"] == "brave")
    assert brave_old["metrics"]["spend_usd"]["value"] == pytest.approx(before["spend_usd"]["value"])
    assert status(home, E1) == "published"
    manifest = yaml.safe_load((home / "data" / "snapshots" / E1 / "manifest.yaml").read_text())
    assert manifest["supersedes"] == SNAPSHOT and manifest["vendors"]["brave"]["prices_usd"] == {"request.search": 0.009}


def test_an_erratum_refetch_calls_only_its_vendor_and_chains_versions(lifecycle):
    home, e2 = lifecycle.home, lifecycle.e2
    assert e2["version"] == E2 and e2["corrects"] == E1
    assert lifecycle.calls_for_refetch == {"serper"}
    published = json.loads((home / "data" / "publish" / E2 / "errata.json").read_text())
    assert [e["id"] for e in published] == ["E1", "E2"]
    # serper's responses were fetched again for e2; brave's were carried over from e1
    fresh = query(home, "SELECT count(*) FROM raw_responses r JOIN raw_responses o ON o.snapshot_id = ? AND "
                        "o.vendor = r.vendor AND o.query_id = r.query_id AND o.attempt = r.attempt AND "
                        "o.started_at = r.started_at WHERE r.snapshot_id = ? AND r.vendor = ?", [E1, E2, "serper"])[0][0]
    carried = query(home, "SELECT count(*) FROM raw_responses WHERE snapshot_id = ? AND vendor = 'brave'", [E2])[0][0]
    assert fresh == 0 and carried > 0
    for version in (SNAPSHOT, E1, E2):
        assert (home / "data" / "publish" / version / "leaderboard.json").exists()


def test_holdout_commitments_are_published_and_verifiable_when_the_holdout_is_revealed(lifecycle):
    home = lifecycle.home
    record = json.loads((lifecycle.out / "holdout_commitments.json").read_text())
    raw = duckdb.connect(str(home / "data" / "warehouse" / "bench.duckdb"), read_only=True)
    try:
        frame = raw.execute("SELECT vendor, role, body FROM raw_responses WHERE snapshot_id = ?", [SNAPSHOT]).df()
    finally:
        raw.close()
    held = frame[(frame["role"] == "holdout") & frame["body"].notna()]
    assert set(record["vendors"]) == set(VENDORS)
    assert sum(v["responses"] for v in record["vendors"].values()) == len(held)
    key = commitment_key(DEMO_SPLIT_KEY.encode(), SNAPSHOT)
    assert verify_commitments(record, frame, key) == []
    tampered = frame.copy()
    tampered.loc[held.index[0], "body"] = held["body"].iloc[0] + " "
    assert verify_commitments(record, tampered, key)
    # a vendor hashing the responses it served cannot find them among the commitments
    import hashlib
    plain = {hashlib.sha256(b.encode()).hexdigest() for b in held["body"]}
    assert not plain & {c for v in record["vendors"].values() for c in v["commitments"]}
    assert record["vendors"]["brave"]["commitments"] == sorted(record["vendors"]["brave"]["commitments"])


def test_the_exclusions_ledger_is_published_with_the_snapshot(lifecycle):
    ledger = json.loads((lifecycle.out / "exclusions.json").read_text())
    codes = {(e["reason_code"], e["vendor"]) for e in ledger["exclusions"]}
    assert ("no_programmatic_endpoint", "google_ai_mode") in codes
    assert ("unsupported_capability", "brave") in codes  # brave has no extract endpoint: its extract rows left out
    assert ("unsupported_capability", "serper") not in codes
    assert {("decoy", v) for v in VENDORS} <= codes
    for e in ledger["exclusions"]:
        assert e["reason"] and e["evidence"] and e["decided_by"] and e["effect_on_denominators"]
    header = (lifecycle.out / "exclusions.csv").read_text().splitlines()[0].split(",")
    assert header == ledger["columns"]
