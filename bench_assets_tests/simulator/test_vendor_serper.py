"""Serper.dev: our adapter against the simulator over a real socket, and against fixtures built
from the documented responses (Serper has no official SDK)."""

from __future__ import annotations

import json

import httpx
import pytest

from bench_assets.adapters.base import MalformedResponse, VendorTask
from bench_assets.adapters.serper import MANIFEST_DEFAULTS, SerperAdapter
from bench_assets.metrics import normalize_url
from bench_assets.simulator.app import sim_key
from bench_assets_tests.simulator.documented_shape import shape_differences
from bench_assets_tests.simulator.vendor_contract import VendorContract

VENDOR = "serper"
ADAPTER = SerperAdapter()
contract = VendorContract(ADAPTER, MANIFEST_DEFAULTS)


def test_search_round_trip_finds_golden_url_and_bills_what_the_simulator_charged(simulator, sim_logs):
    page = contract.top_ranked_page
    task = VendorTask("search", page.query, 10)
    req = ADAPTER.build(task, contract.endpoint("search", simulator.base_url), sim_key(VENDOR), {})
    assert req.method == "POST" and req.json_body == {"q": page.query, "num": 10}
    assert req.redacted()["headers"]["X-API-KEY"] == "<redacted>"
    resp = contract.send(req)
    assert resp.status_code == 200
    parsed = ADAPTER.parse(task, resp.status_code, dict(resp.headers), resp.text)
    assert parsed.error_class is None and parsed.results
    urls = [r.url for r in parsed.results]
    assert normalize_url(page.url) in [normalize_url(u) for u in urls]
    assert page.url not in urls  # Serper's simulated URLs carry a trailing slash: normalization matters
    assert all(r.snippet and r.content is None for r in parsed.results)  # snippets only
    assert parsed.billed_units == {"credit": 1.0}
    (bill,) = sim_logs.billing()
    assert bill["usd"] == pytest.approx(contract.usd(parsed.billed_units))
    (logged,) = sim_logs.requests()
    assert logged["auth_ok"] and logged["host"] == "google.serper.dev" and "x-api-key" not in logged["headers"]


def test_num_above_ten_gets_ten_results_and_page_two_the_next_ten(simulator, sim_logs):
    # Google ignores num > 10 since September 2025: a request never carries more than 10, and
    # page 2 (Serper's 1-based `page`, echoed in searchParameters) is a query billed on its own.
    assert ADAPTER.build(VendorTask("search", "q", 100), "u", "k", {}).json_body["num"] == 10
    resp = httpx.post(
        contract.endpoint("search", simulator.base_url),
        headers={"X-API-KEY": sim_key(VENDOR)},
        json={"q": "quarterly revenue growth", "num": 100},
        timeout=10,
    )
    assert len(resp.json()["organic"]) == 10 and resp.json()["credits"] == 1
    task = VendorTask("search", "quarterly revenue growth", 20, page=2)
    resp2, parsed = contract.call(simulator, task)
    body = resp2.json()
    assert body["searchParameters"]["page"] == 2 and [o["position"] for o in body["organic"]] == list(range(1, 11))
    assert not {o["link"] for o in body["organic"]} & {o["link"] for o in resp.json()["organic"]}
    assert parsed.billed_units == {"credit": 1.0}
    assert [b["usd"] for b in sim_logs.billing()] == [pytest.approx(contract.usd({"credit": 1.0}))] * 2
    assert ADAPTER.expected_units(VendorTask("search", "", 25), {}) == {"credit": 3.0}


def test_scrape_round_trip_returns_anchor_phrases(simulator, sim_logs):
    page = contract.top_ranked_page
    task = VendorTask("extract", page.url)
    req = ADAPTER.build(task, contract.endpoint("extract", simulator.base_url), sim_key(VENDOR), {})
    assert req.url.endswith("/h/scrape.serper.dev") and req.json_body == {"url": page.url, "includeMarkdown": True}
    resp = contract.send(req)
    assert resp.status_code == 200
    parsed = ADAPTER.parse(task, resp.status_code, dict(resp.headers), resp.text)
    assert len(parsed.results) == 1 and parsed.results[0].url == page.url
    assert parsed.results[0].title == page.title
    for phrase in page.anchor_phrases:
        assert phrase in parsed.results[0].content
    (bill,) = sim_logs.billing()
    assert parsed.billed_units == {"credit": 2.0}
    assert bill["usd"] == pytest.approx(contract.usd(parsed.billed_units))


def test_wrong_key_gets_403_unauthorized_classified_auth(simulator, sim_logs):
    resp, _ = contract.wrong_key_answer(simulator, sim_logs, 403, key="wrong-key", text="anything at all")
    assert resp.json() == {"message": "Unauthorized.", "statusCode": 403}


def test_missing_query_gets_400_message_classified_bad_request(simulator):
    resp = httpx.post(
        contract.endpoint("search", simulator.base_url),
        headers={"X-API-KEY": sim_key(VENDOR)},
        json={"num": 10},
        timeout=10,
    )
    assert resp.status_code == 400 and resp.json()["statusCode"] == 400
    parsed = ADAPTER.parse(VendorTask("search", ""), resp.status_code, dict(resp.headers), resp.text)
    assert parsed.error_class == "bad_request"


def test_hand_built_scrape_example_parses_to_its_page():
    # Not vendor material (see SOURCES.md): Serper publishes no scrape body we could find.
    fx = json.loads((contract.fixtures / "scrape_example.json").read_text())
    parsed = ADAPTER.parse(VendorTask("extract", fx["task_url"]), fx["status"], {}, json.dumps(fx["body"]))
    assert [r.url for r in parsed.results] == fx["expected_urls"]
    assert parsed.billed_units == fx["expected_billed_units"]
    assert fx["expected_content_contains"] in parsed.results[0].content


test_published_success_bodies_are_read = contract.documented_success_bodies_test()

PUBLISHED_SEARCH = contract.fixtures / "ok_search_page5_capture.json"
# What Serper sends only for some queries or pages: Google's date on some results; the scraped
# page's meta description and JSON-LD (hand-built scrape example).
SOMETIMES = {"search": {"organic[].date"}, "extract": {"metadata.description", "jsonld"}}


def test_the_simulators_page_answers_in_the_shape_of_serpers_own_page_body(simulator):
    """Every key the real page-5 body shows, at every level, with the same JSON type: a page-2
    request, so `searchParameters.page` must be echoed as Serper echoes it."""
    documented = json.loads(PUBLISHED_SEARCH.read_text())["body"]
    page = contract.top_ranked_page
    task = VendorTask("search", page.query, 20, page=2)
    resp = contract.send(ADAPTER.build(task, contract.endpoint("search", simulator.base_url), sim_key(VENDOR), {}))
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("application/json")
    body = resp.json()
    assert shape_differences(documented, body, SOMETIMES["search"]) == []
    # positions restart at 1 on every page, as in Serper's page-5 body
    assert body["organic"] and [r["position"] for r in body["organic"]] == list(range(1, len(body["organic"]) + 1))


def test_the_simulators_scrape_answers_in_the_hand_built_examples_shape(simulator):
    documented = json.loads((contract.fixtures / "scrape_example.json").read_text())["body"]
    page = contract.top_ranked_page
    task = VendorTask("extract", page.url)
    resp = contract.send(ADAPTER.build(task, contract.endpoint("extract", simulator.base_url), sim_key(VENDOR), {}))
    body = resp.json()
    assert shape_differences(documented, body, SOMETIMES["extract"]) == []
    assert body["markdown"] and body["metadata"]["title"] == page.title


def test_the_shape_comparison_names_what_departs_from_the_published_body():
    documented = json.loads(PUBLISHED_SEARCH.read_text())["body"]
    changed = json.loads(json.dumps(documented))
    del changed["organic"][1]["snippet"]  # on every published item: required
    changed["organic"][0]["position"] = "1"
    changed["credits"] = 1.0  # a float where the body has an integer
    del changed["searchParameters"]["page"]
    assert shape_differences(documented, changed, SOMETIMES["search"]) == [
        "credits: number, documented integer",
        "organic[].position: string, documented integer",
        "organic[].snippet: missing",
        "searchParameters.page: missing",
    ]
    del changed["organic"][0]["date"]  # on some items only: optional
    assert "organic[].date: missing" not in shape_differences(documented, changed)


def test_published_body_without_credits_field_falls_back_to_one_credit():
    fx = json.loads(PUBLISHED_SEARCH.read_text())
    del fx["body"]["credits"]
    parsed = ADAPTER.parse(VendorTask("search", "q"), 200, {}, json.dumps(fx["body"]))
    assert parsed.billed_units == {"credit": 1.0} and len(parsed.results) == 10


def test_every_fixture_names_its_source():
    contract.sources_name_every_fixture()


def test_error_fixtures_cover_documented_statuses():
    classes = {json.loads(p.read_text())["expected_error_class"] for p in contract.error_fixtures}
    assert {"auth", "quota", "rate_limited", "bad_request", "server"} <= classes


test_documented_error_bodies_are_classified = contract.documented_error_bodies_test()


def test_truncated_json_raises_malformed(simulator):
    page = contract.top_ranked_page
    task = VendorTask("search", page.query, 5)
    contract.assert_truncated_answer_is_malformed(simulator, task)
    with pytest.raises(MalformedResponse):
        ADAPTER.parse(task, 200, {}, json.dumps({"credits": 1}))  # neither organic nor searchParameters
    empty = ADAPTER.parse(task, 200, {}, json.dumps({"searchParameters": {"q": page.query}, "credits": 1}))
    assert empty.results == () and empty.error_class is None
