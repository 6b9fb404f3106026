"""A figure cell's link to the public rows behind it (publish/rowlinks.py): the filter it puts in
the listing's URL, and no link where no public row is behind the figure."""

from __future__ import annotations

from bench_assets.publish.rowlinks import linked, rows_href, rows_query

BOARD = {
    "ranking": {"metric": "correct_rate_shared", "base_metric": "correct_rate", "task_types": ["search", "answer"]}
}


def test_a_metric_over_one_task_type_filters_its_rows_to_it() -> None:
    assert rows_query(BOARD, "hit_at_1") == "?task=search"
    assert rows_query(BOARD, "fidelity_mean") == "?task=extract"
    assert rows_query(BOARD, "answer_score_mean") == "?task=answer"
    # the ranking figure counts the task types every vendor supports
    assert rows_query(BOARD, "correct_rate_shared") == "?task=answer%2Csearch"
    # a figure over every row lists every row
    assert rows_query(BOARD, "correct_rate") == ""
    assert rows_query(BOARD, "cost_per_correct_usd") == ""


def test_a_group_of_a_breakdown_adds_its_filter() -> None:
    assert rows_query(BOARD, "hit_at_1", "stratum", "news <&>") == "?task=search&stratum=news+%3C%26%3E"
    assert rows_query(BOARD, "correct_rate", "task_type", "extract") == "?task=extract"
    assert rows_query(BOARD, "correct_rate", "split", "public") == ""
    assert rows_query(BOARD, None, response_class="timeout") == "?class=timeout"
    assert rows_query(BOARD, None, miss_reason="call_failed:timeout") == "?miss=call_failed%3Atimeout"


def test_no_link_where_no_public_row_is_behind_the_figure() -> None:
    assert rows_query(BOARD, "correct_rate", "split", "holdout") is None
    assert rows_query(BOARD, "ttr_median_hours") is None
    assert rows_query(BOARD, "overfit_gap") is None
    assert rows_query(BOARD, "correct_rate", "cohort", "2026-q3") is None  # a row's cohort is not listed
    assert rows_query(BOARD, "hit_at_1", "task_type", "extract") is None  # hit@k has no extract rows


def test_the_link_goes_to_the_vendors_listing_and_escapes_its_target() -> None:
    href = rows_href(BOARD, "exa", "hit_at_1", prefix="vendors/")
    assert href == "vendors/exa.html?task=search#public-rows"
    assert str(linked(href, "0.5")) == '<a class="rows" href="vendors/exa.html?task=search#public-rows">0.5</a>'
    assert str(linked('x" onclick="y', "<b>")) == '<a class="rows" href="x&#34; onclick=&#34;y">&lt;b&gt;</a>'
    assert linked(None, "0.5") == "0.5"
