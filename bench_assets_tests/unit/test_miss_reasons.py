"""Every row a vendor did not get right has a reason (`score.miss_reasons`), counted per vendor."""

from __future__ import annotations

import pandas as pd

from bench_assets.aggregate.figures import vendor_metrics
from bench_assets.aggregate.leaderboard import build_leaderboard
from bench_assets.golden.verdicts import AnswerVerdict
from bench_assets.manifest import load_manifest
from bench_assets.metrics import CELL_RULE_CODES, FidelityScore, explain_cell, normalize_url
from bench_assets.metrics.answers import CellAnswer
from bench_assets.score.miss_reasons import (
    MISS_REASONS,
    answer_miss,
    count_miss_reasons,
    extract_miss,
    miss_code,
    search_miss,
    unanswered_miss,
)
from bench_assets_tests.helpers import DEMO_MANIFEST


def test_unanswered_rows():
    assert unanswered_miss("ok") is None and unanswered_miss("unsupported") is None
    assert unanswered_miss("empty") == "no_results"
    assert unanswered_miss("timeout") == "call_failed:timeout"


def test_search_reasons_in_order():
    golden = [normalize_url("https://a.test/doc")]
    assert search_miss([], None, 5, golden) == "no_results"
    assert search_miss(["b.test/x"] * 6 + ["a.test/doc"], 7, 5, golden) == "golden_below_k"
    assert search_miss(["b.test/x", "a.test/other"], None, 5, golden) == "golden_site_other_document"
    assert search_miss(["b.test/x", ""], None, 5, golden) == "not_returned"
    # the golden site is a registry: any of its hosts
    rfc = [normalize_url("https://www.rfc-editor.org/rfc/rfc9110")]
    assert (
        search_miss([normalize_url("https://www.ietf.org/rfc/rfc1.txt")], None, 5, rfc) == "golden_site_other_document"
    )


def test_extract_reasons_name_the_fields_by_weight_lost():
    fid = FidelityScore(
        0.6,
        "partial",
        {"title": 0.0, "anchor_phrases": 1.0, "table_cells": 0.5, "noise": 0.5},
        {"title": 0.15, "anchor_phrases": 0.35, "table_cells": 0.25, "noise": 0.25},
    )
    assert extract_miss(1, fid) == "extract_fields:title,noise,table_cells"
    assert extract_miss(0, fid) == "no_results"
    assert extract_miss(1, FidelityScore(0.0, "incorrect")) == "extract_no_text"


def test_answer_reasons_name_the_rubric_rule():
    assert answer_miss(2, AnswerVerdict(0.0, "precise: none")) == "answer_not_found"
    cell = explain_cell("range", CellAnswer("range", low=1, high=2), expected_low=10, expected_high=20)
    assert cell.code in CELL_RULE_CODES
    assert answer_miss(2, AnswerVerdict(cell.score, "range", cell=cell)) == f"answer_rubric:{cell.code}"
    assert answer_miss(0, AnswerVerdict(0.0, "x")) == "no_results"


def test_every_code_is_described_and_counts_are_ordered():
    for reason in (
        "call_failed:auth",
        "no_results",
        "golden_below_k",
        "extract_fields:title",
        "answer_rubric:no_value",
    ):
        assert miss_code(reason) in MISS_REASONS
    assert count_miss_reasons(["b", None, "a", "b", "c", "a", "b"]) == {"b": 3, "a": 2, "c": 1}
    assert count_miss_reasons(["a", float("nan"), pd.NA, ""]) == {"a": 1}  # missing cells are no reason


def test_the_leaderboard_record_counts_them_per_vendor():
    manifest = load_manifest(DEMO_MANIFEST)
    vendor = sorted(manifest.vendors)[0]
    scores = pd.DataFrame(
        [
            {
                "vendor": vendor,
                "task_type": "search",
                "stratum": "s",
                "cohort": "c",
                "split": "public",
                "response_class": cls,
                "correct": correct,
                "fidelity": None,
                "answer_score": None,
                "billed_usd": 0.0,
                "latency_ms": 1.0,
                "hit_at_1": correct,
                "hit_at_3": correct,
                "hit_at_5": correct,
                "hit_at_10": correct,
                "miss_reason": reason,
            }
            for cls, correct, reason in [
                ("ok", True, None),
                ("ok", False, "not_returned"),
                ("ok", False, "not_returned"),
                ("timeout", False, "call_failed:timeout"),
                ("unsupported", None, None),
            ]
        ]
    )
    scores = scores.astype(dict.fromkeys(("correct", "hit_at_1", "hit_at_3", "hit_at_5", "hit_at_10"), "boolean"))
    metrics = vendor_metrics("t", scores)
    board = build_leaderboard(manifest, metrics, {vendor})
    entry = next(e for e in board["vendors"] if e["vendor"] == vendor)
    assert entry["miss_reasons"] == {"not_returned": 2, "call_failed:timeout": 1}
    counted = metrics[metrics["scope"] == "miss_reason"]
    assert set(counted["n"]) == {4}  # over the vendor's scored rows (unsupported left out)


def test_every_code_has_a_label_in_plain_words():
    from bench_assets.publish.format import MISS_REASON_LABELS, miss_reason_label

    assert set(MISS_REASON_LABELS) == set(MISS_REASONS)
    assert miss_reason_label("call_failed:rate_limited") == "the call failed: rate limited"
    assert miss_reason_label("extract_fields:title,anchor_phrases") == "fields fell short: title, anchor phrases"
    assert miss_reason_label("not_returned") == "the golden document not returned"
    assert miss_reason_label(None) == ""
