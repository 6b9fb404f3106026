"""How `bench rescore` compares a published surface with its re-derivation (pure functions).

The end-to-end checks — a real snapshot, an edited file or table, no network — are in
test_snapshot_e2e.py; these pin down the comparison rules themselves.
"""

from __future__ import annotations

import pandas as pd

from bench_assets.rescore import Difference, compare_csv, compare_frames, compare_json, same_value


def test_figures_compare_within_a_tolerance_and_types_matter_in_json():
    assert same_value(0.1 + 0.2, 0.3)
    assert not same_value(0.5, 0.5001)
    assert same_value(None, float("nan"))  # a missing figure, however it is spelled
    assert not same_value("0.5", 0.5)  # in JSON a string is not a number ...
    assert same_value("0.5", 0.5, text=True)  # ... in a CSV cell it is
    assert not same_value(True, 1) and same_value(True, True)


def test_json_records_are_matched_by_vendor_or_row_id_not_by_position():
    published = {"vendors": [{"vendor": "a", "x": 1}, {"vendor": "b", "x": 2}, {"vendor": "c", "x": 3}]}
    derived = {"vendors": [{"vendor": "a", "x": 1}, {"vendor": "c", "x": 3.5}]}
    assert list(compare_json("", published, derived)) == [
        ("vendors[b]", {"vendor": "b", "x": 2}, None),  # one record missing does not shift the others
        ("vendors[c].x", 3, 3.5),
    ]
    rows = {"public_rows": [{"row_id": "r1", "correct": True}]}
    assert list(compare_json("", rows, {"public_rows": [{"row_id": "r1", "correct": False}]})) == [
        ("public_rows[r1].correct", True, False)]
    assert list(compare_json("", {"k": [1, 2]}, {"k": [1, 2, 3]})) == [("k (items)", 2, 3)]


def test_csv_cells_are_matched_on_their_key_and_named_by_vendor_and_row():
    published = "row_id,vendor,correct,latency_ms\nr1,exa,True,120.5\nr2,exa,False,\n"
    derived = "row_id,vendor,correct,latency_ms\nr1,exa,True,120.50000000001\nr2,exa,True,\nr3,exa,True,9\n"
    found = compare_csv("public_row_scores.csv", published, derived, ("row_id", "vendor"))
    assert found == [Difference("public_row_scores.csv", "exa", "row_id r2: correct", "False", "True"),
                     Difference("public_row_scores.csv", "exa", "row_id r3", None, "row")]
    assert str(found[0]) == ("public_row_scores.csv · vendor exa · row_id r2: correct: published 'False', "
                             "derived 'True'")
    assert compare_csv("x.csv", "vendor,a\nexa,1\n", "vendor,a,b\nexa,1,2\n", ("vendor",)) == [
        Difference("x.csv", None, "column b", None, "present")]


def test_a_table_is_compared_row_by_row_even_when_the_totals_agree():
    stored = pd.DataFrame({"vendor": ["exa", "exa"], "row_id": ["r1", "r2"], "correct": [False, True]})
    derived = pd.DataFrame({"vendor": ["exa", "exa"], "row_id": ["r1", "r2"], "correct": [True, False]})
    found = compare_frames("row_scores (DuckDB)", stored, derived, ["vendor", "row_id"], ["correct"])
    assert [str(d) for d in found] == [
        "row_scores (DuckDB) · vendor exa · r1: correct: stored False, derived True",
        "row_scores (DuckDB) · vendor exa · r2: correct: stored True, derived False",
    ]
