"""Searches deeper than one Google page (SerpApi, Serper) through the fetch engine and the simulator.

Google serves at most 10 results a request since September 2025, so a manifest asking for 25
results makes three requests (`start=0/10/20` for SerpApi, `page=1/2/3` for Serper), each billed
as a search. Checked here over a real socket: the pages sent, the one archived attempt holding
them, the results read back in order, and our spend equal to the simulated vendor's bill page by
page; also that paging stops where the vendor says no page follows and at the spend ceiling.
"""

from __future__ import annotations

import json

import pytest

from bench_assets.adapters import get_adapter
from bench_assets.adapters.base import PAGES_FAILURES_KEY, PAGES_KEY, PAGES_STOPPED_KEY, PAGES_WANTED_KEY, VendorTask
from bench_assets.fetch.classify import SPEND_CEILING_REACHED
from bench_assets.fetch.engine import FetchItem
from bench_assets_tests.simulator.test_fetch_faults import (
    RecordedSleep,
    billing,
    faults,
    fetch,
    settings,
    spend_matches_billing,
)

__all__ = ["faults"]  # the fixture, used by name

DEEP = 25


def deep_search(query_id: str = "q000", text: str = "quarterly revenue growth") -> FetchItem:
    return FetchItem(query_id, "public", "search", text, DEEP)


def page_offsets(vendor: str, request_json: str) -> list[int]:
    requests = json.loads(request_json)
    if vendor == "serpapi":
        return [int(r["params"].get("start", 0)) for r in requests]
    return [int(r["json"].get("page", 1)) for r in requests]


@pytest.mark.parametrize("vendor, offsets", [("serpapi", [0, 10, 20]), ("serper", [1, 2, 3])])
def test_deep_search_is_fetched_page_by_page_and_billed_per_page(tmp_path, simulator, faults, vendor, offsets):
    item = deep_search()
    stats, raw = fetch(tmp_path, vendor, [item], settings(simulator, vendor))
    (row,) = raw.itertuples(index=False)  # one attempt, holding every page
    assert row.final and row.http_status == 200 and stats.attempts == 3
    assert page_offsets(vendor, row.request_json) == offsets
    envelope = json.loads(row.body)
    assert len(envelope[PAGES_KEY]) == 3 and PAGES_STOPPED_KEY not in envelope
    # every page asks a full 10 (page boundaries every 10 whichever way the vendor counts offsets);
    # the 30 results are cut to the 25 wanted, recorded in the envelope for a rescore
    assert envelope[PAGES_WANTED_KEY] == DEEP
    assert all(
        len(page["organic_results" if vendor == "serpapi" else "organic"]) <= 10
        for page in map(json.loads, envelope[PAGES_KEY])
    )
    parsed = get_adapter(vendor).parse(VendorTask("search", ""), 200, {}, row.body)
    assert [r.rank for r in parsed.results] == list(range(1, DEEP + 1))
    assert len({r.url for r in parsed.results}) == DEEP  # pages do not repeat one another
    bills = [b for b in billing(simulator) if b["vendor"] == vendor]
    assert len(bills) == 3  # every page is a search on the vendor's bill
    unit = "request.search" if vendor == "serpapi" else "credit"
    assert parsed.billed_units == {unit: 3.0}
    # what `bench estimate` figures for such a query before the run (Adapter.expected_units)
    assert get_adapter(vendor).expected_units(VendorTask("search", "", DEEP), {}) == parsed.billed_units
    spend_matches_billing(vendor, raw, simulator)


@pytest.mark.parametrize("vendor", ["serpapi", "serper"])
def test_paging_stops_when_no_page_follows(tmp_path, simulator, faults, vendor):
    item = deep_search(text="qqqzzzxxyy")  # nothing matches: one page, archived as the vendor sent it
    _, raw = fetch(tmp_path, vendor, [item], settings(simulator, vendor))
    (row,) = raw.itertuples(index=False)
    assert PAGES_KEY not in json.loads(row.body)
    assert len([b for b in billing(simulator) if b["vendor"] == vendor]) == 1
    spend_matches_billing(vendor, raw, simulator)


def test_spend_ceiling_stops_paging_and_keeps_the_pages_paid_for(tmp_path, simulator, faults):
    # SerpApi bills $0.015 a search: the ceiling lets page 2 go out and stops page 3.
    _, raw = fetch(tmp_path, "serpapi", [deep_search()], settings(simulator, "serpapi", spend_ceiling_usd=0.02))
    (row,) = raw.itertuples(index=False)
    envelope = json.loads(row.body)
    assert len(envelope[PAGES_KEY]) == 2 and SPEND_CEILING_REACHED in envelope[PAGES_STOPPED_KEY]
    parsed = get_adapter("serpapi").parse(VendorTask("search", ""), 200, {}, row.body)
    assert len(parsed.results) == 20 and parsed.billed_units == {"request.search": 2.0}
    spend_matches_billing("serpapi", raw, simulator)


@pytest.mark.parametrize("vendor", ["serpapi", "serper"])
def test_a_page_failing_once_is_retried_and_the_failure_kept(tmp_path, simulator, faults, vendor):
    # Every distinct request fails once (500/502/503), then succeeds: page 1 by the engine's own
    # retry of the attempt, pages 2 and 3 by the page's retry inside the attempt.
    faults({"max_faults_per_request": 1, "vendors": {vendor: {"server_error": 1.0}}})
    sleep = RecordedSleep()
    stats, raw = fetch(tmp_path, vendor, [deep_search()], settings(simulator, vendor), sleep=sleep)
    final = raw[raw["final"]]
    (row,) = final.itertuples(index=False)
    envelope = json.loads(row.body)
    assert len(envelope[PAGES_KEY]) == 3 and PAGES_STOPPED_KEY not in envelope
    assert [(f["page"], f["try"]) for f in envelope[PAGES_FAILURES_KEY]] == [(2, 1), (3, 1)]  # kept as evidence
    assert all(f["status"] in (500, 502, 503) for f in envelope[PAGES_FAILURES_KEY])
    parsed = get_adapter(vendor).parse(VendorTask("search", ""), 200, {}, row.body)
    assert len(parsed.results) == DEEP
    assert len(stats.waits) == 3  # page 1's retry, then one backoff each for pages 2 and 3
    assert stats.attempts == 6
    spend_matches_billing(vendor, raw, simulator)  # the failed tries billed nothing
