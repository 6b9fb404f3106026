"""What the operator reads: the asset checks' findings (`aggregate.checks`), the fetch's progress
lines (`fetch.progress`) and the code versions that mark figures stale (`defs.code_versions`)."""

from __future__ import annotations

import shutil

import pandas as pd

from bench_assets.aggregate.checks import fetch_completeness, figure_bounds, scores_completeness
from bench_assets.definitions import defs
from bench_assets.defs import code_versions
from bench_assets.fetch.classify import UNPRICED_UNIT_STOP
from bench_assets.fetch.progress import FetchProgress

# ##### checks: a passing and a failing case each


def finals(rows) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["query_id", "capability", "http_status", "transport_error"])


def test_fetch_completeness_passes_answered_and_classified_rows_only():
    items = {("q1", "search"), ("q2", "search"), ("q3", "extract")}
    good = finals([("q1", "search", 200, None), ("q2", "search", 429, None), ("q3", "extract", None, "timeout: x")])
    found = fetch_completeness(items, good)
    assert found.passed and found.metadata["answered"] == 2 and found.metadata["classified_failures"] == 1

    dropped = fetch_completeness(items, good.iloc[:2])
    assert not dropped.passed and dropped.metadata["missing"] == 1 and "1 rows without a final" in dropped.description
    twice = fetch_completeness(items, pd.concat([good, good.iloc[:1]]))
    assert not twice.passed and twice.metadata["more_than_one_final"] == 1
    blank = fetch_completeness(items, finals([*good.values.tolist()[:2], ("q3", "extract", None, None)]))
    assert not blank.passed and blank.metadata["neither_status_nor_error"] == 1


def test_a_call_stopped_for_an_unpriced_unit_and_sent_later_counts_once():
    """The archive keeps the stop marker (final when written) beside the answer a later run got."""
    items = {("q1", "search"), ("q2", "search")}
    rows = pd.DataFrame(
        [
            ("q1", "search", 1, 200, None),
            ("q2", "search", 1, None, f"{UNPRICED_UNIT_STOP}: usd"),
            ("q2", "search", 2, 200, None),
        ],
        columns=["query_id", "capability", "attempt", "http_status", "transport_error"],
    )
    found = fetch_completeness(items, rows)
    assert found.passed and found.metadata["answered"] == 2, found.description
    # a stop marker not followed by an answer is the row's final word (a classified failure)
    stopped = fetch_completeness(items, rows.iloc[:2])
    assert stopped.passed and stopped.metadata["classified_failures"] == 1
    # two answers are still one too many
    twice = fetch_completeness(items, pd.concat([rows, rows.iloc[2:]]))
    assert not twice.passed and twice.metadata["more_than_one_final"] == 1


def test_scores_completeness_wants_each_golden_row_once_in_a_known_class():
    scores = pd.DataFrame({"row_id": ["a", "b"], "response_class": ["ok", "timeout"]})
    assert scores_completeness(["a", "b"], scores).passed
    missing = scores_completeness(["a", "b", "c"], scores)
    assert not missing.passed and missing.metadata["not_scored"] == 1
    twice = scores_completeness(["a", "b"], pd.concat([scores, scores.iloc[:1]]))
    assert not twice.passed and twice.metadata["scored_more_than_once"] == 1
    odd = scores_completeness(["a", "b"], scores.assign(response_class=["ok", "weird"]))
    assert not odd.passed and odd.metadata["unknown_class"] == 1


def metric(name, value, low, high, vendor="exa"):
    return {
        "vendor": vendor,
        "scope": "overall",
        "scope_value": "all",
        "metric": name,
        "value": value,
        "low": low,
        "high": high,
    }


def test_figure_bounds_holds_shares_to_0_1_and_intervals_to_their_values():
    good = pd.DataFrame(
        [
            metric("correct_rate", 0.5, 0.4, 0.6),
            metric("overfit_gap", -0.2, -0.3, 0.1),  # a difference: below 0 is fine
            metric("latency_p50_ms", 900.0, 800.0, 1000.0),  # not a share
            metric("count", 3.0, None, None),  # no interval
        ]
    )
    found = figure_bounds(good)
    assert found.passed and found.metadata == {
        "figures": 4,
        "shares": 1,
        "intervals": 3,
        "shares_out_of_range": 0,
        "intervals_without_value": 0,
    }
    bad = pd.concat(
        [good, pd.DataFrame([metric("hit_at_5", 1.2, 0.9, 1.3, "brave"), metric("spend_usd", 2.0, 2.5, 3.0)])]
    )
    found = figure_bounds(bad)
    assert not found.passed
    assert found.metadata["shares_out_of_range"] == 1 and found.metadata["intervals_without_value"] == 1
    assert "brave hit_at_5" in found.description and "exa spend_usd" in found.description


# ##### progress


def test_progress_reports_every_tenth_and_every_interval_and_this_runs_spend():
    lines: list[str] = []
    now = [0.0]
    progress = FetchProgress("exa", to_send=20, archived=5, log=lines.append, every_seconds=30, clock=lambda: now[0])
    progress.start()
    assert lines == ["exa: 20 rows to send, 5 already archived (not sent again)"]
    for i in range(1, 20):
        progress.row_done("ok" if i % 5 else "timeout", spend_usd=0.01 * i)
    # every second row (a tenth of 20), the last one left to the end line
    assert [line.split(": ")[1].split(" ")[0] for line in lines[1:]] == [f"{n}/20" for n in range(2, 20, 2)]
    assert lines[-1] == "exa: 18/20 rows sent (90 %), spend this run $0.1800, 0 retries, not ok by class: timeout 3"
    now[0] = 100.0  # a slow row: a line by time although no tenth was reached
    progress.row_done("quota", 0.2)
    assert len(lines) == 10 and progress.done == 20  # the last row: no progress line, the end line says it
    end = progress.end_line(sent=20, attempts=23, spend_usd=0.2, archive_spend_usd=0.25)
    assert "spend this run $0.2000 (the partition's archive: $0.2500)" in end
    assert end.endswith("not ok by class: timeout 3, quota 1")


def test_a_run_that_sends_nothing_says_0_and_why():
    progress = FetchProgress("brave", to_send=0, archived=42, log=lambda m: None)
    line = progress.end_line(sent=0, attempts=0, spend_usd=0.0, archive_spend_usd=1.896)
    assert line == (
        "brave: sent nothing (all 42 rows already archived, nothing re-sent); spend this run $0.0000 "
        "(the partition's archive holds $1.8960 billed by earlier runs)"
    )


# ##### code versions


def test_the_assets_that_change_figures_carry_the_digest_of_their_logic():
    graph = defs().resolve_asset_graph()
    versions = {k.to_user_string(): graph.get(k).code_version for k in graph.get_all_asset_keys()}
    assert versions["vendor_scores"] == code_versions.logic_digest(code_versions.SCORING_MODULES)
    assert versions["vendor_leaderboard"] == code_versions.logic_digest(code_versions.AGGREGATE_MODULES)
    assert versions["published_snapshot"] == code_versions.logic_digest(code_versions.PUBLISH_MODULES)
    assert versions["vendor_responses"] is None  # archived evidence: a fetch change changes no figure


def test_the_digest_changes_with_the_logic_not_with_docstrings_or_comments(tmp_path):
    package = tmp_path / "pkg"
    shutil.copytree(code_versions.PACKAGE / "score", package / "score")
    before = code_versions.logic_digest(["score"], package)
    module = package / "score" / "partition.py"
    text = module.read_text()
    module.write_text(text.replace('"""', '"""Reworded. ', 1) + "\n# a comment\n")
    assert code_versions.logic_digest(["score"], package) == before
    module.write_text(text + "\nTHRESHOLD = 0.5\n")
    assert code_versions.logic_digest(["score"], package) != before
