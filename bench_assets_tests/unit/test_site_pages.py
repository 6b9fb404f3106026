"""Pages of the site as saved renderings: a public row's page over rows of every task type, with
entries and results of every kind (unsupported, failed, digests only, withheld, a reading
withheld or not published...), in a simulated and a live snapshot, and a vendor's listing of the
public rows, rendered from the site's own templates and compared byte for byte with the pages
saved in `fixtures/pages/`. A change to the markup shows here as a diff of the saved pages: after
an intended change, `BENCH_UPDATE_PAGES=1 pytest bench_assets_tests/unit/test_site_pages.py` and
commit the pages with it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from bench_assets.publish.drilldown import FieldItem, ShownResult
from bench_assets.publish.site import Pager, _environment

PAGES = Path(__file__).parents[1] / "fixtures" / "pages"

LONG = "word " * 90 + "and <b>a tag</b> & 'quotes' \"here\""
RESULTS = [
    ShownResult(1, True),
    ShownResult(2, False, digest_only=True),
    ShownResult(3, False, digest_only=True, golden=True, contains_answer=True, answer_read=True),
    ShownResult(4, False, url="https://a.test/x?q=1&r=<2>", title='Tom & "Jerry" <3', snippet="short 'one'"),
    ShownResult(5, False, url="https://b.test/", title=None, snippet=LONG, content_chars=1234, golden=True),
    ShownResult(6, False, url="javascript:alert(1)", title="", snippet="", content_chars=0, contains_answer=True),
    ShownResult(7, False, url="  https://c.test/path  ", title="t", snippet="x" * 310, answer_read=True),
    ShownResult(8, False, url="https://d.test/", title="naïve — ünïcödé", snippet="y" * 303),
    ShownResult(9, False, url=None, title="no url"),
]


def _entry(vendor: str, **fields: Any) -> dict[str, Any]:
    entry = {
        "vendor": vendor,
        "response_class": "ok",
        "correct": True,
        "first_hit_rank": 2,
        "hit_at_1": False,
        "hit_at_3": True,
        "hit_at_5": True,
        "hit_at_10": True,
        "fidelity": 0.8125,
        "fidelity_label": "high",
        "fidelity_fields": [],
        "answer_score": 0.5,
        "answer_rule": "range <covers> & method",
        "answer_ranks": [],
        "answer_reading": None,
        "n_results": 9,
        "billed_usd": 0.0042,
        "latency_ms": 312.4,
        "attempts": 1,
        "request_id": None,
        "error_detail": None,
        "miss_reason": None,
        "evidence_level": "text",
        "body_sha256": "ab" * 32,
        "request_json": '{"query": "q <1> & 2", "api_key": "<redacted>"}',
        "body_chars": None,
        "body_withheld": None,
        "results": RESULTS,
    }
    return {**entry, **fields}


READING = {
    "rank": 2,
    "kind": "range",
    "value": None,
    "low": 5,
    "high": 10.5,
    "method": "accelerated wear tests " * 9,
    "withheld": False,
}
FIELDS = [
    {"field": "title", "score": 1.0, "weight": 0.2, "items": [FieldItem("A <title>", True)]},
    {
        "field": "anchor_phrases",
        "score": 0.5,
        "weight": None,
        "items": [FieldItem("one & two", True), FieldItem("three", False)],
    },
    {"field": "numeric_facts", "score": 0.0, "weight": 0.3, "items": []},
]
ENTRIES = [
    _entry(
        "alpha",
        evidence_level="raw",
        body_chars=2_345_678,
    ),
    _entry("beta", response_class="unsupported", correct=None, first_hit_rank=None, fidelity=None, answer_score=None),
    _entry(
        "gamma",
        response_class="server_error",
        correct=False,
        first_hit_rank=None,
        hit_at_3=False,
        fidelity=None,
        fidelity_label=None,
        answer_score=None,
        answer_rule=None,
        n_results=0,
        latency_ms=None,
        billed_usd=None,
        attempts=3,
        request_id="req <7>",
        error_detail='HTTP 503 & then a "timeout"',
        miss_reason="call_failed:server",
        body_sha256=None,
        results=[],
    ),
    _entry(
        "delta",
        evidence_level="digests",
        body_withheld="not published: the vendor's terms allow digests",
        fidelity_fields=FIELDS[2:],
        answer_ranks=[1, 3],
        answer_reading={**READING, "sentence": None},
        results=[RESULTS[1], RESULTS[2]],
    ),
    _entry(
        "epsilon",
        fidelity_fields=FIELDS,
        answer_ranks=[4],
        answer_reading={**READING, "sentence": "It lasts 5 to 10.5 years <per> tests. " * 15, "withheld": False},
    ),
    _entry(
        "zeta",
        answer_score=1.0,
        attempts=0,
        answer_reading={
            **READING,
            "kind": "not_available",
            "low": None,
            "high": None,
            "method": None,
            "sentence": "n/a",
            "withheld": True,
        },
    ),
    _entry(
        "eta", answer_reading={**READING, "kind": "precise", "value": 874, "sentence": "874 grams", "withheld": False}
    ),
    _entry(
        "theta",
        correct=False,
        first_hit_rank=None,
        miss_reason="extract_fields:title,anchor_phrases",
        body_withheld="names a holdout row, decoy or dead holdout row (its id, query or golden URL)",
    ),
]
CASES = {"every-kind": ENTRIES, "one": ENTRIES[:1], "failed": ENTRIES[2:3], "none": []}


def _record(task_type: str, vendors: list[dict[str, Any]]) -> dict[str, Any]:
    task: dict[str, Any] = {
        "search": {"golden_urls": ["https://g.test/a"]},
        "extract": {"url": "https://g.test/e", "title": "T", "anchor_phrases": ["a", "b"], "numeric_facts": ["12 kg"]},
        "answer": {
            "answer_type": "range",
            "range_low": 5,
            "range_high": 10,
            "cue": "lifespan",
            "source_urls": ["https://g.test/s"],
        },
    }[task_type]
    return {
        "row_id": f"demo-001-{task_type[0]}",
        "stratum": "demo",
        "cohort": "2026-q3",
        "task_type": task_type,
        "provenance": "planted",
        "request_text": "what <is> & isn't",
        "task": task,
        "golden_urls": ["https://g.test/a"],
        "verification": {"verified_by": "tester", "verified_at": "2026-07-01T00:00:00Z", "evidence": "checked"},
        "vendors": vendors,
        "n_scored": len(vendors),
        "n_correct": 1,
    }


def _board(mode: str) -> dict[str, Any]:
    return {
        "mode": mode,
        "snapshot_id": "demo-2026-q3",
        "headline_eligible": True,
        "vendors": [],
        "k_values": [1, 3, 5, 10],
    }


def _render(template: str, **context: Any) -> str:
    return _environment().get_template(template).render(root="../", manifest={"answer_k": 3}, **context)


def _matches_saved(name: str, page: str) -> None:
    saved = PAGES / name
    if os.environ.get("BENCH_UPDATE_PAGES"):
        saved.write_text(page, encoding="utf-8")
    assert saved.exists(), f"no saved page {saved}: render it with BENCH_UPDATE_PAGES=1"
    assert page == saved.read_text(encoding="utf-8"), f"{name} differs from the saved page"


@pytest.mark.parametrize("mode", ["simulated", "live"])
@pytest.mark.parametrize("task_type", ["search", "extract", "answer"])
@pytest.mark.parametrize("case", list(CASES))
def test_a_row_page_is_the_saved_page(mode: str, task_type: str, case: str) -> None:
    page = _render("query.html.j2", q=_record(task_type, CASES[case]), board=_board(mode), active="queries")
    _matches_saved(f"query-{mode}-{task_type}-{case}.html", page)


def test_a_live_snapshot_links_out_only_to_plain_web_urls() -> None:
    page = _render("query.html.j2", q=_record("search", ENTRIES[:1]), board=_board("live"), active="")
    assert '<a class="url" href="https://a.test/x?q=1&amp;r=&lt;2&gt;"' in page
    assert 'href="https://c.test/path"' in page  # stripped, as `external_href` gives it
    assert "javascript:alert(1)" in page and 'href="javascript:' not in page
    assert "Tom &amp; &#34;Jerry&#34; &lt;3" in page and "<b>a tag" not in page


LISTED = [
    {
        "row_id": f"demo-{i:03d}-s",
        "stratum": "demo" if i % 2 else "news <&>",
        "task_type": ("search", "extract", "answer")[i % 3],
        "response_class": ("ok", "unsupported", "timeout")[i % 3],
        "correct": (True, None, False)[i % 3],
        "first_hit_rank": (2, None, None)[i % 3],
        "fidelity": (None, 0.8125, None)[i % 3],
        "answer_score": None,
        "miss_reason": (None, None, "call_failed:timeout")[i % 3],
        "billed_usd": 0.001 * i,
        "latency_ms": (312.4, None, 1500.0)[i % 3],
    }
    for i in range(7)
]


def test_a_vendors_listing_of_the_rest_of_its_rows_is_the_saved_page() -> None:
    pager = Pager(2, 4, 7, 7, ("exa.html", "exa-2.html"))
    page = _render(
        "vendor_rows.html.j2", e={"vendor": "exa"}, listed=LISTED[3:], pager=pager, board=_board("live"), active=""
    )
    _matches_saved("vendor-rows.html", page)


def test_a_raw_body_is_linked_in_the_evidence_bundle_not_inlined() -> None:
    entry = _entry("alpha", evidence_level="raw", body_chars=12, body_sha256="cd" * 32)
    page = _render("query.html.j2", q=_record("search", [entry]), board=_board("simulated"), active="")
    raw = page.split('<details class="raw" id="alpha-raw">', 1)[1].split("</details>", 1)[0]
    assert "<summary>Raw request and response of the final attempt</summary>" in raw
    assert '<span class="body-chars" data-value="12">12</span> characters' in raw
    assert '<a href="../evidence/attempts/alpha.parquet">every attempt</a>' in raw
    assert "raw-response" in raw and '<pre class="raw-response"' not in raw


def test_a_row_that_lists_fewer_results_than_came_says_so() -> None:
    entry = _entry("alpha", n_results=9, results=RESULTS[:3])
    answer = _render("query.html.j2", q=_record("answer", [entry]), board=_board("simulated"), active="")
    assert "The top 3 of 9 results: the ones its score reads (the top 3)" in answer
    assert '<a href="../evidence/results/alpha.parquet">every result</a>' in answer
    search = _render("query.html.j2", q=_record("search", [entry]), board=_board("simulated"), active="")
    assert "results-listed" not in search  # a search row's score reads every result
