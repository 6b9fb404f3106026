"""Keenable search and fetch: our adapter against the simulator over a real socket, and Keenable's
documented examples and its SDK's recorded bodies read by our adapter."""

from __future__ import annotations

import json

import httpx
import pytest

from bench_assets.adapters.base import MalformedResponse, VendorTask
from bench_assets.adapters.keenable import MANIFEST_DEFAULTS, KeenableAdapter
from bench_assets.metrics import normalize_url
from bench_assets.simulator.app import sim_key, simulated_url
from bench_assets_tests.simulator.vendor_contract import VendorContract

VENDOR = "keenable"
ADAPTER = KeenableAdapter()
contract = VendorContract(ADAPTER, MANIFEST_DEFAULTS)


def test_search_round_trip_finds_the_golden_page(simulator, sim_logs):
    page = contract.golden_page()
    resp, parsed = contract.call(simulator, VendorTask("search", page.query, 10))
    assert resp.status_code == 200, resp.text
    assert parsed.error_class is None and parsed.results
    hit = next(r for r in parsed.results if normalize_url(r.url) == normalize_url(page.url))
    # The page text is in `snippet`; the empty `description` never replaces it.
    assert hit.title == page.title and hit.snippet and hit.published.startswith(page.published)
    (logged,) = sim_logs.requests()
    assert (logged["method"], logged["path"], logged["auth_ok"]) == ("POST", "/v1/search", True)
    (bill,) = sim_logs.billing()
    assert parsed.billed_units == {"request.search": 1.0}
    assert contract.usd(parsed.billed_units) == pytest.approx(bill["usd"])


def test_request_is_the_sdk_one_on_the_keyed_endpoint():
    req = ADAPTER.build(VendorTask("search", "q"), MANIFEST_DEFAULTS["endpoints"]["search"], "keen_x", {})
    assert req.url == "https://api.keenable.ai/v1/search"  # not /v1/search/public, the keyless tier
    assert req.json_body == {"query": "q", "mode": "pro"}
    assert req.redacted()["headers"]["X-API-Key"] != "keen_x"


def test_fetch_round_trip_reads_the_page_as_markdown(simulator, sim_logs):
    page = contract.golden_page()
    resp, parsed = contract.call(simulator, VendorTask("extract", page.url))
    assert resp.status_code == 200, resp.text
    (result,) = parsed.results
    assert result.title == page.title and result.content.startswith(f"# {page.title}")
    (logged,) = sim_logs.requests()
    assert (logged["method"], logged["path"], logged["params"]) == ("GET", "/v1/fetch", {"url": page.url})
    assert parsed.billed_units == {"request.extract": 1.0}


def test_fetch_of_a_url_outside_the_index_is_not_found_and_unbilled(simulator, sim_logs):
    resp, parsed = contract.call(simulator, VendorTask("extract", "https://nowhere.example/none"))
    assert resp.status_code == 404 and parsed.error_class == "not_found"
    assert sim_logs.billing() == []


def test_wrong_key_is_classed_auth_and_billed_nothing(simulator, sim_logs):
    resp, _ = contract.wrong_key_answer(simulator, sim_logs, 401)
    assert resp.json()["message"]


def test_malformed_api_key_400_is_auth_and_other_400s_are_bad_request():
    body = json.dumps({"message": "Malformed API key"})
    assert ADAPTER.parse(VendorTask("search", "q"), 400, {}, body).error_class == "auth"
    assert (
        ADAPTER.parse(VendorTask("search", "q"), 400, {}, json.dumps({"message": "bad"})).error_class == "bad_request"
    )


def test_malformed_request_is_refused_and_billed_nothing(simulator, sim_logs):
    url = simulated_url(MANIFEST_DEFAULTS["endpoints"]["search"], simulator.base_url)
    resp = httpx.post(url, json={"query": " "}, headers={"X-API-Key": sim_key(VENDOR)}, timeout=10)
    assert resp.status_code == 422
    assert ADAPTER.parse(VendorTask("search", " "), 422, dict(resp.headers), resp.text).error_class == "bad_request"
    assert sim_logs.billing() == []


test_documented_error_bodies_are_classified = contract.documented_error_bodies_test()
test_published_success_bodies_are_read = contract.documented_success_bodies_test()


def test_truncated_json_is_malformed(simulator):
    contract.assert_truncated_answer_is_malformed(simulator, VendorTask("search", contract.golden_page().query))
    with pytest.raises(MalformedResponse):
        ADAPTER.parse(VendorTask("extract", "https://x.example/"), 200, {}, json.dumps({"url": "x", "content": None}))


def test_every_fixture_names_its_source():
    contract.sources_name_every_fixture()
