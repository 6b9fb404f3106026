"""`bench mcp`'s answers (bench_assets.mcp_server.published) on small published folders: which
snapshot is the newest, which configurations are listed and by which rule, what is said when a
figure is not published, and the bad questions refused with what is known instead."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench_assets.cli import main as cli
from bench_assets.mcp_server.published import PublishedSnapshot, QueryError, newest_published
from bench_assets_tests.helpers import unwrapped


def fig(value, low, high, n=100):
    return {"value": value, "low": low, "high": high, "n": n}


def entry(vendor, position, rate, cost, strata=None, per_1k=True):
    metrics = {"correct_rate_shared": rate, "correct_rate": rate, "cost_per_correct_usd": cost}
    if per_1k:  # as published: 1000 x the cost per correct, rounded on its own
        metrics["usd_per_1000_correct"] = {k: (v * 1000 if k != "n" else v) for k, v in cost.items()}
    return {
        "vendor": vendor,
        "status": "scored",
        "position": position,
        "metrics": metrics,
        "breakdown": {"stratum": strata or {}, "task_type": {"search": {"correct_rate": rate}}},
        "headline_eligible": True,
        "reasons": [],
    }


def pair(a, b, value, low, high, better):
    return {"vendor_a": a, "vendor_b": b, "n": 100, "difference": fig(value, low, high), "better": better}


BOARD = {
    "snapshot_id": "web_search-2026-q4",
    "mode": "live",
    "headline_eligible": True,
    "rank_metric": "correct_rate_shared",
    "ranking": {"metric": "correct_rate_shared", "task_types": ["answer", "search"], "note": "ranked"},
    "comparisons": {
        "alpha": 0.05,
        "pairs": [
            # b is vendor_a of its pair with the best: its difference is flipped to b − a
            pair("b", "a", -0.02, -0.06, 0.01, None),
            pair("a", "c", 0.20, 0.12, 0.28, "a"),
            pair("b", "c", 0.18, 0.10, 0.26, "b"),
        ],
    },
    "vendors": [
        entry("a", 1, fig(0.9, 0.85, 0.94), fig(0.010, 0.009, 0.011), {"news": {"correct_rate": fig(0.7, 0.5, 0.85)}}),
        entry("b", 2, fig(0.88, 0.83, 0.92), fig(0.002, 0.002, 0.003), {"news": {"correct_rate": fig(0.9, 0.8, 0.96)}}),
        entry("c", 3, fig(0.7, 0.6, 0.78), fig(0.001, 0.001, 0.001), {"news": {"correct_rate": fig(0.6, 0.4, 0.75)}}),
    ],
}


def published(tmp_path: Path, board: dict, name: str | None = None) -> Path:
    folder = tmp_path / "data" / "publish" / (name or board["snapshot_id"])
    (folder / "vendors").mkdir(parents=True)
    (folder / "leaderboard.json").write_text(json.dumps(board))
    (folder / "vendors" / "a.html").write_text("<p>a</p>")
    return folder


def test_the_paired_rule_lists_what_the_best_is_not_told_apart_from(tmp_path):
    answer = PublishedSnapshot(published(tmp_path, BOARD)).recommend("web_search")
    assert answer["rule"]["name"] == "paired" and answer["best"] == "a"
    assert [c["vendor"] for c in answer["configurations"]] == ["a", "b"]
    b = answer["configurations"][1]
    assert b["comparison_with_best"]["difference_vs_best"] == {"value": -0.02, "low": -0.06, "high": 0.01}
    assert b["usd_per_1k_correct"] == {
        "metric": "usd_per_1000_correct",
        "value": 2.0,
        "low": 2.0,
        "high": 3.0,
        "n": 100,
    }
    # only files that exist are linked
    assert answer["configurations"][0]["evidence"] == ["vendors/a.html"] and b["evidence"] == []
    assert answer["metric_descriptors"] is None


def test_a_budget_keeps_the_affordable_and_ranks_among_them(tmp_path):
    snapshot = PublishedSnapshot(published(tmp_path, BOARD))
    answer = snapshot.recommend("web_search", budget_usd_per_1k=5)
    assert answer["best"] == "b" and [c["vendor"] for c in answer["configurations"]] == ["b"]  # c: b is better
    assert answer["over_budget"] == [{"vendor": "a", "usd_per_1k_correct": 10.0}]
    nothing = snapshot.recommend("web_search", budget_usd_per_1k=0.5)
    assert nothing["configurations"] == [] and nothing["best"] is None
    with pytest.raises(QueryError, match="positive number"):
        snapshot.recommend("web_search", budget_usd_per_1k=0)


def test_the_budget_is_held_against_the_published_figure_not_one_computed_from_the_cost(tmp_path):
    board = json.loads(json.dumps(BOARD))
    # published 4.9 though 1000 x cost per correct is 10: the published figure decides
    board["vendors"][0]["metrics"]["usd_per_1000_correct"] = fig(4.9, 4.5, 5.4)
    answer = PublishedSnapshot(published(tmp_path, board)).recommend("web_search", budget_usd_per_1k=5)
    assert answer["best"] == "a" and answer["over_budget"] == []
    assert answer["configurations"][0]["usd_per_1k_correct"]["value"] == 4.9
    assert any("usd_per_1000_correct" in note for note in answer["notes"])


def test_a_record_published_before_the_figure_falls_back_to_1000_times_the_cost_and_says_so(tmp_path):
    board = json.loads(json.dumps(BOARD))
    for e in board["vendors"]:
        del e["metrics"]["usd_per_1000_correct"]
    answer = PublishedSnapshot(published(tmp_path, board)).recommend("web_search", budget_usd_per_1k=5)
    assert answer["over_budget"] == [{"vendor": "a", "usd_per_1k_correct": 10.0}]
    assert answer["configurations"][0]["usd_per_1k_correct"]["derived_from"] == "1000 x cost_per_correct_usd"


def test_a_stratum_ranks_on_its_published_figure_by_interval_overlap_and_says_so(tmp_path):
    snapshot = PublishedSnapshot(published(tmp_path, BOARD), base_url="https://x.test/s")
    answer = snapshot.recommend("web_search", stratum="news")
    assert answer["rule"]["name"] == "interval_overlap" and answer["best"] == "b"
    assert [c["vendor"] for c in answer["configurations"]] == ["b", "a"]  # c's interval ends below b's
    assert any("No paired comparison" in n for n in answer["notes"])
    with pytest.raises(QueryError, match=r"unknown stratum 'sports'.*known: news"):
        snapshot.recommend("web_search", stratum="sports")
    within = snapshot.recommend("search", stratum="news")
    assert within["configurations"] == [] and "not for 'search' within a stratum" in within["notes"][0]


def test_no_per_stratum_figures_published_is_said_not_guessed(tmp_path):
    board = {**BOARD, "vendors": [{**e, "breakdown": {}} for e in BOARD["vendors"]]}
    answer = PublishedSnapshot(published(tmp_path, board)).recommend("web_search", stratum="news")
    assert answer["configurations"] == [] and "publishes no per-stratum figures" in answer["notes"][0]


def test_unknown_questions_name_what_is_known(tmp_path):
    snapshot = PublishedSnapshot(published(tmp_path, BOARD))
    with pytest.raises(QueryError, match=r"unknown task_type 'images'.*known: web_search, search"):
        snapshot.recommend("images")
    with pytest.raises(QueryError, match=r"unknown vendor 'z'.*known: a, b, c"):
        snapshot.vendor_figures("z")
    with pytest.raises(QueryError, match=r"publishes no public_row_scores\.csv"):
        snapshot.row_verdicts("news-001-s")


def test_descriptors_are_passed_through_for_the_figures_returned(tmp_path):
    described = {"key": "cost_per_correct_usd", "direction": "lower_better", "unit": "USD"}
    board = {**BOARD, "metrics": [described, {"key": "latency_p50_ms", "direction": "lower_better"}]}
    answer = PublishedSnapshot(published(tmp_path, board)).recommend("web_search")
    assert answer["metric_descriptors"] == {"cost_per_correct_usd": described}


def test_the_newest_snapshot_is_the_latest_quarter_then_its_latest_erratum(tmp_path):
    for name in ["web_search-2026-q3", "web_search-2026-q4", "web_search-2026-q4-e1", "web_search-2025-q4-e2"]:
        published(tmp_path, {**BOARD, "snapshot_id": name}, name)
    assert newest_published(tmp_path / "data" / "publish").name == "web_search-2026-q4-e1"
    with pytest.raises(QueryError, match="no published snapshot"):
        newest_published(tmp_path / "nowhere")


def test_a_damaged_leaderboard_is_named_with_its_line(tmp_path):
    folder = published(tmp_path, BOARD)
    (folder / "leaderboard.json").write_text('{\n  "snapshot_id": \n')
    with pytest.raises(QueryError, match=r"leaderboard.json:3: not valid JSON"):
        PublishedSnapshot(folder)


def test_bench_mcp_refuses_a_snapshot_that_is_not_published(tmp_path, monkeypatch, capsys):
    published(tmp_path, BOARD)
    monkeypatch.setenv("BENCH_HOME", str(tmp_path))
    assert cli.main(["mcp", "--snapshot", "web_search-2026-q1"]) == 2
    err = unwrapped(capsys.readouterr().err)
    assert "'web_search-2026-q1' is not published (known: web_search-2026-q4)" in err
    with pytest.raises(SystemExit):
        cli.main(["mcp", "--http", "--port", "70000"])
    assert "not a TCP port" in capsys.readouterr().err
