"""Firecrawl v2: our adapter and the official SDK (firecrawl-py) against the simulator over a real
socket, and the adapter against Firecrawl's documented error bodies."""

from __future__ import annotations

import json

import httpx
import pytest
import requests

from bench_assets.adapters.base import MalformedResponse, VendorTask
from bench_assets.adapters.firecrawl import MANIFEST_DEFAULTS, FirecrawlAdapter
from bench_assets.metrics import normalize_url
from bench_assets.simulator.app import sim_key
from bench_assets_tests.simulator.vendor_contract import VendorContract, VendorOpenApi, sdk_base_url

VENDOR = "firecrawl"
ADAPTER = FirecrawlAdapter()
contract = VendorContract(ADAPTER, MANIFEST_DEFAULTS)


def test_search_round_trip_finds_golden_url_and_bills_credits_used(simulator, sim_logs):
    page = contract.top_ranked_page
    task = VendorTask("search", page.query, 10)
    req = ADAPTER.build(task, contract.endpoint("search", simulator.base_url), sim_key(VENDOR), {})
    assert req.json_body == {"query": page.query, "limit": 10, "sources": [{"type": "web"}]}
    assert req.redacted()["headers"]["Authorization"] == "<redacted>"
    resp = contract.send(req)
    assert resp.status_code == 200
    parsed = ADAPTER.parse(task, resp.status_code, dict(resp.headers), resp.text)
    assert parsed.error_class is None and parsed.results
    assert normalize_url(page.url) in [normalize_url(r.url) for r in parsed.results]
    assert all(r.snippet and r.content is None for r in parsed.results)  # descriptions only, no scrape
    assert parsed.request_id == resp.json()["id"]
    assert parsed.billed_units == {"credit": 2.0}  # 2 credits per 10 results
    (bill,) = sim_logs.billing()
    assert bill["request_id"] == parsed.request_id
    assert bill["usd"] == pytest.approx(contract.usd(parsed.billed_units))


def test_search_with_scraped_results_adds_one_credit_per_result(simulator, sim_logs):
    page = contract.top_ranked_page
    task = VendorTask("search", page.query, 3)
    req = ADAPTER.build(
        task, contract.endpoint("search", simulator.base_url), sim_key(VENDOR), {"scrape_results": True}
    )
    resp = contract.send(req)
    parsed = ADAPTER.parse(task, resp.status_code, dict(resp.headers), resp.text)
    assert len(parsed.results) == 3 and parsed.billed_units == {"credit": 2.0 + 3}
    assert normalize_url(parsed.results[0].url) == normalize_url(page.url)
    assert page.anchor_phrases[0] in parsed.results[0].content and parsed.results[0].published.startswith(
        page.published
    )
    (bill,) = sim_logs.billing()
    assert bill["usd"] == pytest.approx(contract.usd(parsed.billed_units))


def test_scrape_round_trip_returns_anchor_phrases(simulator, sim_logs):
    page = contract.top_ranked_page
    task = VendorTask("extract", page.url)
    resp, parsed = contract.call(simulator, task)
    assert resp.status_code == 200
    (result,) = parsed.results
    assert result.url == page.url and result.title == page.title
    for phrase in page.anchor_phrases:
        assert phrase in result.content
    assert parsed.request_id == resp.json()["data"]["metadata"]["scrapeId"]
    assert parsed.billed_units == {"credit": 1.0}
    (bill,) = sim_logs.billing()
    assert bill["usd"] == pytest.approx(contract.usd(parsed.billed_units))


def test_scrape_of_missing_page_is_not_found_inside_a_success(simulator):
    task = VendorTask("extract", "https://nowhere.invalid/page")
    resp, parsed = contract.call(simulator, task)
    assert resp.status_code == 200 and resp.json()["data"]["metadata"]["statusCode"] == 404
    assert parsed.error_class == "not_found" and parsed.billed_units == {"credit": 1.0}


@pytest.fixture()
def firecrawl_app(simulator, monkeypatch):
    from firecrawl import Firecrawl

    # `api_url` is the SDK's base-URL option; it joins "/v2/search" onto it with urljoin, which
    # would drop a path prefix, so it is given the simulator's port for api.firecrawl.dev, served
    # at the root. The SDK is unmodified (only requests' send is wrapped, to record the response).
    raw: list = []
    real_send = requests.Session.send

    def recording_send(self, request, **kwargs):
        response = real_send(self, request, **kwargs)
        raw.append(response)
        return response

    monkeypatch.setattr(requests.Session, "send", recording_send)
    app = Firecrawl(
        api_key=sim_key(VENDOR), api_url=sdk_base_url(simulator.base_url, "https://api.firecrawl.dev"), max_retries=1
    )
    return app, raw


def test_official_sdk_search_parses_and_agrees_with_adapter(firecrawl_app):
    app, raw = firecrawl_app
    page = contract.top_ranked_page
    data = app.search(page.query, limit=10)
    sdk_urls = [r.url for r in data.web]
    assert sdk_urls and all(r.description for r in data.web)
    (resp,) = raw
    sent = json.loads(resp.request.body)
    assert sent["query"] == page.query and sent["origin"].startswith("python-sdk")
    parsed = ADAPTER.parse(VendorTask("search", page.query, 10), resp.status_code, dict(resp.headers), resp.text)
    assert [r.url for r in parsed.results] == sdk_urls


def test_official_sdk_scrape_parses_document(firecrawl_app):
    app, raw = firecrawl_app
    page = contract.top_ranked_page
    doc = app.scrape(page.url, formats=["markdown"])
    assert page.anchor_phrases[1] in doc.markdown
    assert doc.metadata.source_url == page.url and doc.metadata.credits_used == 1  # snake_case via the SDK
    parsed = ADAPTER.parse(VendorTask("extract", page.url), raw[-1].status_code, dict(raw[-1].headers), raw[-1].text)
    assert parsed.results[0].content == doc.markdown and parsed.request_id == doc.metadata.scrape_id


def test_official_sdk_raises_on_wrong_key(simulator):
    from firecrawl import Firecrawl
    from firecrawl.v2.utils.error_handler import FirecrawlError

    app = Firecrawl(api_key="fc-wrong", api_url=sdk_base_url(simulator.base_url, "https://api.firecrawl.dev"))
    with pytest.raises(FirecrawlError, match="Invalid token"):
        app.search("anything", limit=3)


def test_wrong_key_gets_401_body_classified_auth(simulator, sim_logs):
    resp, _ = contract.wrong_key_answer(simulator, sim_logs, 401, key="fc-wrong", text="anything at all")
    assert resp.json() == {"success": False, "error": "Unauthorized: Invalid token"}


def test_missing_query_gets_documented_400(simulator):
    resp = httpx.post(
        contract.endpoint("search", simulator.base_url),
        headers={"Authorization": f"Bearer {sim_key(VENDOR)}"},
        json={"limit": 3},
        timeout=10,
    )
    assert (
        resp.status_code == 400 and resp.json()["success"] is False and resp.json()["details"][0]["path"] == ["query"]
    )
    parsed = ADAPTER.parse(VendorTask("search", ""), resp.status_code, dict(resp.headers), resp.text)
    assert parsed.error_class == "bad_request"


def test_error_fixtures_cover_documented_statuses():
    assert {401, 402, 429, 500} <= contract.recorded_error_statuses


test_documented_error_bodies_are_classified = contract.documented_error_bodies_test()


def test_truncated_json_raises_malformed(simulator):
    page = contract.top_ranked_page
    task = VendorTask("search", page.query, 5)
    contract.assert_truncated_answer_is_malformed(simulator, task)
    with pytest.raises(MalformedResponse):
        ADAPTER.parse(task, 200, {}, json.dumps({"success": True}))  # no data


test_published_success_bodies_are_read = contract.documented_success_bodies_test()


def test_every_fixture_names_its_source():
    contract.sources_name_every_fixture()


# ##### FIRECRAWL'S PUBLISHED v2 OPENAPI DESCRIPTION (fixtures/vendors/firecrawl/openapi.json)

SPEC = VendorOpenApi(VENDOR, "openapi.json")  # checks the SHA-256 recorded in SOURCES.md
ENDPOINT_PATH = {"search": "/search", "extract": "/scrape"}
REQUEST_CASES = [("search", {}), ("search", {"scrape_results": True}), ("extract", {})]


def test_the_archived_description_is_firecrawls_v2():
    assert SPEC.spec["servers"] == [{"url": "https://api.firecrawl.dev/v2"}]


@pytest.mark.parametrize("capability, options", REQUEST_CASES)
def test_adapter_requests_conform_to_the_published_description(capability, options):
    text = "python asyncio tutorial" if capability == "search" else "https://example.org/a"
    req = ADAPTER.build(VendorTask(capability, text, 10), "https://api.firecrawl.dev/v2/x", "fc-key", options)
    assert SPEC.request_errors("post", ENDPOINT_PATH[capability], req.json_body) == []


def test_the_description_refuses_what_it_does_not_admit():
    # The check can fail: the bare-string form the adapter used to send is outside the description.
    assert SPEC.request_errors("post", "/search", {"query": "q", "sources": ["web"]})
    assert SPEC.response_errors("post", "/search", 200, {"success": "yes", "data": {"web": [{"url": 3}]}})


@pytest.mark.parametrize("capability, options", REQUEST_CASES)
def test_simulator_answers_conform_to_the_published_description(simulator, capability, options):
    page = contract.golden_page()
    task = VendorTask(capability, page.query if capability == "search" else page.url, 10)
    resp, parsed = contract.call(simulator, task, options=options)
    assert resp.status_code == 200 and parsed.results
    assert SPEC.response_errors("post", ENDPOINT_PATH[capability], 200, resp.json()) == []


def test_published_example_bodies_conform_to_the_published_description():
    """Every published example body conforms to the published OpenAPI description, except those
    recorded as departing from it (`departs_from_openapi` says how), which must really depart: the
    docs and the description disagree, and the adapter reads both."""
    for path in contract.ok_fixtures:
        fixture = json.loads(path.read_text())
        errors = SPEC.response_errors("post", ENDPOINT_PATH[fixture["capability"]], 200, fixture["body"])
        if "departs_from_openapi" in fixture:
            assert errors, f"{path.name} is recorded as departing from the description but conforms"
        else:
            assert errors == [], path.name
