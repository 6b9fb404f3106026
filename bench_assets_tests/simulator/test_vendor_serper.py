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


@pytest.mark.parametrize("name", ["search_example", "scrape_example"])
def test_documented_example_responses_parse_to_expected_urls(name):
    fx = json.loads((contract.fixtures / f"{name}.json").read_text())
    task = VendorTask(fx["capability"], fx.get("task_url", "python asyncio tutorial"))
    parsed = ADAPTER.parse(task, fx["status"], fx.get("headers", {}), json.dumps(fx["body"]))
    assert [r.url for r in parsed.results] == fx["expected_urls"]
    assert parsed.billed_units == fx["expected_billed_units"]
    if "expected_published" in fx:
        assert [r.published for r in parsed.results] == fx["expected_published"]
    if "expected_content_contains" in fx:
        assert fx["expected_content_contains"] in parsed.results[0].content


# What the documented examples show that Serper sends only for some queries or pages: Google's
# knowledge panel and "People also ask" box; a scraped page's meta description and JSON-LD.
SOMETIMES = {"search": {"knowledgeGraph", "peopleAlsoAsk"}, "extract": {"metadata.description", "jsonld"}}


@pytest.mark.parametrize("capability, example", [("search", "search_example"), ("extract", "scrape_example")])
def test_the_simulator_answers_in_the_documented_shape(simulator, capability, example):
    """Every key the documented example shows, at every level, with the same JSON type (keys the
    vendor sends only for some queries or pages are checked when present)."""
    documented = json.loads((contract.fixtures / f"{example}.json").read_text())["body"]
    page = contract.top_ranked_page
    task = VendorTask(capability, page.query if capability == "search" else page.url, 10)
    resp = contract.send(ADAPTER.build(task, contract.endpoint(capability, simulator.base_url), sim_key(VENDOR), {}))
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("application/json")
    body = resp.json()
    assert shape_differences(documented, body, SOMETIMES[capability]) == []
    if capability == "search":  # the items were compared, and a news page carries Google's date
        assert body["organic"] and [r["position"] for r in body["organic"]] == list(range(1, len(body["organic"]) + 1))
    else:
        assert body["markdown"] and body["metadata"]["title"] == page.title


def test_the_shape_comparison_names_what_departs_from_the_documented_example():
    documented = json.loads((contract.fixtures / "search_example.json").read_text())["body"]
    changed = json.loads(json.dumps(documented))
    del changed["organic"][1]["snippet"]  # on every documented item: required
    changed["organic"][0]["position"] = "1"
    changed["credits"] = 1.0  # a float where the example has an integer
    del changed["knowledgeGraph"]
    assert shape_differences(documented, changed, SOMETIMES["search"]) == [
        "credits: number, documented integer",
        "organic[].position: string, documented integer",
        "organic[].snippet: missing",
    ]
    del changed["organic"][2]["attributes"], changed["organic"][1]["date"]  # on some items only: optional
    assert "organic[].date: missing" not in shape_differences(documented, changed)
    assert "knowledgeGraph: missing" in shape_differences(documented, changed)


def test_documented_example_without_credits_field_falls_back_to_one_credit():
    fx = json.loads((contract.fixtures / "search_example.json").read_text())
    del fx["body"]["credits"]
    parsed = ADAPTER.parse(VendorTask("search", "q"), 200, {}, json.dumps(fx["body"]))
    assert parsed.billed_units == {"credit": 1.0} and len(parsed.results) == 3


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
