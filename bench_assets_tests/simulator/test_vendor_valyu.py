"""Valyu Search API: our adapter against the simulator over a real socket, and Valyu's documented
response and its SDK's recorded bodies read by our adapter."""

from __future__ import annotations

import json

import httpx
import pytest

from bench_assets.adapters.base import MalformedResponse, VendorTask
from bench_assets.adapters.valyu import MANIFEST_DEFAULTS, ValyuAdapter
from bench_assets.metrics import normalize_url
from bench_assets.simulator.app import sim_key, simulated_url
from bench_assets_tests.simulator.vendor_contract import VendorContract

VENDOR = "valyu"
ADAPTER = ValyuAdapter()
contract = VendorContract(ADAPTER, MANIFEST_DEFAULTS)


def test_search_round_trip_finds_the_golden_page_and_bills_what_valyu_states(simulator, sim_logs):
    page = contract.golden_page()
    task = VendorTask("search", page.query, 10)
    resp, parsed = contract.call(simulator, task)
    assert resp.status_code == 200, resp.text
    assert parsed.error_class is None and parsed.results
    assert normalize_url(page.url) in [normalize_url(r.url) for r in parsed.results]
    hit = next(r for r in parsed.results if normalize_url(r.url) == normalize_url(page.url))
    assert hit.title == page.title and hit.snippet and hit.content and hit.published == page.published
    body = resp.json()
    assert parsed.request_id == body["tx_id"]
    (logged,) = sim_logs.requests()
    assert (logged["method"], logged["path"], logged["auth_ok"]) == ("POST", "/v1/search", True)
    (bill,) = sim_logs.billing()
    # One web retrieval per result at $1.50 per 1,000, stated by Valyu and billed as stated.
    assert parsed.billed_units == {"usd": pytest.approx(0.0015 * len(parsed.results))}
    assert contract.usd(parsed.billed_units) == pytest.approx(bill["usd"])
    # The estimate (a full page of web results) is at least what a search costs.
    assert contract.usd(ADAPTER.expected_units(task, {})) >= contract.usd(parsed.billed_units)


def test_request_keeps_every_ranked_result_and_asks_for_web_results_only():
    req = ADAPTER.build(VendorTask("search", "q", 50), MANIFEST_DEFAULTS["endpoints"]["search"], "k", {})
    assert req.json_body["search_type"] == "web" and req.json_body["relevance_threshold"] == 0.0
    assert req.json_body["max_num_results"] == 20  # the documented maximum
    assert req.redacted()["headers"]["x-api-key"] != "k"


def test_wrong_key_is_classed_auth_and_billed_nothing(simulator, sim_logs):
    resp, _ = contract.wrong_key_answer(simulator, sim_logs, 401)
    assert resp.json()["success"] is False


@pytest.mark.parametrize(
    "body", [{}, {"query": " "}, {"query": "x", "max_num_results": 0}, {"query": "x", "search_type": "images"}]
)
def test_malformed_request_gets_a_400_classed_bad_request(simulator, sim_logs, body):
    url = simulated_url(MANIFEST_DEFAULTS["endpoints"]["search"], simulator.base_url)
    resp = httpx.post(url, json=body, headers={"x-api-key": sim_key(VENDOR)}, timeout=10)
    assert resp.status_code == 400 and resp.json()["error"] == "validation_failed" and resp.json()["errors"]
    assert ADAPTER.parse(VendorTask("search", "x"), 400, dict(resp.headers), resp.text).error_class == "bad_request"
    assert sim_logs.billing() == []


def test_out_of_credit_is_the_sdk_402_classed_quota(simulator, sim_control):
    assert sim_control.credits({VENDOR: 0}).status_code == 200
    resp, parsed = contract.call(simulator, VendorTask("search", contract.golden_page().query))
    assert resp.status_code == 402 and parsed.error_class == "quota"
    assert sim_control.billing() == []


def test_a_body_without_a_stated_charge_bills_one_retrieval_per_result():
    body = json.loads((contract.fixtures / "ok_docs_search_example.json").read_text())["body"]
    del body["total_deduction_dollars"]
    parsed = ADAPTER.parse(VendorTask("search", "q"), 200, {}, json.dumps(body))
    assert parsed.billed_units == {"result.search": 2.0}


def test_success_false_on_a_200_is_an_error_not_an_empty_answer():
    parsed = ADAPTER.parse(VendorTask("search", "q"), 200, {}, json.dumps({"success": False, "error": "bad"}))
    assert parsed.error_class == "bad_request" and parsed.results == ()


test_documented_error_bodies_are_classified = contract.documented_error_bodies_test()
test_published_success_bodies_are_read = contract.documented_success_bodies_test()


def test_truncated_json_is_malformed(simulator):
    contract.assert_truncated_answer_is_malformed(simulator, VendorTask("search", contract.golden_page().query))
    with pytest.raises(MalformedResponse):
        ADAPTER.parse(VendorTask("search", "q"), 200, {}, json.dumps({"success": True, "results": None}))


def test_every_fixture_names_its_source():
    contract.sources_name_every_fixture()
