"""The snapshot lifecycle through Dagster: draft → frozen (review packets) → published, the
business-day review gate around a US holiday, immutability of a published snapshot, errata that
re-run one vendor partition into a new version while keeping the old one, a vendor's reply to a
published snapshot published byte for byte as a new version, and a forged `supersedes` refused.

One small snapshot (two search vendors) goes through the whole lifecycle once; the tests read
what each step left. The clock is fixed in-process by the test (`business_days.fixed_today`):
packets go out on Friday 26 June 2026; ten business days later is Monday 13 July, not Friday 10
July, because Friday 3 July 2026 is the observed Independence Day.
"""

from __future__ import annotations

import hashlib
import json
from datetime import date
from types import SimpleNamespace

import dagster as dg
import duckdb
import httpx
import pytest
import yaml
from selectolax.lexbor import LexborHTMLParser

from bench_assets.defs.resources import BenchPaths
from bench_assets.defs.review import FREEZE_CONFIG
from bench_assets.manifest import load_manifest
from bench_assets.publish.errata import apply_erratum, copy_rows
from bench_assets.publish.guard import version_problems
from bench_assets.publish.replies import file_reply
from bench_assets.review.business_days import fixed_today
from bench_assets.split.assign import DEMO_SPLIT_KEY
from bench_assets.split.commitments import commitment_key, verify_commitments
from bench_assets_tests.helpers import (
    RESULT_STAGES,
    SNAPSHOT,
    make_home,
    materialize,
    register_partitions,
    run_whole_snapshot,
    vendor_key,
    warehouse_of,
    warehouse_rows,
)

VENDORS = ["brave", "serper"]
# Two pages a stratum (36 rows): the keyed split holds one out (holdout aggregates in the packets,
# commitments, decoys) and publishes the other; brave has no extract endpoint (its exclusion).
ROWS_PER_STRATUM = 6
SENT, BEFORE_HOLIDAY_GAP, OPENS = "2026-06-26", "2026-07-10", "2026-07-13"
E1, E2, E3 = f"{SNAPSHOT}-e1", f"{SNAPSHOT}-e2", f"{SNAPSHOT}-e3"
FORGED = f"{SNAPSHOT}-e7"  # a manifest that claims `supersedes` with no erratum or reply behind it
# A reply as a vendor might send it: CRLF line ends, Windows-1252 (not UTF-8), and markup.
REPLY_BYTES = (
    "Our plan was misread.\r\nPrices are per 1,000 requests \u2014 see our invoice.\r\n"
    "<script>alert('x')</script> \u00e9t\u00e9 \u20ac5\r\n"
).encode("cp1252")
# Every asset that writes a snapshot, and the partition it runs on. Those that check the lifecycle
# themselves refuse with "<asset>: snapshot … is published" before doing anything; the others are
# refused by the warehouse before they write (and have no side effect before that).
REFUSING_ASSETS = [
    ("snapshot_manifest", SNAPSHOT, True),
    ("golden_rows", SNAPSHOT, True),
    ("golden_verifications", SNAPSHOT, True),
    ("query_split", SNAPSHOT, False),
    ("dead_golden_rows", SNAPSHOT, True),
    ("decoy_queries", SNAPSHOT, True),
    ("agent_trials", SNAPSHOT, True),
    ("vendor_responses", "brave", True),
    ("vendor_scores", "serper", False),
    ("vendor_leaderboard", SNAPSHOT, False),
    ("review_packets", SNAPSHOT, True),
    ("published_snapshot", SNAPSHOT, False),
]
# They are refused in four runs, not twelve: a run holds assets of one partition with no dependency
# between them (an asset whose upstream fails in the same run would be skipped, not refused, and the
# test would find no refusal of it), so each still runs on its own step, and refuses.
REFUSAL_RUNS = [
    (SNAPSHOT, ("snapshot_manifest", "golden_verifications", "query_split", "vendor_leaderboard")),
    (
        SNAPSHOT,
        ("golden_rows", "agent_trials", "dead_golden_rows", "decoy_queries", "review_packets", "published_snapshot"),
    ),
    ("brave", ("vendor_responses",)),
    ("serper", ("vendor_scores",)),
]


def failure_message(result) -> str:
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    return failure.event_specific_data.error.message


def step_failures(result) -> dict[str, str]:
    """Each failed step's error message, by step (an asset's step is named after it)."""
    return {
        e.step_key: e.event_specific_data.error.message
        for e in result.all_events
        if e.event_type_value == "STEP_FAILURE"
    }


def tree_bytes(directory) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def status(home, snapshot=SNAPSHOT) -> str:
    return warehouse_rows(home, "SELECT status FROM snapshots WHERE snapshot_id = ?", [snapshot])[0][0]


@pytest.fixture(scope="module")
def lifecycle(tmp_path_factory, simulator):
    home = make_home(tmp_path_factory.mktemp("lifecycle"), VENDORS, rows_per_stratum=ROWS_PER_STRATUM)
    sim = simulator.base_url
    out = home / "data" / "publish" / SNAPSHOT
    seen = SimpleNamespace(home=home, out=out)
    with dg.instance_for_test() as instance:
        run_whole_snapshot(instance, home, sim, VENDORS)
        seen.draft_status = status(home)
        seen.draft_republished = materialize(instance, home, sim, RESULT_STAGES[1:], SNAPSHOT).success

        with fixed_today(SENT):
            materialize(instance, home, sim, ("review_packets",), SNAPSHOT, run_config=FREEZE_CONFIG)
        seen.frozen_status = status(home)
        with fixed_today(BEFORE_HOLIDAY_GAP):
            early = materialize(instance, home, sim, RESULT_STAGES[1:], SNAPSHOT, raise_on_error=False)
        seen.early_success, seen.early_message = early.success, failure_message(early) if not early.success else ""
        seen.after_early = tree_bytes(out)
        with fixed_today(OPENS):
            seen.on_time_success = materialize(instance, home, sim, RESULT_STAGES[1:], SNAPSHOT).success
        seen.published_status = status(home)
        seen.published_files = tree_bytes(out)
        seen.lifecycle_notes = [
            r[0]
            for r in warehouse_rows(
                home, "SELECT note FROM snapshot_lifecycle WHERE snapshot_id = ? AND status = 'published'", [SNAPSHOT]
            )
        ]

        # every writing step of the published snapshot refuses, and does nothing first: no vendor is
        # paid, no private file is rewritten, no warehouse row and no published file changes
        private = home / "data" / "private"
        private_before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in private.rglob("*") if p.is_file()}
        tables_before = {
            t: warehouse_rows(home, f"SELECT * FROM {t} WHERE snapshot_id = ? ORDER BY ALL", [SNAPSHOT])
            for t in (
                "golden_rows",
                "golden_verifications",
                "query_split",
                "decoy_queries",
                "review_packets",
                "dead_rows",
                "agent_trials",
                "row_scores",
            )
        }
        httpx.post(f"{sim}/_sim/reset", timeout=5)
        seen.refusals = {}
        assert sorted(a for _, names in REFUSAL_RUNS for a in names) == sorted(a for a, _, _ in REFUSING_ASSETS)
        for key, names in REFUSAL_RUNS:
            partition = vendor_key(key) if key in VENDORS else key
            failed = step_failures(materialize(instance, home, sim, names, partition, raise_on_error=False))
            seen.refusals.update({asset: failed.get(asset) for asset in names})
        seen.vendor_calls_after_publication = len(httpx.get(f"{sim}/_sim/requests", timeout=5).json())
        seen.files_after_refusals = tree_bytes(out)
        seen.private_unchanged = private_before == {
            p: (p.read_bytes(), p.stat().st_mtime_ns) for p in private.rglob("*") if p.is_file()
        }
        seen.tables_unchanged = tables_before == {
            t: warehouse_rows(home, f"SELECT * FROM {t} WHERE snapshot_id = ? ORDER BY ALL", [SNAPSHOT])
            for t in tables_before
        }

        # two errata: a corrected price table (rescore), then a re-fetch of the other vendor
        errata = [
            {
                "id": "E1",
                "date": "2026-07-20",
                "vendor": "brave",
                "action": "rescore",
                "what": "the price per search request was read from an outdated pricing page",
                "why": "brave's review reply with its invoice",
                "who": "bench maintainers",
                "changes": {"prices_usd": {"request.search": 0.009}},
            },
            {
                "id": "E2",
                "date": "2026-07-22",
                "vendor": "serper",
                "action": "refetch",
                "what": "responses fetched during a vendor outage",
                "why": "serper's status page incident",
                "who": "bench maintainers",
            },
        ]
        (home / "data" / "snapshots" / SNAPSHOT / "errata.yaml").write_text(yaml.safe_dump(errata, sort_keys=False))
        paths = BenchPaths(root=str(home))

        def run(names, key):
            materialize(instance, home, sim, names, key)

        def register(snapshot):
            register_partitions(instance, [snapshot])

        httpx.post(f"{sim}/_sim/reset", timeout=5)
        seen.e1 = apply_erratum(paths, warehouse_of(home), SNAPSHOT, "E1", run, lambda s, v: vendor_key(v, s), register)
        seen.calls_for_rescore = len(httpx.get(f"{sim}/_sim/requests", timeout=5).json())
        seen.e2 = apply_erratum(paths, warehouse_of(home), SNAPSHOT, "E2", run, lambda s, v: vendor_key(v, s), register)
        seen.calls_for_refetch = {e["vendor"] for e in httpx.get(f"{sim}/_sim/requests", timeout=5).json()}
        seen.files_after_errata = tree_bytes(out)
        with pytest.raises(Exception, match="already applied"):
            apply_erratum(paths, warehouse_of(home), SNAPSHOT, "E1", run, lambda s, v: vendor_key(v, s), register)

        # a vendor replies after publication: published byte for byte as a new version, nothing re-run
        e2_files = tree_bytes(home / "data" / "publish" / E2)
        reply_file = home / "incoming-brave-reply.txt"
        reply_file.write_bytes(REPLY_BYTES)
        httpx.post(f"{sim}/_sim/reset", timeout=5)
        seen.reply = file_reply(
            paths, warehouse_of(home), SNAPSHOT, "brave", reply_file, date(2026, 7, 24), lambda: (run, register)
        )
        seen.calls_for_reply = len(httpx.get(f"{sim}/_sim/requests", timeout=5).json())
        seen.e2_files_after_reply = tree_bytes(home / "data" / "publish" / E2)
        seen.e2_files = e2_files

        # a forged version: a manifest claiming to supersede the published snapshot, rows copied, no erratum
        forged = yaml.safe_load((home / "data" / "snapshots" / SNAPSHOT / "manifest.yaml").read_text())
        forged.update(snapshot_id=FORGED, supersedes=SNAPSHOT)
        (home / "data" / "snapshots" / FORGED).mkdir()
        (home / "data" / "snapshots" / FORGED / "manifest.yaml").write_text(yaml.safe_dump(forged, sort_keys=False))
        register(FORGED)
        materialize(instance, home, sim, ("snapshot_manifest",), FORGED)
        copy_rows(warehouse_of(home), SNAPSHOT, FORGED, None, refetch=False)
        forged_run = materialize(instance, home, sim, RESULT_STAGES, FORGED, raise_on_error=False)
        seen.forged_message = None if forged_run.success else failure_message(forged_run)
        seen.forged_published = (home / "data" / "publish" / FORGED).exists()
        seen.paths = paths
        yield seen


def test_a_simulated_snapshot_publishes_as_a_redoable_draft_preview(lifecycle):
    assert lifecycle.draft_status == "draft"
    assert lifecycle.draft_republished


def test_review_packets_freeze_the_snapshot_and_hold_only_holdout_aggregates(lifecycle):
    home = lifecycle.home
    assert lifecycle.frozen_status == "frozen"
    holdout = [
        json.loads(line)
        for line in (home / "data" / "private" / "holdout" / f"{SNAPSHOT}.jsonl").read_text().splitlines()
    ]
    for vendor in VENDORS:
        packet_path = home / "data" / "private" / "review" / SNAPSHOT / f"{vendor}.json"
        packet = json.loads(packet_path.read_text())
        text = packet_path.read_text()
        assert packet["vendor"] == vendor and packet["public_rows"] and packet["raw_responses"] and packet["scores"]
        assert all(r["query_id"] not in {h["id"] for h in holdout} for r in packet["raw_responses"])
        for h in holdout:
            assert h["id"] not in text
        assert packet["holdout_aggregates"]["metrics"]["correct_rate"]["n"] > 0
    rows = warehouse_rows(
        home, "SELECT vendor, sent_on, opens_on FROM review_packets WHERE snapshot_id = ? ORDER BY vendor", [SNAPSHOT]
    )
    assert [(v, str(s), str(o)) for v, s, o in rows] == [(v, SENT, OPENS) for v in VENDORS]


def test_publication_waits_ten_business_days_skipping_the_independence_day_holiday(lifecycle):
    assert not lifecycle.early_success
    assert "9 of 10 business days" in lifecycle.early_message and OPENS in lifecycle.early_message
    assert lifecycle.on_time_success and lifecycle.published_status == "published"
    review = json.loads((lifecycle.out / "review.json").read_text())
    assert review["status"] == "published" and review["published_on"] == OPENS
    assert {v["packet_sent_on"] for v in review["vendors"].values()} == {SENT}


def test_a_published_snapshot_refuses_every_rematerialization_before_doing_anything(lifecycle):
    assert set(lifecycle.refusals) == {asset for asset, _, _ in REFUSING_ASSETS}
    for asset, _, checks_first in REFUSING_ASSETS:
        message = lifecycle.refusals[asset]
        assert message is not None, f"{asset} was not refused: it re-materialized a published snapshot, or was skipped"
        assert "published and immutable" in message and "bench errata apply" in message, (asset, message)
        if checks_first:  # its own refusal, raised before any work, not the warehouse refusing the write
            assert f"{asset}: snapshot {SNAPSHOT} is published and immutable" in message, (asset, message)
            assert "refusing to replace" not in message, (asset, message)
    assert lifecycle.vendor_calls_after_publication == 0  # no vendor search, no agent-trial probe
    assert lifecycle.private_unchanged  # e.g. golden_rows did not rewrite the private golden file first
    assert lifecycle.tables_unchanged
    assert lifecycle.files_after_refusals == lifecycle.published_files
    assert lifecycle.files_after_errata == lifecycle.published_files  # errata never touch it either


def test_the_review_gate_date_comes_from_the_fixed_clock_and_says_so(lifecycle):
    assert len(lifecycle.lifecycle_notes) == 1
    assert lifecycle.lifecycle_notes[0].startswith(f"published on {OPENS} (bench clock fixed by a test)")


def test_an_erratum_rescore_makes_a_new_version_and_keeps_both(lifecycle):
    home, e1 = lifecycle.home, lifecycle.e1
    assert e1["version"] == E1 and e1["corrects"] == SNAPSHOT and e1["action"] == "rescore"
    assert lifecycle.calls_for_rescore == 0  # re-scored from the archive, nothing called
    before, after = e1["before"]["metrics"], e1["after"]["metrics"]
    assert after["spend_usd"]["value"] == pytest.approx(before["spend_usd"]["value"] * 0.009 / 0.005)
    assert after["correct_rate"] == before["correct_rate"]
    assert "spend_usd" in e1["changed"] and "correct_rate" not in e1["changed"]
    # both versions' figures stay in the warehouse and on disk
    spends = dict(
        warehouse_rows(home, "SELECT snapshot_id, sum(billed_usd) FROM row_scores WHERE vendor = 'brave' GROUP BY 1")
    )
    assert spends[SNAPSHOT] == pytest.approx(before["spend_usd"]["value"])
    assert spends[E1] == pytest.approx(after["spend_usd"]["value"])
    published = json.loads((home / "data" / "publish" / E1 / "errata.json").read_text())
    assert [e["id"] for e in published] == ["E1"] and published[0]["before"]["snapshot_id"] == SNAPSHOT
    old = json.loads((home / "data" / "publish" / SNAPSHOT / "leaderboard.json").read_text())
    brave_old = next(e for e in old["vendors"] if e["vendor"] == "brave")
    assert brave_old["metrics"]["spend_usd"]["value"] == pytest.approx(before["spend_usd"]["value"])
    assert status(home, E1) == "published"
    manifest = yaml.safe_load((home / "data" / "snapshots" / E1 / "manifest.yaml").read_text())
    assert manifest["supersedes"] == SNAPSHOT and manifest["vendors"]["brave"]["prices_usd"] == {
        "request.search": 0.009
    }


def test_an_erratum_refetch_calls_only_its_vendor_and_chains_versions(lifecycle):
    home, e2 = lifecycle.home, lifecycle.e2
    assert e2["version"] == E2 and e2["corrects"] == E1
    assert lifecycle.calls_for_refetch == {"serper"}
    published = json.loads((home / "data" / "publish" / E2 / "errata.json").read_text())
    assert [e["id"] for e in published] == ["E1", "E2"]
    # serper's responses were fetched again for e2; brave's were carried over from e1
    fresh = warehouse_rows(
        home,
        "SELECT count(*) FROM raw_responses r JOIN raw_responses o ON o.snapshot_id = ? AND "
        "o.vendor = r.vendor AND o.query_id = r.query_id AND o.attempt = r.attempt AND "
        "o.started_at = r.started_at WHERE r.snapshot_id = ? AND r.vendor = ?",
        [E1, E2, "serper"],
    )[0][0]
    carried = warehouse_rows(
        home, "SELECT count(*) FROM raw_responses WHERE snapshot_id = ? AND vendor = 'brave'", [E2]
    )[0][0]
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


# ##### VENDOR REPLIES AFTER PUBLICATION


def test_a_reply_to_a_published_snapshot_is_published_byte_for_byte_as_a_new_version(lifecycle):
    home, reply = lifecycle.home, lifecycle.reply
    assert reply["new_version"] and reply["version"] == E3 and reply["corrects"] == E2
    assert lifecycle.calls_for_reply == 0  # nothing re-fetched
    assert lifecycle.e2_files_after_reply == lifecycle.e2_files  # the version it supersedes is untouched
    assert status(home, E3) == "published"
    out = home / "data" / "publish" / E3
    published = (out / "replies" / "brave.txt").read_bytes()
    assert published == REPLY_BYTES  # CRLF and the non-UTF-8 bytes kept
    digest = hashlib.sha256(REPLY_BYTES).hexdigest()
    review = json.loads((out / "review.json").read_text())
    assert review["vendors"]["brave"]["reply"] == {
        "received_on": "2026-07-24",
        "file": "replies/brave.txt",
        "sha256": digest,
    }
    assert review["supersedes"] == E2
    page = LexborHTMLParser((out / "replies" / "brave.html").read_text(encoding="utf-8"))
    shown = page.css_first("pre#reply").text()
    assert "<script>alert('x')</script>" in shown and "\u2014" in shown and "\u20ac5" in shown  # escaped text
    assert not [n for n in page.css("script") if "alert" in n.text()]  # shown, never run
    assert page.css_first("#reply-sha256").text() == digest
    # linked from the vendor's leaderboard row, and from its page
    index = LexborHTMLParser((out / "index.html").read_text(encoding="utf-8"))
    row = index.css_first('tr[data-vendor="brave"]')
    assert row.css_first('a[href="replies/brave.html"]') is not None
    assert index.css_first('tr[data-vendor="serper"]').css_first('a[href="replies/serper.html"]') is None
    assert (
        LexborHTMLParser((out / "vendors" / "brave.html").read_text()).css_first('a[href="../replies/brave.html"]')
        is not None
    )
    # nothing re-run: the same figures as the version it supersedes; the history says why it exists
    old = json.loads((home / "data" / "publish" / E2 / "leaderboard.json").read_text())
    new = json.loads((out / "leaderboard.json").read_text())
    assert [e["metrics"] for e in old["vendors"]] == [e["metrics"] for e in new["vendors"]]
    history = json.loads((out / "errata.json").read_text())
    assert [e["id"] for e in history] == ["E1", "E2", "reply-brave-3"]
    assert history[-1]["action"] == "reply" and history[-1]["changed"] == {} and digest in history[-1]["what"]
    assert warehouse_rows(home, "SELECT action, corrected_version FROM errata WHERE new_version = ?", [E3]) == [
        ("reply", E2)
    ]


def test_supersedes_alone_never_skips_the_vendor_review(lifecycle):
    assert not lifecycle.forged_published and lifecycle.forged_message is not None
    assert (
        f"{FORGED} supersedes {SNAPSHOT} but cannot be published without its own vendor review"
        in lifecycle.forged_message
    )
    assert "no applied erratum or filed reply stands behind" in lifecycle.forged_message
    warehouse = warehouse_of(lifecycle.home)

    def problems(snapshot_id, supersedes):
        return "; ".join(
            version_problems(
                warehouse,
                load_manifest(lifecycle.home / "data" / "snapshots" / snapshot_id / "manifest.yaml").model_copy(
                    update={"supersedes": supersedes}
                ),
            )
        )

    # the real versions are backed by their erratum or reply
    for version, source in ((E1, SNAPSHOT), (E2, E1), (E3, E2)):
        assert problems(version, source) == "", version
    assert "web_search-2026-q1, does not exist" in problems(FORGED, "web_search-2026-q1")
    assert "is not a version of" in problems(FORGED, "other-2026-q3")
    assert "corrects web_search-2026-q3-e1, not web_search-2026-q3" in problems(E2, SNAPSHOT)
