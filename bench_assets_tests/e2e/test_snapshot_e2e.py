"""A whole snapshot, materialized through Dagster against a DuckDB file and the real simulator.

This is what the operator does from the UI, in-process: golden rows → verification → split →
each vendor partition (fetch, score) → leaderboard → published files. The snapshot is the
session's (`published_site`, e2e/conftest.py), which the site and rescore tests read too. The tests
check what a reader and a researcher rely on: the files exist and agree, vendors differ, a
partition re-run replaces only itself and pays nothing twice, rescore finds an edited figure in the
CSV files and the tables, and a failed verification stops the fetch (a snapshot of its own).
"""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
import textwrap
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import dagster as dg
import duckdb
import httpx
import pytest

from bench_assets.rescore.snapshot import rescore_snapshot
from bench_assets_tests.e2e.conftest import SITE_VENDORS
from bench_assets_tests.helpers import (
    GOLDEN_STAGES,
    SNAPSHOT,
    VENDOR_STAGES,
    check_evaluations,
    make_home,
    materialize,
    register_partitions,
    vendor_key,
)

# The session's published snapshot (e2e/conftest.py): three vendors, one of them (Brave) without
# extraction, `published_site.golden_rows` rows, materialized stage by stage through Dagster.
VENDORS = SITE_VENDORS


# ##### FIXTURES


@pytest.fixture()
def snapshot_run(published_site):
    """The session's snapshot, shared with the site and rescore tests: a test that edits a file or
    a table puts it back; a re-run partition is one whose archive holds every answer."""
    return published_site.home, published_site.instance


@pytest.fixture()
def golden_rows(published_site) -> int:
    """How many golden rows the session's manifest asks for."""
    return published_site.golden_rows


def db(home: Path):
    return duckdb.connect(str(home / "data" / "warehouse" / "bench.duckdb"), read_only=True)


def count(home: Path, sql: str, params=()) -> int:
    con = db(home)
    try:
        return con.execute(sql, list(params)).fetchone()[0]
    finally:
        con.close()


# ##### THE WHOLE GRAPH


def test_published_files_exist_marked_simulated_and_not_headline(snapshot_run):
    home, _ = snapshot_run
    out = home / "data" / "publish" / SNAPSHOT
    for name in ("index.html", "leaderboard.json", "leaderboard.csv", "methodology.html", "public_split.jsonl"):
        assert (out / name).stat().st_size > 0, name
    board = json.loads((out / "leaderboard.json").read_text())
    assert board["snapshot_id"] == SNAPSHOT and board["mode"] == "simulated"
    assert board["headline_eligible"] is False
    scored = [e for e in board["vendors"] if e["status"] == "scored"]
    assert {e["vendor"] for e in scored} == set(VENDORS)
    for e in scored:
        assert e["headline_eligible"] is False
        assert any("simulated" in r for r in e["reasons"])
        fig = e["metrics"]["hit_at_1"]
        assert fig["n"] > 0 and fig["low"] <= fig["value"] <= fig["high"]
    excluded = [e for e in board["vendors"] if e["status"] == "excluded"]
    assert excluded and excluded[0]["reason"]
    assert "Illustrative" in (out / "index.html").read_text()


def test_vendors_score_differently(snapshot_run):
    home, _ = snapshot_run
    board = json.loads((home / "data" / "publish" / SNAPSHOT / "leaderboard.json").read_text())
    hits = {e["vendor"]: e["metrics"]["hit_at_1"]["value"] for e in board["vendors"] if e["status"] == "scored"}
    assert len(set(hits.values())) >= 2, hits
    fidelity = {
        e["vendor"]: e["metrics"].get("fidelity_mean", {}).get("value")
        for e in board["vendors"]
        if e["status"] == "scored"
    }
    assert fidelity["brave"] is None  # Brave has no extraction endpoint: unsupported, not zero
    assert fidelity["exa"] is not None and fidelity["tavily"] is not None


def test_warehouse_holds_every_stage(snapshot_run, golden_rows):
    home, _ = snapshot_run
    n_rows = count(home, "SELECT count(*) FROM golden_rows WHERE snapshot_id = ?", [SNAPSHOT])
    assert n_rows == golden_rows
    assert count(home, "SELECT count(*) FROM golden_verifications WHERE passed") == n_rows
    public = count(home, "SELECT count(*) FROM query_split WHERE split = 'public'")
    assert 0.6 <= public / n_rows <= 0.8  # 4 page groups per stratum: 3 public
    for v in VENDORS:
        assert count(home, "SELECT count(*) FROM row_scores WHERE vendor = ?", [v]) == n_rows
    # every supported row has exactly one final archived attempt: Brave's search and answer rows
    searched = count(home, "SELECT count(*) FROM golden_rows WHERE task_type IN ('search', 'answer')")
    assert 0 < searched < n_rows
    assert (
        count(home, "SELECT count(*) FROM raw_responses WHERE vendor = 'brave' AND final AND role <> 'decoy'")
        == searched
    )
    assert (
        count(home, "SELECT count(*) FROM raw_responses WHERE vendor = 'exa' AND final AND role <> 'decoy'") == n_rows
    )
    assert count(home, "SELECT count(*) FROM vendor_metrics") > 0
    # no secret reaches the archive
    assert count(home, "SELECT count(*) FROM raw_responses WHERE request_json LIKE '%sim-exa-key%'") == 0


def test_rerunning_a_partition_replaces_it_and_pays_nothing_twice(snapshot_run, simulator, sim_logs):
    home, instance = snapshot_run
    before = count(home, "SELECT count(*) FROM raw_responses")
    brave_scores = count(home, "SELECT count(*) FROM row_scores WHERE vendor = 'brave'")
    materialize(instance, home, simulator.base_url, VENDOR_STAGES, vendor_key("exa"))
    assert sim_logs.billing() == []  # every response was already archived: nothing re-requested
    assert count(home, "SELECT count(*) FROM raw_responses") == before
    assert count(home, "SELECT count(*) FROM row_scores WHERE vendor = 'brave'") == brave_scores


def test_rescore_reproduces_published_figures_without_network(
    snapshot_run, golden_rows, simulator, monkeypatch, capsys
):
    home, _ = snapshot_run
    import socket

    from bench_assets.cli.main import main as bench

    def requests_seen() -> list[dict]:
        return httpx.get(f"{simulator.base_url}/_sim/requests", timeout=5).json()

    attempts: list[str] = []

    def refuse(name):
        def refused(*args, **kwargs):
            attempts.append(name)
            raise AssertionError(f"rescore tried to open a network connection ({name})")

        return refused

    before = requests_seen()  # read with the network still open
    with monkeypatch.context() as offline:
        for name in ("connect", "connect_ex"):
            offline.setattr(socket.socket, name, refuse(f"socket.{name}"))
        offline.setattr(socket, "create_connection", refuse("socket.create_connection"))
        offline.setenv("BENCH_HOME", str(home))
        offline.delenv("BENCH_WAREHOUSE", raising=False)
        offline.delenv("BENCH_LAKE_URL", raising=False)
        report = rescore_snapshot(home, SNAPSHOT)
        capsys.readouterr()
        offline.setenv("BENCH_PROGRESS", "1")  # the bars, as on a terminal
        exit_code = bench(["rescore", SNAPSHOT])  # the `bench rescore` command itself
    assert attempts == []  # nothing tried and swallowed the refusal either
    assert requests_seen() == before  # the simulator heard nothing: no vendor was called
    printed = capsys.readouterr()
    assert exit_code == 0, printed.out
    # its stages on stderr as they start and end, bars over the vendors and the site's parts; the
    # report on stdout; no line past 100 columns
    steps = [line for line in printed.err.splitlines() if ": done in " in line]
    assert [line.split(" ")[0] for line in steps] == ["bench", "reading", "re-scoring", "aggregates,", "re-rendering"]
    assert "vendors:   0%|" in printed.err and "site parts:   0%|" in printed.err
    assert printed.out.startswith(f"rescored {SNAPSHOT}: ") and "no differences" in printed.out
    shown = printed.out.splitlines() + [part for line in printed.err.splitlines() for part in line.split("\r")]
    assert [line for line in shown if len(line) > 100] == []
    assert report.differences == [], report.summary()
    assert report.rows_rescored == golden_rows * len(VENDORS)
    assert set(report.surfaces) >= {
        "leaderboard.json",
        "leaderboard.csv",
        "vendors/*.json",
        "public_row_scores.csv",
        "row_scores (DuckDB)",
        "vendor_metrics (DuckDB)",
    }


@contextmanager
def edited(path: Path, edit):
    """The file with `edit(text) -> text` applied, restored afterwards."""
    original = path.read_text()
    path.write_text(edit(original))
    try:
        yield
    finally:
        path.write_text(original)


def differences(home: Path) -> list[str]:
    return [str(d) for d in rescore_snapshot(home, SNAPSHOT).differences]


def rewritten_csv(text: str, change) -> str:
    """A CSV file's text with `change(row) -> row` applied to every row."""
    rows = list(csv.DictReader(io.StringIO(text)))
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow(change(r))
    return out.getvalue()


@pytest.fixture(scope="module")
def edited_and_rescored(published_site):
    """One rescore of the session's snapshot with four edits made at once: a figure in
    leaderboard.csv, a figure and a verdict in a vendor's JSON file, a verdict in
    public_row_scores.csv, and two stored verdicts swapped in the warehouse; each put back after.
    A rescore compares every file and table on its own, so each edit is reported as if made alone
    (the tests hold each to exactly what it makes), for one re-rendering of the site, not four."""
    home = published_site.home
    out = home / "data" / "publish" / SNAPSHOT
    seen = SimpleNamespace()
    rows = list(csv.DictReader(io.StringIO((out / "leaderboard.csv").read_text())))
    seen.cost_high = next(r for r in rows if r["vendor"] == "brave")["cost_per_correct_usd_high"]
    seen.row = json.loads((out / "vendors" / "tavily.json").read_text())["public_rows"][0]

    def edit_json(text):
        d = json.loads(text)
        d["entry"]["metrics"]["latency_p95_ms"]["low"] = 1.5
        d["public_rows"][0]["correct"] = not seen.row["correct"]
        return json.dumps(d)

    scores = list(csv.DictReader(io.StringIO((out / "public_row_scores.csv").read_text())))
    seen.exa_row = next(r for r in scores if r["row_id"] == seen.row["row_id"] and r["vendor"] == "exa")
    seen.flipped = "False" if seen.exa_row["correct"] == "True" else "True"
    flipped_key = (seen.row["row_id"], "exa")

    # two stored verdicts of one vendor swapped within one stratum, task type, cohort and split
    path = str(home / "data" / "warehouse" / "bench.duckdb")
    with duckdb.connect(path) as con:
        seen.pair = con.execute(
            "SELECT a.row_id, b.row_id FROM row_scores a JOIN row_scores b USING "
            "(snapshot_id, vendor, stratum, task_type, cohort, split) "
            "WHERE a.vendor = 'exa' AND a.correct AND NOT b.correct ORDER BY 1, 2 LIMIT 1"
        ).fetchone()
    assert seen.pair, "no pair of rows to swap"
    right, wrong = seen.pair
    swap = "UPDATE row_scores SET correct = ? WHERE snapshot_id = ? AND vendor = 'exa' AND row_id = ?"
    with (
        edited(
            out / "leaderboard.csv",
            lambda t: rewritten_csv(
                t, lambda r: {**r, "cost_per_correct_usd_high": "9.99"} if r["vendor"] == "brave" else r
            ),
        ),
        edited(out / "vendors" / "tavily.json", edit_json),
        edited(
            out / "public_row_scores.csv",
            lambda t: rewritten_csv(
                t, lambda r: {**r, "correct": seen.flipped} if (r["row_id"], r["vendor"]) == flipped_key else r
            ),
        ),
    ):
        with duckdb.connect(path) as con:
            con.execute(swap, [False, SNAPSHOT, right])
            con.execute(swap, [True, SNAPSHOT, wrong])
        try:
            seen.found = differences(home)
        finally:
            with duckdb.connect(path) as con:
                con.execute(swap, [True, SNAPSHOT, right])
                con.execute(swap, [False, SNAPSHOT, wrong])
    return seen


def reported(found: list[str], surface: str) -> list[str]:
    return [d for d in found if d.split(" · ", 1)[0] == surface]


def test_rescore_reports_each_edit_and_nothing_else(edited_and_rescored):
    found = edited_and_rescored.found
    assert sorted(d.split(" · ", 1)[0] for d in found) == sorted(
        ["leaderboard.csv", "vendors/tavily.json", "vendors/tavily.json", "public_row_scores.csv"]
        + ["row_scores (DuckDB)"] * 2
    ), found


def test_rescore_reports_an_edited_figure_in_leaderboard_csv(edited_and_rescored):
    seen = edited_and_rescored
    assert seen.cost_high  # the interval is published
    assert reported(seen.found, "leaderboard.csv") == [
        f"leaderboard.csv · vendor brave · cost_per_correct_usd_high: published '9.99', derived {seen.cost_high!r}"
    ], seen.found


def test_rescore_reports_an_edited_vendor_json_and_public_row_verdict(edited_and_rescored):
    seen = edited_and_rescored
    row, exa_row = seen.row, seen.exa_row
    found = reported(seen.found, "vendors/tavily.json")
    assert len(found) == 2, seen.found
    assert any(
        d.startswith("vendors/tavily.json · vendor tavily · entry.metrics.latency_p95_ms.low: published 1.5")
        for d in found
    ), found
    assert any(
        f"public_rows[{row['row_id']}].correct: published {not row['correct']!r}, derived {row['correct']!r}" in d
        for d in found
    ), found
    assert reported(seen.found, "public_row_scores.csv") == [
        f"public_row_scores.csv · vendor exa · row_id {row['row_id']}: correct: published "
        f"{seen.flipped!r}, derived {exa_row['correct']!r}"
    ], seen.found


def test_rescore_reports_row_scores_that_cancel_out_in_the_aggregates(edited_and_rescored):
    """Two stored verdicts of one vendor swapped within one stratum, task type, cohort and split:
    every aggregate is unchanged, and rescore still names both rows."""
    right, wrong = edited_and_rescored.pair
    assert sorted(reported(edited_and_rescored.found, "row_scores (DuckDB)")) == sorted(
        [
            f"row_scores (DuckDB) · vendor exa · {right}: correct: stored False, derived True",
            f"row_scores (DuckDB) · vendor exa · {wrong}: correct: stored True, derived False",
        ]
    ), edited_and_rescored.found


# ##### FAILURE PATHS


def test_failed_verification_blocks_the_fetch(tmp_path, simulator):
    def break_one_row(data):
        data["golden"] = {"source": "file", "path": "golden/broken.jsonl"}

    home = make_home(tmp_path, ["brave"], edit=break_one_row)
    from bench_assets.golden.planted import demo_golden_rows
    from bench_assets.golden.rows import dump_golden_rows

    rows = demo_golden_rows(rows_per_stratum=6)
    bad = rows[1].model_copy(
        update={"task": rows[1].task.model_copy(update={"anchor_phrases": ["words never planted"]})}
    )
    dump_golden_rows([rows[0], bad, *rows[2:]], home / "data" / "private" / "golden" / "broken.jsonl")
    with dg.instance_for_test() as instance:
        register_partitions(instance, [SNAPSHOT])
        result = materialize(instance, home, simulator.base_url, GOLDEN_STAGES, SNAPSHOT, raise_on_error=False)
        checks = check_evaluations(result, "golden_verifications")
        assert [c.passed for c in checks] == [False]
        fetch = materialize(
            instance, home, simulator.base_url, VENDOR_STAGES, vendor_key("brave"), raise_on_error=False
        )
        assert not fetch.success
        failure = next(e for e in fetch.all_events if e.event_type_value == "STEP_FAILURE")
        assert "verification" in failure.event_specific_data.error.message
    assert count(home, "SELECT count(*) FROM raw_responses") == 0


def test_malformed_golden_file_writes_nothing(tmp_path, simulator):
    home = make_home(
        tmp_path, ["brave"], edit=lambda d: d.update(golden={"source": "file", "path": "golden/bad.jsonl"})
    )
    path = home / "data" / "private" / "golden" / "bad.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text('{"id": "x-1"}\n')
    with dg.instance_for_test() as instance:
        register_partitions(instance, [SNAPSHOT])
        result = materialize(
            instance, home, simulator.base_url, ("snapshot_manifest", "golden_rows"), SNAPSHOT, raise_on_error=False
        )
        assert not result.success
        failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
        assert "bad.jsonl:1: field 'cohort'" in failure.event_specific_data.user_failure_data.description
    assert count(home, "SELECT count(*) FROM golden_rows") == 0


# ##### PARALLEL VENDOR PARTITIONS IN SEPARATE PROCESSES

CHILD = textwrap.dedent("""
    import sys
    import dagster as dg
    from pathlib import Path
    from bench_assets_tests.helpers import VENDOR_STAGES, materialize, vendor_key
    home, sim, vendor = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    with dg.DagsterInstance.get() as instance:
        result = materialize(instance, home, sim, VENDOR_STAGES, vendor_key(vendor), raise_on_error=False)
    sys.exit(0 if result.success else 1)
""")


def test_two_vendor_partitions_in_parallel_processes(tmp_path, simulator):
    vendors = ["exa", "firecrawl"]
    home = make_home(tmp_path / "home", vendors, rows_per_stratum=6)
    (tmp_path / "dagster").mkdir()
    with dg.instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
        register_partitions(instance, [SNAPSHOT])
        materialize(instance, home, simulator.base_url, GOLDEN_STAGES, SNAPSHOT)
        env = {**__import__("os").environ, "DAGSTER_HOME": str(tmp_path / "dagster")}
        children = [
            subprocess.Popen(
                [sys.executable, "-c", CHILD, str(home), simulator.base_url, v],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
            for v in vendors
        ]
        outputs = [c.communicate(timeout=240)[0].decode() for c in children]
        assert [c.returncode for c in children] == [0, 0], outputs[0][-3000:] + outputs[1][-3000:]
    n_rows = count(home, "SELECT count(*) FROM golden_rows")
    for v in vendors:
        assert count(home, "SELECT count(*) FROM row_scores WHERE vendor = ?", [v]) == n_rows
        assert (
            count(home, "SELECT count(*) FROM raw_responses WHERE vendor = ? AND final AND role <> 'decoy'", [v])
            == n_rows
        )
    # no duplicated attempts
    assert (
        count(
            home,
            "SELECT count(*) FROM (SELECT query_id, capability, vendor, count(*) c FROM raw_responses "
            "WHERE final GROUP BY ALL HAVING c > 1)",
        )
        == 0
    )


# ##### WHAT THE OPERATOR SEES: PROGRESS, THIS RUN'S SPEND, CHECKS


def run_messages(instance, asset: str, partition: str) -> list[tuple[str, list[str]]]:
    """(run id, its log messages) of each run that materialized `asset` for `partition`, oldest first."""
    out = []
    for run in reversed(instance.get_runs(filters=dg.RunsFilter(tags={"dagster/partition": partition}))):
        events = instance.all_logs(run.run_id)
        if any(
            e.dagster_event
            and e.dagster_event.event_type_value == "ASSET_MATERIALIZATION"
            and e.dagster_event.asset_key == dg.AssetKey(asset)
            for e in events
        ):
            out.append((run.run_id, [e.user_message for e in events if e.user_message]))
    return out


def fetch_metadata(instance, run_id: str) -> dict:
    [event] = instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION)[:1]
    materialization = event.dagster_event.step_materialization_data.materialization
    assert materialization.asset_key == dg.AssetKey("vendor_responses")
    return {k: v.value for k, v in materialization.metadata.items()}


def test_a_fetch_logs_progress_as_it_goes_and_reports_this_runs_spend(snapshot_run, simulator):
    """A live fetch runs for tens of minutes: the run's log shows rows done of the rows to send,
    the spend so far and the answers that were not ok, by class, as it goes; its last line and its
    metadata say what this run was billed. A re-run that sends nothing says $0 and why."""
    home, instance = snapshot_run
    partition = f"{SNAPSHOT}|brave"
    [(first_run, messages), *_] = run_messages(instance, "vendor_responses", partition)
    progress = [m for m in messages if m.startswith("brave: ") and " rows sent (" in m]
    assert len(progress) >= 5, messages  # a line at every tenth of the rows
    done = [int(m.split(": ")[1].split("/")[0]) for m in progress]
    total = int(progress[0].split("/")[1].split(" ")[0])
    assert done == sorted(done) and done[-1] < total
    spends = [float(m.split("spend this run $")[1].split(",")[0]) for m in progress]
    assert spends == sorted(spends) and spends[-1] > 0
    assert all("not ok by class: " in m for m in progress)
    first = fetch_metadata(instance, first_run)
    [end] = [m for m in messages if m.startswith(f"brave: sent {total} rows")]
    assert f"spend this run ${first['spend_this_run_usd']:.4f}" in end
    # a fresh archive: this run's spend is all the archive holds
    assert first["spend_this_run_usd"] == first["spend_in_archive_usd"] > spends[-1] * 0.5

    materialize(instance, home, simulator.base_url, ("vendor_responses",), vendor_key("brave"))
    last_run, messages = run_messages(instance, "vendor_responses", partition)[-1]
    again = fetch_metadata(instance, last_run)
    assert again["sent_this_run"] == 0 and again["spend_this_run_usd"] == 0.0
    assert again["spend_in_archive_usd"] == pytest.approx(first["spend_in_archive_usd"])
    archived = again["reused_from_archive"]
    assert archived == total and again["spend_note"] == f"nothing sent: all {archived} rows already archived"
    [end] = [m for m in messages if m.startswith("brave: sent nothing")]
    assert f"all {archived} rows already archived" in end
    assert "spend this run $0.0000" in end
    assert not [m for m in messages if " rows sent (" in m]  # nothing to send, no progress lines


def test_every_check_ran_on_every_partition_and_passed(published_site, golden_rows):
    """The checks on fetch, scores, the leaderboard and publication, each scoped to the partition it
    checked (snapshot x vendor for fetch and scores), in the runs that built the snapshot (not those
    of a test that re-runs publication to see it refused, e.g. a reply quoting a holdout query)."""
    instance = published_site.instance
    evaluations = [
        e.dagster_event.event_specific_data
        for run in instance.get_runs()
        if run.run_id in published_site.run_ids
        for e in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)
    ]
    seen = {(c.asset_key.to_user_string(), c.check_name, c.partition) for c in evaluations}
    for vendor in VENDORS:
        assert ("vendor_responses", "every_row_answered_or_classified", f"{SNAPSHOT}|{vendor}") in seen
        assert ("vendor_scores", "every_row_scored_once", f"{SNAPSHOT}|{vendor}") in seen
    assert ("vendor_leaderboard", "figures_within_bounds", SNAPSHOT) in seen
    assert ("published_snapshot", "no_holdout_in_published_files", SNAPSHOT) in seen
    failed = [(c.asset_key, c.check_name, c.description) for c in evaluations if not c.passed]
    assert not failed, failed
    scores = next(c for c in evaluations if c.check_name == "every_row_scored_once" and c.partition.endswith("|exa"))
    assert scores.metadata["golden_rows"].value == scores.metadata["scores"].value == golden_rows
    bounds = next(c for c in evaluations if c.check_name == "figures_within_bounds")
    assert bounds.metadata["shares"].value > 0 and bounds.metadata["intervals"].value > 0
