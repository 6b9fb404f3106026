"""Exa: our adapter and the official SDK (exa-py) against the simulator over a real socket, and
the adapter against Exa's documented error bodies."""

from __future__ import annotations

import json

import httpx
import pytest
import requests

from bench_assets.adapters.base import MalformedResponse, VendorTask
from bench_assets.adapters.exa import MANIFEST_DEFAULTS, ExaAdapter
from bench_assets.metrics import normalize_url
from bench_assets.simulator.app import sim_key, simulated_url
from bench_assets_tests.simulator.vendor_contract import VendorContract, VendorOpenApi

VENDOR = "exa"
ADAPTER = ExaAdapter()
contract = VendorContract(ADAPTER, MANIFEST_DEFAULTS)


def test_search_round_trip_finds_golden_url_and_bills_cost_dollars(simulator, sim_logs):
    page = contract.top_ranked_page
    task = VendorTask("search", page.query, 10)
    req = ADAPTER.build(task, contract.endpoint("search", simulator.base_url), sim_key(VENDOR), {})
    assert req.redacted()["headers"]["x-api-key"] == "<redacted>"
    resp = contract.send(req)
    assert resp.status_code == 200
    parsed = ADAPTER.parse(task, resp.status_code, dict(resp.headers), resp.text)
    assert parsed.error_class is None and len(parsed.results) == 10
    urls = [r.url for r in parsed.results]
    assert normalize_url(page.url) in [normalize_url(u) for u in urls] and page.url not in urls  # utm-tagged
    top = parsed.results[0]
    assert page.anchor_phrases[0] in top.content and len(top.content) <= 4000
    assert top.published.startswith(page.published)
    # Only text was requested: Exa returns no highlights then, so there is no snippet.
    assert all(r.snippet is None for r in parsed.results) and "highlights" not in resp.json()["results"][0]
    # Since 2026-03-03 $7 per 1k searches includes the text of 10 results (costDollars.total).
    assert parsed.billed_units == {"usd": pytest.approx(0.007)}
    assert parsed.request_id == resp.json()["requestId"]
    (bill,) = sim_logs.billing()
    assert bill["request_id"] == parsed.request_id
    assert bill["usd"] == pytest.approx(contract.usd(parsed.billed_units))


def test_results_beyond_ten_cost_extra(simulator, sim_logs):
    page = contract.top_ranked_page
    task = VendorTask("search", page.query, 20)
    _, parsed = contract.call(simulator, task)
    n = len(parsed.results)
    assert n > 10
    assert parsed.billed_units["usd"] == pytest.approx(0.007 + 0.001 * (n - 10))  # text included
    (bill,) = sim_logs.billing()
    assert bill["usd"] == pytest.approx(contract.usd(parsed.billed_units))


def test_highlights_come_back_when_requested(simulator):
    page = contract.top_ranked_page
    headers = {"x-api-key": sim_key(VENDOR)}
    body = {"query": page.query, "numResults": 3, "contents": {"highlights": True}}
    resp = httpx.post(contract.endpoint("search", simulator.base_url), headers=headers, json=body, timeout=10)
    parsed = ADAPTER.parse(VendorTask("search", page.query, 3), resp.status_code, dict(resp.headers), resp.text)
    assert all(r.snippet and r.content is None for r in parsed.results)
    # Highlights are included in the search price: nothing is added for them.
    assert resp.json()["costDollars"]["total"] == pytest.approx(0.007)


def test_extract_round_trip_returns_anchor_phrases(simulator, sim_logs):
    page = contract.top_ranked_page
    task = VendorTask("extract", page.url)
    resp, parsed = contract.call(simulator, task)
    assert resp.status_code == 200
    (result,) = parsed.results
    assert normalize_url(result.url) == normalize_url(page.url)
    for phrase in page.anchor_phrases:
        assert phrase in result.content
    assert parsed.billed_units == {"usd": pytest.approx(0.001)}
    (bill,) = sim_logs.billing()
    assert bill["usd"] == pytest.approx(contract.usd(parsed.billed_units))


def test_extract_of_unknown_url_is_not_found_inside_a_200(simulator):
    task = VendorTask("extract", "https://nowhere.invalid/page")
    resp, parsed = contract.call(simulator, task)
    assert resp.status_code == 200 and resp.json()["statuses"][0]["error"]["tag"] == "CRAWL_NOT_FOUND"
    assert parsed.error_class == "not_found" and parsed.results == () and parsed.billed_units == {"usd": 0.0}


@pytest.mark.parametrize("capability, n", [("search", 10), ("search", 20), ("extract", 1)])
def test_missing_cost_dollars_is_billed_in_documented_units_priced_by_the_manifest(simulator, capability, n):
    page = contract.top_ranked_page
    task = VendorTask(capability, page.query if capability == "search" else page.url, n)
    resp = contract.send(ADAPTER.build(task, contract.endpoint(capability, simulator.base_url), sim_key(VENDOR), {}))
    body = resp.json()
    reported = body.pop("costDollars")["total"]
    parsed = ADAPTER.parse(task, 200, {}, json.dumps(body))
    # Without Exa's own figure the call is counted in the units its pricing names; the prices
    # come from the manifest's table (config), and they agree with what Exa would have reported.
    assert "usd" not in parsed.billed_units and set(parsed.billed_units) <= {
        "request.search",
        "result.extra",
        "page.text",
    }
    assert contract.usd(parsed.billed_units) == pytest.approx(reported)
    assert contract.usd(ADAPTER.expected_units(task, {})) == pytest.approx(reported)


def test_a_response_without_cost_dollars_counts_units_not_dollars():
    """A search is one request plus each result beyond ten (its text is included); a /contents
    page of text is a unit of its own. The manifest prices them."""
    results = [{"url": f"https://e.test/{i}", "text": "t" if i % 2 else None} for i in range(12)]
    body = json.dumps({"requestId": "r", "results": results})
    units = ADAPTER.parse(VendorTask("search", "q", 12), 200, {}, body).billed_units
    assert units == {"request.search": 1.0, "result.extra": 2.0}
    assert ADAPTER.parse(VendorTask("extract", "u"), 200, {}, body).billed_units == {"page.text": 6.0}


@pytest.mark.parametrize("n, usd", [(1, 0.007), (10, 0.007), (25, 0.022), (100, 0.097)])
def test_estimate_follows_the_2026_03_03_pricing(n, usd):
    """exa.ai/docs/changelog/pricing-update: $7 per 1k searches with 10 results' text and
    highlights, $1 per 1k results beyond 10; /contents $1 per 1k pages."""
    assert contract.usd(ADAPTER.expected_units(VendorTask("search", "q", n), {})) == pytest.approx(usd)
    assert contract.usd(ADAPTER.expected_units(VendorTask("extract", "u"), {})) == pytest.approx(0.001)


@pytest.fixture()
def exa_client(simulator, monkeypatch):
    from exa_py import Exa

    raw: list = []
    real_send = requests.Session.send

    def recording_send(self, request, **kwargs):  # exa-py calls requests.post: record what came back
        response = real_send(self, request, **kwargs)
        raw.append(response)
        return response

    monkeypatch.setattr(requests.Session, "send", recording_send)
    # `base_url` is the SDK's own option; it appends "/search" and "/contents".
    return Exa(api_key=sim_key(VENDOR), base_url=simulated_url("https://api.exa.ai", simulator.base_url)), raw


def test_official_sdk_search_parses_and_agrees_with_adapter(exa_client):
    exa, raw = exa_client
    page = contract.top_ranked_page
    answer = exa.search(page.query, num_results=10)  # the SDK asks for text (10,000 characters) by default
    sdk_urls = [r.url for r in answer.results]
    assert sdk_urls and all(r.text for r in answer.results)
    assert answer.cost_dollars.total == pytest.approx(0.007)
    (resp,) = raw
    parsed = ADAPTER.parse(VendorTask("search", page.query, 10), resp.status_code, dict(resp.headers), resp.text)
    assert [r.url for r in parsed.results] == sdk_urls
    assert [r.content for r in parsed.results] == [r.text for r in answer.results]
    assert parsed.billed_units == {"usd": pytest.approx(answer.cost_dollars.total)}


def test_official_sdk_get_contents_and_error(exa_client, simulator):
    from exa_py import Exa

    exa, _ = exa_client
    page = contract.top_ranked_page
    answer = exa.get_contents([page.url], text=True)
    assert page.anchor_phrases[1] in answer.results[0].text
    assert answer.statuses[0].status == "success"
    wrong = Exa(api_key="wrong-key", base_url=simulated_url("https://api.exa.ai", simulator.base_url))
    with pytest.raises(ValueError, match="401"):
        wrong.search("anything", num_results=1)


def test_wrong_key_gets_401_body_classified_auth(simulator, sim_logs):
    resp, _ = contract.wrong_key_answer(simulator, sim_logs, 401, key="wrong-key", text="anything at all")
    assert resp.json()["tag"] == "INVALID_API_KEY"
    assert set(resp.json()) == {"requestId", "error", "tag"}


def test_missing_query_gets_documented_400(simulator):
    resp = httpx.post(
        contract.endpoint("search", simulator.base_url),
        headers={"x-api-key": sim_key(VENDOR)},
        json={"numResults": 3},
        timeout=10,
    )
    assert resp.status_code == 400 and resp.json()["tag"] == "INVALID_REQUEST_BODY"
    parsed = ADAPTER.parse(VendorTask("search", ""), resp.status_code, dict(resp.headers), resp.text)
    assert parsed.error_class == "bad_request" and parsed.request_id == resp.json()["requestId"]


def test_error_fixtures_cover_documented_statuses():
    assert {401, 402, 429, 500, 503} <= contract.recorded_error_statuses


test_documented_error_bodies_are_classified = contract.documented_error_bodies_test()


def test_truncated_json_raises_malformed(simulator):
    page = contract.top_ranked_page
    task = VendorTask("search", page.query, 5)
    contract.assert_truncated_answer_is_malformed(simulator, task)
    with pytest.raises(MalformedResponse):
        ADAPTER.parse(task, 200, {}, json.dumps({"requestId": "x"}))  # no results list


# ##### EXA'S OWN OPENAPI DESCRIPTION (fixtures/vendors/exa/openapi.yaml, SOURCES.md)

OPENAPI = VendorOpenApi(VENDOR)


@pytest.mark.parametrize(
    "capability, text, n, path",
    [("search", "q", 10, "/search"), ("search", "q", 25, "/search"), ("extract", "https://e.test/a", 1, "/contents")],
)
def test_the_adapters_requests_follow_exas_openapi(capability, text, n, path):
    req = ADAPTER.build(VendorTask(capability, text, n), f"https://api.exa.ai{path}", "key", {})
    assert req.method == "POST" and req.url.endswith(path)
    assert OPENAPI.request_errors("post", path, req.json_body) == []
    # The key travels as the spec's `apikey` security scheme names it.
    assert OPENAPI.spec["components"]["securitySchemes"]["apikey"]["name"] in req.headers


def test_a_request_exa_would_refuse_is_caught_by_the_spec():
    """The validator is not vacuous: a body of the wrong types fails against the same schema."""
    assert OPENAPI.request_errors("post", "/search", {"query": 7, "numResults": "ten"}) != []
    assert OPENAPI.response_errors("post", "/search", 200, {"results": [{"url": 3}]}) != []


@pytest.mark.parametrize(
    "path, body",
    [
        ("/search", {"numResults": 12, "contents": {"text": {"maxCharacters": 500}}}),
        ("/search", {"numResults": 3, "contents": {"highlights": True}}),
        ("/contents", {"text": True}),
    ],
)
def test_the_simulators_answers_follow_exas_openapi(simulator, path, body):
    page = contract.top_ranked_page
    body = {"query": page.query, **body} if path == "/search" else {"urls": [page.url, "https://nowhere.invalid/x"]}
    assert OPENAPI.request_errors("post", path, body) == []
    resp = httpx.post(
        simulated_url(f"https://api.exa.ai{path}", simulator.base_url),
        headers={"x-api-key": sim_key(VENDOR)},
        json=body,
        timeout=10,
    )
    assert resp.status_code == 200, resp.text
    assert OPENAPI.response_errors("post", path, 200, resp.json()) == []


@pytest.mark.parametrize("name", ["search_openapi_example", "contents_openapi_example"])
def test_exas_documented_example_bodies_parse_into_results(name):
    """The bodies the OpenAPI spec's own examples make (fixtures/vendors/exa/SOURCES.md)."""
    fixture = json.loads((contract.fixtures / f"{name}.json").read_text())
    body = fixture["body"]
    parsed = ADAPTER.parse(VendorTask(fixture["capability"], "q"), 200, {}, json.dumps(body))
    (result,) = parsed.results
    documented = body["results"][0]
    assert (result.url, result.title, result.published) == (
        documented["url"],
        documented["title"],
        documented["publishedDate"],
    )
    assert result.content == documented["text"] and result.snippet == "\n".join(documented["highlights"])
    assert parsed.billed_units == {"usd": body["costDollars"]["total"]} and parsed.request_id == body["requestId"]
    assert parsed.error_class is None
