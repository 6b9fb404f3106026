"""SerpApi (Google engine): our adapter and the official SDK (serpapi) against the simulator over a
real socket, and the adapter against SerpApi's documented error bodies."""

from __future__ import annotations

import hashlib
import json

import httpx
import pytest

from bench_assets.adapters.base import MalformedResponse, VendorTask
from bench_assets.adapters.serpapi import MANIFEST_DEFAULTS, SerpApiAdapter
from bench_assets.metrics import normalize_url
from bench_assets.simulator.app import sim_key, simulated_url
from bench_assets.simulator.profiles import PROFILES
from bench_assets_tests.simulator.vendor_contract import VendorContract

VENDOR = "serpapi"
ADAPTER = SerpApiAdapter()
contract = VendorContract(ADAPTER, MANIFEST_DEFAULTS)


def test_search_round_trip_finds_golden_url_and_bills_one_search(simulator, sim_logs):
    page = contract.top_ranked_page
    task = VendorTask("search", page.query, 10)
    req = ADAPTER.build(task, contract.endpoint("search", simulator.base_url), sim_key(VENDOR), {})
    assert req.method == "GET" and req.params["engine"] == "google" and req.params["q"] == page.query
    assert req.secret_params == ("api_key",) and req.redacted()["params"]["api_key"] == "<redacted>"
    resp = contract.send(req)
    assert resp.status_code == 200
    parsed = ADAPTER.parse(task, resp.status_code, dict(resp.headers), resp.text)
    assert parsed.error_class is None and parsed.results
    assert normalize_url(page.url) in [normalize_url(r.url) for r in parsed.results]
    assert all(r.snippet and r.content is None for r in parsed.results)
    assert parsed.request_id == resp.json()["search_metadata"]["id"]
    assert parsed.billed_units == {"request.search": 1.0}
    (bill,) = sim_logs.billing()
    assert bill["usd"] == pytest.approx(MANIFEST_DEFAULTS["prices_usd"]["request.search"])
    assert bill["usd"] == pytest.approx(PROFILES[VENDOR].usd_per_request["search"])
    (logged,) = sim_logs.requests()
    assert logged["auth_ok"] and "api_key" not in logged["params"]  # the key stays out of the log


def test_no_results_is_an_empty_answer_not_an_error(simulator):
    task = VendorTask("search", "qqqzzzxxyy", 10)
    resp, parsed = contract.call(simulator, task)
    assert resp.status_code == 200 and resp.json()["search_metadata"]["status"] == "Success" and resp.json()["error"]
    assert parsed.error_class is None and parsed.results == ()


@pytest.fixture()
def serpapi_client(simulator):
    import serpapi

    client = serpapi.Client(api_key=sim_key(VENDOR), timeout=10)
    # The SDK has no base-URL option: it prefixes paths with the class attribute BASE_DOMAIN
    # ("https://serpapi.com"). Shadowing it on this instance points only this client at the simulator.
    client.BASE_DOMAIN = simulated_url("https://serpapi.com", simulator.base_url)
    raw: list = []
    client.session.hooks["response"].append(lambda r, *args, **kwargs: raw.append(r))
    return client, raw


def test_official_sdk_search_parses_and_agrees_with_adapter(serpapi_client):
    client, raw = serpapi_client
    page = contract.top_ranked_page
    results = client.search(engine="google", q=page.query, num=10)
    sdk_urls = [r["link"] for r in results["organic_results"]]
    assert sdk_urls and results["search_metadata"]["status"] == "Success"
    (resp,) = raw
    parsed = ADAPTER.parse(VendorTask("search", page.query, 10), resp.status_code, dict(resp.headers), resp.text)
    assert [r.url for r in parsed.results] == sdk_urls


def test_official_sdk_follows_serpapi_pagination_to_the_page_the_adapter_asks_for(simulator, serpapi_client):
    client, _ = serpapi_client
    first = client.search(engine="google", q="quarterly revenue growth", num=100)
    assert len(first["organic_results"]) == 10  # Google's cap, whatever num asks
    # The SDK pages by the absolute `serpapi_pagination.next` link, as SerpApi publishes it; it is
    # followed here on the simulator (per-port serving would let the SDK follow it unchanged).
    assert first.next_page_url.startswith("https://serpapi.com/search.json?") and "start=10" in first.next_page_url
    second = sdk_page_at(client, simulated_url(first.next_page_url, simulator.base_url))
    assert [r["position"] for r in second["organic_results"]] == list(range(11, 21))
    assert second["serpapi_pagination"]["current"] == 2
    # The adapter's own page 2 asks for the same results.
    task = VendorTask("search", "quarterly revenue growth", 20, page=2)
    req = ADAPTER.build(task, contract.endpoint("search", simulator.base_url), sim_key(VENDOR), {})
    assert req.params["start"] == 10 and "num" not in req.params
    parsed = contract.parse(task, contract.send(req))
    assert [r.url for r in parsed.results] == [r["link"] for r in second["organic_results"]]


def sdk_page_at(client, url: str):
    """A page read by the SDK's own request and result model, as its `next_page()` reads one."""
    from serpapi.models import SerpResults

    return SerpResults.from_http_response(client.request("GET", path=url, params={}), client=client)


def test_requests_are_capped_at_ten_results_and_deeper_lists_paged():
    assert ADAPTER.pages_for(VendorTask("search", "q", 25)) == 3
    pages = [
        ADAPTER.build(VendorTask("search", "q", 25, page=n), "https://serpapi.com/search", "k", {}) for n in (1, 2, 3)
    ]
    # full pages of Google's 10 (no `num`), cut to the 25 wanted when read
    assert [(r.params.get("num"), r.params.get("start")) for r in pages] == [(None, None), (None, 10), (None, 20)]
    assert ADAPTER.build(VendorTask("search", "q", 5), "https://serpapi.com/search", "k", {}).params["num"] == 5
    assert ADAPTER.expected_units(VendorTask("search", "", 25), {}) == {"request.search": 3.0}
    assert ADAPTER.expected_units(VendorTask("search", "", 10), {}) == {"request.search": 1.0}


def test_official_sdk_raises_on_wrong_key(simulator):
    import serpapi

    client = serpapi.Client(api_key="wrong-key", timeout=10)
    client.BASE_DOMAIN = simulated_url("https://serpapi.com", simulator.base_url)
    with pytest.raises(serpapi.HTTPError):
        client.search(engine="google", q="anything")


def test_wrong_key_gets_401_error_body_classified_auth(simulator, sim_logs):
    resp, _ = contract.wrong_key_answer(simulator, sim_logs, 401, key="wrong-key", text="anything at all")
    assert resp.json()["error"].startswith("Invalid API key")


def test_missing_q_gets_documented_400(simulator):
    resp = httpx.get(
        contract.endpoint("search", simulator.base_url),
        params={"engine": "google", "api_key": sim_key(VENDOR)},
        timeout=10,
    )
    assert resp.status_code == 400 and resp.json() == {"error": "Missing query `q` parameter."}
    parsed = ADAPTER.parse(VendorTask("search", ""), resp.status_code, dict(resp.headers), resp.text)
    assert parsed.error_class == "bad_request"


def test_error_fixtures_cover_documented_statuses():
    fixtures = [json.loads(p.read_text()) for p in contract.error_fixtures]
    assert {401, 429, 503} <= {f["status"] for f in fixtures}
    # 429 is both "out of searches" and "throughput exceeded": both must be present and told apart.
    assert {f["expected_error_class"] for f in fixtures if f["status"] == 429} == {"quota", "rate_limited"}


test_documented_error_bodies_are_classified = contract.documented_error_bodies_test()


def test_truncated_json_raises_malformed(simulator):
    page = contract.top_ranked_page
    task = VendorTask("search", page.query, 5)
    contract.assert_truncated_answer_is_malformed(simulator, task)
    with pytest.raises(MalformedResponse):
        ADAPTER.parse(task, 200, {}, json.dumps({"organic_results": []}))  # no search_metadata


def test_every_fixture_names_its_source():
    contract.sources_name_every_fixture()


# ##### SERPAPI'S PUBLISHED PARAMETER LIST FOR THE GOOGLE ENGINE (fixtures/vendors/serpapi/google-engine.json)

ENGINE_SPEC = contract.fixtures / "google-engine.json"


@pytest.mark.parametrize("wanted, page", [(10, 1), (25, 2), (25, 3), (5, 1)])
def test_adapter_parameters_are_ones_serpapi_publishes_for_the_google_engine(wanted, page):
    spec = json.loads(ENGINE_SPEC.read_text())
    assert hashlib.sha256(ENGINE_SPEC.read_bytes()).hexdigest() in (contract.fixtures / "SOURCES.md").read_text()
    published = set(spec["params"]) | set(spec["common_params"])
    options = {"gl": "us", "hl": "en", "google_domain": "google.com", "location": "Austin, Texas, United States"}
    req = ADAPTER.build(VendorTask("search", "q", wanted, page=page), "https://serpapi.com/search", "k", options)
    # `num` is gone from the list; it is sent only below Google's 10 (the adapter says why)
    assert set(req.params) - published <= ({"num"} if wanted < 10 else set())
    for name, value in req.params.items():
        if spec["params"].get(name, {}).get("type") == "select":
            assert value in spec["params"][name]["options"], name
    assert spec["params"]["start"]["group"] == "pagination" and "num" not in spec["params"]
