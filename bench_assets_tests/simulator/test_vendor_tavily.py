"""Tavily: our adapter and the official SDK (tavily-python) against the simulator over a real
socket; the adapter's requests and the simulator's answers against Tavily's own OpenAPI
descriptions; the adapter against the bodies Tavily's API reference gives
(fixtures/vendors/tavily/SOURCES.md)."""

from __future__ import annotations

import json

import httpx
import pytest

from bench_assets.adapters.base import MalformedResponse, VendorTask
from bench_assets.adapters.tavily import MANIFEST_DEFAULTS, TavilyAdapter
from bench_assets.golden.planted import NOISE_STRINGS
from bench_assets.metrics import normalize_url
from bench_assets.simulator.app import sim_key, simulated_url
from bench_assets_tests.simulator.vendor_contract import VendorContract, VendorOpenApi

VENDOR = "tavily"
ADAPTER = TavilyAdapter()
contract = VendorContract(ADAPTER, MANIFEST_DEFAULTS)


def test_search_round_trip_finds_golden_url_and_bills_what_the_simulator_charged(simulator, sim_logs):
    page = contract.top_ranked_page
    task = VendorTask("search", page.query, 10)
    req = ADAPTER.build(task, contract.endpoint("search", simulator.base_url), sim_key(VENDOR), {})
    assert req.json_body["include_usage"] is True and "Authorization" in req.secret_headers
    assert req.redacted()["headers"]["Authorization"] == "<redacted>"
    resp = contract.send(req)
    assert resp.status_code == 200
    parsed = ADAPTER.parse(task, resp.status_code, dict(resp.headers), resp.text)
    assert parsed.error_class is None and parsed.results
    assert normalize_url(page.url) in [normalize_url(r.url) for r in parsed.results]
    assert [r.rank for r in parsed.results] == list(range(1, len(parsed.results) + 1))
    assert all(r.snippet for r in parsed.results) and all(r.content is None for r in parsed.results)
    assert parsed.billed_units == {"credit": 1.0}
    (bill,) = sim_logs.billing()
    assert bill["request_id"] == parsed.request_id
    assert bill["usd"] == pytest.approx(contract.usd(parsed.billed_units))
    (logged,) = sim_logs.requests()
    assert logged["auth_ok"] and logged["path"] == "/search" and json.loads(logged["body"])["query"] == page.query


def test_search_with_raw_content_returns_page_text(simulator):
    page = contract.top_ranked_page
    task = VendorTask("search", page.query, 3)
    req = ADAPTER.build(
        task, contract.endpoint("search", simulator.base_url), sim_key(VENDOR), {"include_raw_content": "markdown"}
    )
    resp = contract.send(req)
    parsed = ADAPTER.parse(task, resp.status_code, dict(resp.headers), resp.text)
    top = parsed.results[0]
    assert normalize_url(top.url) == normalize_url(page.url)
    assert page.anchor_phrases[0] in top.content and top.snippet != top.content


def test_extract_round_trip_returns_anchor_phrases(simulator, sim_logs):
    page = contract.top_ranked_page
    task = VendorTask("extract", page.url)
    req = ADAPTER.build(task, contract.endpoint("extract", simulator.base_url), sim_key(VENDOR), {})
    resp = contract.send(req)
    assert resp.status_code == 200
    parsed = ADAPTER.parse(task, resp.status_code, dict(resp.headers), resp.text)
    assert parsed.error_class is None and len(parsed.results) == 1
    content = parsed.results[0].content
    for phrase in page.anchor_phrases:
        assert phrase in content
    assert not any(noise in content for noise in NOISE_STRINGS)
    (bill,) = sim_logs.billing()
    # Whole credits, amortised over the key's calls: 0 or 1 for one URL, never 0.2.
    assert parsed.billed_units["credit"] in (0.0, 1.0)
    assert bill["usd"] == pytest.approx(contract.usd(parsed.billed_units))


@pytest.mark.parametrize("depth, per_five", [("basic", 1), ("advanced", 2)])
def test_extract_credits_are_whole_and_add_up_to_one_block_per_five_urls(simulator, sim_logs, depth, per_five):
    """docs.tavily.com/documentation/api-credits: 1 credit per 5 successful URLs (advanced 2),
    charged whole: usage.credits is 0 until the fifth URL, then the block's credits. Any five
    single-URL calls in a row complete exactly one block, wherever the key's count stood."""
    page = contract.top_ranked_page
    task = VendorTask("extract", page.url)
    options = {"extract_depth": depth}
    credits = []
    for _ in range(5):
        resp, parsed = contract.call(simulator, task, options=options)
        assert resp.status_code == 200, resp.text
        assert isinstance(resp.json()["usage"]["credits"], int)
        credits.append(parsed.billed_units["credit"])
    assert sorted(credits) == [0.0] * 4 + [float(per_five)]
    bills = sim_logs.billing()
    assert [b["usd"] for b in bills] == pytest.approx([contract.usd({"credit": c}) for c in credits])
    # The estimate is the long-run average: one block's credits spread over its five URLs.
    assert ADAPTER.expected_units(task, options) == {"credit": pytest.approx(per_five / 5)}


def test_a_batch_of_five_urls_bills_its_block_in_one_call(simulator):
    page = contract.top_ranked_page
    headers = {"Authorization": f"Bearer {sim_key(VENDOR)}"}
    body = {"urls": [page.url] * 10, "include_usage": True}
    resp = httpx.post(contract.endpoint("extract", simulator.base_url), headers=headers, json=body, timeout=10)
    assert resp.status_code == 200 and len(resp.json()["results"]) == 10
    assert resp.json()["usage"]["credits"] == 2  # ten URLs complete two blocks of five


def test_extract_of_unknown_url_is_not_found_inside_a_200(simulator):
    task = VendorTask("extract", "https://nowhere.invalid/missing")
    resp, parsed = contract.call(simulator, task)
    assert resp.status_code == 200 and resp.json()["failed_results"][0]["url"] == task.text
    assert parsed.error_class == "not_found" and parsed.results == ()


@pytest.fixture()
def tavily_client(simulator):
    from tavily import TavilyClient

    # The SDK takes the base URL as `api_base_url`; it appends "/search" and "/extract".
    client = TavilyClient(
        api_key=sim_key(VENDOR), api_base_url=simulated_url("https://api.tavily.com", simulator.base_url)
    )
    raw: list = []
    client.session.hooks["response"].append(lambda r, *args, **kwargs: raw.append(r))
    yield client, raw
    client.close()


def test_official_sdk_search_parses_and_agrees_with_adapter(tavily_client):
    client, raw = tavily_client
    page = contract.top_ranked_page
    answer = client.search(page.query, max_results=10, include_usage=True)
    sdk_urls = [r["url"] for r in answer["results"]]
    assert sdk_urls and answer["usage"]["credits"] == 1 and answer["request_id"]
    (resp,) = raw
    task = VendorTask("search", page.query, 10)
    parsed = ADAPTER.parse(task, resp.status_code, dict(resp.headers), resp.text)
    assert [r.url for r in parsed.results] == sdk_urls
    assert parsed.request_id == answer["request_id"]


def test_official_sdk_extract_and_error_mapping(tavily_client, simulator):
    from tavily import InvalidAPIKeyError, TavilyClient

    client, _ = tavily_client
    page = contract.top_ranked_page
    answer = client.extract(urls=[page.url], include_usage=True)
    assert answer["results"][0]["url"] == page.url and page.anchor_phrases[1] in answer["results"][0]["raw_content"]
    wrong = TavilyClient(api_key="tvly-wrong", api_base_url=simulated_url("https://api.tavily.com", simulator.base_url))
    with pytest.raises(InvalidAPIKeyError, match="invalid API key"):
        wrong.search("anything")


def test_wrong_key_gets_401_detail_body_classified_auth(simulator, sim_logs):
    resp, _ = contract.wrong_key_answer(simulator, sim_logs, 401, key="tvly-wrong-key", text="anything at all")
    assert resp.json() == {"detail": {"error": "Unauthorized: missing or invalid API key."}}


def test_missing_query_gets_documented_400(simulator):
    headers = {"Authorization": f"Bearer {sim_key(VENDOR)}"}
    resp = httpx.post(
        contract.endpoint("search", simulator.base_url), headers=headers, json={"max_results": 3}, timeout=10
    )
    assert resp.status_code == 400 and isinstance(resp.json()["detail"]["error"], str)
    parsed = ADAPTER.parse(VendorTask("search", ""), resp.status_code, dict(resp.headers), resp.text)
    assert parsed.error_class == "bad_request"


def test_error_fixtures_cover_documented_statuses():
    assert {401, 429, 432, 433, 500} <= contract.recorded_error_statuses


test_documented_error_bodies_are_classified = contract.documented_error_bodies_test()


def test_truncated_json_raises_malformed(simulator):
    page = contract.top_ranked_page
    task = VendorTask("search", page.query, 5)
    contract.assert_truncated_answer_is_malformed(simulator, task)
    with pytest.raises(MalformedResponse):
        ADAPTER.parse(task, 200, {}, json.dumps({"query": page.query}))  # no results list


# ##### TAVILY'S OWN OPENAPI DESCRIPTIONS (fixtures/vendors/tavily/SOURCES.md)

SPECS = {
    "search": VendorOpenApi(VENDOR, "openapi-search.yaml"),
    "extract": VendorOpenApi(VENDOR, "openapi-extract.yaml"),
}
PATHS = {"search": "/search", "extract": "/extract"}


@pytest.mark.parametrize(
    "capability, options",
    [
        ("search", {}),
        ("search", {"search_depth": "advanced", "include_raw_content": "markdown"}),
        ("extract", {}),
        ("extract", {"extract_depth": "advanced", "format": "text"}),
    ],
)
def test_the_adapters_requests_follow_tavilys_openapi(simulator, capability, options):
    page = contract.top_ranked_page
    task = VendorTask(capability, page.query if capability == "search" else page.url, 10)
    req = ADAPTER.build(task, contract.endpoint(capability, simulator.base_url), sim_key(VENDOR), options)
    assert SPECS[capability].request_errors("post", PATHS[capability], req.json_body) == []
    assert req.headers["Authorization"].startswith("Bearer ")  # the spec's bearerAuth scheme
    resp = contract.send(req)
    assert resp.status_code == 200, resp.text
    errors = SPECS[capability].response_errors("post", PATHS[capability], 200, resp.json())
    # One slip of the spec's: it lists `answer` as required, while its own description says the
    # answer is "Included in the response only if `include_answer` is requested".
    assert errors in ([], ["<body>: 'answer' is a required property"]) and "answer" not in resp.json()


def test_the_validators_are_not_vacuous():
    assert SPECS["search"].request_errors("post", "/search", {"query": "q", "max_results": 50}) != []
    assert SPECS["extract"].request_errors("post", "/extract", {"extract_depth": "deep"}) != []
    assert SPECS["extract"].response_errors("post", "/extract", 200, {"results": [{"raw_content": 1}]}) != []


def test_the_simulators_error_bodies_follow_tavilys_openapi(sim_control):
    url = simulated_url("https://api.tavily.com/search", sim_control.url)
    wrong = httpx.post(url, headers={"Authorization": "Bearer tvly-wrong"}, json={"query": "q"}, timeout=10)
    sim_control.faults({"vendors": {VENDOR: {"rate_limited": 1.0}}})
    limited = httpx.post(url, headers={"Authorization": f"Bearer {sim_key(VENDOR)}"}, json={"query": "q"}, timeout=10)
    for resp in (wrong, limited):
        assert SPECS["search"].response_errors("post", "/search", resp.status_code, resp.json()) == []
    example = SPECS["search"].spec["paths"]["/search"]["post"]["responses"]["429"]["content"]["application/json"]
    assert limited.json() == example["example"]  # the documented message, word for word


@pytest.mark.parametrize("name", ["search_openapi_example", "extract_openapi_example"])
def test_tavilys_documented_example_bodies_parse_into_results(name):
    fixture = json.loads((contract.fixtures / f"{name}.json").read_text())
    body = fixture["body"]
    spec, path = SPECS[fixture["capability"]], PATHS[fixture["capability"]]
    # The examples fit their own schema, but for one slip of Tavily's: response_time given as a string.
    assert spec.response_errors("post", path, 200, body) in (
        [],
        ["response_time: '1.67' is not of type 'number'"],
    )
    parsed = ADAPTER.parse(VendorTask(fixture["capability"], "q"), 200, {}, json.dumps(body))
    assert [r.url for r in parsed.results] == [r["url"] for r in body["results"]]
    assert parsed.error_class is None and parsed.request_id == body["request_id"]
    assert parsed.billed_units == {"credit": float(body["usage"]["credits"])}
    first = parsed.results[0]
    if fixture["capability"] == "search":
        assert first.snippet == body["results"][0]["content"] and first.title == body["results"][0]["title"]
    else:
        assert first.content == body["results"][0]["raw_content"]


@pytest.mark.parametrize("mode, credits", [("basic", 1), ("fast", 1), ("advanced", 2)])
def test_each_search_depth_is_sent_and_billed_its_documented_credits(simulator, sim_logs, mode, credits):
    """docs.tavily.com/documentation/api-credits and /changelog: basic and fast 1 credit, advanced 2."""
    page = contract.golden_page()
    httpx.post(f"{simulator.base_url}/_sim/reset", timeout=5)
    resp, parsed = contract.call(simulator, VendorTask("search", page.query, 10), options=ADAPTER.modes[mode])
    assert resp.status_code == 200 and parsed.error_class is None and parsed.results
    (logged,) = sim_logs.requests()
    assert json.loads(logged["body"])["search_depth"] == mode
    assert parsed.billed_units == {"credit": credits}
    (bill,) = sim_logs.billing()
    assert contract.usd(parsed.billed_units) == pytest.approx(bill["usd"]) == pytest.approx(0.008 * credits)
