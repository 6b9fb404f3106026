"""Scoring one vendor partition from archived responses, the way `vendor_scores` and `bench rescore` do.

A response that is not `ok` earns nothing: fidelity 0 (`incorrect`), answer score 0, no hit,
and it stays in every denominator. Answer rows get a rubric score (precise rows: 1 for the answer
in the top k, else the rubric's half credit for a value read about the row's cue; range and
not-available rows: the cell reader and the per-cell rubric) with the rule that produced it. hit@k comes from the vectorized path and agrees with the reference metric.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench_assets.adapters import get_adapter
from bench_assets.aggregate.figures import vendor_metrics
from bench_assets.fetch.classify import SPEND_CEILING_REACHED
from bench_assets.golden.rows import AnswerTask, ExtractTask, GoldenRow, SearchTask, Verification
from bench_assets.manifest import load_manifest
from bench_assets.metrics import first_hit_rank
from bench_assets.score.partition import SCORE_COLUMNS, score_partition
from bench_assets_tests.helpers import DEMO_MANIFEST

MANIFEST = load_manifest(DEMO_MANIFEST)
EXA = get_adapter(MANIFEST.vendors["exa"].adapter)
VERIFIED = Verification(verified_by="test", verified_at=datetime(2026, 6, 1, tzinfo=UTC), evidence="unit")
PAGE = "https://docs.acme.test/guides/webhooks"


def row(row_id: str, task) -> GoldenRow:
    return GoldenRow(
        id=row_id, cohort="2026-q3", stratum="docs", provenance="hand_verified", verification=VERIFIED, task=task
    )


ROWS = [
    row("s1", SearchTask(type="search", query="acme webhooks guide", golden_urls=[PAGE])),
    row(
        "x1",
        ExtractTask(
            type="extract",
            url=PAGE,
            title="Webhooks in Acme",
            anchor_phrases=["retry with backoff"],
            noise=["Accept all cookies"],
        ),
    ),
    # A row that only asks for noise to be left out: an empty answer must not pass it.
    row("x2", ExtractTask(type="extract", url=PAGE, noise=["Accept all cookies", "Subscribe now"])),
    row(
        "a1",
        AnswerTask(
            type="answer", question="How many retries does Acme make?", number=5.0, tolerance=0.0, source_urls=[PAGE]
        ),
    ),
    row(
        "a2",
        AnswerTask(
            type="answer",
            question="What processing time does Acme quote?",
            answer_type="range",
            cue="processing time of Acme",
            range_low=10,
            range_high=15,
            source_urls=[PAGE],
        ),
    ),
    row(
        "a3",
        AnswerTask(
            type="answer",
            question="What fee does Acme pay?",
            answer_type="not_available",
            cue="contractor fee of Acme",
            source_urls=[PAGE],
        ),
    ),
]
SPLIT = {r.id: "public" for r in ROWS}


def attempt(
    query_id: str,
    capability: str,
    *,
    status: int | None = 200,
    body=None,
    transport_error=None,
    attempt_no: int = 1,
    headers=None,
) -> dict:
    text = body if isinstance(body, str) or body is None else json.dumps(body)
    return {
        "snapshot_id": "t",
        "vendor": "exa",
        "query_id": query_id,
        "role": "golden",
        "capability": capability,
        "attempt": attempt_no,
        "started_at": pd.Timestamp("2026-06-02T00:00:00Z"),
        "latency_ms": 12.0,
        "request_json": "{}",
        "http_status": status,
        "response_headers_json": json.dumps(headers or {}),
        "body": text,
        "body_sha256": None,
        "transport_error": transport_error,
        "final": True,
        "adapter_version": "1",
    }


def exa_body(results: list[dict]) -> dict:
    return {"requestId": "req-1", "results": results, "costDollars": {"total": 0.007}}


def result(url: str, title: str = "A page", text: str | None = None, highlights: str | None = None) -> dict:
    item = {"url": url, "title": title, "publishedDate": None}
    if text is not None:
        item["text"] = text
    if highlights is not None:
        item["highlights"] = [highlights]
    return item


def capability(r: GoldenRow) -> str:
    return "extract" if r.task_type == "extract" else "search"


def score(raw_rows: list[dict], rows: list[GoldenRow] = ROWS) -> tuple[pd.DataFrame, pd.DataFrame]:
    raw = pd.DataFrame(raw_rows).astype({"http_status": "Int64"})
    return score_partition("t", "exa", EXA, MANIFEST, rows, SPLIT, raw)


def same_response_for_all(**kw) -> list[dict]:
    return [attempt(r.id, capability(r), **kw) for r in ROWS]


# ##### FAILURES EARN NOTHING

FAILURES = {
    "timeout": {"status": None, "transport_error": "timeout: read timed out after 30 s"},
    "server": {"status": 500, "body": {"requestId": "r", "error": "boom", "tag": "INTERNAL"}},
    "auth": {"status": 401, "body": {"requestId": "r", "error": "Invalid API key", "tag": "INVALID_API_KEY"}},
    "quota": {"status": None, "transport_error": SPEND_CEILING_REACHED},
    "blocked": {"status": 200, "body": "<!doctype html><html><title>Just a moment...</title>captcha</html>"},
    "malformed": {"status": 200, "body": "{not json"},
    "empty": {"status": 200, "body": exa_body([])},
    "rejected": {"status": 400, "body": {"requestId": "r", "error": "bad", "tag": "INVALID_REQUEST_BODY"}},
}


@pytest.mark.parametrize("expected_class", sorted(FAILURES))
def test_a_failed_response_scores_zero_and_stays_in_the_denominator(expected_class):
    scores, results = score(same_response_for_all(**FAILURES[expected_class]))
    assert list(scores.columns) == SCORE_COLUMNS
    assert (scores["response_class"] == expected_class).all(), scores["response_class"].tolist()
    assert results.empty
    by = scores.set_index("row_id")
    for rid in ("x1", "x2"):
        assert by.loc[rid, "fidelity"] == 0.0 and by.loc[rid, "fidelity_label"] == "incorrect"
    for rid in ("a1", "a2", "a3"):
        assert by.loc[rid, "answer_score"] == 0.0
        assert expected_class in by.loc[rid, "answer_rule"]
    assert pd.isna(by.loc["s1", "first_hit_rank"])
    assert not any(by.loc["s1", f"hit_at_{k}"] for k in (1, 3, 5, 10))
    assert not scores["correct"].any() and scores["correct"].notna().all()

    metrics = vendor_metrics("t", scores).set_index(["scope", "scope_value", "metric"])
    correct = metrics.loc[("overall", "all", "correct_rate")]
    assert correct["value"] == 0.0 and correct["n"] == len(ROWS)
    assert metrics.loc[("overall", "all", "fidelity_mean"), "value"] == 0.0
    answer = metrics.loc[("overall", "all", "answer_score_mean")]
    assert answer["value"] == 0.0 and answer["n"] == 3 and answer["low"] == 0.0 and answer["high"] > 0.0


def test_an_extraction_that_returned_no_text_earns_nothing():
    page_without_text = exa_body([result(PAGE, title="Webhooks in Acme", text="")])
    raw = [
        attempt(r.id, capability(r), body=page_without_text if r.task_type == "extract" else exa_body([])) for r in ROWS
    ]
    by = score(raw)[0].set_index("row_id")
    assert by.loc["x2", "response_class"] == "ok"
    assert by.loc["x2", "fidelity"] == 0.0 and not by.loc["x2", "correct"]
    assert by.loc["x1", "fidelity"] == 0.0  # not even the title's share


def test_a_faithful_extraction_is_correct_and_noise_counts():
    good = exa_body([result(PAGE, title="Webhooks in Acme", text="Acme will retry with backoff.")])
    noisy = exa_body([result(PAGE, title="Webhooks in Acme", text="Retry with backoff. Accept all cookies")])
    by = {}
    for name, body in (("good", good), ("noisy", noisy)):
        raw = [attempt(r.id, capability(r), body=body if r.task_type == "extract" else exa_body([])) for r in ROWS]
        by[name] = score(raw)[0].set_index("row_id")
    assert by["good"].loc["x1", "fidelity"] == 1.0 and by["good"].loc["x1", "correct"]
    assert by["good"].loc["x2", "fidelity"] == 1.0
    # x1 defines title 0.15, anchor phrases 0.35, noise 0.10: the noise present loses its share
    assert by["noisy"].loc["x1", "fidelity"] == pytest.approx(0.5 / 0.6)
    assert by["noisy"].loc["x2", "fidelity"] == pytest.approx(0.5)  # one of two noise strings present


# ##### ANSWER ROWS: THE RUBRIC AND ITS RULE


def answer_scores(texts_by_row: dict[str, list[tuple[str, str]]], rows: list[GoldenRow] = ROWS) -> pd.DataFrame:
    raw = []
    for r in rows:
        items = [result(url, text=text) for url, text in texts_by_row.get(r.id, [])]
        raw.append(attempt(r.id, capability(r), body=exa_body(items)))
    return score(raw, rows)[0].set_index("row_id")


def test_answer_rows_get_a_rubric_score_and_the_rule_that_produced_it():
    forum, official = "https://www.chat-forum.test/acme", PAGE
    by = answer_scores(
        {
            "a1": [("https://x.test/1", "Nothing here."), (official, "Acme makes 5 retries.")],
            "a2": [(official, "The processing time of Acme is 10 to 15 days, based on last year's caseload.")],
            "a3": [(official, "The contractor fee of Acme is not disclosed.")],
        }
    )
    assert by.loc["a1", "answer_score"] == 1.0 and by.loc["a1", "correct"]
    assert "first at rank 2" in by.loc["a1", "answer_rule"]
    assert by.loc["a2", "answer_score"] == 1.0 and "with method" in by.loc["a2", "answer_rule"]
    assert by.loc["a3", "answer_score"] == 1.0
    assert by.loc["a3", "answer_rule"].startswith("not_available: read an explicit not-available statement at rank 1")

    # hallucinated precision: the forum's made-up figure ranks above the official statement
    by = answer_scores(
        {
            "a1": [(official, "Acme makes 6 retries.")],
            "a2": [(official, "The processing time of Acme is 10 to 15 days.")],
            "a3": [
                (forum, "Someone says the contractor fee of Acme is 4.2 million."),
                (official, "The contractor fee of Acme is not disclosed."),
            ],
        }
    )
    assert by.loc["a1", "answer_score"] == 0.0 and by.loc["a1", "answer_rule"].startswith(
        "precise: the answer is in none"
    )
    assert by.loc["a2", "answer_score"] == 0.5 and not by.loc["a2", "correct"]  # the range without its method
    assert (
        by.loc["a3", "answer_score"] == 0.0 and "precise value on a not-available cell" in by.loc["a3", "answer_rule"]
    )
    assert not by.loc["a3", "correct"]


def test_only_the_top_answer_k_results_are_read():
    filler = [(f"https://x.test/{i}", "Unrelated.") for i in range(MANIFEST.answer_k)]
    by = answer_scores(
        {
            "a3": [*filler, (PAGE, "The contractor fee of Acme is not disclosed.")],
            "a1": [*filler, (PAGE, "Acme makes 5 retries.")],
        }
    )
    assert by.loc["a3", "answer_score"] == 0.0 and "nothing about" in by.loc["a3", "answer_rule"]
    assert by.loc["a1", "answer_score"] == 0.0


# Precise rows that name their quantity (a cue) earn A.3's half credit for a value read from the results.
PRECISE_ROWS = [
    row(
        "p1",
        AnswerTask(
            type="answer",
            question="What monthly fee does Acme charge, in dollars?",
            number=120.0,
            tolerance=0.05,
            cue="monthly fee of Acme",
            source_urls=[PAGE],
        ),
    ),
    row(
        "p2",
        AnswerTask(
            type="answer",
            question="By how many percent did Acme's fee change?",
            number=-4.0,
            tolerance=0.05,
            cue="fee change of Acme",
            source_urls=[PAGE],
        ),
    ),
    row(
        "p3",
        AnswerTask(
            type="answer",
            question="Where is Acme based?",
            exact_answer="Lisbon",
            cue="headquarters of Acme",
            source_urls=[PAGE],
        ),
    ),
    row("p4", AnswerTask(type="answer", question="How many retries does Acme make?", number=5.0, source_urls=[PAGE])),
]


def test_a_precise_answer_in_the_results_gets_full_credit_by_presence():
    by = answer_scores(
        {
            "p1": [
                ("https://x.test/1", "In 2019 the monthly fee of Acme was $90."),  # read first, but not the answer
                (PAGE, "Acme charges a monthly fee of $121 today."),
            ],
            "p2": [(PAGE, "The fee change of Acme was -4.1 percent.")],
            "p3": [(PAGE, "The headquarters of Acme is in Lisbon.")],
        },
        PRECISE_ROWS,
    )
    assert by.loc["p1", "answer_score"] == 1.0 and by.loc["p1", "correct"]
    assert by.loc["p1", "answer_rule"] == "precise: the answer is in the top 5 results (first at rank 2)"
    assert by.loc["p2", "answer_score"] == 1.0 and by.loc["p3", "answer_score"] == 1.0


def test_a_wrong_precise_value_read_about_the_cue_gets_the_rubric_s_half_credit():
    by = answer_scores(
        {
            "p1": [("https://x.test/1", "Unrelated."), (PAGE, "The monthly fee of Acme is $150 since May.")],
            "p2": [(PAGE, "The fee change of Acme was +3 percent.")],
            "p3": [(PAGE, "The headquarters of Acme is in Porto.")],
            "p4": [(PAGE, "Acme makes 6 retries.")],
        },
        PRECISE_ROWS,
    )
    # outside the 5 % tolerance, same sign: 0.5, and not correct
    assert by.loc["p1", "answer_score"] == 0.5 and not by.loc["p1", "correct"]
    assert by.loc["p1", "answer_rule"] == (
        "precise: the answer is in none of the top 5 results; read the value 150 "
        "without a method at rank 2: sign and direction agree, outside tolerance"
    )
    # the wrong direction: a rise where the reference is a fall
    assert by.loc["p2", "answer_score"] == 0.0 and by.loc["p2", "answer_rule"].endswith("wrong sign or direction")
    # a text answer has no numeric tiers, and a row without a cue gives nothing to read by: 1 or 0
    assert by.loc["p3", "answer_score"] == 0.0
    assert by.loc["p3", "answer_rule"] == "precise: the answer is in none of the top 5 results"
    assert by.loc["p4", "answer_score"] == 0.0
    assert by.loc["p4", "answer_rule"] == "precise: the answer is in none of the top 5 results"
    metrics = vendor_metrics(
        "t",
        score(
            [
                attempt(r.id, capability(r), body=exa_body([result(PAGE, text="The monthly fee of Acme is $150.")]))
                for r in PRECISE_ROWS
            ],
            PRECISE_ROWS,
        )[0],
    ).set_index(["scope", "scope_value", "metric"])
    assert metrics.loc[("overall", "all", "answer_score_mean"), "value"] == pytest.approx(0.5 / 4)


def test_a_precise_row_scores_zero_when_the_cue_is_not_answered():
    by = answer_scores(
        {
            "p1": [(PAGE, "Acme is a company. The monthly fee of Acme is not disclosed.")],
            "p2": [(PAGE, "Nothing about it here.")],
        },
        PRECISE_ROWS,
    )
    assert by.loc["p1", "answer_score"] == 0.0
    assert by.loc["p1", "answer_rule"].endswith(
        "an explicit not-available statement at rank 1: not-available answer on a precise cell"
    )
    assert by.loc["p2", "answer_score"] == 0.0
    assert by.loc["p2", "answer_rule"] == (
        "precise: the answer is in none of the top 5 results, nor anything about 'fee change of Acme'"
    )
    filler = [(f"https://x.test/{i}", "Unrelated.") for i in range(MANIFEST.answer_k)]
    late = answer_scores({"p1": [*filler, (PAGE, "The monthly fee of Acme is $150.")]}, PRECISE_ROWS)
    assert late.loc["p1", "answer_score"] == 0.0  # only the top answer_k results are read


# ##### HIT@K: ONE VECTORIZED PATH THAT AGREES WITH THE REFERENCE METRIC

SPELLINGS = [
    PAGE,
    PAGE + "/",
    "http://docs.acme.test/guides/webhooks",
    "https://www.docs.acme.test/guides/webhooks",
    PAGE + "?utm_source=exa&utm_medium=api",
    "https://docs.acme.test/guides/Webhooks",
    "https://docs.acme.test/guides/./webhooks",
    "https://docs.acme.test/guides/%77ebhooks",
    "https://other.test/a",
    "https://other.test/b?x=1",
    "https://docs.acme.test/guides/webhooks#top",
]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.lists(st.sampled_from(SPELLINGS), max_size=12), min_size=1, max_size=4),
    st.lists(st.sampled_from(SPELLINGS[:1] + SPELLINGS[5:]), min_size=1, max_size=2),
)
def test_scored_hits_agree_with_the_reference_metric(lists, golden_urls):
    rows = [row(f"q{i}", SearchTask(type="search", query="acme", golden_urls=golden_urls)) for i in range(len(lists))]
    raw = [attempt(r.id, "search", body=exa_body([result(u) for u in urls])) for r, urls in zip(rows, lists)]
    scores, results = score(raw, rows)
    by = scores.set_index("row_id")
    for r, urls in zip(rows, lists):
        expected = first_hit_rank(golden_urls, urls)
        got = by.loc[r.id, "first_hit_rank"]
        assert (None if pd.isna(got) else int(got)) == expected
        assert bool(by.loc[r.id, "correct"]) == (expected is not None and expected <= MANIFEST.answer_k)
    from bench_assets.metrics import normalize_url

    assert results["url_normalized"].tolist() == [normalize_url(u) for u in results["url"]]
    assert results.groupby("row_id")["rank"].apply(list).to_dict() == {
        r.id: list(range(1, len(urls) + 1)) for r, urls in zip(rows, lists) if urls
    }


def test_unsupported_rows_have_no_scores():
    brave = get_adapter(MANIFEST.vendors["brave"].adapter)
    raw = pd.DataFrame(
        [
            attempt(r.id, "search", body=json.dumps({"type": "search", "web": {"results": []}}))
            for r in ROWS
            if r.task_type != "extract"
        ]
    ).astype({"http_status": "Int64"})
    scores, _ = score_partition("t", "brave", brave, MANIFEST, ROWS, SPLIT, raw)
    extract = scores[scores["task_type"] == "extract"]
    assert (extract["response_class"] == "unsupported").all()
    assert extract[["fidelity", "correct", "answer_score"]].isna().all().all()


# ##### WHY A ROW WAS MISSED, EQUIVALENT URLS, ACCEPTED ANSWERS


@pytest.mark.parametrize("expected_class", sorted(FAILURES))
def test_every_row_a_failed_call_missed_says_so(expected_class):
    scores, _ = score(same_response_for_all(**FAILURES[expected_class]))
    expected = "no_results" if expected_class == "empty" else f"call_failed:{expected_class}"
    assert scores["miss_reason"].tolist() == [expected] * len(ROWS)
    counts = vendor_metrics("t", scores)
    counted = counts[counts["scope"] == "miss_reason"]
    assert counted[["scope_value", "value", "n"]].values.tolist() == [[expected, float(len(ROWS)), len(ROWS)]]


def search_reasons(lists: dict[str, list[str]], golden: list[str], **task) -> dict[str, str | None]:
    rows = [row(rid, SearchTask(type="search", query="acme", golden_urls=golden, **task)) for rid in lists]
    raw = [attempt(rid, "search", body=exa_body([result(u) for u in urls])) for rid, urls in lists.items()]
    scores = score(raw, rows)[0].set_index("row_id")
    return {rid: (None if pd.isna(v) else v) for rid, v in scores["miss_reason"].items()}


def test_a_missed_search_row_says_where_the_golden_document_was():
    k = MANIFEST.answer_k
    filler = [f"https://other.test/{i}" for i in range(k)]
    reasons = search_reasons(
        {
            "hit": [PAGE],
            "below": [*filler, PAGE],
            "site": ["https://docs.acme.test/guides/other", "https://other.test/x"],
            "nowhere": ["https://other.test/x"],
        },
        [PAGE],
    )
    assert reasons == {
        "hit": None,
        "below": "golden_below_k",
        "site": "golden_site_other_document",
        "nowhere": "not_returned",
    }
    # a registry's hosts are one site: the Datatracker's page of another RFC is the golden site
    rfc = "https://www.rfc-editor.org/rfc/rfc9110"
    reasons = search_reasons(
        {
            "same": ["https://datatracker.ietf.org/doc/html/rfc9110"],
            "other": ["https://datatracker.ietf.org/doc/rfc9111/"],
        },
        [rfc],
    )
    assert reasons == {"same": None, "other": "golden_site_other_document"}


def test_a_listed_equivalent_url_is_a_hit():
    mirror = "https://mirror.acme.test/webhooks"
    rows = [
        row("eq", SearchTask(type="search", query="acme", golden_urls=[PAGE], equivalent_urls=[mirror])),
        row("plain", SearchTask(type="search", query="acme", golden_urls=[PAGE])),
    ]
    raw = [attempt(r.id, "search", body=exa_body([result("https://other.test/1"), result(mirror)])) for r in rows]
    by = score(raw, rows)[0].set_index("row_id")
    assert by.loc["eq", "first_hit_rank"] == 2 and by.loc["eq", "correct"] and pd.isna(by.loc["eq", "miss_reason"])
    assert pd.isna(by.loc["plain", "first_hit_rank"]) and by.loc["plain", "miss_reason"] == "not_returned"


def test_a_missed_extract_row_names_the_fields_it_fell_short_on():
    partial = exa_body([result(PAGE, title="Something else", text="Acme will retry with backoff. Accept all cookies")])
    raw = [attempt(r.id, capability(r), body=partial if r.task_type == "extract" else exa_body([])) for r in ROWS]
    by = score(raw)[0].set_index("row_id")
    # x1: title (0.15 lost) and noise (0.10 lost), the costlier first; x2: one noise string of two
    assert by.loc["x1", "miss_reason"] == "extract_fields:title,noise"
    assert by.loc["x2", "miss_reason"] == "extract_fields:noise"
    empty_text = exa_body([result(PAGE, title="Webhooks in Acme", text="")])
    raw = [attempt(r.id, capability(r), body=empty_text if r.task_type == "extract" else exa_body([])) for r in ROWS]
    assert score(raw)[0].set_index("row_id").loc["x1", "miss_reason"] == "extract_no_text"


def test_a_missed_answer_row_names_the_rubric_rule_or_that_nothing_was_read():
    by = answer_scores(
        {
            "a1": [(PAGE, "Nothing about it.")],
            "a2": [(PAGE, "The processing time of Acme is 10 to 15 days.")],
            "a3": [(PAGE, "Someone says the contractor fee of Acme is 4.2 million.")],
        }
    )
    assert by.loc["a1", "miss_reason"] == "answer_not_found"
    assert by.loc["a2", "miss_reason"] == "answer_rubric:no_method"
    assert by.loc["a3", "miss_reason"] == "answer_rubric:value_on_not_available"


def test_an_accepted_rendering_of_the_answer_earns_full_credit():
    rows = [
        row(
            "rfc",
            AnswerTask(
                type="answer",
                question="In which month was RFC 8970 published?",
                exact_answer="December 2020",
                accepted_answers=["2020-12", "Dec 2020"],
                source_urls=[PAGE],
            ),
        ),
        row(
            "bare",
            AnswerTask(type="answer", question="In which month?", exact_answer="December 2020", source_urls=[PAGE]),
        ),
    ]
    by = answer_scores({"rfc": [(PAGE, "Published 2020-12.")], "bare": [(PAGE, "Published 2020-12.")]}, rows)
    assert by.loc["rfc", "answer_score"] == 1.0 and pd.isna(by.loc["rfc", "miss_reason"])
    assert by.loc["bare", "answer_score"] == 0.0 and by.loc["bare", "miss_reason"] == "answer_not_found"
